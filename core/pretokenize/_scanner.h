/* The native pre-tokenizer: the GPT-2 and GPT-4 patterns as hand-written scanners over UTF-8.
 *
 * Included by core/pretokenize/_native.c (counting) and core/encode/_bpe_kernel.c (encoding).
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
#if defined(__linux__)
#include <sys/mman.h>
#endif
#include "_unicode_tables.h"

/* AVX2 where the compiler can target it: functions marked BPE_AVX2_TARGET run only when
 * bpe_have_avx2() (the processor has it, and BPE_STUDIO_NO_AVX2=1 is not set: the tests
 * run the baseline twin each of them has that way too). */
#if (defined(__x86_64__) || defined(__i386__)) && (defined(__GNUC__) || defined(__clang__))
#define BPE_AVX2 1
#define BPE_AVX2_TARGET __attribute__((target("avx2")))
#include <immintrin.h>
static inline int bpe_have_avx2(void)
{
    static int avx2 = -1; /* (a race writes the same value) */
    if (avx2 < 0) {
        const char *off = getenv("BPE_STUDIO_NO_AVX2");
        avx2 = __builtin_cpu_supports("avx2") && !(off && strcmp(off, "1") == 0);
    }
    return avx2;
}
#endif

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

/* ---------------------------------------------------------------- a map: byte strings -> two int64 */

/* The encoder's cache (core/encode/_bpe_kernel.c). Counting has a table of its own, laid out
 * for millions of keys (_count_table.h); functions it does not use are `static inline`, so
 * that _native.c compiles without unused-function warnings. */

/* 32 bytes (was 40 with a size_t offset and padding): two to a cache line, and a fifth
 * less memory for the millions of distinct pre-tokens of a large corpus. */
typedef struct {
    uint64_t hash;
    int64_t a, b;   /* the values */
    uint32_t key;   /* offset of the key in the key arena (kept below 4 GB: bpe_map_get_key) */
    uint32_t len;
} BpeEntry;

typedef struct {
    BpeEntry *entries; /* in insertion order */
    size_t n, cap;
    uint64_t *slots;   /* open addressing: the hash's high 32 bits << 32 | entry index + 1; 0 = empty
                        * (the high bits tell most non-matching slots without reading the entry) */
    size_t mask;
    unsigned char *keys; /* keys_cap bytes and BPE_KEY_SLACK more: any key can be read in whole words */
    size_t keys_len, keys_cap;
} BpeMap;

/* Bytes readable after a key's end for the word-at-a-time hash and comparison: past the
 * key arena's end, and past a pre-token's end where the counting loop uses them. */
#define BPE_KEY_SLACK 16

/* The k <= 8 bytes at p as a word, the first byte lowest, zero above. */
static inline uint64_t bpe_load_bytes(const unsigned char *p, size_t k)
{
    uint64_t w = 0;
    for (size_t b = 0; b < k; b++)
        w |= (uint64_t)p[b] << (8 * b);
    return w;
}

/* The last n <= 16 bytes of a key at p as two words, zero past its end (with n, that is
 * the whole tail); `padded`: the 16 bytes at p may be read, so the two words are loaded
 * and masked, with no branch on n. */
static inline void bpe_tail_words(const unsigned char *p, size_t n, int padded, uint64_t *first, uint64_t *second)
{
    if (padded) {
        *first = bpe_load64(p) & bpe_tail_masks[n][0];
        *second = bpe_load64(p + 8) & bpe_tail_masks[n][1];
    } else {
        *first = bpe_load_bytes(p, n < 8 ? n : 8);
        *second = bpe_load_bytes(p + 8, n > 8 ? n - 8 : 0);
    }
}

/* bpe_hash of p[0:n]; `padded`: the BPE_KEY_SLACK bytes after p[n-1] may be read, so
 * the last (up to) 16 bytes are two words read and masked, with no branch on n.
 *
 * For n <= 8 the hash is a bijection of the key's word `first` (second = 0): xor with a
 * constant, multiplication by an odd constant and h ^= h >> k (k > 0) are each invertible
 * on 64-bit words. So two keys of the same length <= 8 with the same hash are the same
 * key, and bpe_map_probe compares no bytes for them: keep every step invertible. */
