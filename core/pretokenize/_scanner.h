/* The native pre-tokenizer: the GPT-2 and GPT-4 patterns as hand-written scanners over UTF-8.
 *
 * Included by core/pretokenize/_native.c (counting) and core/encode/_bpe_kernel.c (encoding),
 * as are the byte-string map (_byte_map.h) and the special-token search (_specials.h).
 * `bpe_next_gpt2` / `bpe_next_gpt4` / `bpe_next_superbpe` return where the pre-token starting at byte `i` of
 * `s[0:end]` ends: exactly where the `regex` module's match of the pattern at `i` ends,
 * with `end` as the end of the string (the callers cut text only at special tokens and at
 * the patterns' safe cut points, see core/pretokenize/patterns.py). Bytes that are not
 * valid UTF-8 are one "character" each with no class: Python decodes them with
 * surrogateescape to U+DC80..U+DCFF, which are neither letters, numbers nor spaces.
 *
 * The patterns, alternative by alternative:
 *   GPT-2  '(?:[sdmt]|ll|ve|re) | ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
 *   GPT-4  '(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+
 *          | ?[^\s\p{L}\p{N}]++[\r\n]*+|\s++$|\s*[\r\n]|\s+(?!\S)|\s
 *   SuperBPE's stage-2 cut (SUPERBPE_PATTERN in core/pretokenize/patterns.py), with
 *          SPLIT = \p{N}{1,3}| ?[^\s\p{L}\p{N}]{2,}[\r/]*\n?| +(?!\S):
 *          SPLIT|(?:(?!SPLIT)[^\n])+\n?|\n
 * The character classes come from _unicode_tables.h (tools/gen_unicode_tables.py).
 */
#ifndef BPE_SCANNER_H
#define BPE_SCANNER_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "_unicode_tables.h"

#include "_simd.h"
#include "_utf8_valid.h"

#define BPE_L 1u
#define BPE_N 2u
#define BPE_S 4u
#define BPE_CLASSES 7u
/* in bpe_byte_flags only: a byte >= 0x80, which starts no ASCII character */
#define BPE_HIGH 8u
/* letter codes (flags >> 4) of the GPT-4 contractions: 1 + "sdmtlvre".index(c) */
enum { BPE_CS = 1, BPE_CD, BPE_CM, BPE_CT, BPE_CL, BPE_CV, BPE_CR, BPE_CE };

enum { BPE_GPT2 = 1, BPE_GPT4 = 2, BPE_SUPERBPE = 3 };

/* x in every byte of a word */
#define BPE_BYTES(x) (0x0101010101010101ull * (uint64_t)(x))

/* The 8 bytes at p as one word, the first byte lowest (whatever the machine's byte order). */
static inline uint64_t bpe_load64(const unsigned char *p)
{
    uint64_t w;
    memcpy(&w, p, 8);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    w = __builtin_bswap64(w);
#endif
    return w;
}

/* The lowest set bit of w (w != 0). */
static inline unsigned bpe_ctz64(uint64_t w)
{
#if defined(__GNUC__) || defined(__clang__)
    return (unsigned)__builtin_ctzll(w);
#else
    unsigned k = 0;
    while (!(w & 1)) {
        w >>= 1;
        k++;
    }
    return k;
#endif
}

/* The first byte (lowest) of w whose high bit is set; w has some byte's high bit set. */
static inline unsigned bpe_first_high_byte(uint64_t w)
{
    return bpe_ctz64(w) >> 3;
}

/* The masks of the two words that hold a key's last n <= 16 bytes (bpe_hash_key, bpe_key_eq). */
static const uint64_t bpe_tail_masks[17][2] = {
    {0, 0}, {0xFF, 0}, {0xFFFF, 0}, {0xFFFFFF, 0}, {0xFFFFFFFFull, 0}, {0xFFFFFFFFFFull, 0},
    {0xFFFFFFFFFFFFull, 0}, {0xFFFFFFFFFFFFFFull, 0}, {~0ull, 0}, {~0ull, 0xFF}, {~0ull, 0xFFFF},
    {~0ull, 0xFFFFFF}, {~0ull, 0xFFFFFFFFull}, {~0ull, 0xFFFFFFFFFFull}, {~0ull, 0xFFFFFFFFFFFFull},
    {~0ull, 0xFFFFFFFFFFFFFFull}, {~0ull, ~0ull},
};

static inline unsigned bpe_flags_of(uint32_t cp)
{
    return bpe_class_blocks[bpe_class_index[cp >> 8]][cp & 0xFF];
}

/* The flags of the character at s[i] (i < end) and its length in bytes. A byte that does
 * not start a well-formed UTF-8 sequence (Python's decoder rejects overlongs, surrogates
 * and code points past U+10FFFF too) is one character of its own, with no class. */
