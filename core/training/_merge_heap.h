/* The merge loop's lazy max-heap of pairs (core/training/_merge_kernel.c).
 *
 * Invariants. Every live pair of count >= threshold is in the heap (maybe more than once,
 * with stale counts: a popped item whose count is stale goes back with its real one, or
 * is dropped at 0); the rarer ones stay in the map alone until the heap runs empty and
 * refill_heap (_merge_threshold.h) lowers the threshold. Counts of existing pairs only go
 * down, so the top item, once its count is checked, is the best pair (ties to the greater
 * bytes).
 */
#ifndef BPE_MERGE_HEAP_H
#define BPE_MERGE_HEAP_H

#include "_merge_state.h"

static inline HeapItem
heap_item(MergeState *s, int64_t count, int32_t left, int32_t right)
{
    HeapItem item = {count, s->prefixes[left], s->prefixes[right], left, right};
    return item;
}

/* 1 if item x must be popped before item y. */
static inline int
heap_before(MergeState *s, const HeapItem *x, const HeapItem *y)
{
    if (x->count != y->count) {
        return x->count > y->count;
    }
    if (x->lkey != y->lkey) {
        return x->lkey > y->lkey;
    }
    if (x->left == y->left && x->rkey != y->rkey) {
        return x->rkey > y->rkey;
    }
    /* the prefixes do not decide: compare the whole tokens */
    for (int side = 0; side < 2; side++) {
        int32_t ix = side ? x->right : x->left;
        int32_t iy = side ? y->right : y->left;
        if (ix == iy) {
            continue;
        }
        PyObject *bx = s->tokens[ix], *by = s->tokens[iy];
        Py_ssize_t lx = PyBytes_GET_SIZE(bx), ly = PyBytes_GET_SIZE(by);
        int c = memcmp(PyBytes_AS_STRING(bx), PyBytes_AS_STRING(by), (size_t)(lx < ly ? lx : ly));
        if (c != 0) {
            return c > 0;
        }
        if (lx != ly) {
            return lx > ly;
        }
    }
    /* equal bytes (distinct ids can spell the same bytes): smaller ids first */
    if (x->left != y->left) {
        return x->left < y->left;
    }
    return x->right < y->right;
}

static void
heap_sift_down(MergeState *s, size_t i)
{
    HeapItem *h = s->heap;
    size_t n = s->heaplen;
    HeapItem item = h[i];
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= n) {
            break;
        }
        if (c + 1 < n && heap_before(s, &h[c + 1], &h[c])) {
            c++;
        }
        if (!heap_before(s, &h[c], &item)) {
            break;
        }
        h[i] = h[c];
        i = c;
    }
    h[i] = item;
}

/* Room for one more heap item; -1 with MemoryError set. */
static int
heap_reserve(MergeState *s)
{
    if (s->heaplen == s->heapcap) {
        size_t cap = s->heapcap ? s->heapcap * 2 : 1024;
        HeapItem *h = PyMem_Realloc(s->heap, cap * sizeof(HeapItem));
        if (h == NULL) {
            PyErr_NoMemory();
            return -1;
        }
        s->heap = h;
        s->heapcap = cap;
    }
    return 0;
}

static int
heap_push(MergeState *s, int64_t count, int32_t left, int32_t right)
{
    if (heap_reserve(s) < 0) {
        return -1;
    }
    HeapItem item = heap_item(s, count, left, right);
    size_t i = s->heaplen++;
    while (i > 0) {
        size_t p = (i - 1) / 2;
        if (!heap_before(s, &item, &s->heap[p])) {
            break;
        }
        s->heap[i] = s->heap[p];
        i = p;
    }
    s->heap[i] = item;
    return 0;
}

/* Append key to a growing uint64 list; -1 with MemoryError set. */
static int
keys_append(uint64_t **list, size_t *n, size_t *cap, uint64_t key)
{
    if (*n == *cap) {
        size_t c = *cap ? *cap * 2 : 1024;
        uint64_t *p = PyMem_Realloc(*list, c * sizeof(uint64_t));
        if (p == NULL) {
            PyErr_NoMemory();
            return -1;
        }
        *list = p;
        *cap = c;
    }
    (*list)[(*n)++] = key;
    return 0;
}


/* The highest count of a pair in the map (0 when there is none). */
static int64_t
best_count(const MergeState *s)
{
    int64_t best = 0;
    for (size_t j = 0; j < s->map.cap; j++) {
        best = s->map.slots[j].key != EMPTY_KEY && s->map.slots[j].count > best ? s->map.slots[j].count : best;
    }
    return best;
}

/* The heap made from the map: every live pair of count >= threshold, heapified. -1 with
 * MemoryError set. */
static int
heap_build(MergeState *s)
{
    s->heaplen = 0;
    for (size_t j = 0; j < s->map.cap; j++) {
        const PairEntry *e = &s->map.slots[j];
        if (e->key == EMPTY_KEY || e->count <= 0 || e->count < s->threshold) {
            continue;
        }
        if (heap_reserve(s) < 0) {
            return -1;
        }
        s->heap[s->heaplen++] = heap_item(s, e->count, key_left(e->key), key_right(e->key));
    }
    for (size_t i = s->heaplen / 2; i-- > 0;) {
        heap_sift_down(s, i);
    }
    return 0;
}

/* A pair of this count: into the heap, or, below the threshold, left in the map alone
 * (refill_heap, _merge_threshold.h, finds it there). */
static int
heap_offer(MergeState *s, int64_t count, int32_t left, int32_t right)
{
    return count >= s->threshold ? heap_push(s, count, left, right) : 0;
}

static void
heap_pop(MergeState *s)
{
    s->heaplen--;
    if (s->heaplen > 0) {
        s->heap[0] = s->heap[s->heaplen];
        heap_sift_down(s, 0);
    }
}

#endif /* BPE_MERGE_HEAP_H */