static inline uint64_t bpe_hash_key(const unsigned char *p, size_t n, int padded)
{
    uint64_t h = 0x9E3779B97F4A7C15ull ^ (n * 0xC2B2AE3D27D4EB4Full), first, second;
    for (; n > 16; p += 8, n -= 8) {
        h = (h ^ bpe_load64(p)) * 0xFF51AFD7ED558CCDull;
        h ^= h >> 32;
    }
    bpe_tail_words(p, n, padded, &first, &second);
    h = (h ^ first) * 0xFF51AFD7ED558CCDull;
    h ^= h >> 32;
    h = (h ^ second) * 0xC4CEB9FE1A85EC53ull;
    h ^= h >> 29;
    h *= 0x94D049BB133111EBull;
    h ^= h >> 32;
    return h;
}

static inline uint64_t bpe_hash(const unsigned char *p, size_t n)
{
    return bpe_hash_key(p, n, 0);
}

/* calloc(n, size) with every page written at once. A table probed before it is written
 * (a hash table, a cache) otherwise first reads calloc's untouched pages, which maps them
 * to the shared zero page, and then writes them, which copies the zero page and flushes
 * its mapping from every core running this process: an inter-processor interrupt per
 * 4 KB. Two threads growing their count tables spent a tenth of their time in those on
 * 500 MB. (A store per page, through volatile: malloc + memset would be made a calloc.) */
static void *bpe_calloc_written(size_t n, size_t size)
{
    volatile unsigned char *p = (volatile unsigned char *)calloc(n, size);
    if (p)
        for (size_t i = 0; i < n * size; i += 4096)
            p[i] = 0;
    return (void *)p;
}

static inline int bpe_map_init(BpeMap *m, size_t slots)
{
    memset(m, 0, sizeof(*m));
    size_t s = 1024;
    while (s < slots)
        s <<= 1;
    m->slots = (uint64_t *)bpe_calloc_written(s, sizeof(uint64_t));
    m->mask = s - 1;
    m->cap = s / 2;
    m->entries = (BpeEntry *)malloc(m->cap * sizeof(BpeEntry));
    m->keys_cap = 1 << 16;
    m->keys = (unsigned char *)malloc(m->keys_cap + BPE_KEY_SLACK);
    if (!m->slots || !m->entries || !m->keys) {
        free(m->slots);
        free(m->entries);
        free(m->keys);
        memset(m, 0, sizeof(*m));
        return -1;
    }
    return 0;
}

static inline void bpe_map_free(BpeMap *m)
{
    free(m->slots);
    free(m->entries);
    free(m->keys);
    memset(m, 0, sizeof(*m));
}

static inline void bpe_map_clear(BpeMap *m)
{
    memset(m->slots, 0, (m->mask + 1) * sizeof(uint64_t));
    m->n = 0;
    m->keys_len = 0;
}

static inline int bpe_map_grow(BpeMap *m)
{
    size_t size = (m->mask + 1) * 2;
    if (size > ((size_t)1 << 31))
        return -1;
    uint64_t *slots = (uint64_t *)bpe_calloc_written(size, sizeof(uint64_t));
    BpeEntry *entries = (BpeEntry *)realloc(m->entries, size / 2 * sizeof(BpeEntry));
    if (!slots || !entries) {
        free(slots);
        if (entries)
            m->entries = entries;
        return -1;
    }
    m->entries = entries;
    free(m->slots);
    m->slots = slots;
    m->mask = size - 1;
    m->cap = size / 2;
    for (size_t e = 0; e < m->n; e++) {
        size_t h = (size_t)entries[e].hash & m->mask;
        while (slots[h])
            h = (h + 1) & m->mask;
        slots[h] = (entries[e].hash & 0xFFFFFFFF00000000ull) | (uint64_t)(e + 1);
    }
    return 0;
}

/* a[0:n] == b[0:n], a being a key of the arena; `padded`: b's BPE_KEY_SLACK bytes after
 * b[n-1] may be read (the arena's may), so both go a word at a time, the last (up to) 16
 * bytes as two masked words with no branch on n. */
static inline int bpe_key_eq(const unsigned char *a, const unsigned char *b, size_t n, int padded)
{
    if (!padded) {
        for (; n >= 8; a += 8, b += 8, n -= 8)
            if (bpe_load64(a) != bpe_load64(b))
                return 0;
        while (n--)
            if (*a++ != *b++)
                return 0;
        return 1;
    }
    for (; n > 16; a += 8, b += 8, n -= 8)
        if (bpe_load64(a) != bpe_load64(b))
            return 0;
    uint64_t first = (bpe_load64(a) ^ bpe_load64(b)) & bpe_tail_masks[n][0];
    uint64_t second = (bpe_load64(a + 8) ^ bpe_load64(b + 8)) & bpe_tail_masks[n][1];
    return (first | second) == 0;
}

