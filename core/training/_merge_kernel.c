/* Compiled BPE merge loop: the hot loop of core/training/merge.py (merge_pairs_python) in C.
 *
 * MergeState(words, counts, token_bytes) holds the words of two bytes or more as
 * records (count, where its tokens start in one arena, length; the arena holds uint16 ids
 * while every id fits, int32 from the merge that makes id 65536), a pair -> (count,
 * words holding it) open-addressing hash map (pairs whose count reaches 0 leave it), and
 * a lazy binary max-heap of (count, left, right) for the pairs above a threshold, the
 * rarer ones waiting as bare keys until it comes down to them. A merge visits the words holding its pair (prefetching ahead: they are
 * scattered over hundreds of MB on a large corpus) and gathers its changes per
 * neighbour token before applying them to the map. step(n) runs up to n merges and
 * returns them as five columns (left ids, right ids, new ids, counts, tokens removed),
 * each a bytes object of native int64 values, one per merge (Python reads one with
 * array('q', column)), appending each new token's bytes to the token_bytes list given
 * at construction. The results are exactly those of
 * merge_pairs_python:
 * - the pair with the highest count is merged; ties go to the lexicographically
 *   greater (left_bytes, right_bytes), then to the smaller (left, right) ids;
 * - counts of existing pairs only go down, so heap entries are pushed only for the new
 *   pairs of each merge (with their final count) and a popped entry with a stale count
 *   is pushed back with its real one (or dropped at 0);
 * - the index pair -> words may list words that no longer hold the pair; they are
 *   skipped.
 * Training options (keyword-only, docs/semantics.md): max_token_length (a pair whose
 * merged token would be longer is never chosen: dropped from the heap when it reaches
 * the top), min_frequency (no merge once the best pair occurs fewer times) and forced
 * (pairs of ids merged first, in order, whatever their counts: continued training; when
 * each uses tokens that exist by its turn, all are made in the words at the start, word
 * by word (_merge_apply.h), and each step that reports one gives the count kept for it).
 * max_words and colon_rule are SuperBPE's stage-2 rule (core/variants/superbpe.py): a
 * pair whose token holds ": " or more than max_words runs of non-space bytes is dropped
 * the same way as a too long one.
 * CPython API only, C99.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>
#include "_merge_apply.h"
#if defined(__unix__) || defined(__APPLE__)
#include <sys/mman.h>
#define HAVE_MMAP 1
#endif
#if defined(__GLIBC__)
#include <malloc.h>
/* Every this many steps, glibc gives the free pages inside its heap back to the system
 * (malloc_trim): the holders lists grow, move and are freed by the million, and the
 * memory they leave free is otherwise kept. 1 GB web-like corpus, vocab 32k: peak of the
 * run 698 -> 635 MB. A few ms each time, 25 times in that run. */
#define TRIM_EVERY_STEPS 20
#endif

/* ---------- pair map ---------- */

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
    HolderBlock block; /* the byte pairs' holders */
} PairMap;

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

static int
map_init(PairMap *m, size_t capacity)
{
    size_t cap = capacity * 2 > 1024 ? capacity * 2 : 1024;
    m->slots = PyMem_Calloc(cap, sizeof(PairEntry));
    if (m->slots == NULL) {
        return -1;
    }
    m->cap = cap;
    m->used = 0;
    return 0;
}

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
    PyMem_Free(m->slots);
    m->slots = NULL;
    block_free(&m->block);
}

/* Set in the key of an entry waiting to be placed again while the map grows (keys never
 * have it: pair_key's left + 1 stays below 2**31). */
#define PENDING_KEY ((uint64_t)1 << 63)

/* Grow the map by half, in place: the table is reallocated (for a large table the
 * system moves its pages, nothing is copied), its entries packed at its end, marked
 * pending, and placed again one by one. An entry whose probe meets a pending one takes
 * its slot and places it in turn, so the entries placed only ever skip placed ones and
 * the probe sequences hold. The old table is never beside a new one: growing needs 1.5
 * times the table, not 1 + 2 times (the peak of a whole training run on a large corpus). */
