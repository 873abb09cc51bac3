/* The pair map of core/variants/_picky_kernel.c: pair -> (count, word list), open addressing.
 *
 * 24-byte entries (key, count, word list: _picky_lists.h), linear probing from a home
 * slot that a multiply-shift of the hash picks (any capacity, not only powers of two).
 * Keys are (left + 1) << 32 | right (pair_key): never 0, so a zeroed slot is free, and
 * bit 63 is clear (ids are below 2**31 - 1). The invariants: at most three quarters of
 * the slots are used; every entry sits in the run of used slots that starts at its home
 * slot (no tombstones: map_delete shifts back the entries after it). The map grows by
 * half in place (map_grow): the larger table is the old one reallocated (for a large
 * table the system moves its pages: nothing copied), so growing needs 1.5 times the
 * table, not 1 + 1.5 times, at what is often the peak of a run.
 */
#ifndef PICKY_MAP_H
#define PICKY_MAP_H

#include <Python.h>
#include <stdint.h>
#include <string.h>
#include "_picky_lists.h"

#define EMPTY_KEY 0
#define PENDING_KEY ((uint64_t)1 << 63) /* an entry waiting to be placed again in map_grow */

typedef struct {
    uint64_t key;    /* pair_key(left, right), EMPTY_KEY when free */
    int64_t count;   /* weighted occurrences in the words now */
    WordList words;  /* the words that may hold it; flags PAIR_RAISED, PAIR_QUEUED */
} Pair;

typedef struct { Pair *slots; size_t cap, used; } PairMap;

static inline uint64_t pair_key(int32_t left, int32_t right)
{
    return ((uint64_t)(uint32_t)left + 1) << 32 | (uint32_t)right;
}

static inline int32_t key_left(uint64_t key) { return (int32_t)((key >> 32) - 1); }
static inline int32_t key_right(uint64_t key) { return (int32_t)(uint32_t)key; }

static inline uint64_t hash_key(uint64_t key)
{
    key = (key ^ key >> 33) * 0xff51afd7ed558ccdULL;
    key = (key ^ key >> 33) * 0xc4ceb9fe1a85ec53ULL;
    return key ^ key >> 33;
}

static inline size_t home_slot(uint64_t hash, size_t cap)
{
#ifdef __SIZEOF_INT128__
    return (size_t)(((unsigned __int128)hash * cap) >> 64);
#else
    return (size_t)(hash % cap);
#endif
}

static inline size_t next_slot(size_t j, size_t cap) { return j + 1 == cap ? 0 : j + 1; }

/* An empty map of cap slots; -1 on memory error. */
static int map_init(PairMap *m, size_t cap)
{
    m->slots = PyMem_RawCalloc(cap, sizeof(Pair));
    m->cap = m->slots != NULL ? cap : 0;
    m->used = 0;
    return m->slots != NULL ? 0 : -1;
}

/* The slot holding key, or the free slot where it would go. */
static inline Pair *map_slot(const PairMap *m, uint64_t key)
{
    size_t cap = m->cap, j = home_slot(hash_key(key), cap);
    while (m->slots[j].key != key && m->slots[j].key != EMPTY_KEY) j = next_slot(j, cap);
    return &m->slots[j];
}

static inline Pair *map_find(const PairMap *m, uint64_t key)
{
    Pair *e = map_slot(m, key);
    return e->key == key ? e : NULL;
}

/* The map grown by half, in place: the table reallocated, its entries packed at its end,
 * marked pending and placed again one by one (one whose probe meets a pending entry takes
 * its slot and places that one next, so placed entries only ever skip placed ones and
 * the probe runs hold). -1 on memory error, the map as it was. */
static int map_grow(PairMap *m)
{
    size_t old_cap = m->cap, cap = old_cap + old_cap / 2;
    Pair *slots = PyMem_RawRealloc(m->slots, cap * sizeof(Pair));
    if (slots == NULL) return -1;
    size_t w = cap;
    for (size_t i = old_cap; i-- > 0;) { /* w - 1 >= i: an entry never lands on an unread one */
        if (slots[i].key != EMPTY_KEY) {
            slots[--w] = slots[i];
            slots[w].key |= PENDING_KEY;
        }
    }
    memset(slots, 0, w * sizeof(Pair));
    for (size_t i = w; i < cap; i++) {
        if (!(slots[i].key & PENDING_KEY)) continue; /* placed here already */
        Pair e = slots[i];
        memset(&slots[i], 0, sizeof(Pair));
        e.key &= ~PENDING_KEY;
        size_t j = home_slot(hash_key(e.key), cap);
        while (slots[j].key != EMPTY_KEY) {
            if (slots[j].key & PENDING_KEY) { /* take its slot; place it next */
                Pair waiting = slots[j];
                slots[j] = e;
                e = waiting;
                e.key &= ~PENDING_KEY;
                j = home_slot(hash_key(e.key), cap);
            } else {
                j = next_slot(j, cap);
            }
        }
        slots[j] = e;
    }
    m->slots = slots;
    m->cap = cap;
    return 0;
}

/* The entry of key, added with count 0 if absent (the map may grow: no entry pointer
 * survives this call); NULL on memory error. */
static Pair *map_get_or_add(PairMap *m, uint64_t key)
{
    Pair *e = map_slot(m, key);
    if (e->key == key) return e;
    if ((m->used + 1) * 4 > m->cap * 3) {
        if (map_grow(m) < 0) return NULL;
        e = map_slot(m, key);
    }
    *e = (Pair){key, 0, 0};
    m->used++;
    return e;
}

/* Remove entry e and free its word list (backward-shift deletion: moves other entries). */
static void map_delete(PairMap *m, Pair *e)
{
    size_t cap = m->cap, i = (size_t)(e - m->slots), j = i;
    list_clear(&e->words);
    for (;;) {
        j = next_slot(j, cap);
        if (m->slots[j].key == EMPTY_KEY) break;
        size_t k = home_slot(hash_key(m->slots[j].key), cap);
        if (i <= j ? (i < k && k <= j) : (i < k || k <= j)) continue; /* its home is in (i, j]: it stays */
        m->slots[i] = m->slots[j];
        i = j;
    }
    memset(&m->slots[i], 0, sizeof(Pair));
    m->used--;
}

#endif