static inline unsigned bpe_char(const unsigned char *s, ptrdiff_t i, ptrdiff_t end, int *len)
{
    unsigned c = s[i];
    *len = 1;
    if (c < 0x80)
        return bpe_byte_flags[c];
    if (c >= 0xC2 && c <= 0xDF) {
        if (i + 1 < end && (s[i + 1] & 0xC0) == 0x80) {
            *len = 2;
            return bpe_flags_of(((c & 0x1Fu) << 6) | (s[i + 1] & 0x3Fu));
        }
    } else if (c >= 0xE0 && c <= 0xEF) {
        if (i + 2 < end) {
            unsigned b1 = s[i + 1], b2 = s[i + 2];
            unsigned lo = c == 0xE0 ? 0xA0 : 0x80, hi = c == 0xED ? 0x9F : 0xBF;
            if (b1 >= lo && b1 <= hi && (b2 & 0xC0) == 0x80) {
                *len = 3;
                return bpe_flags_of(((c & 0x0Fu) << 12) | ((b1 & 0x3Fu) << 6) | (b2 & 0x3Fu));
            }
        }
    } else if (c >= 0xF0 && c <= 0xF4) {
        if (i + 3 < end) {
            unsigned b1 = s[i + 1], b2 = s[i + 2], b3 = s[i + 3];
            unsigned lo = c == 0xF0 ? 0x90 : 0x80, hi = c == 0xF4 ? 0x8F : 0xBF;
            if (b1 >= lo && b1 <= hi && (b2 & 0xC0) == 0x80 && (b3 & 0xC0) == 0x80) {
                *len = 4;
                return bpe_flags_of(((c & 0x07u) << 18) | ((b1 & 0x3Fu) << 12) | ((b2 & 0x3Fu) << 6) | (b3 & 0x3Fu));
            }
        }
    }
    return 0; /* an invalid byte: surrogate-escaped, class "other" */
}

/* Bytes of s[0:end] that are not valid UTF-8 (each is one surrogate escape in Python): none
 * if the text is valid as a whole (bpe_utf8_valid, 32 bytes at a time); else character by
 * character, ASCII 8 bytes at a time (only a byte >= 0x80 needs decoding). */
static inline ptrdiff_t bpe_invalid_bytes(const unsigned char *s, ptrdiff_t end)
{
    if (bpe_utf8_valid(s, end))
        return 0;
    ptrdiff_t i = 0, bad = 0;
    int n;
    while (i < end) {
        if (i + 8 <= end) {
            uint64_t high = bpe_load64(s + i) & BPE_BYTES(0x80);
            if (!high) {
                i += 8;
                continue;
            }
            i += bpe_first_high_byte(high);
        } else if (s[i] < 0x80) {
            i++;
            continue;
        }
        /* s[i] >= 0x80: bpe_char gives length 1 only to an invalid byte there */
        (void)bpe_char(s, i, end, &n);
        bad += n == 1;
        i += n;
    }
    return bad;
}

/* The characters from s[i] (i < end, s[i] >= 0x80) whose flags satisfy (flags & mask) ==
 * want, up to the next ASCII byte: where they end, or where one fails (*failed = 1). */
static inline ptrdiff_t bpe_run_high(const unsigned char *s, ptrdiff_t i, ptrdiff_t end, unsigned mask,
                                     unsigned want, int *failed)
{
    int n;
    do {
        if ((bpe_char(s, i, end, &n) & mask) != want) {
            *failed = 1;
            return i;
        }
        i += n;
    } while (i < end && s[i] >= 0x80);
    *failed = 0;
    return i;
}

/* The end of the run of characters, from i, whose flags satisfy (flags & mask) == want
 * (want has no BPE_HIGH): ASCII by bpe_byte_flags alone, other characters decoded. */
static inline ptrdiff_t bpe_run(const unsigned char *s, ptrdiff_t i, ptrdiff_t end, unsigned mask, unsigned want)
{
    int failed;
    for (;;) {
        while (i < end && (bpe_byte_flags[s[i]] & (mask | BPE_HIGH)) == want)
            i++;
        if (i >= end || s[i] < 0x80)
            return i;
        i = bpe_run_high(s, i, end, mask, want, &failed);
        if (failed)
            return i;
    }
}

/* A high bit in each byte of w (8 bytes of text) that is not an ASCII letter [A-Za-z]
 * (the only ASCII characters in \p{L}). */
static inline uint64_t bpe_non_letters(uint64_t w)
{
    /* lower-cased, 7 bits a byte so that the sums below carry into no other byte;
     * y | 0x20 is in [a-z] exactly for the bytes in [A-Za-z] */
    uint64_t y = (w | BPE_BYTES(0x20)) & BPE_BYTES(0x7F);
    uint64_t letters = (y + BPE_BYTES(0x80 - 'a')) & ~(y + BPE_BYTES(0x80 - 'z' - 1)) & ~w;
    return ~letters & BPE_BYTES(0x80);
}