/* Where key p[0:n] (bpe_hash `hash`) is: its entry, or NULL and in *free_slot the empty
 * slot that ends its probe sequence. `padded` as for bpe_key_eq. */
static inline BpeEntry *bpe_map_probe(const BpeMap *m, const unsigned char *p, size_t n, uint64_t hash,
                                      int padded, size_t *free_slot)
{
    size_t h = (size_t)hash & m->mask;
    uint64_t slot, tag = hash & 0xFFFFFFFF00000000ull;
    while ((slot = m->slots[h]) != 0) {
        if ((slot & 0xFFFFFFFF00000000ull) == tag) {
            BpeEntry *e = &m->entries[(uint32_t)slot - 1];
            /* no bytes to compare for n <= 8: the hash is the key (see bpe_hash_key) */
            if (e->hash == hash && e->len == n && (n <= 8 || bpe_key_eq(m->keys + e->key, p, n, padded)))
                return e;
        }
        h = (h + 1) & m->mask;
    }
    *free_slot = h;
    return NULL;
}

/* The entry of key p[0:n] (whose bpe_hash is `hash`), or NULL if there is none. */
static inline BpeEntry *bpe_map_find(const BpeMap *m, const unsigned char *p, size_t n, uint64_t hash)
{
    size_t free_slot;
    return bpe_map_probe(m, p, n, hash, 0, &free_slot);
}

/* bpe_map_get_hashed, `padded` as for bpe_key_eq. */
static inline BpeEntry *bpe_map_get_key(BpeMap *m, const unsigned char *p, size_t n, uint64_t hash, int padded,
                                        int *created)
{
    size_t h;
    BpeEntry *e = bpe_map_probe(m, p, n, hash, padded, &h);
    *created = 0;
    if (e)
        return e;
    if (m->n >= m->cap) {
        if (bpe_map_grow(m) < 0)
            return NULL;
        h = (size_t)hash & m->mask;
        while (m->slots[h])
            h = (h + 1) & m->mask;
    }
    if (m->keys_len + n > UINT32_MAX)
        return NULL; /* 4 GB of distinct pre-tokens: more than this table is for */
    if (m->keys_len + n > m->keys_cap) {
        size_t cap = m->keys_cap * 2;
        while (cap < m->keys_len + n)
            cap *= 2;
        unsigned char *keys = (unsigned char *)realloc(m->keys, cap + BPE_KEY_SLACK);
        if (!keys)
            return NULL;
        m->keys = keys;
        m->keys_cap = cap;
    }
    memcpy(m->keys + m->keys_len, p, n);
    e = &m->entries[m->n];
    e->hash = hash;
    e->key = (uint32_t)m->keys_len;
    e->len = (uint32_t)n;
    e->a = e->b = 0;
    m->keys_len += n;
    m->n++;
    m->slots[h] = (hash & 0xFFFFFFFF00000000ull) | (uint64_t)m->n;
    *created = 1;
    return e;
}

/* The entry of key p[0:n] (whose bpe_hash is `hash`), created with values (0, 0) if
 * absent; NULL when out of memory. */
static inline BpeEntry *bpe_map_get_hashed(BpeMap *m, const unsigned char *p, size_t n, uint64_t hash, int *created)
{
    return bpe_map_get_key(m, p, n, hash, 0, created);
}

static inline BpeEntry *bpe_map_get(BpeMap *m, const unsigned char *p, size_t n, int *created)
{
    return bpe_map_get_hashed(m, p, n, bpe_hash(p, n), created);
}

/* Tables looked up at random over megabytes (counting's slots, the encoder's front cache)
 * come in 2 MB pages where the system gives them (transparent huge pages, on request):
 * with 4 KB pages most of those lookups also missed the TLB. */
#if defined(__linux__) && defined(MAP_ANONYMOUS)
#define BPE_HUGE_MAP 1
#define BPE_HUGE_PAGE ((size_t)2 << 20)

/* `size` zeroed bytes starting on a 2 MB boundary, mapped as they are first written;
 * NULL when mmap fails. Free with bpe_huge_unmap(p, size). */
