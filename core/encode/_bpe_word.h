/* BPE of one pre-token (core/encode/_bpe_kernel.c): merge_word, exactly what
 * PieceEncoder.bpe gives.
 *
 * Invariant. The adjacent pair with the lowest rank merges first, the leftmost on ties,
 * until no pair has a merge; short words scan their candidates, long ones keep a heap of
 * (rank, position) so a huge run of one character stays O(n log n).
 */
#ifndef BPE_WORD_H
#define BPE_WORD_H

#include "_bpe_table.h"

/* merge_short's working memory: each symbol's rank with the next one, the links, and the
 * candidates (the symbols whose rank is not NO_RANK, in no order; slot: where each is in
 * cand, -1 when it is not). */
typedef struct {
    int32_t ranks[LONG_WORD];
    int16_t next[LONG_WORD], prev[LONG_WORD];
    int16_t cand[LONG_WORD], slot[LONG_WORD];
} Scratch;

/* Set the rank of the symbol at pos, keeping the candidates (m of them) up to date. */
static inline void
set_rank(Scratch *w, Py_ssize_t pos, int32_t rank, int *m)
{
    int16_t s = w->slot[pos];
    w->ranks[pos] = rank;
    if (rank != NO_RANK) {
        if (s < 0) {
            w->slot[pos] = (int16_t)*m;
            w->cand[(*m)++] = (int16_t)pos;
        }
    } else if (s >= 0) { /* the last candidate takes its place */
        int16_t last = w->cand[--(*m)];
        w->cand[s] = last;
        w->slot[last] = s;
        w->slot[pos] = -1;
    }
}

/* Merge one short word in place: ids[0:n] (the ids of bytes[0:n]) -> ids[0:return value].
 *
 * Symbols stay where they started: a merge joins the symbol at `at` with the next live one,
 * which dies, so nothing moves until the survivors are packed at the end. The next merge
 * is the lowest rank among the candidates, the leftmost on ties: a word that cannot merge
 * much (most pairs of an unseen word have no merge) has few candidates to look through. */
static Py_ssize_t
merge_short(const BpeTable *t, const unsigned char *bytes, int64_t *ids, Scratch *w, Py_ssize_t n)
{
    int32_t *ranks = w->ranks;
    int16_t *next = w->next, *prev = w->prev, *cand = w->cand, *slot = w->slot;
    int m = 0;
    for (Py_ssize_t i = 0; i + 1 < n; i++) {
        int32_t r = t->byte_ranks[bytes[i] << 8 | bytes[i + 1]];
        ranks[i] = r;
        next[i] = (int16_t)(i + 1);
        prev[i] = (int16_t)(i - 1);
        int has = r != NO_RANK; /* (no branch: whether a new word's pair merges is not predictable) */
        slot[i] = has ? (int16_t)m : (int16_t)-1;
        cand[m] = (int16_t)i;
        m += has;
    }
    if (m == 0) {
        return n;
    }
    ranks[n - 1] = NO_RANK;
    next[n - 1] = (int16_t)n;
    prev[n - 1] = (int16_t)(n - 2);
    slot[n - 1] = -1;
    while (m > 0) {
        uint64_t low = UINT64_MAX; /* the lowest (rank, position), one word compared: a
                                    * conditional move, where a branch on the ranks was
                                    * mispredicted on the words of 17 to 256 bytes */
        for (int c = 0; c < m; c++) {
            uint64_t p = (uint64_t)cand[c];
            uint64_t key = (uint64_t)(uint32_t)ranks[p] << 16 | p;
            low = key < low ? key : low;
        }
        Py_ssize_t at = (Py_ssize_t)(low & 0xFFFF);
        Py_ssize_t j = next[at], k = next[j], h = prev[at];
        ids[at] = t->new_ids[ranks[at]];
        set_rank(w, j, NO_RANK, &m);
        next[at] = (int16_t)k;
        if (k < n) {
            prev[k] = (int16_t)at;
            set_rank(w, at, rank_of(t, ids[at], ids[k]), &m);
        } else {
            set_rank(w, at, NO_RANK, &m);
        }
        if (h >= 0) {
            set_rank(w, h, rank_of(t, ids[h], ids[at]), &m);
        }
    }
    Py_ssize_t out = 0;
    for (Py_ssize_t i = 0; i < n; i = next[i]) {
        ids[out++] = ids[i];
    }
    return out;
}

