/* Whether a text is well-formed UTF-8, 32 bytes at a time (AVX2, where the processor has it).
 *
 * Counting reports the bytes of a text that are not UTF-8 (bpe_invalid_bytes), which would
 * mean decoding every character again beside the scanner. Nearly every text is valid, so it
 * is checked as a whole first, by the lookup algorithm of Keiser and Lemire ("Validating
 * UTF-8 in less than one instruction per byte", 2021; simdjson's): each byte's error
 * bits from three 16-entry tables (the high and low nibble of the byte before it, the high
 * nibble of the byte), and'ed, flag every bad pair of bytes, and the bytes two and three
 * after a lead of three or four bytes must be continuations. A block of ASCII skips the
 * tables: only a sequence left unfinished by the block before is an error there. Only a
 * text found invalid is decoded character by character.
 */
#ifndef BPE_UTF8_VALID_H
#define BPE_UTF8_VALID_H

#include <stddef.h>
#include <stdint.h>
#include "_simd.h"

#if defined(BPE_AVX2)

#define BPE_U8_TOO_SHORT (1 << 0)  /* 11______ 0_______ or 11______ 11______ */
#define BPE_U8_TOO_LONG (1 << 1)   /* 0_______ 10______ */
#define BPE_U8_OVERLONG_3 (1 << 2) /* 11100000 100_____ */
#define BPE_U8_TOO_LARGE (1 << 3)  /* 11110100 1001____ and above */
#define BPE_U8_SURROGATE (1 << 4)  /* 11101101 101_____ */
#define BPE_U8_OVERLONG_2 (1 << 5) /* 1100000_ 10______ */
#define BPE_U8_TOO_LARGE_1000 (1 << 6) /* 11110101 1000____ and above */
#define BPE_U8_OVERLONG_4 (1 << 6) /* 11110000 1000____ */
#define BPE_U8_TWO_CONTS (1 << 7)  /* 10______ 10______ */
#define BPE_U8_CARRY (BPE_U8_TOO_SHORT | BPE_U8_TOO_LONG | BPE_U8_TWO_CONTS)

/* The bytes of `v` looked up in a 16-entry table (each byte < 16). */
#define BPE_U8_LOOKUP(v, t0, t1, t2, t3, t4, t5, t6, t7, t8, t9, t10, t11, t12, t13, t14, t15)                     \
    _mm256_shuffle_epi8(_mm256_setr_epi8(t0, t1, t2, t3, t4, t5, t6, t7, t8, t9, t10, t11, t12, t13, t14, t15, t0,   \
                                         t1, t2, t3, t4, t5, t6, t7, t8, t9, t10, t11, t12, t13, t14, t15),          \
                        v)

