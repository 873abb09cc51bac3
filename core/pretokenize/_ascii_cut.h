/* Cutting ASCII text into GPT-2 pre-tokens 64 bytes at a time (the counting loop's cutter).
 *
 * bpe_next_gpt2 (_scanner.h) finds one pre-token at a time, branching on each one's kind:
 * on English text most of its time went in mispredicted branches.
 * In ASCII, though, where a GPT-2 pre-token starts depends only on the bytes around it,
 * so the starts of 64 bytes at once are a few operations on 64-bit masks of the bytes'
 * classes (letter L, digit N, whitespace S, other P: the \p{L}, \p{N}, \s of the pattern
 * restricted to ASCII, where they are [A-Za-z], [0-9] and [\t-\r ]):
 *
 *   (a) an L, N or P byte whose class differs from the byte before, unless that byte is a
 *       space (' ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+' take one space in front: the
 *       space starts the pre-token);
 *   (b) a whitespace byte first in its run, or last in a run followed by more text
 *       ('\s+(?!\S)' leaves the last one to what follows, or to '\s+' alone);
 *   (c) an apostrophe starting a pre-token by (a), followed by s, d, m, t (ll, ve, re) is
 *       the pre-token "'s" ("'ll"): the byte after it starts none, the one after the
 *       contraction starts one.
 *
 * The end of the text changes (b) (a last run is taken whole), so a block is cut only
 * with BPE_CUT_AHEAD bytes of text after it; bytes >= 0x80 are decoded by bpe_next_gpt2,
 * so a block's starts count only up to the second byte before the first of them
 * (a start looks one byte ahead, and a contraction two). Everything else, and the GPT-4
 * pattern, goes to bpe_next one pre-token at a time. Exactness: the counting tests
 * compare long texts of these bytes with the `regex` module's pre-tokens.
 */
#ifndef BPE_ASCII_CUT_H
#define BPE_ASCII_CUT_H

#include "_scanner.h"
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

/* The masks of 64 bytes (bit k: byte k) and of the 16 after them (`*_next`). */
typedef struct {
    uint64_t high, letter, digit, space, blank, quote; /* blank: ' ' alone; quote: '\'' */
} BpeAsciiMasks;

#if defined(__SSE2__)
/* Bit k of the result: byte k of x (16 bytes) passes the byte-wise test `t` (0xFF or 0). */
static inline uint64_t bpe_movemask(__m128i t) { return (uint64_t)(unsigned)_mm_movemask_epi8(t); }

/* Bytes in [lo, lo + count): x - lo + 128 below -128 + count, as signed bytes. */
static inline __m128i bpe_in_range(__m128i x, int lo, int count)
{
    __m128i v = _mm_add_epi8(x, _mm_set1_epi8((char)(128 - lo)));
    return _mm_cmplt_epi8(v, _mm_set1_epi8((char)(-128 + count)));
}

static inline void bpe_ascii_masks16(const unsigned char *p, int shift, BpeAsciiMasks *m)
{
    __m128i x = _mm_loadu_si128((const __m128i *)p);
    __m128i blank = _mm_cmpeq_epi8(x, _mm_set1_epi8(' '));
    m->high |= bpe_movemask(x) << shift;
    m->letter |= bpe_movemask(bpe_in_range(_mm_or_si128(x, _mm_set1_epi8(0x20)), 'a', 26)) << shift;
    m->digit |= bpe_movemask(bpe_in_range(x, '0', 10)) << shift;
    m->space |= bpe_movemask(_mm_or_si128(blank, bpe_in_range(x, '\t', 5))) << shift;
    m->blank |= bpe_movemask(blank) << shift;
    m->quote |= bpe_movemask(_mm_cmpeq_epi8(x, _mm_set1_epi8('\''))) << shift;
}
#else
static inline void bpe_ascii_masks16(const unsigned char *p, int shift, BpeAsciiMasks *m)
{
    for (int k = 0; k < 16; k++) {
        unsigned c = p[k];
        uint64_t bit = (uint64_t)1 << (shift + k);
        m->high |= c >= 0x80 ? bit : 0;
        m->letter |= ((c | 0x20) >= 'a' && (c | 0x20) <= 'z') ? bit : 0;
        m->digit |= (c >= '0' && c <= '9') ? bit : 0;
        m->space |= (c == ' ' || (c >= '\t' && c <= '\r')) ? bit : 0;
        m->blank |= c == ' ' ? bit : 0;
        m->quote |= c == '\'' ? bit : 0;
    }
}
#endif

