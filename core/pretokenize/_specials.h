/* Finding special tokens in bytes: the leftmost match, the longest first on a tie, as
 * core.pretokenize.specials.SpecialMatcher does in Python.
 */
#ifndef BPE_SPECIALS_H
#define BPE_SPECIALS_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

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

#endif /* BPE_SPECIALS_H */