/* The end of the run of letters (\p{L}+) from i: bpe_run(.., BPE_L, BPE_L), with ASCII
 * letters 8 bytes at a time (most words end within the first 8, with no branch per byte). */
static inline ptrdiff_t bpe_letter_run(const unsigned char *s, ptrdiff_t i, ptrdiff_t end)
{
    int failed;
    for (;;) {
        if (i + 8 <= end) {
            uint64_t stop = bpe_non_letters(bpe_load64(s + i));
            if (!stop) {
                i += 8;
                continue;
            }
            i += bpe_first_high_byte(stop);
        } else {
            while (i < end && (bpe_byte_flags[s[i]] & BPE_L))
                i++;
        }
        /* s[i] is not an ASCII letter; if it is >= 0x80 it may start a letter still */
        if (i >= end || s[i] < 0x80)
            return i;
        i = bpe_run_high(s, i, end, BPE_L, BPE_L, &failed);
        if (failed)
            return i;
    }
}

/* A whitespace run from i (s[i] is whitespace): its end, the start of its last character,
 * its length in characters and the position just after its last \r or \n (0 if none). */
static inline ptrdiff_t bpe_space_run(const unsigned char *s, ptrdiff_t i, ptrdiff_t end,
                                      ptrdiff_t *last, ptrdiff_t *count, ptrdiff_t *after_newline)
{
    int n;
    *count = 0;
    *after_newline = 0;
    while (i < end) {
        unsigned f = bpe_char(s, i, end, &n);
        if (!(f & BPE_S))
            break;
        *last = i;
        (*count)++;
        if (s[i] == '\r' || s[i] == '\n')
            *after_newline = i + 1;
        i += n;
    }
    return i;
}

static inline ptrdiff_t bpe_next_gpt2(const unsigned char *s, ptrdiff_t i, ptrdiff_t end)
{
    int n;
    unsigned c = s[i], f;
    ptrdiff_t j = i; /* the run's first character: after the optional space, if any */
    if (c == ' ' && i + 1 < end) { /* the optional space of ' ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+' */
        f = bpe_char(s, i + 1, end, &n);
        if (f & BPE_S) { /* no: a whitespace run starts at i */
            f = BPE_S;
            n = 1;
        } else {
            j = i + 1;
        }
    } else {
        if (c == '\'' && i + 1 < end) { /* '(?:[sdmt]|ll|ve|re) */
            unsigned d = s[i + 1];
            if (d == 's' || d == 'd' || d == 'm' || d == 't')
                return i + 2;
            if (i + 2 < end) {
                unsigned e = s[i + 2];
                if ((d == 'l' && e == 'l') || (d == 'v' && e == 'e') || (d == 'r' && e == 'e'))
                    return i + 3;
            }
        }
        f = bpe_char(s, i, end, &n);
    }
    if (f & BPE_L)
        return bpe_letter_run(s, j + n, end);
    if (f & BPE_N)
        return bpe_run(s, j + n, end, BPE_N, BPE_N);
    if (!(f & BPE_S))
        return bpe_run(s, j + n, end, BPE_CLASSES, 0);
    /* \s+(?!\S)|\s+ : the whole run at the end of the text or before more text...
     * ...but a run of two or more before text leaves its last character to it */
    ptrdiff_t last = i, count, nl;
    ptrdiff_t k = bpe_space_run(s, i, end, &last, &count, &nl);
    if (k == end || count == 1)
        return k;
    return last;
}

static inline unsigned bpe_letter(const unsigned char *s, ptrdiff_t i, ptrdiff_t end, int *n)
{
    return bpe_char(s, i, end, n) >> 4;
}

/* The end of \p{N}{1,3} whose first digit ends at k: up to two more digits. */
static inline ptrdiff_t bpe_digits_after(const unsigned char *s, ptrdiff_t k, ptrdiff_t end)
{
    int m;
    for (int digits = 1; digits < 3 && k < end; digits++) {
        if (!(bpe_char(s, k, end, &m) & BPE_N))
            break;
        k += m;
    }
    return k;
}