/* The masks of p[0:64] (`m`) and p[64:80] (`next`). */
static inline void bpe_ascii_masks(const unsigned char *p, BpeAsciiMasks *m, BpeAsciiMasks *next)
{
    memset(m, 0, sizeof(*m));
    memset(next, 0, sizeof(*next));
    for (int b = 0; b < 4; b++)
        bpe_ascii_masks16(p + 16 * b, 16 * b, m);
    bpe_ascii_masks16(p + 64, 0, next);
}

#if defined(BPE_AVX2)
/* bpe_in_range on 32 bytes. */
BPE_AVX2_TARGET static inline __m256i bpe_in_range32(__m256i x, int lo, int count)
{
    __m256i v = _mm256_add_epi8(x, _mm256_set1_epi8((char)(128 - lo)));
    return _mm256_cmpgt_epi8(_mm256_set1_epi8((char)(-128 + count)), v);
}

/* bpe_ascii_masks16 on 32 bytes: the same tests, half the instructions a byte. */
BPE_AVX2_TARGET static inline void bpe_ascii_masks32(const unsigned char *p, int shift, BpeAsciiMasks *m)
{
#define BPE_MASK32(t) ((uint64_t)(uint32_t)_mm256_movemask_epi8(t) << shift)
    __m256i x = _mm256_loadu_si256((const __m256i *)p);
    __m256i blank = _mm256_cmpeq_epi8(x, _mm256_set1_epi8(' '));
    m->high |= BPE_MASK32(x);
    m->letter |= BPE_MASK32(bpe_in_range32(_mm256_or_si256(x, _mm256_set1_epi8(0x20)), 'a', 26));
    m->digit |= BPE_MASK32(bpe_in_range32(x, '0', 10));
    m->space |= BPE_MASK32(_mm256_or_si256(blank, bpe_in_range32(x, '\t', 5)));
    m->blank |= BPE_MASK32(blank);
    m->quote |= BPE_MASK32(_mm256_cmpeq_epi8(x, _mm256_set1_epi8('\'')));
#undef BPE_MASK32
}

/* bpe_ascii_masks, 32 bytes at a time. */
BPE_AVX2_TARGET static inline void bpe_ascii_masks_avx2(const unsigned char *p, BpeAsciiMasks *m, BpeAsciiMasks *next)
{
    memset(m, 0, sizeof(*m));
    memset(next, 0, sizeof(*next));
    bpe_ascii_masks32(p, 0, m);
    bpe_ascii_masks32(p + 32, 32, m);
    bpe_ascii_masks16(p + 64, 0, next);
}
#endif

#define BPE_CUT_AHEAD 80 /* bytes of text a block needs: its 64 and the 16 looked at after */

/* The GPT-2 pre-token starts among s[1:64] as bits 1..63 (s[0] starts one: bit 0 is set
 * too), valid up to the second byte before the first byte >= 0x80, from the masks of
 * s[0:64] (m) and s[64:80] (x); s[0:80] readable, all of it text before the end. */
