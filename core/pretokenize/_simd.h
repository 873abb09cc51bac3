/* Which SIMD paths the native code may take, decided once per process.
 *
 * Shared by the scanner (_scanner.h), the UTF-8 check (_utf8_valid.h) and the count table.
 */
#ifndef BPE_SIMD_H
#define BPE_SIMD_H

#include <stdlib.h>
#include <string.h>

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

#endif /* BPE_SIMD_H */