/* Merge a word of 1 to TINY_WORD bytes into ids (room for n), as merge_short does, its
 * bytes' ids and first ranks read in one pass, the way tiktoken's byte_pair_merge does:
 * the parts and each one's rank with the next kept in order in two small arrays, the
 * lowest rank (the leftmost on ties: a strict comparison) found by a scan, and a merge
 * closing the gap by moving the parts after it. For the short words that most new
 * pre-tokens are, that is fewer instructions and far fewer mispredicted branches than the
 * candidates and links of merge_short (by cachegrind). */
#define TINY_WORD 16

static Py_ssize_t
merge_tiny(const BpeTable *t, const unsigned char *bytes, int64_t *ids, Py_ssize_t n)
{
    int32_t ranks[TINY_WORD];
    for (int i = 0; i < TINY_WORD; i++) {
        ranks[i] = NO_RANK;
    }
    const int lanes = n <= 8 ? 8 : TINY_WORD; /* ranks scanned each merge, past the word's (NO_RANK
                                               * there): a loop of fixed length, whose end the
                                               * branch predictor knows */
    unsigned before = bytes[0]; /* ids and first ranks in one pass over the bytes */
    ids[0] = (int64_t)t->byte_ids[before];
    for (Py_ssize_t i = 1; i < n; i++) {
        unsigned b = bytes[i];
        ids[i] = t->byte_ids[b];
        ranks[i - 1] = t->byte_ranks[before << 8 | b];
        before = b;
    }
    while (n > 1) {
        /* the lowest (rank, position): one word compared, so a conditional move, not a
         * branch on the ranks (which mispredicted often) */
        uint64_t low = UINT64_MAX;
        for (int i = 0; i < lanes; i++) {
            uint64_t key = (uint64_t)(uint32_t)ranks[i] << 32 | (uint64_t)i;
            low = key < low ? key : low;
        }
        int32_t best = (int32_t)(low >> 32);
        Py_ssize_t at = (Py_ssize_t)(low & 0xFFFFFFFF);
        if (best == NO_RANK) {
            break;
        }
        ids[at] = t->new_ids[best];
        n--; /* the part at + 1 is gone: the ones after it move down */
        for (Py_ssize_t i = at + 1; i < n; i++) {
            ids[i] = ids[i + 1];
        }
        for (Py_ssize_t i = at + 1; i < n; i++) {
            ranks[i] = ranks[i + 1];
        }
        ranks[at] = at + 1 < n ? rank_of(t, ids[at], ids[at + 1]) : NO_RANK;
        if (at > 0) {
            ranks[at - 1] = rank_of(t, ids[at - 1], ids[at]);
        }
    }
    return n;
}

/* ---------- long words: a linked list of symbols and a heap of (rank, position) ---------- */

/* A heap entry is rank << 32 | position in one uint64, so comparing entries compares the
 * rank, then the position (the leftmost on ties). It holds no ids: an entry is stale when
 * its left symbol is gone or the pair now there has another rank (a rank names one pair).
 * With 32-bit links that is 8 bytes per initial pair, 4 + 4 per symbol for the links: a
 * huge run of one character takes ~24 bytes per byte with its ids (issue 23 point 6), where
 * entries holding both ids and 64-bit links took ~56. */
typedef uint64_t HeapItem;

#define LONG_WORD_MAX ((Py_ssize_t)INT32_MAX - 1)
#define DEAD (-2)

static void
heap_push(HeapItem *heap, Py_ssize_t *size, HeapItem item)
{
    Py_ssize_t i = (*size)++;
    while (i > 0) {
        Py_ssize_t parent = (i - 1) / 2;
        if (item >= heap[parent]) {
            break;
        }
        heap[i] = heap[parent];
        i = parent;
    }
    heap[i] = item;
}

static HeapItem
heap_pop(HeapItem *heap, Py_ssize_t *size)
{
    HeapItem top = heap[0];
    HeapItem last = heap[--(*size)];
    Py_ssize_t i = 0, n = *size;
    for (;;) {
        Py_ssize_t child = 2 * i + 1;
        if (child >= n) {
            break;
        }
        if (child + 1 < n && heap[child + 1] < heap[child]) {
            child++;
        }
        if (heap[child] >= last) {
            break;
        }
        heap[i] = heap[child];
        i = child;
    }
    if (n > 0) {
        heap[i] = last;
    }
    return top;
}

