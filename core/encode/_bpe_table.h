/* The merges of a BpeTable (core/encode/_bpe_kernel.c): pair (left, right) -> rank, and the
 * id each rank makes.
 *
 * Invariant. Every merge is in the map exactly once; once built, the map is compacted
 * into 8-byte slots (pairs) when every id and rank fits, else the Slot map stays. With the
 * compacted map, every merge's bit is set in the filter (so a clear bit means no merge).
 */
#ifndef BPE_TABLE_H
#define BPE_TABLE_H

#include <Python.h>
#include <stdint.h>
#include <string.h>

#define EMPTY_KEY UINT64_MAX
#define NO_RANK INT32_MAX
#define LONG_WORD 256

typedef struct {
    uint64_t key; /* left << 32 | right, EMPTY_KEY when the slot is free */
    int32_t rank;
} Slot;

typedef struct {
    PyObject_HEAD
    Slot *slots;      /* the merges' map, or NULL once `pairs` has them all */
    size_t mask, pair_mask;
    int pair_shift;
    int shift;        /* 64 - log2(number of slots): hash_key keeps the product's top bits */
    uint32_t *new_ids; /* rank -> merged id (32 bits: half the memory, more of it in the core's cache) */
    Py_ssize_t nranks;
    int64_t byte_ids[256];
    int32_t *byte_ranks; /* first byte << 8 | second -> the rank of their ids' pair (a word's
                          * first ranks, without hashing) */
    uint64_t *pairs;     /* the map in 8-byte slots (PAIR_*), or NULL when an id or a rank
                          * does not fit */
    uint64_t *filter;    /* with `pairs`: a bit per pair hash (PAIR_FILTER_BITS), set for the
                          * pairs that have a merge */
    PyObject **longs; /* id -> its int object, made once for the Encoder's lists (or NULL) */
    Py_ssize_t nlongs;
} BpeTable;

/* Fibonacci hashing: one multiply; the top bits of the product depend on every bit of the
 * key (the ids are all below 2^32, so left and right both reach them). */
static inline size_t
hash_key(const BpeTable *t, uint64_t key)
{
    return (size_t)((key * 0x9E3779B97F4A7C15ULL) >> t->shift);
}

/* The compact map of the merges: a pair's slot is left << 44 | right << 24 | rank, and
 * PAIR_EMPTY (no pair's pattern) when free. Half the memory of the Slot map (GPT-2: 1 MB),
 * so more of it stays in the core's cache next to the front cache's traffic: its probes'
 * misses were most of merging a new word's time, and a cache simulation (cachegrind) shows
 * far fewer misses with it. Used when every id is
 * below PAIR_IDS - 1 and every rank below PAIR_RANKS (vocabularies of up to a million
 * tokens). */
#define PAIR_IDS ((int64_t)1 << 20)
#define PAIR_RANKS ((int64_t)1 << 24)
#define PAIR_EMPTY UINT64_MAX
#define PAIR_LOAD 2 /* slots per pair: at most half full (three quarters full missed the
                      * larger caches less but took many more instructions and first-level
                      * misses) */

static inline uint64_t
pair_hash(uint64_t pair)
{
    return pair * 0x9E3779B97F4A7C15ULL;
}

static inline size_t
pair_index(const BpeTable *t, uint64_t pair)
{
    return (size_t)(pair_hash(pair) >> t->pair_shift);
}

/* Slots read at once from a pair's place: `pairs` holds PAIR_WINDOW - 1 copies of its first
 * slots after its last, so a window never wraps. */
#define PAIR_WINDOW 4

/* The filter in front of `pairs`: 2^PAIR_FILTER_BITS bits (128 KB, which stays in the core's
 * second-level cache where `pairs` does not), a pair's bit the top bits of its hash. Most
 * pairs looked up while a new word merges have no merge; a clear bit says so without reading
 * `pairs`. A set bit proves nothing (another pair may share it): `pairs` is read. */
#define PAIR_FILTER_BITS 20

static inline int
pair_filtered_out(const BpeTable *t, uint64_t hash)
{
    uint64_t bit = hash >> (64 - PAIR_FILTER_BITS);
    return ((t->filter[bit >> 6] >> (bit & 63)) & 1) == 0;
}

/* The rank of the pair (left, right), NO_RANK when it has no merge. Every id is below 2^32
 * (BpeTable_init checks the ids it can produce), so the key needs no range check.
 *
 * In `pairs`, the first PAIR_WINDOW slots from the pair's place are compared without a
 * branch: the pair is in them, or an empty slot among them says it is nowhere (a probe
 * stops at the first empty slot, so no pair lies past one), all but always. Whether a pair
 * of a new word has a merge is a coin toss to the branch predictor, and the probe loop's
 * branches were mispredicted on it. */
