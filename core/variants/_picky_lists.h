/* Word lists of core/variants/_picky_kernel.c: the words that hold one pair, or one token.
 *
 * A list is one uint64_t: 0 when empty; one word inline (bit 0 set, the word from bit 3
 * up: most pairs late in training are held by one word, and need no array); or a pointer
 * to an int32 array {n, cap, gone, words[cap]}, which doubles when full. Bits 1 and 2 are
 * the owner's flags (a pair's raised and queued), kept by every function here.
 * The invariant, kept with the kernel: every word that holds the owner is listed; the
 * other entries of an array (words that hold it no more, and repeats: a push checks only
 * the last word) are at most `gone`, which the kernel counts up (list_note) at each event
 * that may leave one: a listed word losing an occurrence of the owner, or a word listed
 * again that may be listed already. An array of LIST_COMPACT_MIN words or more whose
 * `gone` reaches half of it is due: the kernel compacts it at the end of the merge, when
 * every word is as the merge left it, to the words that hold the owner, once each
 * (list_compacted: `gone` back to 0, the room cut to twice them when it is four times).
 * So between merges more than half of such an array is words that hold the owner, and a
 * compaction reads at most twice the events that made it due.
 */
#ifndef PICKY_LISTS_H
#define PICKY_LISTS_H

#include <Python.h>
#include <stdint.h>

typedef uint64_t WordList;

#define LIST_INLINE ((uint64_t)1)
#define LIST_FLAGS ((uint64_t)6) /* the owner's */
#define LIST_COMPACT_MIN 8
enum { LIST_N, LIST_CAP, LIST_GONE, LIST_HEADER };

static inline int32_t *list_array(WordList l)
{
    return (l & LIST_INLINE) ? NULL : (int32_t *)(uintptr_t)(l & ~(uint64_t)7);
}

static inline WordList list_one(int32_t w, WordList flags)
{
    return (uint64_t)(uint32_t)w << 3 | LIST_INLINE | (flags & LIST_FLAGS);
}

/* The words of l: a pointer to them (to *one for an inline word) and how many. */
static inline const int32_t *list_words(WordList l, int32_t *one, int32_t *n)
{
    if (l & LIST_INLINE) {
        *one = (int32_t)(l >> 3);
        *n = 1;
        return one;
    }
    int32_t *a = list_array(l);
    *n = a != NULL ? a[LIST_N] : 0;
    return a != NULL ? a + LIST_HEADER : NULL;
}

/* The list emptied (its array freed), its flags kept. */
static inline void list_clear(WordList *l)
{
    PyMem_RawFree(list_array(*l));
    *l &= LIST_FLAGS;
}

/* l's array with room for cap words (its words kept: n <= cap); -1 on memory error, l as it was. */
static int list_resize(WordList *l, int32_t cap)
{
    int32_t *a = list_array(*l), *p;
    if (cap > INT32_MAX - LIST_HEADER ||
        (p = PyMem_RawRealloc(a, ((size_t)cap + LIST_HEADER) * sizeof(int32_t))) == NULL) return -1;
    if (a == NULL) p[LIST_N] = p[LIST_GONE] = 0;
    p[LIST_CAP] = cap;
    *l = (uint64_t)(uintptr_t)p | (*l & LIST_FLAGS);
    return 0;
}

/* Append w unless it is the last word listed (arrays double when full); -1 on memory error. */
static int list_push(WordList *l, int32_t w)
{
    if ((*l & ~LIST_FLAGS) == 0) {
        *l = list_one(w, *l);
        return 0;
    }
    if (*l & LIST_INLINE) {
        int32_t v = (int32_t)(*l >> 3);
        WordList grown = *l & LIST_FLAGS;
        if (v == w) return 0;
        if (list_resize(&grown, 4) < 0) return -1;
        int32_t *a = list_array(grown);
        a[LIST_N] = 2;
        a[LIST_HEADER] = v;
        a[LIST_HEADER + 1] = w;
        *l = grown;
        return 0;
    }
    int32_t *a = list_array(*l), n = a[LIST_N];
    if (a[LIST_HEADER + n - 1] == w) return 0;
    if (n == a[LIST_CAP]) {
        if (n > INT32_MAX / 2 || list_resize(l, 2 * n) < 0) return -1;
        a = list_array(*l);
    }
    a[LIST_HEADER + n] = w;
    a[LIST_N] = n + 1;
    return 0;
}

/* Whether l is due for compaction. */
static inline int list_due(WordList l)
{
    int32_t *a = list_array(l);
    return a != NULL && a[LIST_N] >= LIST_COMPACT_MIN && a[LIST_GONE] >= a[LIST_N] / 2;
}

/* Count an event that may leave a stale entry or a repeat in l; whether l is due. */
static inline int list_note(WordList l)
{
    int32_t *a = list_array(l);
    if (a == NULL) return 0;
    a[LIST_GONE] += a[LIST_GONE] < INT32_MAX;
    return list_due(l);
}

/* l after the caller kept k of its array's words at its front (the words that hold its
 * owner, once each): inline if one, empty if none; `gone` 0, the room cut to 2k (at
 * least 4) when it is 4k or more. */
static void list_compacted(WordList *l, int32_t k)
{
    int32_t *a = list_array(*l);
    if (k <= 1) {
        WordList one = k == 1 ? list_one(a[LIST_HEADER], *l) : *l & LIST_FLAGS;
        PyMem_RawFree(a);
        *l = one;
        return;
    }
    a[LIST_N] = k;
    a[LIST_GONE] = 0;
    if (a[LIST_CAP] > 4 && a[LIST_CAP] / 4 >= k) (void)list_resize(l, 2 * k > 4 ? 2 * k : 4); /* (kept if it fails) */
}

/* l's array cut to its words (after the lists are made at the start). */
static void list_fit(WordList *l)
{
    int32_t *a = list_array(*l);
    if (a != NULL && a[LIST_N] < a[LIST_CAP]) (void)list_resize(l, a[LIST_N]);
}

#endif