/* The error bits of block `in` after block `prev` (0 where the bytes are well formed). */
BPE_AVX2_TARGET static inline __m256i bpe_utf8_block_errors(__m256i in, __m256i prev)
{
    const __m256i low = _mm256_set1_epi8(0x0F);
    __m256i before = _mm256_permute2x128_si256(prev, in, 0x21); /* prev's high half, in's low half */
    __m256i prev1 = _mm256_alignr_epi8(in, before, 15), prev2 = _mm256_alignr_epi8(in, before, 14),
            prev3 = _mm256_alignr_epi8(in, before, 13);
    __m256i byte_1_high = BPE_U8_LOOKUP(
        _mm256_and_si256(_mm256_srli_epi16(prev1, 4), low), BPE_U8_TOO_LONG, BPE_U8_TOO_LONG, BPE_U8_TOO_LONG,
        BPE_U8_TOO_LONG, BPE_U8_TOO_LONG, BPE_U8_TOO_LONG, BPE_U8_TOO_LONG, BPE_U8_TOO_LONG, BPE_U8_TWO_CONTS,
        BPE_U8_TWO_CONTS, BPE_U8_TWO_CONTS, BPE_U8_TWO_CONTS, BPE_U8_TOO_SHORT | BPE_U8_OVERLONG_2, BPE_U8_TOO_SHORT,
        BPE_U8_TOO_SHORT | BPE_U8_OVERLONG_3 | BPE_U8_SURROGATE,
        BPE_U8_TOO_SHORT | BPE_U8_TOO_LARGE | BPE_U8_TOO_LARGE_1000 | BPE_U8_OVERLONG_4);
    __m256i byte_1_low = BPE_U8_LOOKUP(
        _mm256_and_si256(prev1, low), BPE_U8_CARRY | BPE_U8_OVERLONG_3 | BPE_U8_OVERLONG_2 | BPE_U8_OVERLONG_4,
        BPE_U8_CARRY | BPE_U8_OVERLONG_2, BPE_U8_CARRY, BPE_U8_CARRY, BPE_U8_CARRY | BPE_U8_TOO_LARGE,
        BPE_U8_CARRY | BPE_U8_TOO_LARGE | BPE_U8_TOO_LARGE_1000, BPE_U8_CARRY | BPE_U8_TOO_LARGE | BPE_U8_TOO_LARGE_1000,
        BPE_U8_CARRY | BPE_U8_TOO_LARGE | BPE_U8_TOO_LARGE_1000, BPE_U8_CARRY | BPE_U8_TOO_LARGE | BPE_U8_TOO_LARGE_1000,
        BPE_U8_CARRY | BPE_U8_TOO_LARGE | BPE_U8_TOO_LARGE_1000, BPE_U8_CARRY | BPE_U8_TOO_LARGE | BPE_U8_TOO_LARGE_1000,
        BPE_U8_CARRY | BPE_U8_TOO_LARGE | BPE_U8_TOO_LARGE_1000, BPE_U8_CARRY | BPE_U8_TOO_LARGE | BPE_U8_TOO_LARGE_1000,
        BPE_U8_CARRY | BPE_U8_TOO_LARGE | BPE_U8_TOO_LARGE_1000 | BPE_U8_SURROGATE,
        BPE_U8_CARRY | BPE_U8_TOO_LARGE | BPE_U8_TOO_LARGE_1000, BPE_U8_CARRY | BPE_U8_TOO_LARGE | BPE_U8_TOO_LARGE_1000);
    __m256i byte_2_high = BPE_U8_LOOKUP(
        _mm256_and_si256(_mm256_srli_epi16(in, 4), low), BPE_U8_TOO_SHORT, BPE_U8_TOO_SHORT, BPE_U8_TOO_SHORT,
        BPE_U8_TOO_SHORT, BPE_U8_TOO_SHORT, BPE_U8_TOO_SHORT, BPE_U8_TOO_SHORT, BPE_U8_TOO_SHORT,
        BPE_U8_TOO_LONG | BPE_U8_OVERLONG_2 | BPE_U8_TWO_CONTS | BPE_U8_OVERLONG_3 | BPE_U8_TOO_LARGE_1000 | BPE_U8_OVERLONG_4,
        BPE_U8_TOO_LONG | BPE_U8_OVERLONG_2 | BPE_U8_TWO_CONTS | BPE_U8_OVERLONG_3 | BPE_U8_TOO_LARGE,
        BPE_U8_TOO_LONG | BPE_U8_OVERLONG_2 | BPE_U8_TWO_CONTS | BPE_U8_SURROGATE | BPE_U8_TOO_LARGE,
        BPE_U8_TOO_LONG | BPE_U8_OVERLONG_2 | BPE_U8_TWO_CONTS | BPE_U8_SURROGATE | BPE_U8_TOO_LARGE,
        BPE_U8_TOO_SHORT, BPE_U8_TOO_SHORT, BPE_U8_TOO_SHORT, BPE_U8_TOO_SHORT);
    __m256i special = _mm256_and_si256(_mm256_and_si256(byte_1_high, byte_1_low), byte_2_high);
    /* the second and third byte after a lead of 3 (111_____) or 4 (1111____) must be continuations */
    __m256i third = _mm256_subs_epu8(prev2, _mm256_set1_epi8((char)(0xE0 - 0x80)));
    __m256i fourth = _mm256_subs_epu8(prev3, _mm256_set1_epi8((char)(0xF0 - 0x80)));
    __m256i must_continue = _mm256_and_si256(_mm256_or_si256(third, fourth), _mm256_set1_epi8((char)0x80));
    return _mm256_xor_si256(must_continue, special);
}

/* Nonzero bytes where block `in` ends in a sequence it does not finish (a lead of 2 bytes or
 * more in its last byte, of 3 or 4 in the one before, of 4 in the one before that). */
BPE_AVX2_TARGET static inline __m256i bpe_utf8_unfinished(__m256i in)
{
    const __m256i most = _mm256_setr_epi8(-1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1,
                                          -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, (char)(0xF0 - 1), (char)(0xE0 - 1),
                                          (char)(0xC0 - 1));
    return _mm256_subs_epu8(in, most);
}

BPE_AVX2_TARGET static inline int bpe_utf8_valid_avx2(const unsigned char *s, ptrdiff_t n)
{
    __m256i prev = _mm256_setzero_si256(), error = _mm256_setzero_si256(), unfinished = _mm256_setzero_si256();
    unsigned char last[32];
    for (ptrdiff_t i = 0; i < n; i += 32) {
        __m256i in;
        if (i + 32 <= n) {
            in = _mm256_loadu_si256((const __m256i *)(s + i));
        } else { /* the last bytes, then ASCII zeros (which finish no sequence) */
            memset(last, 0, sizeof(last));
            memcpy(last, s + i, (size_t)(n - i));
            in = _mm256_loadu_si256((const __m256i *)last);
        }
        if (!_mm256_movemask_epi8(in)) { /* ASCII: only what the block before left unfinished is wrong */
            error = _mm256_or_si256(error, unfinished);
            unfinished = _mm256_setzero_si256();
        } else {
            error = _mm256_or_si256(error, bpe_utf8_block_errors(in, prev));
            unfinished = bpe_utf8_unfinished(in);
        }
        prev = in;
    }
    error = _mm256_or_si256(error, unfinished); /* (the end finishes nothing) */
    return _mm256_testz_si256(error, error);
}

/* 1: s[0:n] is well-formed UTF-8; 0: it is not, or this processor cannot tell fast. */
static inline int bpe_utf8_valid(const unsigned char *s, ptrdiff_t n)
{
    return bpe_have_avx2() && bpe_utf8_valid_avx2(s, n);
}
#else
static inline int bpe_utf8_valid(const unsigned char *s, ptrdiff_t n)
{
    (void)s;
    (void)n;
    return 0;
}
#endif

#endif