#if defined(__GNUC__) || defined(__clang__)
__attribute__((always_inline)) /* (into its AVX2 caller too) */
#endif
static inline uint64_t bpe_gpt2_starts_of(const unsigned char *s, BpeAsciiMasks m, BpeAsciiMasks x)
{
    uint64_t valid = ~0ull;
    if (m.high | (x.high & 0x3)) { /* bits up to first high - 2: a start looks at most 2 bytes ahead... */
        unsigned h = m.high ? (unsigned)bpe_ctz64(m.high) : 64 + (unsigned)bpe_ctz64(x.high);
        valid = h >= 2 ? (~0ull >> (64 - (h - 1))) : 0; /* bits 0 .. h - 2 */
    }
    uint64_t other = ~(m.letter | m.digit | m.space);
    uint64_t space_after = (m.space >> 1) | (x.space << 63);
    /* (a): a class change into L, N or P, with no space before */
    uint64_t change = (m.letter & ~(m.letter << 1)) | (m.digit & ~(m.digit << 1)) | (other & ~(other << 1));
    uint64_t a = (change & ~(m.blank << 1)) | 1;
    /* (b): first of a whitespace run, or last of one before more text */
    uint64_t b = m.space & (~(m.space << 1) | ~space_after);
    uint64_t starts = a | b;
    /* (c): contractions, rare enough to look at one by one */
    for (uint64_t q = a & m.quote & valid; q; q &= q - 1) {
        unsigned k = (unsigned)bpe_ctz64(q);
        unsigned d = s[k + 1], e = s[k + 2];
        unsigned len = (d == 's' || d == 'd' || d == 'm' || d == 't') ? 2
                     : ((d == 'l' && e == 'l') || (d == 'v' && e == 'e') || (d == 'r' && e == 'e')) ? 3 : 0;
        if (len) {
            if (k + 1 < 64)
                starts &= ~((uint64_t)1 << (k + 1));
            if (k + len < 64)
                starts |= (uint64_t)1 << (k + len);
        }
    }
    return starts & valid;
}

static inline uint64_t bpe_gpt2_starts(const unsigned char *s)
{
    BpeAsciiMasks m, x;
    bpe_ascii_masks(s, &m, &x);
    return bpe_gpt2_starts_of(s, m, x);
}

#if defined(BPE_AVX2)
BPE_AVX2_TARGET static uint64_t bpe_gpt2_starts_avx2(const unsigned char *s)
{
    BpeAsciiMasks m, x;
    bpe_ascii_masks_avx2(s, &m, &x);
    return bpe_gpt2_starts_of(s, m, x);
}
#endif

/* Hands out the pre-tokens of s[0:n] in order, a block's starts at a time where it can:
 *     for (i = 0; i < n; i = j) { j = bpe_cut_next(&cut, i); ... s[i:j] ... } */
typedef struct {
    const unsigned char *s;
    ptrdiff_t n, base;
    uint64_t starts; /* bit k: a pre-token starts at s[base + k], not handed out yet */
    int pattern;
} BpeCutter;

static inline void bpe_cut_start(BpeCutter *c, int pattern, const unsigned char *s, ptrdiff_t n)
{
    c->s = s;
    c->n = n;
    c->base = 0;
    c->starts = 0;
    c->pattern = pattern;
}

/* bpe_cut_next when no start of the last block is left: the next block's starts, or the
 * scanner's next pre-token. Out of line, so that the loops calling bpe_cut_next keep the
 * handing out of a block's starts inline and small. */
#if defined(__GNUC__) || defined(__clang__)
__attribute__((noinline))
#endif
static ptrdiff_t bpe_cut_refill(BpeCutter *c, ptrdiff_t i)
{
    /* (a byte >= 0x80 among the next 8: the block, which stops two bytes before the first,
     * would hand out a start or two at most, and text that is mostly not ASCII paid for a
     * block per pre-token) */
    if (c->pattern == BPE_GPT2 && i + BPE_CUT_AHEAD <= c->n && !(bpe_load64(c->s + i) & BPE_BYTES(0x80))) {
#if defined(BPE_AVX2)
        uint64_t starts = (bpe_have_avx2() ? bpe_gpt2_starts_avx2(c->s + i) : bpe_gpt2_starts(c->s + i)) & ~1ull;
#else
        uint64_t starts = bpe_gpt2_starts(c->s + i) & ~1ull;
#endif
        if (starts) {
            c->base = i;
            c->starts = starts & (starts - 1);
            return i + bpe_ctz64(starts);
        }
    }
    return bpe_next(c->pattern, c->s, i, c->n);
}

/* The end of the pre-token that starts at i: where the last one handed out ended. */
static inline ptrdiff_t bpe_cut_next(BpeCutter *c, ptrdiff_t i)
{
    if (c->starts) {
        ptrdiff_t j = c->base + bpe_ctz64(c->starts);
        c->starts &= c->starts - 1;
        return j;
    }
    return bpe_cut_refill(c, i);
}

#endif
