/* The merge loop's lazy max-heap of pairs (core/training/_merge_kernel.c).
 *
 * Invariants. Every live pair of count >= threshold is in the heap (maybe more than once,
 * with stale counts: a popped item whose count is stale goes back with its real one, or
 * is dropped at 0); the rarer ones wait as bare keys in `low` until the heap runs empty
 * and refill_heap lowers the threshold. Counts of existing pairs only go down, so the top
 * item, once its count is checked, is the best pair (ties to the greater bytes).
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


/* A pair of this count: into the heap, or to the low list below the threshold. A full
 * low list first drops the pairs gone since they came (and grows only if that frees
 * less than a quarter). */
static int
heap_offer(MergeState *s, int64_t count, int32_t left, int32_t right)
{
    if (count >= s->threshold) {
        return heap_push(s, count, left, right);
    }
    if (s->nlow == s->caplow && s->nlow > 0) {
        size_t keep = 0;
        for (size_t k = 0; k < s->nlow; k++) {
            PairEntry *e = map_find(&s->map, s->low[k]);
            if (e != NULL && e->count > 0) {
                s->low[keep++] = s->low[k];
            }
        }
        s->nlow = keep;
        if (keep > s->caplow / 4 * 3) { /* little gone: room for twice as many before the next pass */
            uint64_t *p = PyMem_Realloc(s->low, 2 * s->caplow * sizeof(uint64_t));
            if (p == NULL) {
                PyErr_NoMemory();
                return -1;
            }
            s->low = p;
            s->caplow *= 2;
        }
    }
    return keys_append(&s->low, &s->nlow, &s->caplow, pair_key(left, right));
}

/* The heap is empty, or its best pair's count (`ceiling`) is below the threshold: lower
 * the threshold (to at most `ceiling`, so that every pair of that count is in the heap
 * when it is chosen) and move the low pairs that reach it into the heap (pairs gone
 * meanwhile are dropped). -1 with MemoryError set. */
static int
refill_heap(MergeState *s, int64_t ceiling)
{
    if (s->nlow == 0) {
        s->threshold = 0;
        return 0;
    }
    for (int first = 1; first || (s->heaplen == 0 && s->nlow > 0); first = 0) {
        s->threshold = s->threshold > 16 ? s->threshold / 16 : 0;
        if (s->threshold > ceiling) {
            s->threshold = ceiling;
        }
        size_t keep = 0;
        for (size_t k = 0; k < s->nlow; k++) {
            uint64_t key = s->low[k];
            PairEntry *e = map_find(&s->map, key);
            int64_t c = e != NULL ? e->count : 0;
            if (c <= 0) {
                continue;
            }
            if (c >= s->threshold) {
                if (heap_reserve(s) < 0) {
                    return -1;
                }
                s->heap[s->heaplen++] = heap_item(s, c, key_left(key), key_right(key));
            } else {
                s->low[keep++] = key;
            }
        }
        s->nlow = keep;
        for (size_t i = s->heaplen / 2; i-- > 0;) {
            heap_sift_down(s, i);
        }
    }
    return 0;
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
