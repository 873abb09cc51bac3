/* The merge loop's pair map: pair (left, right) -> its count in the words and the words
 * holding it (core/training/_merge_kernel.c).
 *
 * Invariants. An open-addressing table with linear probing, no tombstones (deletion
 * shifts entries back). A live entry's count is the pair's weighted count over the
 * words now; a pair whose count reaches 0 leaves the map at the end of the merge that
 * removed it. Its holders list names every word that holds the pair, and may also name
 * words that no longer do (readers skip them) or one word twice, never in a row; a pair
 * held by one word keeps it inline. The byte pairs' lists live in one block; the lists of
 * later pairs are allocated one by one.
 */
#ifndef BPE_PAIR_MAP_H
#define BPE_PAIR_MAP_H

#include <Python.h>
#include <stdint.h>
#include <string.h>
#if defined(__unix__) || defined(__APPLE__)
#include <sys/mman.h>
#define HAVE_MMAP 1
#endif

/* Keys are (left + 1) << 32 | right (pair_key): never 0, so a zeroed slot is free and
 * a table from calloc needs no initialization (nor its pages touched before use). */
#define EMPTY_KEY 0

/* 24 bytes (the map is the kernel's largest structure late in training: millions of
 * pairs that occur a few times). */
typedef struct PairEntry_ {
    uint64_t key;      /* pair_key(left, right), EMPTY_KEY when the slot is free */
    int64_t count;     /* weighted count; 0 for pairs that are gone */
    int32_t *holders;  /* NULL, or holders[0] = n and holders[1..n] the word indices (may
                        * be stale, may repeat non-consecutively); room for at least
                        * holder_capacity(n) words after the header; or one word's
                        * index, inline (holders_inline) */
} PairEntry;

/* A pair that one word holds (most pairs late in training: 2.4 M of 3.6 M at the end of
 * a 1 GB web-like corpus at vocab 32k) keeps that word's index in the holders field
 * itself, tagged by the low bit (a list is 4-aligned), instead of a list of its own (the
 * header, room for four and the allocator's rounding: 24 bytes). */
static inline int
holders_inline(const int32_t *h)
{
    return ((uintptr_t)h & 1) != 0;
}

static inline int32_t *
inline_holders(int32_t word)
{
    return (int32_t *)(((uintptr_t)(uint32_t)word << 1) | 1);
}

static inline int32_t
inline_word(const int32_t *h)
{
    return (int32_t)((uintptr_t)h >> 1);
}

/* The number of words e's holders list has. */
static inline int32_t
nholders_of(const PairEntry *e)
{
    return e->holders == NULL ? 0 : holders_inline(e->holders) ? 1 : e->holders[0];
}

/* The room a holders array of n words has: 0, then powers of two from 4 (so that the
 * capacity need not be stored). */
static inline int32_t
holder_capacity(int32_t n)
{
    if (n == 0) {
        return 0;
    }
    return n <= 4 ? 4 : (int32_t)1 << (32 - __builtin_clz((uint32_t)(n - 1)));
}

/* The holders of the pairs of bytes, made at the start: one block, each pair's list
 * exactly as long as it is (no power-of-two room: they are the largest lists, a third of
 * the kernel's memory, and never grow, since every pair a merge makes holds the new
 * token). A list that is done with (its pair merged) gives its whole pages back. */
typedef struct {
    int32_t *base;
    size_t len;      /* int32 values */
    size_t mapped;   /* bytes mapped (mmap), 0 when from PyMem_Malloc */
} HolderBlock;

static inline int
in_block(const HolderBlock *b, const int32_t *p)
{
    return b->base != NULL && !holders_inline(p) && p >= b->base && p < b->base + b->len;
}

static int
block_alloc(HolderBlock *b, size_t n)
{
    size_t bytes = (n > 0 ? n : 1) * sizeof(int32_t);
    b->len = n;
    b->mapped = 0;
#ifdef HAVE_MMAP
    void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p != MAP_FAILED) {
        b->base = p;
        b->mapped = bytes;
        return 0;
    }
#endif
    b->base = PyMem_Malloc(bytes);
    return b->base != NULL ? 0 : -1;
}

static void
block_free(HolderBlock *b)
{
#ifdef HAVE_MMAP
    if (b->mapped) {
        munmap(b->base, b->mapped);
        b->base = NULL;
        return;
    }
#endif
    PyMem_Free(b->base);
    b->base = NULL;
}

/* The list h[0:n] of the block is not needed any more: its whole pages go back to the
 * system (reading them again would give zeros; nothing does). */