static inline int32_t
rank_of(const BpeTable *t, int64_t left, int64_t right)
{
    if (t->pairs != NULL) {
        uint64_t pair = (uint64_t)left << 20 | (uint64_t)right;
        uint64_t hash = pair_hash(pair);
        if (pair_filtered_out(t, hash)) {
            return NO_RANK;
        }
        size_t at = (size_t)(hash >> t->pair_shift);
        const uint64_t *w = t->pairs + at;
        int32_t rank = NO_RANK;
        int open = 0;
        for (int k = PAIR_WINDOW - 1; k >= 0; k--) {
            rank = w[k] >> 24 == pair ? (int32_t)(w[k] & (PAIR_RANKS - 1)) : rank;
            open |= w[k] == PAIR_EMPTY;
        }
        if (rank != NO_RANK || open) {
            return rank;
        }
        for (size_t i = (at + PAIR_WINDOW) & t->pair_mask;; i = (i + 1) & t->pair_mask) {
            uint64_t v = t->pairs[i];
            if (v >> 24 == pair) {
                return (int32_t)(v & (PAIR_RANKS - 1));
            }
            if (v == PAIR_EMPTY) {
                return NO_RANK;
            }
        }
    }
    uint64_t key = ((uint64_t)left << 32) | (uint64_t)right;
    size_t i = hash_key(t, key);
    for (;;) {
        const Slot *s = &t->slots[i];
        if (s->key == key) {
            return s->rank;
        }
        if (s->key == EMPTY_KEY) {
            return NO_RANK;
        }
        i = (i + 1) & t->mask;
    }
}

/* t->pairs from t's Slot map (built) when every id and rank fits, the Slot map then freed;
 * else t->pairs NULL and the Slot map kept. 0, or -1 with an exception set. */
static int
table_compact_pairs(BpeTable *t)
{
    PyMem_Free(t->pairs);
    PyMem_Free(t->filter);
    t->pairs = NULL;
    t->filter = NULL;
    int fits = t->nranks < PAIR_RANKS;
    for (int b = 0; b < 256; b++) {
        fits &= t->byte_ids[b] < PAIR_IDS - 1;
    }
    for (Py_ssize_t k = 0; k < t->nranks; k++) {
        fits &= t->new_ids[k] < PAIR_IDS - 1;
    }
    size_t count = 0;
    for (size_t i = 0; i <= t->mask; i++) {
        uint64_t key = t->slots[i].key;
        if (key != EMPTY_KEY) {
            fits &= (int64_t)(key >> 32) < PAIR_IDS - 1 && (int64_t)(key & 0xFFFFFFFF) < PAIR_IDS - 1;
            count++;
        }
    }
    if (!fits) {
        return 0;
    }
    size_t cap = 1024;
    int bits = 10;
    while (cap < count * PAIR_LOAD) {
        cap <<= 1;
        bits++;
    }
    uint64_t *pairs = PyMem_Malloc((cap + PAIR_WINDOW - 1) * sizeof(uint64_t));
    uint64_t *filter = PyMem_Calloc((size_t)1 << (PAIR_FILTER_BITS - 6), sizeof(uint64_t));
    if (pairs == NULL || filter == NULL) {
        PyMem_Free(pairs);
        PyMem_Free(filter);
        PyErr_NoMemory();
        return -1;
    }
    memset(pairs, 0xFF, cap * sizeof(uint64_t)); /* PAIR_EMPTY */
    t->pair_mask = cap - 1;
    t->pair_shift = 64 - bits;
    for (size_t i = 0; i <= t->mask; i++) {
        const Slot *slot = &t->slots[i];
        if (slot->key == EMPTY_KEY) {
            continue;
        }
        uint64_t pair = (slot->key >> 32) << 20 | (slot->key & 0xFFFFFFFF);
        uint64_t bit = pair_hash(pair) >> (64 - PAIR_FILTER_BITS);
        filter[bit >> 6] |= (uint64_t)1 << (bit & 63);
        size_t at = pair_index(t, pair);
        while (pairs[at] != PAIR_EMPTY) {
            at = (at + 1) & t->pair_mask;
        }
        pairs[at] = pair << 24 | (uint64_t)slot->rank;
    }
    memcpy(pairs + cap, pairs, (PAIR_WINDOW - 1) * sizeof(uint64_t)); /* (rank_of's windows) */
    t->pairs = pairs;
    t->filter = filter;
    PyMem_Free(t->slots); /* rank_of reads `pairs` alone from here on */
    t->slots = NULL;
    return 0;
}

#endif /* BPE_TABLE_H */