static inline HeapItem
heap_item(int32_t rank, int32_t pos)
{
    return (uint64_t)(uint32_t)rank << 32 | (uint32_t)pos;
}

/* Merge one long word in place, as merge_short does; -1 on running out of memory or a
 * word of 2^31 bytes or more (no exception set: it may run without the GIL). */
static Py_ssize_t
merge_long(const BpeTable *t, const unsigned char *bytes, int64_t *ids, Py_ssize_t n)
{
    if (n > LONG_WORD_MAX) {
        return -1;
    }
    /* Each merge pushes at most two entries and pops one, on top of the n - 1 initial
     * ones; the heap grows when it must (a merge also makes a symbol fewer). */
    int32_t *next = PyMem_RawMalloc(n * sizeof(int32_t));
    int32_t *prev = PyMem_RawMalloc(n * sizeof(int32_t));
    Py_ssize_t room = n + 16;
    HeapItem *heap = PyMem_RawMalloc(room * sizeof(HeapItem));
    if (next == NULL || prev == NULL || heap == NULL) {
        goto fail;
    }
    Py_ssize_t size = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        next[i] = (int32_t)(i + 1);
        prev[i] = (int32_t)(i - 1);
        if (i + 1 < n) {
            int32_t r = t->byte_ranks[bytes[i] << 8 | bytes[i + 1]];
            if (r != NO_RANK) {
                heap[size++] = heap_item(r, (int32_t)i); /* increasing positions... */
            }
        }
    }
    /* ...so sift down from the middle: a heap in O(n) */
    for (Py_ssize_t k = size / 2; k-- > 0;) {
        HeapItem item = heap[k];
        Py_ssize_t i = k;
        for (;;) {
            Py_ssize_t child = 2 * i + 1;
            if (child >= size) {
                break;
            }
            if (child + 1 < size && heap[child + 1] < heap[child]) {
                child++;
            }
            if (heap[child] >= item) {
                break;
            }
            heap[i] = heap[child];
            i = child;
        }
        heap[i] = item;
    }
    while (size > 0) {
        HeapItem top = heap_pop(heap, &size);
        int32_t rank = (int32_t)(top >> 32);
        Py_ssize_t i = (Py_ssize_t)(uint32_t)top, j = next[i];
        if (prev[i] == DEAD || j >= n || rank_of(t, ids[i], ids[j]) != rank) {
            continue; /* stale */
        }
        ids[i] = t->new_ids[rank];
        prev[j] = DEAD;
        Py_ssize_t k = next[j];
        next[i] = (int32_t)k;
        if (size + 2 > room) {
            Py_ssize_t more = room + room / 2 + 16;
            HeapItem *grown = PyMem_RawRealloc(heap, more * sizeof(HeapItem));
            if (grown == NULL) {
                goto fail;
            }
            heap = grown;
            room = more;
        }
        if (k < n) {
            prev[k] = (int32_t)i;
            int32_t r = rank_of(t, ids[i], ids[k]);
            if (r != NO_RANK) {
                heap_push(heap, &size, heap_item(r, (int32_t)i));
            }
        }
        Py_ssize_t h = prev[i];
        if (h >= 0) {
            int32_t r = rank_of(t, ids[h], ids[i]);
            if (r != NO_RANK) {
                heap_push(heap, &size, heap_item(r, (int32_t)h));
            }
        }
    }
    Py_ssize_t out = 0;
    for (Py_ssize_t i = 0; i < n; i = next[i]) {
        ids[out++] = ids[i];
    }
    PyMem_RawFree(next);
    PyMem_RawFree(prev);
    PyMem_RawFree(heap);
    return out;
fail:
    PyMem_RawFree(next);
    PyMem_RawFree(prev);
    PyMem_RawFree(heap);
    return -1;
}

/* Merge the word bytes[0:n] into out (room for n ids); returns its number of ids, or -1
 * when out of memory (no exception set). */
static Py_ssize_t
merge_word(const BpeTable *t, const unsigned char *bytes, Py_ssize_t n, int64_t *out, Scratch *scratch)
{
    if (n <= TINY_WORD) {
        return n ? merge_tiny(t, bytes, out, n) : 0;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        out[i] = t->byte_ids[bytes[i]];
    }
    return n <= LONG_WORD ? merge_short(t, bytes, out, scratch, n) : merge_long(t, bytes, out, n);
}

#endif /* BPE_WORD_H */