static void
block_release(HolderBlock *b, int32_t *h, int32_t n)
{
#ifdef HAVE_MMAP
    long page = sysconf(_SC_PAGESIZE);
    if (b->mapped && page > 0) {
        uintptr_t lo = ((uintptr_t)h + (uintptr_t)page - 1) & ~((uintptr_t)page - 1);
        uintptr_t hi = ((uintptr_t)(h + n)) & ~((uintptr_t)page - 1);
        if (hi > lo) {
            madvise((void *)lo, hi - lo, MADV_DONTNEED);
        }
    }
#else
    (void)b, (void)h, (void)n;
#endif
}

/* Free a holders list: given back to the block, or to the allocator (an inline one has
 * nothing to free). */
static void
holders_free(HolderBlock *b, int32_t *h, int32_t n)
{
    if (holders_inline(h)) {
        return;
    }
    if (in_block(b, h)) {
        block_release(b, h, n);
    } else {
        PyMem_Free(h);
    }
}

/* Grow e's holders array to room for n words at least; -1 on memory error. A list of
 * the block (which does not grow in practice) moves out of it. */
static int
entry_reserve_holders(HolderBlock *b, PairEntry *e, int32_t n)
{
    if (holders_inline(e->holders)) { /* a list of its own from here on */
        int32_t *h = PyMem_Malloc((1 + (size_t)holder_capacity(n > 1 ? n : 1)) * sizeof(int32_t));
        if (h == NULL) {
            return -1;
        }
        h[0] = 1;
        h[1] = inline_word(e->holders);
        e->holders = h;
        return 0;
    }
    int from_block = in_block(b, e->holders);
    int32_t have = nholders_of(e);
    if (!from_block && e->holders != NULL && n <= holder_capacity(have)) {
        return 0;
    }
    if (from_block && n <= have) {
        return 0;
    }
    int32_t *h;
    if (from_block || e->holders == NULL) {
        h = PyMem_Malloc((1 + (size_t)holder_capacity(n)) * sizeof(int32_t));
        if (h != NULL) {
            h[0] = 0;
            if (from_block) {
                memcpy(h, e->holders, (1 + (size_t)have) * sizeof(int32_t));
            }
        }
    } else {
        h = PyMem_Realloc(e->holders, (1 + (size_t)holder_capacity(n)) * sizeof(int32_t));
    }
    if (h == NULL) {
        return -1;
    }
    e->holders = h;
    return 0;
}

/* Any capacity (not only powers of two): it grows by half, in place (map_grow), so the
 * map is 1.33-2 slots per pair (doubling left it at 1.33-2.67, and the old table beside
 * the new one while growing was the peak of a whole training run on a large corpus). */
typedef struct {
    PairEntry *slots;
    size_t cap;
    size_t used;
    size_t mapped;     /* bytes of the slots' own pages (slots_alloc), 0 when from PyMem */
    HolderBlock block; /* the byte pairs' holders */
} PairMap;

/* The slots live in pages of their own where the system can move pages (Linux: mmap,
 * mremap): growing the map never has the old table beside a copy of it, and freeing it
 * gives the memory back. From the allocator, a table of tens of MB came from the heap
 * (glibc raises its mmap threshold after the first large blocks are freed), where growing
 * it copied it and left a hole as large as the old one, which SuperBPE's stage 2, made
 * right after stage 1's tables were freed, hit at its peak. */
#if defined(__linux__) && defined(HAVE_MMAP)
#define MAP_SLOT_PAGES 1
#endif

static size_t
slot_bytes(size_t cap)
{
    size_t bytes = cap * sizeof(PairEntry);
#ifdef MAP_SLOT_PAGES
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    bytes = (bytes + page - 1) / page * page;
#endif
    return bytes;
}

/* cap zeroed slots into m (slots, mapped); -1 when out of memory. */
static int
slots_alloc(PairMap *m, size_t cap)
{
    m->mapped = 0;
#ifdef MAP_SLOT_PAGES
    void *p = mmap(NULL, slot_bytes(cap), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p != MAP_FAILED) {
        m->slots = p;
        m->mapped = slot_bytes(cap);
        return 0;
    }
#endif
    m->slots = PyMem_Calloc(cap, sizeof(PairEntry));
    return m->slots != NULL ? 0 : -1;
}

/* m's slots grown to cap (the first m->cap kept, the rest undefined); NULL when out of
 * memory (m as it was). */
static PairEntry *
slots_grow(PairMap *m, size_t cap)
{
#ifdef MAP_SLOT_PAGES
    if (m->mapped) {
        void *p = mremap(m->slots, m->mapped, slot_bytes(cap), MREMAP_MAYMOVE);
        if (p == MAP_FAILED) {
            return NULL;
        }
        m->mapped = slot_bytes(cap);
        return p;
    }
#endif
    return PyMem_Realloc(m->slots, cap * sizeof(PairEntry));
}