static inline ptrdiff_t bpe_next_gpt4(const unsigned char *s, ptrdiff_t i, ptrdiff_t end)
{
    int n, m;
    unsigned c = s[i];
    if (c == '\'' && i + 1 < end) { /* '(?i:[sdmt]|ll|ve|re) */
        unsigned d = bpe_letter(s, i + 1, end, &n);
        if (d >= BPE_CS && d <= BPE_CT)
            return i + 1 + n;
        if ((d == BPE_CL || d == BPE_CV || d == BPE_CR) && i + 1 + n < end) {
            unsigned e = bpe_letter(s, i + 1 + n, end, &m);
            if ((d == BPE_CL && e == BPE_CL) || ((d == BPE_CV || d == BPE_CR) && e == BPE_CE))
                return i + 1 + n + m;
        }
    }
    unsigned f = bpe_char(s, i, end, &n) & BPE_CLASSES;
    if (f & BPE_L) /* [^\r\n\p{L}\p{N}]?+\p{L}++ without its first character */
        return bpe_letter_run(s, i + n, end);
    unsigned g = BPE_S; /* the class of the next character, when it matters (not a digit here) */
    if (!(f & BPE_N) && i + n < end) {
        g = bpe_char(s, i + n, end, &m) & BPE_CLASSES;
        if ((g & BPE_L) && c != '\r' && c != '\n')
            return bpe_letter_run(s, i + n + m, end);
    }
    if (f & BPE_N) /* \p{N}{1,3}+ */
        return bpe_digits_after(s, i + n, end);
    ptrdiff_t j = i;
    if (c == ' ' && g == 0) { /* the optional space of  ?[^\s\p{L}\p{N}]++ */
        j = i + 1;
        f = 0;
        n = m;
    }
    if (f == 0) { /*  ?[^\s\p{L}\p{N}]++[\r\n]*+ */
        ptrdiff_t k = bpe_run(s, j + n, end, BPE_CLASSES, 0);
        while (k < end && (s[k] == '\r' || s[k] == '\n'))
            k++;
        return k;
    }
    /* whitespace: \s++$ | \s*[\r\n] | \s+(?!\S) | \s */
    ptrdiff_t last = i, count, after_newline;
    ptrdiff_t k = bpe_space_run(s, i, end, &last, &count, &after_newline);
    if (k == end)
        return k;
    if (after_newline)
        return after_newline;
    if (count >= 2)
        return last;
    return i + n;
}

/* Where SuperBPE's SPLIT matches at s[i] ends, or -1 where it does not match (alternatives in
 * order: leftmost-first, and each alternative's tail is optional, so its greedy match is it). */
static inline ptrdiff_t bpe_superbpe_split(const unsigned char *s, ptrdiff_t i, ptrdiff_t end)
{
    int n, m;
    unsigned f = bpe_char(s, i, end, &n) & BPE_CLASSES;
    if (f & BPE_N) /* \p{N}{1,3} */
        return bpe_digits_after(s, i + n, end);
    /*  ?[^\s\p{L}\p{N}]{2,}[\r/]*\n? : two characters of no class at least (after the space) */
    ptrdiff_t j = s[i] == ' ' ? i + 1 : i;
    if ((j == i ? f : j < end ? bpe_char(s, j, end, &n) & BPE_CLASSES : BPE_S) == 0) {
        ptrdiff_t k = j + n;
        if (k < end && (bpe_char(s, k, end, &m) & BPE_CLASSES) == 0) {
            k = bpe_run(s, k + m, end, BPE_CLASSES, 0);
            while (k < end && (s[k] == '\r' || s[k] == '/'))
                k++;
            return k < end && s[k] == '\n' ? k + 1 : k;
        }
    }
    if (s[i] != ' ') /* ' +(?!\S)' */
        return -1;
    ptrdiff_t k = i + 1;
    while (k < end && s[k] == ' ')
        k++;
    if (k == end || (bpe_char(s, k, end, &m) & BPE_S))
        return k;
    return k - i >= 2 ? k - 1 : -1;
}

static inline ptrdiff_t bpe_next_superbpe(const unsigned char *s, ptrdiff_t i, ptrdiff_t end)
{
    int n;
    ptrdiff_t k = bpe_superbpe_split(s, i, end);
    if (k >= 0)
        return k;
    if (s[i] == '\n')
        return i + 1;
    /* (?:(?!SPLIT)[^\n])+\n? : up to where SPLIT matches, a line break or the end */
    (void)bpe_char(s, i, end, &n);
    ptrdiff_t j = i + n;
    for (;;) {
        if (j >= end)
            return end;
        if (s[j] == '\n')
            return j + 1;
        if (bpe_byte_flags[s[j]] & BPE_L) { /* an ASCII letter, where SPLIT never starts */
            j = bpe_letter_run(s, j, end);
            continue;
        }
        if (bpe_superbpe_split(s, j, end) >= 0)
            return j;
        (void)bpe_char(s, j, end, &n);
        j += n;
    }
}

static inline ptrdiff_t bpe_next(int pattern, const unsigned char *s, ptrdiff_t i, ptrdiff_t end)
{
    if (pattern == BPE_SUPERBPE)
        return bpe_next_superbpe(s, i, end);
    return pattern == BPE_GPT4 ? bpe_next_gpt4(s, i, end) : bpe_next_gpt2(s, i, end);
}

#endif /* BPE_SCANNER_H */