static inline void *bpe_huge_map(size_t size)
{
    /* mapped with a page to spare, the table starting on a 2 MB boundary in it */
    unsigned char *map = (unsigned char *)mmap(NULL, size + BPE_HUGE_PAGE, PROT_READ | PROT_WRITE,
                                               MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (map == (unsigned char *)MAP_FAILED)
        return NULL;
    unsigned char *p = (unsigned char *)(((uintptr_t)map + BPE_HUGE_PAGE - 1) & ~(uintptr_t)(BPE_HUGE_PAGE - 1));
    if (p > map) /* the unaligned head and the tail back to the system */
        munmap(map, (size_t)(p - map));
    munmap(p + size, (size_t)(map + BPE_HUGE_PAGE - p));
#if defined(MADV_HUGEPAGE)
    madvise(p, size, MADV_HUGEPAGE); /* a hint: 4 KB pages if refused */
#endif
    return p;
}

static inline void bpe_huge_unmap(void *p, size_t size)
{
    munmap(p, size);
}
#endif

/* Ask for the cache line at p (a hint only). */
static inline void bpe_prefetch(const void *p)
{
#if defined(__GNUC__) || defined(__clang__)
    __builtin_prefetch(p);
#else
    (void)p;
#endif
}

/* ---------------------------------------------------------------- special tokens */

/* At most this many special tokens are looked for in C; a caller with more splits the text
 * itself (core.pretokenize.specials.SpecialMatcher) and hands over the stretches between. */
#define BPE_MAX_SPECIALS 16

/* A special token's bytes (and, for the encoder, its id). */
typedef struct {
    const unsigned char *bytes;
    ptrdiff_t len;
    int64_t id;
} BpeSpecial;

/* Put `special` among the first `count` of `specials` (room for one more), kept longest
 * first as BpeSpecialCut takes them; equal lengths keep the order they came in. */
static inline void bpe_special_insert(BpeSpecial *specials, int count, BpeSpecial special)
{
    int at = count;
    for (; at > 0 && specials[at - 1].len < special.len; at--)
        specials[at] = specials[at - 1];
    specials[at] = special;
}

/* Where needle[0:m] occurs first in s[from:n], or -1. */
static inline ptrdiff_t bpe_find(const unsigned char *s, ptrdiff_t from, ptrdiff_t n,
                                 const unsigned char *needle, ptrdiff_t m)
{
    while (from + m <= n) {
        const unsigned char *hit = (const unsigned char *)memchr(s + from, needle[0], (size_t)(n - m + 1 - from));
        if (!hit)
            return -1;
        from = hit - s;
        if (memcmp(hit, needle, (size_t)m) == 0)
            return from;
        from++;
    }
    return -1;
}

/* Cutting s[0:n] at special tokens the way core.pretokenize.specials.SpecialMatcher does:
 * the leftmost occurrence first and, of those starting there, the longest (the tokens are
 * given longest first: the first of equal positions wins); matching goes on after it.
 *
 *     BpeSpecialCut cut;
 *     bpe_special_cut_start(&cut, specials, count, s, n);
 *     while (bpe_special_cut_next(&cut, &start, &stop, &special))
 *         ... s[start:stop] is ordinary text (maybe empty), then special token `special`
 *             (-1 after the last stretch) ...
 */
typedef struct {
    const BpeSpecial *specials;
    int count;
    const unsigned char *s;
    ptrdiff_t n, pos; /* pos: where the next stretch starts; n + 1 once done */
    ptrdiff_t next[BPE_MAX_SPECIALS]; /* where each token occurs next at or after pos; -1: nowhere */
} BpeSpecialCut;

static inline void bpe_special_cut_start(BpeSpecialCut *cut, const BpeSpecial *specials, int count,
                                         const unsigned char *s, ptrdiff_t n)
{
    cut->specials = specials;
    cut->count = count;
    cut->s = s;
    cut->n = n;
    cut->pos = 0;
    for (int k = 0; k < count; k++)
        cut->next[k] = bpe_find(s, 0, n, specials[k].bytes, specials[k].len);
}

/* The next stretch [*start, *stop) and the special token that ends it (*special, -1 for
 * the end of the text); 0 once the whole text has been handed out. */
static inline int bpe_special_cut_next(BpeSpecialCut *cut, ptrdiff_t *start, ptrdiff_t *stop, int *special)
{
    if (cut->pos > cut->n)
        return 0;
    int best = -1;
    for (int k = 0; k < cut->count; k++)
        if (cut->next[k] >= 0 && (best < 0 || cut->next[k] < cut->next[best]))
            best = k;
    *start = cut->pos;
    *special = best;
    if (best < 0) {
        *stop = cut->n;
        cut->pos = cut->n + 1;
        return 1;
    }
    *stop = cut->next[best];
    cut->pos = cut->next[best] + cut->specials[best].len;
    for (int k = 0; k < cut->count; k++)
        if (cut->next[k] >= 0 && cut->next[k] < cut->pos)
            cut->next[k] = bpe_find(cut->s, cut->pos, cut->n, cut->specials[k].bytes, cut->specials[k].len);
    return 1;
}

#endif