static void
slots_free(PairMap *m)
{
#ifdef MAP_SLOT_PAGES
    if (m->mapped) {
        munmap(m->slots, m->mapped);
        return;
    }
#endif
    PyMem_Free(m->slots);
}

static inline size_t
hash_key(uint64_t key)
{
    key ^= key >> 33;
    key *= 0xff51afd7ed558ccdULL;
    key ^= key >> 33;
    key *= 0xc4ceb9fe1a85ec53ULL;
    key ^= key >> 33;
    return (size_t)key;
}

/* The home slot of a hash in a map of cap slots: the hash's high bits scaled to cap
 * (multiply and shift, no division). */
static inline size_t
home_slot(size_t hash, size_t cap)
{
#ifdef __SIZEOF_INT128__
    return (size_t)(((unsigned __int128)(uint64_t)hash * cap) >> 64);
#else
    return hash % cap;
#endif
}

static inline size_t
next_slot(size_t j, size_t cap)
{
    return j + 1 == cap ? 0 : j + 1;
}

/* The fewest slots a map has. */
#define MAP_MIN_CAP 1024

static int
map_init(PairMap *m, size_t capacity)
{
    size_t cap = capacity * 2 > MAP_MIN_CAP ? capacity * 2 : MAP_MIN_CAP;
    if (slots_alloc(m, cap) < 0) {
        return -1;
    }
    m->cap = cap;
    m->used = 0;
    return 0;
}

/* Free m's slots, holders and block: m is an empty map again (all zero, as map_init takes it). */
static void
map_free(PairMap *m)
{
    if (m->slots == NULL) {
        return;
    }
    for (size_t i = 0; i < m->cap; i++) {
        int32_t *h = m->slots[i].holders;
        if (m->slots[i].key != EMPTY_KEY && !holders_inline(h) && !in_block(&m->block, h)) {
            PyMem_Free(h); /* (the block goes whole, below) */
        }
    }
    slots_free(m);
    block_free(&m->block);
    memset(m, 0, sizeof(*m));
}

/* Set in the key of an entry waiting to be placed again while the map is rebuilt (keys
 * never have it: pair_key's left + 1 stays below 2**31). */
#define PENDING_KEY ((uint64_t)1 << 63)

static inline uint64_t
pair_key(int32_t left, int32_t right)
{
    return ((uint64_t)(uint32_t)left + 1) << 32 | (uint32_t)right;
}

static inline int32_t
key_left(uint64_t key)
{
    return (int32_t)((key >> 32) - 1);
}

static inline int32_t
key_right(uint64_t key)
{
    return (int32_t)(key & 0xFFFFFFFFu);
}

/* Whether map_rebuild drops e: a pair rarer than `floor` that does not hold token `keep`. */
static inline int
entry_dropped(const PairEntry *e, int64_t floor, int32_t keep)
{
    return e->count < floor && key_left(e->key) != keep && key_right(e->key) != keep;
}

/* Place entry e in slots[0:cap), where pending entries (PENDING_KEY) wait to be placed:
 * an entry whose probe meets a pending one takes its slot and places it in turn, so the
 * entries placed only ever skip placed ones and the probe sequences hold. */
static void
place_entry(PairEntry *slots, size_t cap, PairEntry e)
{
    e.key &= ~PENDING_KEY;
    size_t j = home_slot(hash_key(e.key), cap);
    for (;;) {
        if (slots[j].key == EMPTY_KEY) {
            slots[j] = e;
            return;
        }
        if (slots[j].key & PENDING_KEY) {  /* take its slot; place it next */
            PairEntry waiting = slots[j];
            slots[j] = e;
            e = waiting;
            e.key &= ~PENDING_KEY;
            j = home_slot(hash_key(e.key), cap);
            continue;
        }
        j = next_slot(j, cap);
    }
}

/* The map rebuilt in `cap` slots (room for the entries kept), dropping the pairs rarer than
 * `floor` that do not hold token `keep` (map_make_room), their holders freed. Growing is in
 * place: the table is reallocated (slots_grow: the system moves its pages, nothing is
 * copied), its entries packed at its end, marked pending, and placed again one by one; the
 * old table is never beside a new one (growing needs 1.5 times the table, not 1 + 2 times:
 * the peak of a whole training run on a large corpus). Shrinking places the entries in a
 * new, smaller table. -1 when out of memory (the map as it was). */