static int
map_grow(PairMap *m)
{
    size_t old_cap = m->cap, cap = old_cap + old_cap / 2;
    PairEntry *slots = PyMem_Realloc(m->slots, cap * sizeof(PairEntry));
    if (slots == NULL) {
        return -1;  /* the map is as it was */
    }
    size_t w = cap;
    for (size_t i = old_cap; i-- > 0;) {  /* w - 1 >= i: an entry never lands on an unread one */
        if (slots[i].key != EMPTY_KEY) {
            slots[--w] = slots[i];
            slots[w].key |= PENDING_KEY;
        }
    }
    memset(slots, 0, w * sizeof(PairEntry));
    for (size_t i = w; i < cap; i++) {
        if (!(slots[i].key & PENDING_KEY)) {
            continue;  /* placed here already (or empty) */
        }
        PairEntry e = slots[i];
        memset(&slots[i], 0, sizeof(PairEntry));
        e.key &= ~PENDING_KEY;
        size_t j = home_slot(hash_key(e.key), cap);
        for (;;) {
            if (slots[j].key == EMPTY_KEY) {
                slots[j] = e;
                break;
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
    m->slots = slots;
    m->cap = cap;
    return 0;
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

/* ---------- state ---------- */

/* A heap entry. lkey and rkey are the first 8 bytes of the left and right tokens,
 * big-endian and zero-padded: comparing them as integers orders most pairs of equal
 * count without reading the tokens' bytes (a cache miss each). */
typedef struct {
    int64_t count;
    uint64_t lkey;
    uint64_t rkey;
    int32_t left;
    int32_t right;
} HeapItem;

/* What one merge (a, b) -> z has done next to token t so far: on the left side,
 * ``delta`` moved from pair (t, a) to (t, z); on the right side, from (b, t) to (z, t).
 * The merge loop adds occurrences up here and applies them to the pair map once per
 * neighbour (flush_neighbours) instead of twice per occurrence: the first merges touch
 * millions of occurrences but only a few thousand distinct neighbours. */
typedef struct {
    int64_t delta;
    struct PairEntry_ *entry; /* the new pair's entry, while flushing */
    int32_t occurrences;      /* pending holder records of this neighbour */
    int32_t touched;
} Neighbour;

/* A word to record as a holder of a new pair: the neighbour's key, the word. */
typedef struct {
    int32_t key;
    int32_t word;
} Pending;

/* Pending records before a flush (bounds the buffer: 8 MB). */
#define PENDING_MAX (1 << 20)

/* Values in one merge's record (and columns step() returns), before its count per named
 * source (one more column, of nsources values a merge). */
#define MERGE_FIELDS 5

/* One distinct pre-token: its tokens are arena[start .. start + len). Merges shorten
 * a word in place (len goes down; the arena's space after it stays unused). */
typedef struct {
    int64_t count;
    uint32_t start; /* 16 bytes a record: the arena is checked to be shorter than 2**32 */
    int32_t len;
} WordRecord;

typedef struct {
    PyObject_HEAD
    WordRecord *records; /* one per word of at least two bytes, grouped by count (see init) */
    void *arena;         /* every word's tokens, one after the other: uint16_t while `wide`
                          * is 0 (half the memory while ids < 65536), else int32_t */
    int wide;
    Py_ssize_t nwords;
    PyObject **tokens;   /* owned refs to each token's bytes, id -> bytes */
    uint64_t *prefixes;  /* id -> first 8 bytes of the token, for HeapItem keys */
    Py_ssize_t ntokens;
    Py_ssize_t captokens;
    PyObject *token_list; /* the caller's token_bytes list, appended to */
    PairMap map;
    HeapItem *heap;
    size_t heaplen;
    size_t heapcap;
    uint64_t *new_pairs;
    size_t nnew;
    size_t capnew;
    Neighbour *neighbours; /* 2 * captokens, by neighbour_key; all zero between merges */
    int32_t *touched;      /* neighbour keys with pending changes, 2 * captokens at most */
    Py_ssize_t ntouched;
    Pending *pending;      /* PENDING_MAX */
    Py_ssize_t npending;
    int64_t merges_done;
    /* Pairs with a count below `threshold` wait in `low` (their keys: 8 bytes, not a
     * 32-byte heap item) until the heap runs empty; every live pair of count >= threshold
     * is in the heap, so the heap's top is the best pair (refill_heap). Most pairs a merge
     * makes occur a few times and are never merged: the heap held 8 M items at vocab 32k
     * on 1 GB. */
    int64_t threshold;
    uint64_t *low;
    size_t nlow, caplow;
    uint64_t *dead;      /* pairs whose count went to 0 in this merge: removed at its end */
    size_t ndead, capdead;
    int finished;
    Py_ssize_t max_token_length; /* 0: no limit */
    Py_ssize_t max_words;        /* 0: no limit */
    int colon_rule;              /* no token holding ": " */
    int64_t min_frequency;
    int32_t *forced;             /* left, right ids of the merges to make first */
    Py_ssize_t nforced;
    Py_ssize_t forced_done;
    Py_ssize_t nsources;         /* named sources (provenance), 0 when none: */
    uint16_t *record_sources;    /* each record's source */
    int has_chosen;              /* merge(left, right): the next merge is this pair */
    int forced_totals_only;      /* forced_counts=False: made at the start, the forced merges report
                                  * no counts (0), and the last one all the tokens they removed */
    int32_t chosen_left, chosen_right;
    int forced_applied;          /* made in the words at the start (forced_prepare): */
    int64_t *forced_counts;      /* each one's count then */
    int64_t *forced_removed;     /* and the tokens it removed */
    int broken; /* a step failed midway: the state may be half-updated, so no step runs again */
    int steps_untrimmed; /* steps since the last malloc_trim */
} MergeState;

/* The first 8 bytes of b, big-endian, zero-padded: for two tokens whose prefixes
 * differ, the integer order is their lexicographic order (a token that ends first
 * pads with 0, below any byte it is compared with when the prefixes differ there). */
static uint64_t
token_prefix(PyObject *b)
{
    const unsigned char *p = (const unsigned char *)PyBytes_AS_STRING(b);
    Py_ssize_t n = PyBytes_GET_SIZE(b);
    uint64_t key = 0;
    for (int i = 0; i < 8; i++) {
        key = key << 8 | (i < n ? p[i] : 0);
    }
    return key;
}

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

static inline uint64_t pair_key(int32_t left, int32_t right);
static inline int32_t key_left(uint64_t key);
static inline int32_t key_right(uint64_t key);

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

static void
MergeState_dealloc(MergeState *s)
{
    PyMem_Free(s->records);
    PyMem_Free(s->arena);
    PyMem_Free(s->prefixes);
    if (s->tokens != NULL) {
        for (Py_ssize_t i = 0; i < s->captokens; i++) { /* (forced tokens are made ahead) */
            Py_XDECREF(s->tokens[i]);
        }
        PyMem_Free(s->tokens);
    }
    Py_XDECREF(s->token_list);
    map_free(&s->map);
    PyMem_Free(s->heap);
    PyMem_Free(s->new_pairs);
    PyMem_Free(s->neighbours);
    PyMem_Free(s->touched);
    PyMem_Free(s->pending);
    PyMem_Free(s->forced);
    PyMem_Free(s->forced_counts);
    PyMem_Free(s->record_sources);
    PyMem_Free(s->forced_removed);
    PyMem_Free(s->low);
    PyMem_Free(s->dead);
    Py_TYPE(s)->tp_free((PyObject *)s);
}

/* The group of a word of count c in the records: 0 for the largest counts (by bit
 * length), 64 for count 0. */
static inline int
count_group(int64_t c)
{
    return c > 0 ? __builtin_clzll((unsigned long long)c) : 64;
}

/* The words and counts MergeState starts from: two lists (bytes, int), or packed — every
 * word's bytes one after another, with the words' lengths and counts as int64 buffers —
 * as the native pre-token table gives them (no Python object per word). Read in order,
 * each pass from the start (word_source_rewind). */
typedef struct {
    PyObject *words, *counts; /* the lists, or NULL when packed */
    Py_buffer blob, lengths, packed_counts;
    Py_ssize_t n;
    Py_ssize_t at; /* packed: where the next word starts in blob */
} WordSource;

static void
word_source_close(WordSource *ws)
{
    if (ws->words == NULL) {
        if (ws->blob.obj) PyBuffer_Release(&ws->blob);
        if (ws->lengths.obj) PyBuffer_Release(&ws->lengths);
        if (ws->packed_counts.obj) PyBuffer_Release(&ws->packed_counts);
    }
}

/* 0, or -1 with an exception set (and nothing to close). */
static int
word_source_open(WordSource *ws, PyObject *words, PyObject *counts)
{
    memset(ws, 0, sizeof(*ws));
    if (PyList_Check(words)) {
        if (!PyList_Check(counts)) {
            PyErr_SetString(PyExc_TypeError, "counts must be a list when words are");
            return -1;
        }
        ws->words = words;
        ws->counts = counts;
        ws->n = PyList_GET_SIZE(words);
        if (PyList_GET_SIZE(counts) != ws->n) {
            PyErr_Format(PyExc_ValueError, "words and counts differ in length (%zd and %zd)", ws->n,
                         PyList_GET_SIZE(counts));
            return -1;
        }
        return 0;
    }
    if (!PyTuple_Check(words) || PyTuple_GET_SIZE(words) != 2) {
        PyErr_SetString(PyExc_TypeError, "words must be a list of bytes or a (bytes, int64 lengths) pair");
        return -1;
    }
    if (PyObject_GetBuffer(PyTuple_GET_ITEM(words, 0), &ws->blob, PyBUF_SIMPLE) < 0) {
        return -1;
    }
    if (PyObject_GetBuffer(PyTuple_GET_ITEM(words, 1), &ws->lengths, PyBUF_SIMPLE) < 0) {
        PyBuffer_Release(&ws->blob);
        return -1;
    }
    if (PyObject_GetBuffer(counts, &ws->packed_counts, PyBUF_SIMPLE) < 0) {
        PyBuffer_Release(&ws->blob);
        PyBuffer_Release(&ws->lengths);
        return -1;
    }
    ws->n = ws->lengths.len / (Py_ssize_t)sizeof(int64_t);
    if (ws->lengths.len % (Py_ssize_t)sizeof(int64_t) != 0 || ws->packed_counts.len != ws->lengths.len) {
        word_source_close(ws);
        PyErr_SetString(PyExc_ValueError, "packed words need int64 lengths and as many int64 counts");
        return -1;
    }
    return 0;
}

static void
word_source_rewind(WordSource *ws)
{
    ws->at = 0;
}

/* Word i (the words are read in order): its bytes, length and (unless count is NULL)
 * count. 0, or -1 with an exception set. */
static int
word_source_next(WordSource *ws, Py_ssize_t i, const unsigned char **bytes, Py_ssize_t *len, long long *count)
{
    if (ws->words != NULL) {
        PyObject *w = PyList_GET_ITEM(ws->words, i);
        if (!PyBytes_Check(w)) {
            PyErr_Format(PyExc_TypeError, "words[%zd] must be bytes, not %.100s", i, Py_TYPE(w)->tp_name);
            return -1;
        }
        *bytes = (const unsigned char *)PyBytes_AS_STRING(w);
        *len = PyBytes_GET_SIZE(w);
        if (count == NULL) {
            return 0;
        }
        *count = PyLong_AsLongLong(PyList_GET_ITEM(ws->counts, i));
        return *count == -1 && PyErr_Occurred() ? -1 : 0;
    }
    int64_t length = ((const int64_t *)ws->lengths.buf)[i];
    if (length < 0 || length > ws->blob.len - ws->at) {
        PyErr_Format(PyExc_ValueError, "packed word %zd runs past the end of the words' bytes", i);
        return -1;
    }
    *bytes = (const unsigned char *)ws->blob.buf + ws->at;
    *len = (Py_ssize_t)length;
    if (count != NULL) {
        *count = ((const int64_t *)ws->packed_counts.buf)[i];
    }
    ws->at += (Py_ssize_t)length;
    return 0;
}

static int widen_arena(MergeState *s);

/* Room for cap tokens (cap > captokens) in the per-token arrays; -1 with MemoryError set. */
static int
grow_tokens(MergeState *s, Py_ssize_t cap)
{
    PyObject **t = PyMem_Realloc(s->tokens, (size_t)cap * sizeof(PyObject *));
    if (t != NULL) {
        memset(t + s->captokens, 0, (size_t)(cap - s->captokens) * sizeof(PyObject *));
        s->tokens = t;
    }
    uint64_t *p = PyMem_Realloc(s->prefixes, (size_t)cap * sizeof(uint64_t));
    if (p != NULL) {
        s->prefixes = p;
    }
    Neighbour *nb = PyMem_Realloc(s->neighbours, 2 * (size_t)cap * sizeof(Neighbour));
    if (nb != NULL) {
        memset(nb + 2 * s->captokens, 0, 2 * (size_t)(cap - s->captokens) * sizeof(Neighbour));
        s->neighbours = nb;
    }
    int32_t *tl = PyMem_Realloc(s->touched, 2 * (size_t)cap * sizeof(int32_t));
    if (tl != NULL) {
        s->touched = tl;
    }
    if (t == NULL || p == NULL || nb == NULL || tl == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    s->captokens = cap;
    return 0;
}


/* The pairs of the words (of bytes), counted in a direct table (no hashing), then moved to
 * the map; their holders in one block (HolderBlock): a first pass sizes each list, the
 * second fills them (a word is listed once per run of the pair in a row, as
 * flush_neighbours lists them). 0, or -1 with MemoryError set. */
static int
count_byte_pairs(MergeState *s)
{
    Py_ssize_t nwords = s->nwords;
    struct BytePair { int64_t count; int32_t *holders; int32_t n, last; } *byte_pairs =
        PyMem_Calloc(65536, sizeof(struct BytePair));
    if (byte_pairs == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    HolderBlock block = {0};
    for (int pass = 0; pass < 2; pass++) {
        for (int32_t k = 0; k < 65536; k++) {
            byte_pairs[k].last = -1; /* the last word listed */
        }
        for (Py_ssize_t r = 0; r < nwords; r++) {
            const uint16_t *word = (const uint16_t *)s->arena + s->records[r].start;
            int32_t len = s->records[r].len;
            int64_t c = s->records[r].count;
            for (int32_t j = 0; j + 1 < len; j++) {
                struct BytePair *e = &byte_pairs[word[j] << 8 | word[j + 1]];
                if (e->last != (int32_t)r) {
                    e->last = (int32_t)r;
                    e->n++;
                    if (pass == 1) {
                        e->holders[e->n] = (int32_t)r;
                    }
                }
                if (pass == 0) {
                    e->count += c;
                }
            }
        }
        if (pass == 0) {
            size_t total_holders = 0;
            for (int32_t k = 0; k < 65536; k++) {
                total_holders += byte_pairs[k].n > 0 ? 1 + (size_t)byte_pairs[k].n : 0;
            }
            if (block_alloc(&block, total_holders) < 0) {
                PyMem_Free(byte_pairs);
                PyErr_NoMemory();
                return -1;
            }
            size_t at = 0;
            for (int32_t k = 0; k < 65536; k++) {
                if (byte_pairs[k].n > 0) {
                    byte_pairs[k].holders = block.base + at;
                    block.base[at] = byte_pairs[k].n; /* the header */
                    at += 1 + (size_t)byte_pairs[k].n;
                }
                byte_pairs[k].n = 0;
            }
        }
    }
    size_t nbyte_pairs = 0;
    for (int32_t k = 0; k < 65536; k++) {
        nbyte_pairs += byte_pairs[k].n > 0;
    }
    if (map_init(&s->map, nbyte_pairs) < 0) {
        block_free(&block);
        PyMem_Free(byte_pairs);
        PyErr_NoMemory();
        return -1;
    }
    s->map.block = block;
    for (int32_t k = 0; k < 65536; k++) {
        if (byte_pairs[k].n > 0) {
            PairEntry *e = map_get_or_add(&s->map, pair_key(k >> 8, k & 0xFF)); /* room made */
            e->count = byte_pairs[k].count;
            e->holders = byte_pairs[k].holders;
        }
    }
    PyMem_Free(byte_pairs);
    return 0;
}

/* Token a of word record r (arena of either width). */
static inline int32_t
arena_token(const MergeState *s, const WordRecord *record, int32_t j)
{
    return s->wide ? ((const int32_t *)s->arena)[record->start + j] : ((const uint16_t *)s->arena)[record->start + j];
}

/* The home slots of word r's pairs (if there is a word r), asked for ahead of their turn:
 * the map is far larger than the caches, its slots random. */
static inline void
prefetch_pairs(const MergeState *s, Py_ssize_t r)
{
    if (r >= s->nwords) {
        return;
    }
    const WordRecord *record = &s->records[r];
    for (int32_t j = 0; j + 1 < record->len; j++) {
        uint64_t key = pair_key(arena_token(s, record, j), arena_token(s, record, j + 1));
        __builtin_prefetch(&s->map.slots[home_slot(hash_key(key), s->map.cap)]);
    }
}

/* The holders lists of word r's pairs (if there is a word r; their slots asked for before). */
static inline void
prefetch_holders(MergeState *s, Py_ssize_t r)
{
    if (r >= s->nwords) {
        return;
    }
    const WordRecord *record = &s->records[r];
    for (int32_t j = 0; j + 1 < record->len; j++) {
        const int32_t *list =
            map_find(&s->map, pair_key(arena_token(s, record, j), arena_token(s, record, j + 1)))->holders;
        if (!holders_inline(list)) {
            __builtin_prefetch(list);
        }
    }
}

/* The pairs of the words (of any tokens), counted in the map, their holders in one block
 * as count_byte_pairs lists them; a pair of one word holds it inline. While counting, an
 * entry's holders field holds its number of words and the last one (n << 32 | last + 1),
 * not a list. 0, or -1 with MemoryError set. */
static int
count_token_pairs(MergeState *s)
{
    if (map_init(&s->map, (size_t)s->nwords) < 0) {
        PyErr_NoMemory();
        return -1;
    }
    for (Py_ssize_t r = 0; r < s->nwords; r++) {
        const WordRecord *record = &s->records[r];
        prefetch_pairs(s, r + 2);
        for (int32_t j = 0; j + 1 < record->len; j++) {
            PairEntry *e = map_get_or_add(&s->map, pair_key(arena_token(s, record, j), arena_token(s, record, j + 1)));
            if (e == NULL) {
                PyErr_NoMemory();
                return -1;
            }
            e->count += record->count;
            uint64_t tally = (uint64_t)(uintptr_t)e->holders;
            if ((uint32_t)tally != (uint32_t)r + 1) {
                e->holders = (int32_t *)(uintptr_t)(((tally >> 32) + 1) << 32 | ((uint32_t)r + 1));
            }
        }
    }
    size_t total = 0;
    for (size_t k = 0; k < s->map.cap; k++) {
        uint64_t n = (uint64_t)(uintptr_t)s->map.slots[k].holders >> 32;
        total += s->map.slots[k].key != EMPTY_KEY && n > 1 ? 1 + n : 0;
    }
    HolderBlock block = {0};
    if (block_alloc(&block, total) < 0) {
        PyErr_NoMemory();
        return -1;
    }
    size_t at = 0;
    for (size_t k = 0; k < s->map.cap; k++) {
        PairEntry *e = &s->map.slots[k];
        if (e->key == EMPTY_KEY) {
            continue;
        }
        uint64_t tally = (uint64_t)(uintptr_t)e->holders;
        if (tally >> 32 == 1) {
            e->holders = inline_holders((int32_t)((uint32_t)tally - 1));
        } else {
            e->holders = block.base + at;
            e->holders[0] = 0;
            at += 1 + (size_t)(tally >> 32);
        }
    }
    s->map.block = block;
    for (Py_ssize_t r = 0; r < s->nwords; r++) {
        const WordRecord *record = &s->records[r];
        prefetch_pairs(s, r + 4);
        prefetch_holders(s, r + 2);
        for (int32_t j = 0; j + 1 < record->len; j++) {
            int32_t *list = map_find(&s->map, pair_key(arena_token(s, record, j), arena_token(s, record, j + 1)))->holders;
            if (!holders_inline(list) && (list[0] == 0 || list[list[0]] != (int32_t)r)) {
                list[++list[0]] = (int32_t)r;
            }
        }
    }
    return 0;
}

/* Whether the forced merges can be made at once (_merge_apply.h): each uses tokens that
 * exist by its turn (else the step that reaches it reports the error). */
static int
forced_applicable(const MergeState *s)
{
    for (Py_ssize_t r = 0; r < s->nforced; r++) {
        int32_t left = s->forced[2 * r], right = s->forced[2 * r + 1];
        if (left < 0 || right < 0 || left >= s->ntokens + r || right >= s->ntokens + r) {
            return 0;
        }
    }
    /* (with named sources, each forced merge's count per source comes from the loop) */
    return s->nforced > 0 && s->ntokens + s->nforced <= INT32_MAX && s->nsources == 0;
}

/* Ready to make the forced merges in the words as they are read (_merge_apply.h): their
 * tokens made ahead (the heap orders pairs of them by their bytes; each joins the caller's
 * list when its merge is reported) and held in the applier. 0, or -1 with an exception set. */
static int
forced_prepare(MergeState *s, MergeApplier *applier)
{
    if (s->ntokens + s->nforced + 1024 > s->captokens && grow_tokens(s, s->ntokens + s->nforced + 1024) < 0) {
        return -1;
    }
    for (Py_ssize_t r = 0; r < s->nforced; r++) {
        PyObject *ba = s->tokens[s->forced[2 * r]], *bb = s->tokens[s->forced[2 * r + 1]];
        PyObject *bz = PyBytes_FromStringAndSize(NULL, PyBytes_GET_SIZE(ba) + PyBytes_GET_SIZE(bb));
        if (bz == NULL) {
            return -1;
        }
        memcpy(PyBytes_AS_STRING(bz), PyBytes_AS_STRING(ba), (size_t)PyBytes_GET_SIZE(ba));
        memcpy(PyBytes_AS_STRING(bz) + PyBytes_GET_SIZE(ba), PyBytes_AS_STRING(bb), (size_t)PyBytes_GET_SIZE(bb));
        s->tokens[s->ntokens + r] = bz;
        s->prefixes[s->ntokens + r] = token_prefix(bz);
    }
    s->forced_counts = PyMem_Calloc((size_t)s->nforced, sizeof(int64_t));
    s->forced_removed = PyMem_Calloc((size_t)s->nforced, sizeof(int64_t));
    if (s->forced_counts == NULL || s->forced_removed == NULL ||
        applier_init(applier, s->forced, (size_t)s->nforced, (int32_t)s->ntokens) < 0) {
        PyErr_NoMemory();
        return -1;
    }
    applier->totals_only = s->forced_totals_only;
    for (Py_ssize_t r = 0; r < s->nforced; r++) {
        PyObject *token = s->tokens[s->ntokens + r];
        applier_hold(applier, (const unsigned char *)PyBytes_AS_STRING(token), (size_t)PyBytes_GET_SIZE(token));
    }
    s->wide = s->ntokens + s->nforced > 0x10000; /* the words' tokens in 32 bits from the start */
    return 0;
}

/* Word bytes[0:len] with the forced merges made (count c added to its pieces' weights):
 * its tokens in *merged (grown to room for len), their number; -1 with MemoryError set. */
static Py_ssize_t
forced_word(MergeApplier *applier, const unsigned char *bytes, Py_ssize_t len, int64_t c, int32_t **merged,
            Py_ssize_t *room)
{
    if (len > *room) {
        int32_t *p = PyMem_Realloc(*merged, (size_t)len * sizeof(int32_t));
        if (p == NULL) {
            PyErr_NoMemory();
            return -1;
        }
        *merged = p;
        *room = len;
    }
    int32_t n = applier_word(applier, bytes, (int32_t)len, c, *merged);
    if (n < 0 && applier->full) { /* (merge_pairs runs the Python loop on OverflowError) */
        PyErr_SetString(PyExc_OverflowError, "too many distinct pieces for the kernel's forced merges");
    } else if (n < 0) {
        PyErr_NoMemory();
    }
    return n;
}

static int
MergeState_init(MergeState *s, PyObject *args, PyObject *kwds)
{
    static char *kwlist[] = {"words", "counts", "token_bytes", "max_token_length", "min_frequency",
                             "forced", "max_words", "colon_rule", "sources", "nsources", "forced_counts", NULL};
    PyObject *words, *counts_list, *token_list;
    Py_ssize_t max_token_length = 0, max_words = 0;
    long long min_frequency = 0;
    int colon_rule = 0;
    Py_buffer forced = {0}, sources = {0};
    Py_ssize_t nsources = 0;
    int forced_counts = 1;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "OOO!|$nLy*npy*np:MergeState", kwlist, &words, &counts_list,
                                     &PyList_Type, &token_list, &max_token_length, &min_frequency,
                                     &forced, &max_words, &colon_rule, &sources, &nsources, &forced_counts)) {
        return -1;
    }
    s->forced_totals_only = !forced_counts;
    /* named sources: each word's source (uint16), for the count of each merge per source */
    uint16_t *word_sources = NULL;
    if (sources.buf != NULL) {
        if (nsources < 1 || nsources > 65535 || sources.len % 2 != 0) {
            PyBuffer_Release(&sources);
            if (forced.buf != NULL) {
                PyBuffer_Release(&forced);
            }
            PyErr_SetString(PyExc_ValueError, "sources must hold a uint16 source per word, below nsources (1 to 65535)");
            return -1;
        }
        word_sources = PyMem_Malloc(sources.len > 0 ? (size_t)sources.len : 1);
        if (word_sources == NULL) {
            PyBuffer_Release(&sources);
            if (forced.buf != NULL) {
                PyBuffer_Release(&forced);
            }
            PyErr_NoMemory();
            return -1;
        }
        memcpy(word_sources, sources.buf, (size_t)sources.len);
        s->nsources = nsources;
        s->record_sources = word_sources; /* by word until the records are laid out (freed with s) */
    }
    Py_ssize_t nword_sources = sources.buf != NULL ? sources.len / 2 : 0;
    if (sources.buf != NULL) {
        PyBuffer_Release(&sources);
    }
    if (forced.buf != NULL) {
        /* native int32 (left, right) pairs, as array('i', ...).tobytes() gives them */
        if (forced.len % (2 * (Py_ssize_t)sizeof(int32_t)) != 0 || s->forced != NULL) {
            PyBuffer_Release(&forced);
            PyErr_SetString(PyExc_ValueError, "forced must hold int32 (left, right) pairs");
            return -1;
        }
        s->forced = PyMem_Malloc(forced.len > 0 ? (size_t)forced.len : 1);
        if (s->forced == NULL) {
            PyBuffer_Release(&forced);
            PyErr_NoMemory();
            return -1;
        }
        memcpy(s->forced, forced.buf, (size_t)forced.len);
        s->nforced = forced.len / (2 * (Py_ssize_t)sizeof(int32_t));
        PyBuffer_Release(&forced);
    }
    s->max_token_length = max_token_length;
    s->max_words = max_words;
    s->colon_rule = colon_rule;
    s->min_frequency = min_frequency;
    if (s->records != NULL || s->token_list != NULL) {
        PyErr_SetString(PyExc_RuntimeError, "MergeState is already initialized");
        return -1;
    }
    WordSource source;
    if (word_source_open(&source, words, counts_list) < 0) {
        return -1;
    }
    Py_ssize_t n = source.n;
    if (s->nsources > 0) {
        int bad = nword_sources != n;
        for (Py_ssize_t i = 0; i < nword_sources && !bad; i++) {
            bad = s->record_sources[i] >= s->nsources;
        }
        if (bad) {
            PyErr_SetString(PyExc_ValueError, "sources must give each word a source below nsources");
            word_source_close(&source);
            return -1;
        }
    }
    Py_ssize_t ntok = PyList_GET_SIZE(token_list);
    if (ntok < 256 || ntok > INT32_MAX / 2) {
        PyErr_Format(PyExc_ValueError, "token_bytes must hold at least the 256 byte tokens, got %zd",
                     ntok);
        word_source_close(&source);
        return -1;
    }
    s->captokens = ntok + 1024;
    s->tokens = PyMem_Calloc((size_t)s->captokens, sizeof(PyObject *));
    s->prefixes = PyMem_Calloc((size_t)s->captokens, sizeof(uint64_t));
    s->neighbours = PyMem_Calloc(2 * (size_t)s->captokens, sizeof(Neighbour));
    s->touched = PyMem_Malloc(2 * (size_t)s->captokens * sizeof(int32_t));
    s->pending = PyMem_Malloc(PENDING_MAX * sizeof(Pending));
    if (s->tokens == NULL || s->prefixes == NULL || s->neighbours == NULL || s->touched == NULL ||
        s->pending == NULL) {
        PyErr_NoMemory();
        word_source_close(&source);
        return -1;
    }
    for (Py_ssize_t i = 0; i < ntok; i++) {
        PyObject *t = PyList_GET_ITEM(token_list, i);
        if (!PyBytes_Check(t)) {
            PyErr_Format(PyExc_TypeError, "token_bytes[%zd] must be bytes, not %.100s", i,
                         Py_TYPE(t)->tp_name);
            word_source_close(&source);
            return -1;
        }
        Py_INCREF(t);
        s->tokens[i] = t;
        s->prefixes[i] = token_prefix(t);
        s->ntokens = i + 1;
    }
    Py_INCREF(token_list);
    s->token_list = token_list;

    /* First pass: check the words and counts, and group the words that hold a pair (two
     * bytes or more; the others never change) by the bit length of their count, most
     * frequent first. The order of the words does not change the merges; this one keeps
     * the words that many merges visit close together in memory. */
    int64_t *counts = PyMem_Malloc((size_t)(n > 0 ? n : 1) * sizeof(int64_t));
    if (counts == NULL) {
        PyErr_NoMemory();
        word_source_close(&source);
        return -1;
    }
    /* forced merges that can all be made now are made as the words are read (first pass),
     * each word they leave kept in `made` (its tokens; its length in made_len) for the
     * second pass to lay out: the arena holds those words, a fraction of the words' bytes */
    MergeApplier applier;
    memset(&applier, 0, sizeof(applier));
    int32_t *merged = NULL, *made_len = NULL;
    void *made = NULL; /* the tokens, in the arena's width */
    Py_ssize_t room = 0;
    size_t nmade = 0, capmade = 0;
    uint16_t *record_sources = NULL; /* each record's source (named sources) */
    int applying = forced_applicable(s);
    if (applying && (forced_prepare(s, &applier) < 0 ||
                     (made_len = PyMem_Malloc((size_t)(n > 0 ? n : 1) * sizeof(int32_t))) == NULL)) {
        if (!PyErr_Occurred()) {
            PyErr_NoMemory();
        }
        goto fail;
    }
    size_t width = s->wide ? sizeof(int32_t) : sizeof(uint16_t);
    /* words and tokens per group (at index group + 1), then where each group starts in
     * the records and in the arena */
    Py_ssize_t group_start[66] = {0};
    int64_t group_arena[66] = {0};
    int64_t arena_len = 0;
    /* every pair count and every tokens_removed is at most this total, so int64 holds
     * them all when it does */
    int64_t total = 0;
    word_source_rewind(&source);
    for (Py_ssize_t i = 0; i < n; i++) {
        const unsigned char *bytes;
        Py_ssize_t len;
        long long c;
        if (word_source_next(&source, i, &bytes, &len, &c) < 0) {
            goto fail;
        }
        if (len > INT32_MAX) {
            PyErr_Format(PyExc_OverflowError, "words[%zd] is too long", i);
            goto fail;
        }
        if (c < 0) {
            PyErr_Format(PyExc_ValueError, "counts[%zd] is negative", i);
            goto fail;
        }
        counts[i] = c;
        if (len > 1) {
            int64_t part;
            if (__builtin_mul_overflow((int64_t)c, (int64_t)(len - 1), &part) ||
                __builtin_add_overflow(total, part, &total)) {
                PyErr_SetString(PyExc_OverflowError,
                                "weighted pair counts exceed 64 bits; use the Python merge loop");
                goto fail;
            }
            if (applying) {
                if ((len = forced_word(&applier, bytes, len, c, &merged, &room)) < 0 ||
                    apply_reserve(&made, &capmade, nmade, (size_t)len, width) < 0) {
                    if (len >= 0) {
                        PyErr_NoMemory();
                    }
                    goto fail;
                }
                made_len[i] = (int32_t)len;
                for (Py_ssize_t j = 0; j < len; j++) {
                    if (s->wide) {
                        ((int32_t *)made)[nmade + (size_t)j] = merged[j];
                    } else {
                        ((uint16_t *)made)[nmade + (size_t)j] = (uint16_t)merged[j];
                    }
                }
                nmade += (size_t)len;
            }
        }
        if (len > 1) {
            group_start[count_group(c) + 1]++;
            group_arena[count_group(c) + 1] += len;
            arena_len += len;
        }
    }
    for (int g = 1; g < 66; g++) {
        group_start[g] += group_start[g - 1];
        group_arena[g] += group_arena[g - 1];
    }
    Py_ssize_t nwords = group_start[65];
    if (arena_len > (int64_t)UINT32_MAX || nwords > INT32_MAX) {
        PyErr_SetString(PyExc_OverflowError, "too many words' bytes for the kernel; use the Python merge loop");
        goto fail;
    }
    s->records = PyMem_Malloc((size_t)(nwords > 0 ? nwords : 1) * sizeof(WordRecord));
    s->arena = PyMem_Malloc((size_t)(arena_len > 0 ? arena_len : 1) * (s->wide ? sizeof(int32_t) : sizeof(uint16_t)));
    if (s->records == NULL || s->arena == NULL) {
        PyErr_NoMemory();
        goto fail;
    }
    s->nwords = nwords;
    if (s->nsources > 0 && (record_sources = PyMem_Malloc((size_t)(nwords > 0 ? nwords : 1) * sizeof(uint16_t))) == NULL) {
        PyErr_NoMemory();
        goto fail;
    }
    /* second pass: each word's record and tokens, the next ones of its group (a stable
     * counting sort): visiting words in index order reads the arena forwards */
    word_source_rewind(&source);
    nmade = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        const unsigned char *src;
        Py_ssize_t len;
        if (word_source_next(&source, i, &src, &len, NULL) < 0) { /* read before: cannot fail */
            goto fail;
        }
        size_t at = 0; /* where the word as the first pass made it starts in `made` */
        if (len > 1 && applying) {
            len = made_len[i];
            at = nmade;
            nmade += (size_t)len;
        }
        if (len < 2) {
            continue;
        }
        int g = count_group(counts[i]);
        if (record_sources != NULL) {
            record_sources[group_start[g]] = s->record_sources[i];
        }
        WordRecord *r = &s->records[group_start[g]++];
        r->count = counts[i];
        r->start = (uint32_t)group_arena[g];
        r->len = (int32_t)len;
        group_arena[g] += len;
        if (applying) {
            memcpy((char *)s->arena + r->start * width, (char *)made + at * width, (size_t)len * width);
        } else {
            for (Py_ssize_t j = 0; j < len; j++) { /* (bytes: the arena is 16 bits wide) */
                ((uint16_t *)s->arena)[r->start + j] = src[j];
            }
        }
    }
    PyMem_Free(counts);
    counts = NULL;
    PyMem_Free(merged);
    merged = NULL;
    if (record_sources != NULL) { /* by record from here on */
        PyMem_Free(s->record_sources);
        s->record_sources = record_sources;
        record_sources = NULL;
    }
    free(made);
    made = NULL;
    PyMem_Free(made_len);
    made_len = NULL;
    word_source_close(&source);

    if (applying) {
        applier_totals(&applier, s->forced_counts, s->forced_removed, (size_t)s->nforced);
        applier_free(&applier);
        s->forced_applied = 1;
        if (count_token_pairs(s) < 0) {
            return -1;
        }
    } else if (count_byte_pairs(s) < 0) {
        return -1;
    }
    /* the heap: the pairs from a 4096th of the best count, heapified; the rarer ones wait
     * in low (refill_heap lowers the threshold when the heap runs empty) */
    int64_t best = 0;
    for (size_t j = 0; j < s->map.cap; j++) {
        best = s->map.slots[j].key != EMPTY_KEY && s->map.slots[j].count > best ? s->map.slots[j].count : best;
    }
    s->threshold = best >> 12;
    for (size_t j = 0; j < s->map.cap; j++) {
        PairEntry *e = &s->map.slots[j];
        if (e->key == EMPTY_KEY || e->count <= 0) {
            continue;
        }
        if (e->count < s->threshold) {
            if (keys_append(&s->low, &s->nlow, &s->caplow, e->key) < 0) {
                return -1;
            }
            continue;
        }
        if (heap_reserve(s) < 0) {
            return -1;
        }
        s->heap[s->heaplen++] =
            heap_item(s, e->count, key_left(e->key), key_right(e->key));
    }
    if (s->heaplen > 1) {
        for (size_t i = s->heaplen / 2; i-- > 0;) {
            heap_sift_down(s, i);
        }
    }
    return 0;

fail:
    PyMem_Free(counts);
    PyMem_Free(merged);
    PyMem_Free(record_sources);
    free(made);
    PyMem_Free(made_len);
    applier_free(&applier);
    word_source_close(&source);
    return -1;
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

/* The neighbour key of token t on the left (side 0) or right (side 1) of a merge. */
static inline int32_t
neighbour_key(int32_t t, int side)
{
    return 2 * t + side;
}

/* Apply the pending changes of merge (a, b) -> z: for each touched neighbour, its
 * delta off the old pair and onto the new one, then the pending words as holders of the
 * new pairs, in the order the merge met them (skipping an immediate repeat, as
 * entry_add_holder does). Leaves the neighbours zero and nothing pending. */
static int
flush_neighbours(MergeState *s, int32_t a, int32_t b, int32_t z)
{
    /* each touched neighbour adds at most its old and its new pair */
    if (map_reserve(&s->map, 2 * (size_t)s->ntouched) < 0) {
        return -1;
    }
    for (Py_ssize_t k = 0; k < s->ntouched; k++) {
        int32_t key = s->touched[k];
        Neighbour *nb = &s->neighbours[key];
        int32_t t = key >> 1;
        int left = (key & 1) == 0;
        PairEntry *old = map_get_or_add(&s->map, left ? pair_key(t, a) : pair_key(b, t));
        old->count -= nb->delta;
        if (old->count == 0 && keys_append(&s->dead, &s->ndead, &s->capdead, old->key) < 0) {
            return -1;
        }
        uint64_t new_key = left ? pair_key(t, z) : pair_key(z, t);
        PairEntry *e = map_get_or_add(&s->map, new_key);
        e->count += nb->delta;
        /* new in this merge (and so listed in new_pairs) the first time a flush meets it:
         * only this merge's flushes list holders for it, and each gives it some */
        int first = e->holders == NULL;
        if (entry_reserve_holders(&s->map.block, e, nholders_of(e) + nb->occurrences) < 0) {
            return -1;
        }
        nb->entry = e;
        if (first) {
            if (s->nnew == s->capnew) {
                size_t cap = s->capnew ? s->capnew * 2 : 256;
                uint64_t *p = PyMem_Realloc(s->new_pairs, cap * sizeof(uint64_t));
                if (p == NULL) {
                    return -1;
                }
                s->new_pairs = p;
                s->capnew = cap;
            }
            s->new_pairs[s->nnew++] = new_key;
        }
    }
    for (Py_ssize_t k = 0; k < s->npending; k++) {
        PairEntry *e = s->neighbours[s->pending[k].key].entry;
        int32_t w = s->pending[k].word;
        int32_t *list = e->holders; /* room reserved above */
        if (list[0] == 0 || list[list[0]] != w) {
            list[++list[0]] = w;
        }
    }
    for (Py_ssize_t k = 0; k < s->ntouched; k++) {
        memset(&s->neighbours[s->touched[k]], 0, sizeof(Neighbour));
    }
    s->ntouched = 0;
    s->npending = 0;
    return 0;
}

/* Occurrence of the merge in word w (count c) next to token t, on the left (side 0)
 * or right (side 1): noted, applied by flush_neighbours. */
static inline int
note_neighbour(MergeState *s, int32_t t, int side, int64_t c, int32_t w, int32_t a, int32_t b,
               int32_t z)
{
    int32_t key = neighbour_key(t, side);
    Neighbour *nb = &s->neighbours[key];
    if (!nb->touched) {
        nb->touched = 1;
        s->touched[s->ntouched++] = key;
    }
    nb->delta += c;
    nb->occurrences++;
    s->pending[s->npending].key = key;
    s->pending[s->npending].word = w;
    if (++s->npending == PENDING_MAX) {
        return flush_neighbours(s, a, b, z);
    }
    return 0;
}

/* How many holders ahead the merge loop prefetches a word's record, and its tokens. */
#define PREFETCH_RECORD 32
#define PREFETCH_TOKENS 16

/* The arena from uint16 to int32 ids (before the merge that makes id 65536); -1 with
 * MemoryError set. */
static int
widen_arena(MergeState *s)
{
    size_t len = 0;
    for (Py_ssize_t r = 0; r < s->nwords; r++) {
        size_t end = (size_t)s->records[r].start + (size_t)s->records[r].len;
        len = end > len ? end : len;
    }
    int32_t *wide = PyMem_Malloc((len > 0 ? len : 1) * sizeof(int32_t));
    if (wide == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    const uint16_t *narrow = (const uint16_t *)s->arena;
    for (Py_ssize_t r = 0; r < s->nwords; r++) { /* live tokens only: the rest is unused */
        for (int32_t j = 0; j < s->records[r].len; j++) {
            wide[s->records[r].start + j] = narrow[s->records[r].start + j];
        }
    }
    PyMem_Free(s->arena);
    s->arena = wide;
    s->wide = 1;
    return 0;
}

/* Merge (a, b) -> z in one word (its tokens of type T), noting the neighbours; the
 * tokens removed are added to *removed, the pair's occurrences in the word (overlapping
 * ones too: a a a holds (a, a) twice) to *occurrences. 0, or -1 on memory error. */
#define DEFINE_MERGE_WORD(NAME, T)                                                              \
    static inline int NAME(MergeState *s, T *word, WordRecord *record, int32_t w, int32_t a,     \
                           int32_t b, int32_t z, int64_t *removed, int32_t *occurrences)         \
    {                                                                                            \
        int32_t n = record->len;                                                                 \
        int64_t c = record->count;                                                               \
        int32_t i = 0, o = 0; /* read and write positions; o <= i */                            \
        int merged = 0;                                                                          \
        while (i < n) {                                                                          \
            if (i + 1 < n && word[i] == a && word[i + 1] == b) {                                 \
                if (o > 0 && note_neighbour(s, word[o - 1], 0, c, w, a, b, z) < 0) {             \
                    return -1;                                                                   \
                }                                                                                \
                if (i + 2 < n && note_neighbour(s, word[i + 2], 1, c, w, a, b, z) < 0) {         \
                    return -1;                                                                   \
                }                                                                                \
                word[o++] = (T)z;                                                                \
                *removed += c;                                                                   \
                *occurrences += 1 + (a == b && i + 2 < n && word[i + 2] == a);                   \
                merged = 1;                                                                      \
                i += 2;                                                                          \
            } else {                                                                             \
                word[o++] = word[i++];                                                           \
            }                                                                                    \
        }                                                                                        \
        if (merged) {                                                                            \
            record->len = o;                                                                     \
        }                                                                                        \
        return 0;                                                                                \
    }

DEFINE_MERGE_WORD(merge_word16, uint16_t)
DEFINE_MERGE_WORD(merge_word32, int32_t)

/* Whether the token left + right passes SuperBPE's stage-2 rule (max_words, colon_rule). */
static int
words_allowed(const MergeState *s, int32_t left, int32_t right)
{
    PyObject *parts[2] = {s->tokens[left], s->tokens[right]};
    Py_ssize_t words = 0;
    char prev = ' ';
    for (int k = 0; k < 2; k++) {
        const char *p = PyBytes_AS_STRING(parts[k]);
        Py_ssize_t n = PyBytes_GET_SIZE(parts[k]);
        for (Py_ssize_t i = 0; i < n; i++) {
            char c = p[i];
            if (c == ' ') {
                if (s->colon_rule && prev == ':') {
                    return 0;
                }
            } else if (prev == ' ') {
                words++;
            }
            prev = c;
        }
    }
    return s->max_words == 0 || words <= s->max_words;
}

/* The best pair (highest count, ties to the greater bytes) that may be merged, at the top
 * of the heap (not popped) in *top: 1, or 0 when no pair is left, -1 on error. */
static int
best_pair(MergeState *s, HeapItem *top)
{
    for (;;) {
        if (s->heaplen == 0 && refill_heap(s, INT64_MAX) < 0) {
            return -1;
        }
        if (s->heaplen == 0) {
            return 0;
        }
        *top = s->heap[0];
        PairEntry *e = map_find(&s->map, pair_key(top->left, top->right));
        int64_t actual = e ? e->count : 0;
        if (actual == top->count && actual < s->threshold) {
            /* low pairs may tie with it or beat it: into the heap first */
            if (refill_heap(s, actual) < 0) {
                return -1;
            }
            continue;
        }
        if (actual == top->count) {
            if (s->max_token_length > 0 &&
                PyBytes_GET_SIZE(s->tokens[top->left]) + PyBytes_GET_SIZE(s->tokens[top->right]) >
                    s->max_token_length) {
                heap_pop(s); /* never chosen; its count only goes down, so never pushed again */
                continue;
            }
            if ((s->max_words > 0 || s->colon_rule) && !words_allowed(s, top->left, top->right)) {
                heap_pop(s); /* the same: never chosen */
                continue;
            }
            return 1;
        }
        heap_pop(s);
        if (actual > 0 && heap_offer(s, actual, top->left, top->right) < 0) {
            return -1;
        }
    }
}

/* One merge: fills out[0..4] with (left, right, new_id, count, tokens_removed) (and its
 * count per named source after them) and returns 1; returns 0 when no pair is left, -1
 * on error. The merge is the next forced one, else the pair merge() chose, else the best. */
static int
merge_once(MergeState *s, int64_t *out)
{
    HeapItem top;
    memset(out + MERGE_FIELDS, 0, (size_t)s->nsources * sizeof(int64_t));
    int from_list = s->forced_done < s->nforced;
    int forced = from_list || s->has_chosen;
    if (forced) {
        /* a forced merge: made whatever its count (0 if the pair does not occur) */
        if (from_list) {
            top.left = s->forced[2 * s->forced_done];
            top.right = s->forced[2 * s->forced_done + 1];
            s->forced_done++;
        } else {
            top.left = s->chosen_left;
            top.right = s->chosen_right;
            s->has_chosen = 0;
        }
        if (top.left < 0 || top.right < 0 || top.left >= s->ntokens || top.right >= s->ntokens) {
            PyErr_SetString(PyExc_ValueError, "a forced merge uses a token id that does not exist yet");
            return -1;
        }
        if (from_list && s->forced_applied) {
            top.count = s->forced_counts[s->forced_done - 1];
        } else {
            PairEntry *e = map_find(&s->map, pair_key(top.left, top.right));
            top.count = e ? e->count : 0;
        }
    } else {
        int found = best_pair(s, &top);
        if (found <= 0) {
            return found;
        }
        if (top.count < s->min_frequency) {
            return 0;
        }
        heap_pop(s);
    }
    int32_t a = top.left, b = top.right;
    if (s->ntokens >= INT32_MAX) {
        PyErr_SetString(PyExc_OverflowError, "too many tokens");
        return -1;
    }
    int32_t z = (int32_t)s->ntokens;
    if (!s->wide && z > 0xFFFF && widen_arena(s) < 0) {
        return -1;
    }

    if (from_list && s->forced_applied) { /* made at the start, its token too: its figures were kept */
        if (PyList_Append(s->token_list, s->tokens[z]) < 0) {
            return -1;
        }
        s->ntokens++;
        s->merges_done++;
        out[0] = a;
        out[1] = b;
        out[2] = z;
        out[3] = top.count;
        out[4] = s->forced_removed[s->forced_done - 1];
        return 1;
    }

    /* the new token's bytes, in the C table and in the caller's list */
    PyObject *ba = s->tokens[a], *bb = s->tokens[b];
    Py_ssize_t la = PyBytes_GET_SIZE(ba), lb = PyBytes_GET_SIZE(bb);
    PyObject *bz = PyBytes_FromStringAndSize(NULL, la + lb);
    if (bz == NULL) {
        return -1;
    }
    memcpy(PyBytes_AS_STRING(bz), PyBytes_AS_STRING(ba), (size_t)la);
    memcpy(PyBytes_AS_STRING(bz) + la, PyBytes_AS_STRING(bb), (size_t)lb);
    if (PyList_Append(s->token_list, bz) < 0) {
        Py_DECREF(bz);
        return -1;
    }
    if (s->ntokens == s->captokens && grow_tokens(s, s->captokens * 2) < 0) {
        Py_DECREF(bz);
        return -1;
    }
    s->prefixes[s->ntokens] = token_prefix(bz);
    s->tokens[s->ntokens++] = bz; /* the reference from FromStringAndSize */

    /* take the holders of the merged pair; its count is gone with its occurrences */
    PairEntry *best = map_find(&s->map, pair_key(a, b));
    int32_t *holders = NULL;
    int32_t nholders = 0;
    int occurs = best != NULL;
    if (occurs) { /* a forced pair may not occur at all */
        holders = best->holders;
        nholders = nholders_of(best);
        best->holders = NULL;
        best->count = 0;
    }

    s->nnew = 0;
    int64_t removed = 0;
    int failed = 0;
    int32_t single = holders != NULL && holders_inline(holders) ? inline_word(holders) : 0;
    const int32_t *list = holders == NULL ? NULL : holders_inline(holders) ? &single : holders + 1; /* after the header */
    for (int32_t h = 0; h < nholders && !failed; h++) {
        /* the holders are mostly far apart in memory: fetch a record ahead, and the
         * tokens of a nearer word whose record was fetched before */
        if (h + PREFETCH_RECORD < nholders) {
            __builtin_prefetch(&s->records[list[h + PREFETCH_RECORD]]);
        }
        if (h + PREFETCH_TOKENS < nholders) {
            uint32_t start = s->records[list[h + PREFETCH_TOKENS]].start;
            __builtin_prefetch(s->wide ? (void *)((int32_t *)s->arena + start) : (void *)((uint16_t *)s->arena + start));
        }
        WordRecord *record = &s->records[list[h]];
        int32_t occurrences = 0;
        if (s->wide) {
            failed = merge_word32(s, (int32_t *)s->arena + record->start, record, list[h], a, b, z, &removed,
                                  &occurrences) < 0;
        } else {
            failed = merge_word16(s, (uint16_t *)s->arena + record->start, record, list[h], a, b, z, &removed,
                                  &occurrences) < 0;
        }
        if (s->nsources > 0) { /* the merge's count per source (out after the five fields) */
            out[MERGE_FIELDS + s->record_sources[list[h]]] += occurrences * record->count;
        }
    }
    holders_free(&s->map.block, holders, 1 + nholders);
    if (!failed && flush_neighbours(s, a, b, z) < 0) {
        failed = 1;
    }
    if (failed) {
        PyErr_NoMemory();
        return -1;
    }
    if (occurs) {
        /* overlapping occurrences (a a a) shifted counts off the merged pair itself; it is
         * gone (the map may have moved: find it again) */
        map_find(&s->map, pair_key(a, b))->count = 0;
    }
    s->merges_done++;
    for (size_t k = 0; k < s->nnew; k++) {
        uint64_t key = s->new_pairs[k];
        PairEntry *e = map_find(&s->map, key);
        if (e->count > 0 &&
            heap_offer(s, e->count, key_left(key), key_right(key)) < 0) {
            return -1;
        }
        /* its holders are all listed: no merge after this one adds to them (every pair a
         * merge makes holds its new token), so the power-of-two room can go, and a list of
         * one word becomes that word, inline */
        int32_t n = nholders_of(e);
        if (n == 1 && !holders_inline(e->holders)) {
            int32_t word = e->holders[1];
            PyMem_Free(e->holders);
            e->holders = inline_holders(word);
        } else if (n > 0 && holder_capacity(n) - n >= 8) {
            int32_t *h = PyMem_Realloc(e->holders, (1 + (size_t)n) * sizeof(int32_t));
            if (h != NULL) {
                e->holders = h;
            }
        }
    }
    /* pairs gone (count 0: never merged, never made again, since a pair is only made
     * with a new token) leave the map, their holders freed */
    if (occurs && keys_append(&s->dead, &s->ndead, &s->capdead, pair_key(a, b)) < 0) {
        return -1;
    }
    for (size_t k = 0; k < s->ndead; k++) {
        PairEntry *e = map_find(&s->map, s->dead[k]);
        if (e != NULL && e->count == 0) {
            map_delete(&s->map, e);
        }
    }
    s->ndead = 0;
    out[0] = a;
    out[1] = b;
    out[2] = z;
    out[3] = top.count;
    out[4] = removed;
    return 1;
}


static PyObject *
MergeState_step(MergeState *s, PyObject *arg)
{
    if (s->token_list == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "MergeState is not initialized");
        return NULL;
    }
    if (s->broken) {
        PyErr_SetString(PyExc_RuntimeError,
                        "this MergeState stopped on an error in an earlier step and may be half-updated; "
                        "start the merges again from the words");
        return NULL;
    }
    Py_ssize_t max_merges = PyLong_AsSsize_t(arg);
    if (max_merges == -1 && PyErr_Occurred()) {
        return NULL;
    }
    /* records of the merges in row order, turned into columns at the end (with named
     * sources, a sixth: each merge's count per source, one after another) */
    Py_ssize_t width = MERGE_FIELDS + s->nsources;
    int64_t *rows = NULL;
    Py_ssize_t n = 0, cap = 0;
    for (Py_ssize_t k = 0; k < max_merges && !s->finished; k++) {
        if (n == cap) {
            cap = cap ? cap * 2 : 64;
            int64_t *grown = PyMem_Realloc(rows, (size_t)cap * (size_t)width * sizeof(int64_t));
            if (grown == NULL) {
                PyMem_Free(rows);
                s->broken = 1; /* the merges made in this call are lost to the caller */
                return PyErr_NoMemory();
            }
            rows = grown;
        }
        int r = merge_once(s, rows + n * width);
        if (r < 0) {
            PyMem_Free(rows);
            s->broken = 1;
            return NULL;
        }
        if (r == 0) {
            s->finished = 1;
            break;
        }
        n++;
    }
    PyObject *columns = PyTuple_New(MERGE_FIELDS + (s->nsources > 0));
    if (columns == NULL) {
        PyMem_Free(rows);
        s->broken = 1;
        return NULL;
    }
    for (int f = 0; f < MERGE_FIELDS + (s->nsources > 0); f++) {
        Py_ssize_t per = f < MERGE_FIELDS ? 1 : s->nsources; /* values a merge */
        PyObject *column = PyBytes_FromStringAndSize(NULL, n * per * (Py_ssize_t)sizeof(int64_t));
        if (column == NULL) {
            PyMem_Free(rows);
            Py_DECREF(columns);
            s->broken = 1;
            return NULL;
        }
        char *out = PyBytes_AS_STRING(column);
        for (Py_ssize_t i = 0; i < n; i++) {
            /* memcpy: a bytes object's data need not be 8-byte aligned */
            memcpy(out + i * per * sizeof(int64_t), &rows[i * width + f], (size_t)per * sizeof(int64_t));
        }
        PyTuple_SET_ITEM(columns, f, column);
    }
    PyMem_Free(rows);
#ifdef TRIM_EVERY_STEPS
    if (++s->steps_untrimmed >= TRIM_EVERY_STEPS) {
        s->steps_untrimmed = 0;
        malloc_trim(0);
    }
#endif
    return columns;
}

/* The bytes held by each structure (for the memory benchmarks): a dict. */
static PyObject *
MergeState_memory(MergeState *s, PyObject *Py_UNUSED(ignored))
{
    size_t holders = 0, block_live = 0, stale = 0, inline_pairs = 0;
    for (size_t i = 0; s->map.slots != NULL && i < s->map.cap; i++) {
        PairEntry *e = &s->map.slots[i];
        if (e->key == EMPTY_KEY || e->holders == NULL) {
            continue;
        }
        if (holders_inline(e->holders)) {
            inline_pairs++;
            continue;
        }
        size_t bytes = (1 + (size_t)nholders_of(e)) * sizeof(int32_t);
        if (in_block(&s->map.block, e->holders)) {
            block_live += bytes;
        } else {
            holders += bytes; /* listed (the room may be more) */
        }
        stale += e->count == 0 ? bytes : 0;
    }
    int64_t arena = 0;
    for (Py_ssize_t r = 0; r < s->nwords; r++) {
        arena += s->records[r].len;
    }
    size_t block_resident = s->map.block.len * sizeof(int32_t);
#ifdef HAVE_MMAP
    long page = sysconf(_SC_PAGESIZE);
    if (s->map.block.mapped && page > 0) { /* the block's pages in memory (mincore) */
        size_t pages = (s->map.block.mapped + (size_t)page - 1) / (size_t)page;
        unsigned char *in = PyMem_Malloc(pages);
        if (in != NULL && mincore(s->map.block.base, s->map.block.mapped, in) == 0) {
            block_resident = 0;
            for (size_t i = 0; i < pages; i++) {
                block_resident += (in[i] & 1) ? (size_t)page : 0;
            }
        }
        PyMem_Free(in);
    }
#endif
    return Py_BuildValue("{s:n,s:n,s:n,s:n,s:n,s:n,s:n,s:n,s:n,s:n,s:n,s:n}",
                         "low", (Py_ssize_t)(s->caplow * sizeof(uint64_t)),
                         "records", (Py_ssize_t)(s->nwords * (Py_ssize_t)sizeof(WordRecord)),
                         "arena_live_tokens", (Py_ssize_t)arena,
                         "holders", (Py_ssize_t)holders, "block_live", (Py_ssize_t)block_live,
                         "block", (Py_ssize_t)(s->map.block.len * sizeof(int32_t)),
                         "block_resident", (Py_ssize_t)block_resident,
                         "holders_of_gone_pairs", (Py_ssize_t)stale,
                         "pairs_held_inline", (Py_ssize_t)inline_pairs,
                         "map", (Py_ssize_t)(s->map.cap * sizeof(PairEntry)),
                         "map_used", (Py_ssize_t)s->map.used,
                         "heap", (Py_ssize_t)(s->heapcap * sizeof(HeapItem)));
}

/* best() -> (left, right, count) of the pair the next step would merge, or None. */
static PyObject *
MergeState_best(MergeState *s, PyObject *Py_UNUSED(ignored))
{
    if (s->token_list == NULL || s->broken) {
        PyErr_SetString(PyExc_RuntimeError, "this MergeState is not initialized, or stopped on an error");
        return NULL;
    }
    if (s->forced_done < s->nforced) {
        PyErr_SetString(PyExc_RuntimeError, "best(): forced merges are still to be made (step first)");
        return NULL;
    }
    HeapItem top;
    int found = best_pair(s, &top);
    if (found < 0) {
        s->broken = 1;
        return NULL;
    }
    if (found == 0) {
        Py_RETURN_NONE;
    }
    return Py_BuildValue("(iiL)", top.left, top.right, (long long)top.count);
}

/* merge(left, right) -> step(1)'s columns for the merge of that pair, made now whatever its
 * count (as a forced one). */
static PyObject *
MergeState_merge(MergeState *s, PyObject *args)
{
    int left, right;
    if (!PyArg_ParseTuple(args, "ii", &left, &right)) {
        return NULL;
    }
    if (s->token_list == NULL || s->forced_done < s->nforced) {
        PyErr_SetString(PyExc_RuntimeError, "merge(): not initialized, or forced merges are still to be made");
        return NULL;
    }
    if (left < 0 || right < 0 || left >= s->ntokens || right >= s->ntokens) {
        PyErr_SetString(PyExc_ValueError, "merge(): a token id that does not exist");
        return NULL;
    }
    s->has_chosen = 1;
    s->chosen_left = left;
    s->chosen_right = right;
    s->finished = 0; /* (a chosen pair is made even when no best pair is left) */
    PyObject *one = PyLong_FromLong(1);
    if (one == NULL) {
        return NULL;
    }
    PyObject *columns = MergeState_step(s, one);
    Py_DECREF(one);
    return columns;
}

static PyMethodDef MergeState_methods[] = {
    {"best", (PyCFunction)MergeState_best, METH_NOARGS,
     "best() -> (left, right, count) of the pair step would merge next, or None when none is left"},
    {"merge", (PyCFunction)MergeState_merge, METH_VARARGS,
     "merge(left, right) -> step(1)'s columns for that pair, merged now whatever its count"},
    {"memory", (PyCFunction)MergeState_memory, METH_NOARGS,
     "memory() -> dict: the bytes each structure holds (for the benchmarks)"},
    {"step", (PyCFunction)MergeState_step, METH_O,
     "step(max_merges) -> (left_ids, right_ids, new_ids, counts, tokens_removed)\n\n"
     "Run up to max_merges merges; return them as five columns, each a bytes object of\n"
     "native int64 values (one per merge; read with array('q', column)). Empty columns\n"
     "mean no pair is left."},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject MergeStateType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "core._merge_kernel.MergeState",
    .tp_basicsize = sizeof(MergeState),
    .tp_itemsize = 0,
    .tp_dealloc = (destructor)MergeState_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "MergeState(words: list[bytes], counts: list[int], token_bytes: list[bytes])\n\n"
              "The incremental BPE merge loop of core.merge in C; see step().",
    .tp_methods = MergeState_methods,
    .tp_init = (initproc)MergeState_init,
    .tp_new = PyType_GenericNew,
};

/* merge_many(states, left, right) -> bytes: the merge of (left, right) made now in each
 * MergeState of the tuple `states` (as merge() does), their (count, tokens removed) as
 * native int64 pairs, one per state: parity-aware BPE makes each merge in every language's
 * loops, tens of thousands of times. */
static PyObject *
merge_many(PyObject *Py_UNUSED(module), PyObject *args)
{
    PyObject *states;
    int left, right;
    if (!PyArg_ParseTuple(args, "O!ii", &PyTuple_Type, &states, &left, &right)) {
        return NULL;
    }
    Py_ssize_t n = PyTuple_GET_SIZE(states);
    PyObject *result = PyBytes_FromStringAndSize(NULL, 2 * n * (Py_ssize_t)sizeof(int64_t));
    if (result == NULL) {
        return NULL;
    }
    char *out = PyBytes_AS_STRING(result);
    for (Py_ssize_t k = 0; k < n; k++) {
        PyObject *item = PyTuple_GET_ITEM(states, k);
        if (!PyObject_TypeCheck(item, &MergeStateType)) {
            Py_DECREF(result);
            PyErr_SetString(PyExc_TypeError, "merge_many: states must be MergeState objects");
            return NULL;
        }
        MergeState *s = (MergeState *)item;
        if (s->token_list == NULL || s->broken || s->forced_done < s->nforced) {
            Py_DECREF(result);
            PyErr_SetString(PyExc_RuntimeError, "merge_many: a state is not ready (not initialized, broken, or "
                                                "with forced merges still to make)");
            return NULL;
        }
        if (left < 0 || right < 0 || left >= s->ntokens || right >= s->ntokens) {
            Py_DECREF(result);
            PyErr_SetString(PyExc_ValueError, "merge_many: a token id that does not exist");
            return NULL;
        }
        int64_t row[MERGE_FIELDS]; /* (with named sources, room for their counts too: below) */
        int64_t *fields = s->nsources > 0 ? PyMem_Malloc((MERGE_FIELDS + (size_t)s->nsources) * sizeof(int64_t)) : row;
        if (fields == NULL) {
            Py_DECREF(result);
            return PyErr_NoMemory();
        }
        s->has_chosen = 1;
        s->chosen_left = left;
        s->chosen_right = right;
        s->finished = 0;
        int r = merge_once(s, fields);
        int64_t pair[2] = {fields[3], fields[4]};
        if (fields != row) {
            PyMem_Free(fields);
        }
        if (r != 1) {
            s->broken = 1;
            Py_DECREF(result);
            if (!PyErr_Occurred()) {
                PyErr_SetString(PyExc_RuntimeError, "merge_many: the merge was not made");
            }
            return NULL;
        }
        memcpy(out + 2 * k * sizeof(int64_t), pair, sizeof(pair));
    }
    return result;
}

static PyMethodDef merge_kernel_functions[] = {
    {"merge_many", merge_many, METH_VARARGS,
     "merge_many(states, left, right) -> bytes: the merge of (left, right) made in each MergeState of the tuple, "
     "their (count, tokens removed) as native int64 pairs"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef merge_kernel_module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "core._merge_kernel",
    .m_doc = "Compiled incremental BPE merge loop (optional; core.merge falls back to Python).",
    .m_size = -1,
    .m_methods = merge_kernel_functions,
};

PyMODINIT_FUNC
PyInit__merge_kernel(void)
{
    if (PyType_Ready(&MergeStateType) < 0) {
        return NULL;
    }
    PyObject *m = PyModule_Create(&merge_kernel_module);
    if (m == NULL) {
        return NULL;
    }
    Py_INCREF(&MergeStateType);
    if (PyModule_AddObject(m, "MergeState", (PyObject *)&MergeStateType) < 0) {
        Py_DECREF(&MergeStateType);
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