static int
map_rebuild(PairMap *m, size_t cap, int64_t floor, int32_t keep)
{
    size_t old_cap = m->cap;
    if (cap < old_cap) {
        PairMap small = *m;
        if (slots_alloc(&small, cap) < 0) {
            return -1;
        }
        size_t used = 0;
        for (size_t i = 0; i < old_cap; i++) {
            PairEntry *e = &m->slots[i];
            if (e->key == EMPTY_KEY) {
                continue;
            }
            if (entry_dropped(e, floor, keep)) {
                holders_free(&m->block, e->holders, 1 + nholders_of(e));
                continue;
            }
            place_entry(small.slots, cap, *e);
            used++;
        }
        slots_free(m);
        m->slots = small.slots;
        m->mapped = small.mapped;
        m->cap = cap;
        m->used = used;
        return 0;
    }
    PairEntry *slots = cap > old_cap ? slots_grow(m, cap) : m->slots;
    if (slots == NULL) {
        return -1;
    }
    size_t w = cap;
    for (size_t i = old_cap; i-- > 0;) {  /* w - 1 >= i: an entry never lands on an unread one */
        if (slots[i].key == EMPTY_KEY) {
            continue;
        }
        if (entry_dropped(&slots[i], floor, keep)) {
            holders_free(&m->block, slots[i].holders, 1 + nholders_of(&slots[i]));
            continue;
        }
        slots[--w] = slots[i];
        slots[w].key |= PENDING_KEY;
    }
    memset(slots, 0, w * sizeof(PairEntry));
    for (size_t i = w; i < cap; i++) {
        if (!(slots[i].key & PENDING_KEY)) {
            continue;  /* placed here already (or empty) */
        }
        PairEntry e = slots[i];
        memset(&slots[i], 0, sizeof(PairEntry));
        place_entry(slots, cap, e);
    }
    m->slots = slots;
    m->cap = cap;
    m->used = cap - w;
    return 0;
}

/* Grow the map by half (map_rebuild, in place). */
static int
map_grow(PairMap *m)
{
    return map_rebuild(m, m->cap + m->cap / 2, 0, -1);
}

/* The slot holding key, or the empty slot where it would go (linear probing). */
static inline PairEntry *
map_slot(PairMap *m, uint64_t key)
{
    size_t cap = m->cap, j = home_slot(hash_key(key), cap);
    while (m->slots[j].key != key && m->slots[j].key != EMPTY_KEY) {
        j = next_slot(j, cap);
    }
    return &m->slots[j];
}

/* The entry for key, or NULL if absent. */
static inline PairEntry *
map_find(PairMap *m, uint64_t key)
{
    PairEntry *e = map_slot(m, key);
    return e->key == key ? e : NULL;
}

/* Remove entry e (backward-shift deletion: linear probing needs no tombstones), its
 * holders freed. Moves other entries: no entry pointer survives it. */
static void
map_delete(PairMap *m, PairEntry *e)
{
    size_t cap = m->cap, i = (size_t)(e - m->slots);
    if (e->holders != NULL) {
        holders_free(&m->block, e->holders, 1 + nholders_of(e));
    }
    for (;;) {
        size_t j = i;
        for (;;) {
            j = next_slot(j, cap);
            if (m->slots[j].key == EMPTY_KEY) {
                memset(&m->slots[i], 0, sizeof(PairEntry));
                m->used--;
                return;
            }
            size_t k = home_slot(hash_key(m->slots[j].key), cap);
            /* the entry at j stays if its home k lies cyclically in (i, j] */
            if (i <= j ? (i < k && k <= j) : (i < k || k <= j)) {
                continue;
            }
            break;
        }
        m->slots[i] = m->slots[j];
        i = j;
    }
}

/* The entry for key, created with count 0 if absent; NULL on memory error. The
 * returned pointer is valid until the next map_get_or_add. */
static inline PairEntry *
map_get_or_add(PairMap *m, uint64_t key)
{
    PairEntry *e = map_slot(m, key);
    if (e->key == key) {
        return e;
    }
    if ((m->used + 1) * 4 > m->cap * 3) {
        if (map_grow(m) < 0) {
            return NULL;
        }
        e = map_slot(m, key);
    }
    e->key = key;
    e->count = 0;
    e->holders = NULL;
    m->used++;
    return e;
}

/* Make room in the map for k more pairs, so that entry pointers stay valid while they
 * are added. */
static int
map_reserve(PairMap *m, size_t k)
{
    while ((m->used + k) * 4 > m->cap * 3) {
        if (map_grow(m) < 0) {
            return -1;
        }
    }
    return 0;
}

#endif /* BPE_PAIR_MAP_H */
