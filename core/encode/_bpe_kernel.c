/* Compiled BPE of many pre-tokens: the encoder's cold-cache kernel (core/encode/piece_encoder.py)
 * in C, giving exactly what PieceEncoder.bpe gives for each word.
 *
 * BpeTable(byte_ids, rows, new_ids) holds the merges: an open-addressing hash map keyed by
 * left << 32 | right with each pair's rank, the id each rank makes, and the id of each
 * single byte. rows is a buffer of int64 (left, right, rank) triples (PieceEncoder.state),
 * new_ids an int64 buffer indexed by rank.
 *
 * encode_text(text, char_lengths) merges every word of a batch: the consecutive parts of
 * a str, char_lengths (an int64 buffer) characters each, each turned into the bytes the
 * tokenizer encodes (UTF-8, with surrogateescape's U+DC80..U+DCFF as their raw byte and
 * other lone surrogates as U+FFFD; bytes decoded with surrogateescape come back exact).
 * Encoder(table, pattern, cache_entries, specials).encode(data) encodes bytes: the native
 * pre-tokenizer (core/pretokenize/_scanner.h) cuts them, 16 pre-tokens ahead of their
 * lookups; a short pre-token's ids come from the front cache (two-way sets of 32-byte slots
 * holding key and ids, one cache line a set) or, on a miss, from merge_word; a longer one's
 * from a cache of all pre-tokens, else merge_word. Ids are written in the output's width
 * (encode_text's itemsize) as they are found. The GIL is released while it works.
 * encode_text also finds the special tokens, encode_list takes a str as well, and the
 * lists of ids share one int object per id (made once, in the BpeTable).
 *
 * Each word is merged as the one-word loop does: the adjacent pair with the lowest rank
 * first, the leftmost on ties, until no pair has a merge. Returns (ids, counts) as bytes of native int64: the
 * merged ids one word after another, and each word's number of ids. Words of up to
 * LONG_WORD bytes look through their mergeable pairs for each merge (a word's first ranks
 * come from a table of all byte pairs); longer ones take a binary heap of (rank, position),
 * which keeps a huge run of one character O(n log n).
 * CPython API only, C99 (and, on Linux, mmap and madvise for the front cache's huge pages).
 */
#define PY_SSIZE_T_CLEAN
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
 * misses were most of merging a new word's time, and a simulated 2 MB cache (cachegrind)
 * misses 38% less often in the merges of 20 MB of web-like text. Used when every id is
 * below PAIR_IDS - 1 and every rank below PAIR_RANKS (vocabularies of up to a million
 * tokens). */
#define PAIR_IDS ((int64_t)1 << 20)
#define PAIR_RANKS ((int64_t)1 << 24)
#define PAIR_EMPTY UINT64_MAX
#define PAIR_LOAD 2 /* slots per pair: at most half full (three quarters full, 512 KB, missed
                      * less but took 37% more instructions and 40% more first-level misses) */

static inline size_t
pair_index(const BpeTable *t, uint64_t pair)
{
    return (size_t)((pair * 0x9E3779B97F4A7C15ULL) >> t->pair_shift);
}

/* Slots read at once from a pair's place: `pairs` holds PAIR_WINDOW - 1 copies of its first
 * slots after its last, so a window never wraps. */
#define PAIR_WINDOW 4

/* The rank of the pair (left, right), NO_RANK when it has no merge. Every id is below 2^32
 * (BpeTable_init checks the ids it can produce), so the key needs no range check.
 *
 * In `pairs`, the first PAIR_WINDOW slots from the pair's place are compared without a
 * branch: the pair is in them, or an empty slot among them says it is nowhere (a probe
 * stops at the first empty slot, so no pair lies past one), all but always. Whether a pair
 * of a new word has a merge is a coin toss to the branch predictor, and the probe loop's
 * branches were mispredicted on it (the merges of 1.8 M words of multilingual text: 13%
 * faster). */
static inline int32_t
rank_of(const BpeTable *t, int64_t left, int64_t right)
{
    if (t->pairs != NULL) {
        uint64_t pair = (uint64_t)left << 20 | (uint64_t)right;
        size_t at = pair_index(t, pair);
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

/* A C-contiguous int64 buffer of obj, or -1 with an exception set. */
static int
get_int64_buffer(PyObject *obj, Py_buffer *view, const char *what)
{
    if (PyObject_GetBuffer(obj, view, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0) {
        return -1;
    }
    if (view->itemsize != 8 || view->format == NULL || (strcmp(view->format, "q") && strcmp(view->format, "l")
                                                        && strcmp(view->format, "<q") && strcmp(view->format, "<l")
                                                        && strcmp(view->format, "=q") && strcmp(view->format, "=l"))) {
        PyErr_Format(PyExc_TypeError, "%s must be a buffer of int64", what);
        PyBuffer_Release(view);
        return -1;
    }
    return 0;
}

static void
BpeTable_dealloc(BpeTable *self)
{
    PyMem_Free(self->slots);
    PyMem_Free(self->new_ids);
    PyMem_Free(self->byte_ranks);
    PyMem_Free(self->pairs);
    for (Py_ssize_t i = 0; i < self->nlongs; i++) {
        Py_DECREF(self->longs[i]);
    }
    PyMem_Free(self->longs);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* t->pairs from t's Slot map (built) when every id and rank fits, the Slot map then freed;
 * else t->pairs NULL and the Slot map kept. 0, or -1 with an exception set. */
static int
table_compact_pairs(BpeTable *t)
{
    PyMem_Free(t->pairs);
    t->pairs = NULL;
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
    if (pairs == NULL) {
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
        size_t at = pair_index(t, pair);
        while (pairs[at] != PAIR_EMPTY) {
            at = (at + 1) & t->pair_mask;
        }
        pairs[at] = pair << 24 | (uint64_t)slot->rank;
    }
    memcpy(pairs + cap, pairs, (PAIR_WINDOW - 1) * sizeof(uint64_t)); /* (rank_of's windows) */
    t->pairs = pairs;
    PyMem_Free(t->slots); /* rank_of reads `pairs` alone from here on */
    t->slots = NULL;
    return 0;
}

static int
BpeTable_init(BpeTable *self, PyObject *args, PyObject *kwds)
{
    static char *kwlist[] = {"byte_ids", "rows", "new_ids", NULL};
    PyObject *byte_ids_obj, *rows_obj, *new_ids_obj;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "OOO", kwlist, &byte_ids_obj, &rows_obj, &new_ids_obj)) {
        return -1;
    }
    PyObject *byte_ids = PySequence_Fast(byte_ids_obj, "byte_ids must be a sequence");
    if (byte_ids == NULL) {
        return -1;
    }
    if (PySequence_Fast_GET_SIZE(byte_ids) != 256) {
        Py_DECREF(byte_ids);
        PyErr_SetString(PyExc_ValueError, "byte_ids must hold 256 ids");
        return -1;
    }
    for (int b = 0; b < 256; b++) {
        self->byte_ids[b] = PyLong_AsLongLong(PySequence_Fast_GET_ITEM(byte_ids, b));
        if (self->byte_ids[b] == -1 && PyErr_Occurred()) {
            Py_DECREF(byte_ids);
            return -1;
        }
        if (self->byte_ids[b] < 0 || self->byte_ids[b] > UINT32_MAX) {
            Py_DECREF(byte_ids);
            PyErr_SetString(PyExc_ValueError, "byte ids must be between 0 and 2**32 - 1");
            return -1;
        }
    }
    Py_DECREF(byte_ids);

    Py_buffer rows, new_ids;
    if (get_int64_buffer(rows_obj, &rows, "rows") < 0) {
        return -1;
    }
    if (get_int64_buffer(new_ids_obj, &new_ids, "new_ids") < 0) {
        PyBuffer_Release(&rows);
        return -1;
    }
    int status = -1;
    Py_ssize_t nrows = rows.len / 8 / 3;
    const int64_t *r = rows.buf;
    size_t cap = 1024;
    int bits = 10;
    while (cap < (size_t)nrows * 2) {
        cap <<= 1;
        bits++;
    }
    PyMem_Free(self->slots);
    PyMem_Free(self->new_ids);
    PyMem_Free(self->byte_ranks);
    self->nranks = new_ids.len / 8;
    self->slots = PyMem_Malloc(cap * sizeof(Slot));
    self->new_ids = PyMem_Malloc((self->nranks ? self->nranks : 1) * sizeof(uint32_t));
    self->byte_ranks = PyMem_Malloc(65536 * sizeof(int32_t));
    if (self->slots == NULL || self->new_ids == NULL || self->byte_ranks == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t k = 0; k < self->nranks; k++) {
        int64_t id = ((const int64_t *)new_ids.buf)[k];
        if (id < 0 || id > UINT32_MAX) {
            PyErr_SetString(PyExc_ValueError, "merged ids must be between 0 and 2**32 - 1");
            goto done;
        }
        self->new_ids[k] = (uint32_t)id;
    }
    self->mask = cap - 1;
    self->shift = 64 - bits;
    for (size_t i = 0; i < cap; i++) {
        self->slots[i].key = EMPTY_KEY;
    }
    for (Py_ssize_t k = 0; k < nrows; k++) {
        int64_t left = r[3 * k], right = r[3 * k + 1], rank = r[3 * k + 2];
        if (left < 0 || right < 0 || left > UINT32_MAX || right > UINT32_MAX || rank < 0 || rank >= self->nranks) {
            PyErr_SetString(PyExc_ValueError, "a merge row is out of range");
            goto done;
        }
        uint64_t key = ((uint64_t)left << 32) | (uint64_t)right;
        size_t i = hash_key(self, key);
        while (self->slots[i].key != EMPTY_KEY && self->slots[i].key != key) {
            i = (i + 1) & self->mask;
        }
        if (self->slots[i].key == EMPTY_KEY || rank < self->slots[i].rank) {
            self->slots[i].key = key;
            self->slots[i].rank = (int32_t)rank; /* the first rank of a repeated pair */
        }
    }
    if (table_compact_pairs(self) < 0) {
        goto done;
    }
    for (int pair = 0; pair < 65536; pair++) {
        self->byte_ranks[pair] = rank_of(self, self->byte_ids[pair >> 8], self->byte_ids[pair & 0xFF]);
    }
    status = 0;
done:
    PyBuffer_Release(&rows);
    PyBuffer_Release(&new_ids);
    return status;
}

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
                                    * mispredicted (the words of 17 to 256 bytes: 32% faster) */
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
 * candidates and links of merge_short (cachegrind, the merges of 20 MB of web-like text:
 * 620 M -> 582 M instructions, 17.2 M -> 14.8 M mispredictions, each ~15 cycles). */
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
                                               * branch predictor knows (cachegrind, 8 MB of
                                               * multilingual text: 16% fewer mispredictions) */
    unsigned before = bytes[0]; /* (one pass: 2% fewer instructions, 4% fewer mispredictions) */
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

/* The output of a batch: ids (room for total ids) and counts (room for nwords). */
typedef struct {
    PyObject *ids, *counts;
    Scratch *scratch;
} Output;

static int
output_init(Output *o, Py_ssize_t total, Py_ssize_t nwords)
{
    o->ids = PyBytes_FromStringAndSize(NULL, (total ? total : 1) * sizeof(int64_t));
    o->counts = PyBytes_FromStringAndSize(NULL, (nwords ? nwords : 1) * sizeof(int64_t));
    o->scratch = PyMem_Malloc(sizeof(Scratch));
    if (o->scratch == NULL) {
        PyErr_NoMemory();
    }
    return o->ids && o->counts && o->scratch ? 0 : -1;
}

/* (ids, counts) trimmed to what was written, or NULL; frees the output either way. */
static PyObject *
output_finish(Output *o, int ok, Py_ssize_t nids, Py_ssize_t nwords)
{
    PyObject *result = NULL;
    if (ok && _PyBytes_Resize(&o->ids, nids * sizeof(int64_t)) == 0
        && _PyBytes_Resize(&o->counts, nwords * sizeof(int64_t)) == 0) {
        result = PyTuple_Pack(2, o->ids, o->counts);
    }
    PyMem_Free(o->scratch);
    Py_XDECREF(o->ids);
    Py_XDECREF(o->counts);
    return result;
}

/* The bytes the tokenizer encodes a code point as (core.piece_encoder.TEXT_ERRORS): UTF-8,
 * except that surrogateescape's U+DC80..U+DCFF are the raw byte they stand for and other
 * lone surrogates are U+FFFD. Writes to out (room for 4) and returns the count. */
static inline int
text_bytes(Py_UCS4 c, unsigned char *out)
{
    if (c < 0x80) {
        out[0] = (unsigned char)c;
        return 1;
    }
    if (c < 0x800) {
        out[0] = (unsigned char)(0xC0 | (c >> 6));
        out[1] = (unsigned char)(0x80 | (c & 0x3F));
        return 2;
    }
    if (c >= 0xD800 && c <= 0xDFFF) {
        if (c >= 0xDC80 && c <= 0xDCFF) {
            out[0] = (unsigned char)(c - 0xDC00);
            return 1;
        }
        c = 0xFFFD;
    }
    if (c < 0x10000) {
        out[0] = (unsigned char)(0xE0 | (c >> 12));
        out[1] = (unsigned char)(0x80 | ((c >> 6) & 0x3F));
        out[2] = (unsigned char)(0x80 | (c & 0x3F));
        return 3;
    }
    out[0] = (unsigned char)(0xF0 | (c >> 18));
    out[1] = (unsigned char)(0x80 | ((c >> 12) & 0x3F));
    out[2] = (unsigned char)(0x80 | ((c >> 6) & 0x3F));
    out[3] = (unsigned char)(0x80 | (c & 0x3F));
    return 4;
}

static PyObject *
BpeTable_encode_text(BpeTable *self, PyObject *args)
{
    PyObject *text, *lengths_obj;
    Py_buffer lengths;
    if (!PyArg_ParseTuple(args, "UO", &text, &lengths_obj)) {
        return NULL;
    }
    if (get_int64_buffer(lengths_obj, &lengths, "char_lengths") < 0) {
        return NULL;
    }
    Output o = {NULL, NULL, NULL};
    unsigned char *word = NULL;
    int ok = 0;
    Py_ssize_t nwords = lengths.len / 8, out = 0, total = 0, longest = 0;
    Py_ssize_t nchars = PyUnicode_GET_LENGTH(text);
    int kind = PyUnicode_KIND(text);
    const void *chars = PyUnicode_DATA(text);
    const int64_t *len = lengths.buf;
    for (Py_ssize_t w = 0; w < nwords; w++) {
        if (len[w] < 0 || len[w] > nchars - total) {
            PyErr_SetString(PyExc_ValueError, "the lengths do not fit the text");
            goto done;
        }
        total += len[w];
        longest = len[w] > longest ? (Py_ssize_t)len[w] : longest;
    }
    if (total != nchars) {
        PyErr_SetString(PyExc_ValueError, "the lengths do not add up to the text");
        goto done;
    }
    word = PyMem_Malloc(4 * (longest ? longest : 1));
    if (word == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    /* At most one id per byte: 4 bytes per character at most. */
    if (output_init(&o, 4 * nchars, nwords) < 0) {
        goto done;
    }
    int64_t *ids = (int64_t *)PyBytes_AS_STRING(o.ids);
    int64_t *counts = (int64_t *)PyBytes_AS_STRING(o.counts);
    for (Py_ssize_t w = 0, at = 0; w < nwords; w++) {
        Py_ssize_t nbytes = 0;
        for (Py_ssize_t end = at + (Py_ssize_t)len[w]; at < end; at++) {
            nbytes += text_bytes(PyUnicode_READ(kind, chars, at), word + nbytes);
        }
        Py_ssize_t n = merge_word(self, word, nbytes, ids + out, o.scratch);
        if (n < 0) {
            PyErr_NoMemory();
            goto done;
        }
        counts[w] = n;
        out += n;
    }
    ok = 1;
done:
    PyMem_Free(word);
    PyBuffer_Release(&lengths);
    return o.ids || o.counts || o.scratch ? output_finish(&o, ok, out, nwords) : NULL;
}

static PyMethodDef BpeTable_methods[] = {
    {"encode_text", (PyCFunction)BpeTable_encode_text, METH_VARARGS,
     "encode_text(text, char_lengths) -> (ids, counts): encode of the text's consecutive parts."},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject BpeTableType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "core._bpe_kernel.BpeTable",
    .tp_basicsize = sizeof(BpeTable),
    .tp_dealloc = (destructor)BpeTable_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "BpeTable(byte_ids, rows, new_ids): the merges, for encode_text(text, char_lengths).",
    .tp_methods = BpeTable_methods,
    .tp_init = (initproc)BpeTable_init,
    .tp_new = PyType_GenericNew,
};


/* ---------- Encoder: the native pre-tokenizer, a pre-token cache, and merge_word on misses ---------- */

#include "../pretokenize/_ascii_cut.h" /* (with _scanner.h) */
#include "pythread.h"
#include <stdlib.h>

/* A table of `size` zeroed bytes for the front cache, aligned to a cache line and, on
 * Linux, in huge pages where the system gives them (transparent huge pages, on request):
 * the front cache is looked up at random over its megabytes, and with 4 KB pages most of
 * those lookups also missed the TLB (one thread on a web-like corpus: 37 -> 48 MB/s with
 * 64 MB of slots). Its pages are mapped as they are first written (2 MB at a time), so an
 * encoder of a few short texts costs little. Free it with huge_free; NULL when out of
 * memory. */
static void *
huge_zeroed(size_t size)
{
#if defined(BPE_HUGE_MAP)
    return bpe_huge_map(size);
#else
    return bpe_calloc_written(size / 64 + 1, 64); /* (its alignment: below) */
#endif
}

static void
huge_free(void *p, size_t size)
{
    if (p == NULL) {
        return;
    }
#if defined(BPE_HUGE_MAP)
    bpe_huge_unmap(p, size);
#else
    free(p);
#endif
}

#define CACHED_WORD 256 /* longer pre-tokens are merged every time, not cached */

/* The front cache's size: eight slots per entry of the cache (cache_entries), between
 * 2^MIN_FRONT_BITS and 2^MAX_FRONT_BITS slots of 32 bytes (64 MB: corpus encoding's 2^18
 * entries; more was no faster on a web-like corpus). */
#define MIN_FRONT_BITS 12
#define MAX_FRONT_BITS 21
#define SEEN_BITS 20    /* the cache's admission filter: 2^20 bits */
#define FRONT_BYTES 16  /* pre-tokens of up to 16 bytes */
#define NARROW_IDS 7    /* with up to 7 ids below 2^16 (all but a few pre-tokens that short) */
#define WIDE_IDS 3      /* or up to 3 ids of any size (a vocabulary of more than 65,536) */
#define OUT_SLACK 4     /* ids an encode_span may write past its last (front_copy); one more
                         * int64 for the alignment of its staging (staging) */

/* A front slot: 32 bytes, two to a cache line, which is the two ways of a set. */
typedef struct {
    uint64_t lo, hi; /* the pre-token's bytes (bpe_tail_words) */
    uint8_t len;     /* 0: the slot is free */
    uint8_t nids;
    uint16_t ids[NARROW_IDS]; /* the ids when all of the encoder's are below 2^16; else id j
                               * is ids[2j] | ids[2j + 1] << 16 */
} FrontSlot;

typedef char front_slot_is_32_bytes[sizeof(FrontSlot) == 32 ? 1 : -1];


typedef struct {
    PyObject_HEAD
    BpeTable *table;
    int pattern;
    size_t capacity;         /* cache entries at most; the cache is emptied when full */
    BpeMap cache;            /* pre-token bytes -> (a: offset in ids, b: number of ids) */
    int64_t *ids;            /* the cached pre-tokens' ids */
    size_t ids_len, ids_cap;
    Scratch *scratch;        /* merge_word's working memory */
    int64_t *out;            /* encode's output, kept between calls (a fresh large buffer */
    size_t out_cap;          /* per call would cost page faults) */
    PyThread_type_lock lock; /* one encoding at a time (the GIL is released while encoding) */
    FrontSlot *front;        /* in front of the cache: recent short pre-tokens (front_hit), */
    int front_bits;          /* 2^front_bits slots (see huge_zeroed) */
    int narrow;              /* every id is below 2^16: the front slots hold uint16 ids */
    uint64_t *seen;          /* a bit per pre-token hash: seen once since the last eviction */
    BpeSpecial specials[BPE_MAX_SPECIALS]; /* longest first, as BpeSpecialCut takes them, with their ids; bytes owned */
    int nspecials;
} Encoder;

/* Make the table's int objects, one per id it can produce (0 to its largest id), once:
 * a list of ids then takes a new reference per id instead of making an int object (the
 * allocation was a third of encoding's instructions). 0, or -1 with an exception set. */
static int
table_make_longs(BpeTable *t)
{
    if (t->longs != NULL) {
        return 0;
    }
    int64_t largest = 0;
    for (int b = 0; b < 256; b++) {
        largest = t->byte_ids[b] > largest ? t->byte_ids[b] : largest;
    }
    for (Py_ssize_t k = 0; k < t->nranks; k++) {
        largest = t->new_ids[k] > largest ? t->new_ids[k] : largest;
    }
    PyObject **longs = PyMem_Malloc((size_t)(largest + 1) * sizeof(PyObject *));
    if (longs == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    for (int64_t id = 0; id <= largest; id++) {
        longs[id] = PyLong_FromLongLong(id);
        if (longs[id] == NULL) {
            while (id-- > 0) {
                Py_DECREF(longs[id]);
            }
            PyMem_Free(longs);
            return -1;
        }
    }
    t->longs = longs;
    t->nlongs = (Py_ssize_t)largest + 1;
    return 0;
}

/* A new list of the ids[0:n] (the GIL held), or NULL with an exception set. */
static PyObject *
ids_list(const BpeTable *t, const int64_t *ids, Py_ssize_t n)
{
    PyObject *list = PyList_New(n);
    if (list == NULL) {
        return NULL;
    }
    PyObject **items = ((PyListObject *)list)->ob_item;
    PyObject *const *longs = t->longs;
    for (Py_ssize_t k = 0; k < n; k++) {
        int64_t id = ids[k];
        PyObject *v;
        if ((uint64_t)id < (uint64_t)t->nlongs) {
            v = longs[id];
            Py_INCREF(v);
        } else if ((v = PyLong_FromLongLong(id)) == NULL) {
            Py_DECREF(list); /* the items not set yet are NULL, which the list's dealloc skips */
            return NULL;
        }
        items[k] = v;
    }
    return list;
}

static void
Encoder_dealloc(Encoder *self)
{
    bpe_map_free(&self->cache);
    PyMem_RawFree(self->ids);
    PyMem_RawFree(self->scratch);
    huge_free(self->front, ((size_t)1 << self->front_bits) * sizeof(FrontSlot));
    PyMem_RawFree(self->seen);
    for (int k = 0; k < self->nspecials; k++) {
        PyMem_Free((void *)self->specials[k].bytes);
    }
    PyMem_RawFree(self->out);
    if (self->lock) {
        PyThread_free_lock(self->lock);
    }
    Py_XDECREF(self->table);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* Keep the special tokens, a sequence of (bytes, id) pairs, longest first. 0, or -1 with
 * an exception set. */
static int
encoder_set_specials(Encoder *self, PyObject *specials)
{
    PyObject *seq = PySequence_Fast(specials, "specials must be a sequence of (bytes, id) pairs");
    if (seq == NULL) {
        return -1;
    }
    Py_ssize_t count = PySequence_Fast_GET_SIZE(seq);
    if (count > BPE_MAX_SPECIALS) {
        Py_DECREF(seq);
        PyErr_Format(PyExc_ValueError, "at most %d special tokens", BPE_MAX_SPECIALS);
        return -1;
    }
    for (Py_ssize_t k = 0; k < count; k++) {
        const char *bytes;
        Py_ssize_t len;
        long long id;
        if (!PyArg_ParseTuple(PySequence_Fast_GET_ITEM(seq, k), "y#L", &bytes, &len, &id)) {
            Py_DECREF(seq);
            return -1;
        }
        if (len == 0) { /* (any id: core.encode.documents_to_npy marks boundaries with -1) */
            Py_DECREF(seq);
            PyErr_SetString(PyExc_ValueError, "a special token must not be empty");
            return -1;
        }
        unsigned char *copy = PyMem_Malloc(len);
        if (copy == NULL) {
            Py_DECREF(seq);
            PyErr_NoMemory();
            return -1;
        }
        memcpy(copy, bytes, len);
        BpeSpecial special = {copy, len, id};
        bpe_special_insert(self->specials, self->nspecials++, special);
    }
    Py_DECREF(seq);
    return 0;
}

static int
Encoder_init(Encoder *self, PyObject *args, PyObject *kwds)
{
    static char *kwlist[] = {"table", "pattern", "cache_entries", "specials", NULL};
    PyObject *table, *specials = NULL;
    int pattern;
    Py_ssize_t capacity;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "O!in|O", kwlist, &BpeTableType, &table, &pattern, &capacity,
                                     &specials)) {
        return -1;
    }
    if (pattern != BPE_GPT2 && pattern != BPE_GPT4 && pattern != BPE_SUPERBPE) {
        PyErr_SetString(PyExc_ValueError, "pattern must be 1 (GPT-2), 2 (GPT-4) or 3 (SuperBPE's stage 2)");
        return -1;
    }
    if (self->table != NULL) {
        PyErr_SetString(PyExc_RuntimeError, "Encoder is already initialised");
        return -1;
    }
    if (table_make_longs((BpeTable *)table) < 0 || (specials != NULL && encoder_set_specials(self, specials) < 0)) {
        return -1;
    }
    Py_INCREF(table);
    self->table = (BpeTable *)table;
    self->pattern = pattern;
    self->capacity = capacity < 1 ? 1 : (size_t)capacity;
    self->ids_cap = 1 << 12;
    self->ids = PyMem_RawMalloc(self->ids_cap * sizeof(int64_t));
    self->scratch = PyMem_RawMalloc(sizeof(Scratch));
    self->front_bits = MIN_FRONT_BITS;
    self->narrow = self->table->nlongs <= 65536; /* (table_make_longs: the largest id + 1) */
    while (self->front_bits < MAX_FRONT_BITS && ((size_t)1 << self->front_bits) < 8 * self->capacity) {
        self->front_bits++;
    }
    self->front = huge_zeroed(((size_t)1 << self->front_bits) * sizeof(FrontSlot)); /* each thread's own */
    self->seen = PyMem_RawCalloc((size_t)1 << (SEEN_BITS - 6), sizeof(uint64_t));
    self->lock = PyThread_allocate_lock();
    if (self->ids == NULL || self->scratch == NULL || self->front == NULL || self->seen == NULL || self->lock == NULL || bpe_map_init(&self->cache, 1 << 12) < 0) {
        PyErr_NoMemory();
        return -1;
    }
    return 0;
}

/* A cache entry's b: its number of ids in the low 32 bits, its hits since the last
 * eviction above them. */
#define IDS_OF(b) ((Py_ssize_t)((b) & 0xFFFFFFFF))
#define HITS_OF(b) ((b) >> 32)

/* Whether the pre-token of this hash was seen since the last eviction; marks it seen. Every
 * pre-token in the cache is marked (encoder_evict marks the ones it keeps), so one not seen
 * is not in the cache. */
static inline int
seen_before(Encoder *self, uint64_t hash)
{
    uint64_t bit = hash >> (64 - SEEN_BITS), mask = (uint64_t)1 << (bit & 63);
    int seen = (self->seen[bit >> 6] & mask) != 0;
    self->seen[bit >> 6] |= mask;
    return seen;
}

/* The cache is full: keep the entries used since the last eviction (the text's frequent
 * pre-tokens) if they fill at most half of it, else empty it. 0, or -1 when out of memory. */
static int
encoder_evict(Encoder *self)
{
    BpeMap *old = &self->cache;
    memset(self->seen, 0, ((size_t)1 << (SEEN_BITS - 6)) * sizeof(uint64_t));
    size_t keep = 0, keep_ids = 0;
    for (size_t k = 0; k < old->n; k++) {
        if (HITS_OF(old->entries[k].b) > 0) {
            keep++;
            keep_ids += (size_t)IDS_OF(old->entries[k].b);
        }
    }
    if (keep == 0 || keep > self->capacity / 2) {
        bpe_map_clear(old);
        self->ids_len = 0;
        return 0;
    }
    BpeMap fresh;
    int64_t *ids = PyMem_RawMalloc((keep_ids ? keep_ids : 1) * sizeof(int64_t));
    if (ids == NULL || bpe_map_init(&fresh, 2 * keep) < 0) {
        PyMem_RawFree(ids);
        return -1;
    }
    size_t at = 0;
    int created;
    for (size_t k = 0; k < old->n; k++) {
        BpeEntry *e = &old->entries[k];
        if (HITS_OF(e->b) == 0) {
            continue;
        }
        BpeEntry *f = bpe_map_get_hashed(&fresh, old->keys + e->key, e->len, e->hash, &created);
        if (f == NULL) {
            bpe_map_free(&fresh);
            PyMem_RawFree(ids);
            return -1;
        }
        seen_before(self, e->hash);
        memcpy(ids + at, self->ids + e->a, (size_t)IDS_OF(e->b) * sizeof(int64_t));
        f->a = (int64_t)at;
        f->b = IDS_OF(e->b);
        at += (size_t)IDS_OF(e->b);
    }
    bpe_map_free(old);
    *old = fresh;
    PyMem_RawFree(self->ids);
    self->ids = ids;
    self->ids_len = at;
    self->ids_cap = keep_ids ? keep_ids : 1;
    return 0;
}

/* encode_pretoken without the front cache: the cache of all pre-tokens, else merge_word. */
static Py_ssize_t
encode_pretoken_cached(Encoder *self, const unsigned char *s, Py_ssize_t n, int64_t *out)
{
    if (n > CACHED_WORD) {
        return merge_word(self->table, s, n, out, self->scratch);
    }
    int created;
    uint64_t hash = bpe_hash(s, (size_t)n);
    if (!seen_before(self, hash)) { /* so not cached: merged at once, without the cache's
                                     * probe (a random access into its megabytes for each
                                     * pre-token seen once) */
        return merge_word(self->table, s, n, out, self->scratch);
    }
    BpeEntry *e = bpe_map_find(&self->cache, s, (size_t)n, hash);
    if (e != NULL) {
        Py_ssize_t k = IDS_OF(e->b);
        memcpy(out, self->ids + e->a, (size_t)k * sizeof(int64_t));
        if (HITS_OF(e->b) < 0x7FFFFFFF) {
            e->b += (int64_t)1 << 32;
        }
        return k;
    }
    Py_ssize_t k = merge_word(self->table, s, n, out, self->scratch);
    if (k < 0) {
        return -1;
    }
    /* Admission: a pre-token enters the cache the second time it is missed (its seen bit
     * was set the first time), so the many seen once (names, numbers, words of a rare
     * script) do not fill it and push the frequent ones out. */
    if (self->cache.n >= self->capacity) {
        if (encoder_evict(self) < 0) {
            return -1;
        }
        seen_before(self, hash); /* (the eviction cleared its mark) */
    }
    e = bpe_map_get_hashed(&self->cache, s, (size_t)n, hash, &created);
    if (e == NULL) {
        return -1;
    }
    if (self->ids_len + (size_t)k > self->ids_cap) {
        size_t cap = self->ids_cap * 2;
        while (cap < self->ids_len + (size_t)k) {
            cap *= 2;
        }
        int64_t *ids = PyMem_RawRealloc(self->ids, cap * sizeof(int64_t));
        if (ids == NULL) {
            return -1;
        }
        self->ids = ids;
        self->ids_cap = cap;
    }
    memcpy(self->ids + self->ids_len, out, (size_t)k * sizeof(int64_t));
    e->a = (int64_t)self->ids_len;
    e->b = k;
    self->ids_len += (size_t)k;
    return k;
}

/* The front slot of a pre-token of 1 to FRONT_BYTES bytes whose key is (lo, hi): its
 * bytes as two words (bpe_tail_words), which with its length are the whole pre-token. */
static inline FrontSlot *
front_slot(FrontSlot *front, int set_shift, uint64_t lo, uint64_t hi, Py_ssize_t n)
{
    /* two multiplications: the product's top bits depend on every bit of lo, hi and n */
    uint64_t h = (lo + hi * 0xC2B2AE3D27D4EB4FULL + (uint64_t)n) * 0x9E3779B97F4A7C15ULL;
    return front + ((h >> set_shift) << 1);
}

/* Whether the front slot f holds the pre-token of n bytes whose key is (lo, hi).
 *
 * The front cache holds the short pre-tokens (most of a text's) in one 32-byte slot each,
 * key and ids, in sets of two slots that share a cache line: one memory access per hit,
 * where the cache of all pre-tokens takes four (slot, entry, key, ids). Each set keeps
 * its two most recently used pre-tokens, the newer first. A miss is merged at once, not
 * looked up in that cache: on a web-like corpus, whose long tail of rare words misses
 * both, the cache's probe, its admission and its insertion cost more than merging a short
 * word (28 -> 39 MB/s). A hit is one comparison and four ids copied whatever their count
 * (the ids past it are overwritten by the next pre-token's, or are past the end): the
 * number of ids varies from one pre-token to the next, and a branch on it was mispredicted. */
static inline int
front_hit(const FrontSlot *f, uint64_t lo, uint64_t hi, Py_ssize_t n)
{
    return ((f->lo ^ lo) | (f->hi ^ hi) | (uint64_t)(f->len ^ (uint8_t)n)) == 0;
}

/* The ids in the front slot f, written to out (room for 4 at least, and for their
 * number): their number. */
static inline Py_ssize_t
front_copy(int narrow, const FrontSlot *f, int64_t *out)
{
    const uint16_t *ids = f->ids;
    if (narrow) {
        out[0] = ids[0];
        out[1] = ids[1];
        out[2] = ids[2];
        out[3] = ids[3];
        if (f->nids > 4) { /* (few pre-tokens have more than four ids) */
            for (int j = 4; j < f->nids; j++) {
                out[j] = ids[j];
            }
        }
    } else {
        out[0] = (int64_t)ids[0] | (int64_t)ids[1] << 16;
        out[1] = (int64_t)ids[2] | (int64_t)ids[3] << 16;
        out[2] = (int64_t)ids[4] | (int64_t)ids[5] << 16;
    }
    return f->nids;
}

/* The ids of a pre-token that is not in the newer slot of its set (front_hit): from the
 * older slot, else merged (and then put in the newer slot). Out of line, so that the loop
 * of the hits keeps its registers. */
#if defined(__GNUC__) || defined(__clang__)
__attribute__((noinline))
#endif
static Py_ssize_t
front_miss(Encoder *self, const unsigned char *s, Py_ssize_t n, uint64_t lo, uint64_t hi, FrontSlot *f, int64_t *out)
{
    if (front_hit(f + 1, lo, hi, n)) { /* the older of the two: it becomes the newer */
        FrontSlot hit = f[1];
        f[1] = f[0];
        f[0] = hit;
        return front_copy(self->narrow, f, out);
    }
    Py_ssize_t k = merge_word(self->table, s, n, out, self->scratch);
    if (k > 0 && k <= (self->narrow ? NARROW_IDS : WIDE_IDS)) { /* the newer slot now holds it */
        f[1] = f[0];
        f->lo = lo;
        f->hi = hi;
        f->len = (uint8_t)n;
        f->nids = (uint8_t)k;
        for (Py_ssize_t j = 0; j < k; j++) {
            if (self->narrow) {
                f->ids[j] = (uint16_t)out[j];
            } else {
                f->ids[2 * j] = (uint16_t)out[j];
                f->ids[2 * j + 1] = (uint16_t)(out[j] >> 16);
            }
        }
    }
    return k;
}

/* Pre-tokens cut (and their front slots asked for) before the first of them is looked up. */
#define CUT_AHEAD 16

/* A pre-token cut ahead of its lookup. */
typedef struct {
    Py_ssize_t at, n;
    uint64_t lo, hi;
    FrontSlot *f; /* NULL: longer than FRONT_BYTES */
} Cut;

/* Where the ids after the first `written` of an output of `itemsize`-byte ids (out) are
 * first written as int64: the first 8-byte boundary at or after their place. With
 * narrower ids that is just behind the ids placed so far, so the int64 ids of a batch of
 * pre-tokens are written and read back in the core's cache, and the output is written once,
 * at 2 or 4 bytes an id, where an int64 output the size of the chunk (8 bytes an id) was
 * written, then read again to narrow it. */
static inline int64_t *
staging(char *out, Py_ssize_t written, int itemsize)
{
    return (int64_t *)(((uintptr_t)(out + written * itemsize) + 7) & ~(uintptr_t)7);
}

/* ids[0:k] (int64, from staging(out, written, itemsize), or any other place) put at their
 * place in out as `itemsize`-byte ids (the caller checked that they fit). Forward is safe:
 * id i's place ends at or before where id i + 1 is read. */
static inline void
place_ids(char *out, Py_ssize_t written, int itemsize, const int64_t *ids, Py_ssize_t k)
{
    char *to = out + written * itemsize;
    if (itemsize == 2) {
        for (Py_ssize_t i = 0; i < k; i++) {
            ((uint16_t *)to)[i] = (uint16_t)ids[i];
        }
    } else if (itemsize == 4) {
        for (Py_ssize_t i = 0; i < k; i++) {
            ((uint32_t *)to)[i] = (uint32_t)ids[i];
        }
    } else if ((const char *)ids != to) {
        memmove(to, ids, (size_t)k * sizeof(int64_t));
    }
}

/* Encode s[0:n] into out as `itemsize`-byte ids (2, 4 or 8; out 8-byte aligned, with room
 * for n + OUT_SLACK + 1 int64): the number of ids, or -1 when out of memory.
 *
 * The text is cut CUT_AHEAD pre-tokens at a time, each short one's front set prefetched,
 * then those are looked up: the front cache is far larger than the core's own caches, and
 * a lookup right after its cut waited for its set; cut in a batch, their loads overlap. */
static Py_ssize_t
encode_span(Encoder *self, const unsigned char *s, Py_ssize_t n, char *out, int itemsize)
{
    Cut cuts[CUT_AHEAD];
    Py_ssize_t i = 0, written = 0, k;
    FrontSlot *front = self->front; /* (locals: the stores below could be to *self, for all the compiler knows) */
    const int set_shift = 64 - (self->front_bits - 1), narrow = self->narrow;
    BpeCutter cutter; /* GPT-2's ASCII text 64 bytes at a time, as counting cuts it */
    bpe_cut_start(&cutter, self->pattern, s, n);
    while (i < n) {
        int m = 0;
        for (; m < CUT_AHEAD && i < n; m++) {
            Py_ssize_t j = bpe_cut_next(&cutter, i);
            Cut *c = &cuts[m];
            c->at = i;
            c->n = j - i;
            c->f = NULL;
            if (c->n <= FRONT_BYTES) {
                bpe_tail_words(s + i, (size_t)c->n, i + 16 <= n, &c->lo, &c->hi);
                c->f = front_slot(front, set_shift, c->lo, c->hi, c->n);
                bpe_prefetch(c->f);
            }
            i = j;
        }
        int64_t *stage = staging(out, written, itemsize);
        Py_ssize_t got = 0;
        for (int q = 0; q < m; q++) {
            const Cut *c = &cuts[q];
            if (c->f != NULL && front_hit(c->f, c->lo, c->hi, c->n)) {
                k = front_copy(narrow, c->f, stage + got);
            } else if (c->f != NULL) {
                k = front_miss(self, s + c->at, c->n, c->lo, c->hi, c->f, stage + got);
            } else {
                k = encode_pretoken_cached(self, s + c->at, c->n, stage + got);
            }
            if (k < 0) {
                return -1;
            }
            got += k;
        }
        place_ids(out, written, itemsize, stage, got);
        written += got;
    }
    return written;
}

/* encode_span, with each of the encoder's special tokens as its one id (cut where
 * core.pretokenize.specials' SpecialMatcher cuts: BpeSpecialCut), each stretch between
 * them encoded as a text of its own. */
static Py_ssize_t
encode_text_span(Encoder *self, const unsigned char *s, Py_ssize_t n, char *out, int itemsize)
{
    BpeSpecialCut cut;
    ptrdiff_t start, stop;
    int special;
    Py_ssize_t written = 0;
    bpe_special_cut_start(&cut, self->specials, self->nspecials, s, n);
    while (bpe_special_cut_next(&cut, &start, &stop, &special)) {
        Py_ssize_t k = encode_span(self, s + start, stop - start, out + written * itemsize, itemsize);
        if (k < 0) {
            return -1;
        }
        written += k;
        if (special >= 0) {
            int64_t id = self->specials[special].id;
            place_ids(out, written++, itemsize, &id, 1);
        }
    }
    return written;
}

/* The output buffer with room for n ids (the lock is held); NULL when out of memory. */
static int64_t *
encoder_out(Encoder *self, Py_ssize_t n)
{
    size_t need = (size_t)n + OUT_SLACK + 1;
    if (need > self->out_cap) {
        size_t cap = self->out_cap ? self->out_cap : 4096;
        while (cap < need) {
            cap *= 2;
        }
        int64_t *out = PyMem_RawRealloc(self->out, cap * sizeof(int64_t));
        if (out == NULL) {
            return NULL;
        }
        self->out = out;
        self->out_cap = cap;
    }
    return self->out;
}

/* Take the lock and encode s[0:n] (without the GIL when it is long; special tokens as
 * their ids if `specials`; narrowed to `itemsize` bytes an id when it is 2 or 4): the
 * number of ids, written to *out, or -1 when out of memory. The caller reads *out, then
 * releases the lock. */
static Py_ssize_t
encoder_run(Encoder *self, const unsigned char *s, Py_ssize_t n, int specials, int itemsize, int64_t **out)
{
    Py_ssize_t (*encode)(Encoder *, const unsigned char *, Py_ssize_t, char *, int) =
        specials ? encode_text_span : encode_span;
    Py_ssize_t written;
    if (n < 4096) { /* small calls: not worth releasing the GIL */
        if (!PyThread_acquire_lock(self->lock, NOWAIT_LOCK)) {
            Py_BEGIN_ALLOW_THREADS
            PyThread_acquire_lock(self->lock, WAIT_LOCK);
            Py_END_ALLOW_THREADS
        }
        *out = encoder_out(self, n);
        written = *out ? encode(self, s, n, (char *)*out, itemsize) : -1;
    } else {
        Py_BEGIN_ALLOW_THREADS
        PyThread_acquire_lock(self->lock, WAIT_LOCK);
        *out = encoder_out(self, n);
        written = *out ? encode(self, s, n, (char *)*out, itemsize) : -1;
        Py_END_ALLOW_THREADS
    }
    return written;
}

static PyObject *
Encoder_encode(Encoder *self, PyObject *args, PyObject *kwds)
{
    static char *kwlist[] = {"data", "start", "end", "as_list", NULL};
    Py_buffer view;
    Py_ssize_t start = 0, end = -1;
    int as_list = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "y*|nnp", kwlist, &view, &start, &end, &as_list)) {
        return NULL;
    }
    if (end < 0 || end > view.len) {
        end = view.len;
    }
    if (start < 0 || start > end) {
        PyBuffer_Release(&view);
        PyErr_SetString(PyExc_ValueError, "start must be between 0 and end");
        return NULL;
    }
    int64_t *out;
    Py_ssize_t written = encoder_run(self, (const unsigned char *)view.buf + start, end - start, 0, 8, &out);
    PyBuffer_Release(&view);
    PyObject *result = NULL;
    if (written < 0) {
        PyErr_NoMemory();
    } else if (as_list) {
        result = ids_list(self->table, out, written);
    } else {
        result = PyBytes_FromStringAndSize((const char *)out, written * (Py_ssize_t)sizeof(int64_t));
    }
    PyThread_release_lock(self->lock);
    return result;
}

/* The ids of a str's UTF-8 (an ASCII str read in place; UnicodeEncodeError for a lone
 * surrogate) or of a bytes-like object (an mmap's memoryview read in place), as a list or as
 * a bytearray of `itemsize`-byte ids (8: int64; 2, 4: uint16, uint32, narrowed without the
 * GIL: the caller checked that every id fits). */
static PyObject *
encoder_encode_object(Encoder *self, PyObject *data, int specials, int as_list, int itemsize)
{
    PyObject *utf8 = NULL;
    Py_buffer view = {0};
    const char *s;
    Py_ssize_t n;
    if (PyUnicode_Check(data)) {
        if (PyUnicode_READY(data) < 0) {
            return NULL;
        }
        if (PyUnicode_IS_ASCII(data)) {
            s = (const char *)PyUnicode_DATA(data);
            n = PyUnicode_GET_LENGTH(data);
        } else {
            if ((utf8 = PyUnicode_AsUTF8String(data)) == NULL) {
                return NULL;
            }
            s = PyBytes_AS_STRING(utf8);
            n = PyBytes_GET_SIZE(utf8);
        }
    } else if (PyBytes_Check(data)) {
        s = PyBytes_AS_STRING(data);
        n = PyBytes_GET_SIZE(data);
    } else {
        if (PyObject_GetBuffer(data, &view, PyBUF_SIMPLE) < 0) {
            return NULL;
        }
        s = view.buf;
        n = view.len;
    }
    int64_t *out;
    Py_ssize_t written = encoder_run(self, (const unsigned char *)s, n, specials, as_list ? 8 : itemsize, &out);
    PyObject *result;
    if (written < 0) {
        result = PyErr_NoMemory();
    } else if (as_list) {
        result = ids_list(self->table, out, written);
    } else { /* a bytearray: numpy.frombuffer makes a writable array of it without a copy */
        result = PyByteArray_FromStringAndSize((const char *)out, written * (Py_ssize_t)itemsize);
    }
    PyThread_release_lock(self->lock);
    Py_XDECREF(utf8);
    if (view.obj != NULL) {
        PyBuffer_Release(&view);
    }
    return result;
}

/* encode_list(data): one positional argument, no keywords, so that a short text costs
 * little more than its encoding. */
static PyObject *
Encoder_encode_list(Encoder *self, PyObject *data)
{
    return encoder_encode_object(self, data, 0, 1, 8);
}

static PyObject *
Encoder_encode_text(Encoder *self, PyObject *args)
{
    PyObject *data;
    int as_list = 0, itemsize = 8;
    if (!PyArg_ParseTuple(args, "O|pi", &data, &as_list, &itemsize)) {
        return NULL;
    }
    if (itemsize != 2 && itemsize != 4 && itemsize != 8) {
        PyErr_SetString(PyExc_ValueError, "itemsize must be 2, 4 or 8");
        return NULL;
    }
    return encoder_encode_object(self, data, 1, as_list, itemsize);
}

/* Encode every text of a batch into a growing buffer of uint32 ids (no Python int per id,
 * and no int64 buffer the size of the whole batch: each text goes through a scratch buffer
 * the size of the longest one). Runs without the GIL, holding the encoder's lock; sets
 * *ids (PyMem_Raw, to free) and *total, and each text's number of ids in lengths.
 * -1 when out of memory. */
static int
encode_many_flat(Encoder *self, const Py_buffer *views, Py_ssize_t count, Py_ssize_t *lengths,
                 uint32_t **ids, Py_ssize_t *total)
{
    Py_ssize_t longest = 1, all = 0;
    for (Py_ssize_t d = 0; d < count; d++) {
        longest = views[d].len > longest ? views[d].len : longest;
        all += views[d].len;
    }
    int64_t *scratch = PyMem_RawMalloc((size_t)(longest + OUT_SLACK + 1) * sizeof(int64_t));
    Py_ssize_t room = all / 3 + 64; /* ~4 bytes a token in text; grown when short */
    uint32_t *flat = PyMem_RawMalloc((size_t)room * sizeof(uint32_t));
    Py_ssize_t at = 0;
    if (scratch == NULL || flat == NULL) {
        goto fail;
    }
    for (Py_ssize_t d = 0; d < count; d++) {
        Py_ssize_t k = encode_text_span(self, views[d].buf, views[d].len, (char *)scratch, 8);
        if (k < 0) {
            goto fail;
        }
        if (at + k > room) {
            Py_ssize_t more = room + room / 2 > at + k ? room + room / 2 : at + k;
            uint32_t *grown = PyMem_RawRealloc(flat, (size_t)more * sizeof(uint32_t));
            if (grown == NULL) {
                goto fail;
            }
            flat = grown;
            room = more;
        }
        for (Py_ssize_t i = 0; i < k; i++) {
            flat[at + i] = (uint32_t)scratch[i]; /* every id is below 2^32 (BpeTable_init) */
        }
        lengths[d] = k;
        at += k;
    }
    PyMem_RawFree(scratch);
    *ids = flat;
    *total = at;
    return 0;
fail:
    PyMem_RawFree(scratch);
    PyMem_RawFree(flat);
    return -1;
}

/* The result of encode_many(datas, True): (uint32 ids, int64 number of ids of each text). */
static PyObject *
batch_arrays(const uint32_t *ids, Py_ssize_t total, const Py_ssize_t *lengths, Py_ssize_t count)
{
    PyObject *flat = PyByteArray_FromStringAndSize((const char *)ids, total * (Py_ssize_t)sizeof(uint32_t));
    PyObject *counts = PyByteArray_FromStringAndSize(NULL, count * (Py_ssize_t)sizeof(int64_t));
    if (flat == NULL || counts == NULL) {
        Py_XDECREF(flat);
        Py_XDECREF(counts);
        return NULL;
    }
    int64_t *c = (int64_t *)PyByteArray_AS_STRING(counts);
    for (Py_ssize_t d = 0; d < count; d++) {
        c[d] = lengths[d];
    }
    return Py_BuildValue("(NN)", flat, counts);
}

static PyObject *
Encoder_encode_many(Encoder *self, PyObject *args)
{
    PyObject *arg;
    int as_arrays = 0;
    if (!PyArg_ParseTuple(args, "O|p", &arg, &as_arrays)) {
        return NULL;
    }
    PyObject *seq = PySequence_Fast(arg, "encode_many takes a list of bytes");
    if (seq == NULL) {
        return NULL;
    }
    Py_ssize_t count = PySequence_Fast_GET_SIZE(seq), got = 0, total = 0;
    Py_buffer *views = PyMem_Calloc(count ? count : 1, sizeof(Py_buffer));
    Py_ssize_t *lengths = PyMem_Calloc(count ? count : 1, sizeof(Py_ssize_t));
    int64_t *out = NULL;
    PyObject *result = NULL;
    if (views == NULL || lengths == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    for (; got < count; got++) {
        if (PyObject_GetBuffer(PySequence_Fast_GET_ITEM(seq, got), &views[got], PyBUF_SIMPLE) < 0) {
            goto done;
        }
        total += views[got].len;
    }
    int failed = 0;
    Py_ssize_t at = 0;
    if (as_arrays) {
        uint32_t *flat = NULL;
        Py_BEGIN_ALLOW_THREADS
        PyThread_acquire_lock(self->lock, WAIT_LOCK);
        failed = encode_many_flat(self, views, count, lengths, &flat, &at) < 0;
        PyThread_release_lock(self->lock);
        Py_END_ALLOW_THREADS
        if (failed) {
            PyErr_NoMemory();
            goto done;
        }
        result = batch_arrays(flat, at, lengths, count);
        PyMem_RawFree(flat);
        goto done;
    }
    out = PyMem_RawMalloc((size_t)(total + OUT_SLACK + 1) * sizeof(int64_t));
    if (out == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    Py_BEGIN_ALLOW_THREADS
    PyThread_acquire_lock(self->lock, WAIT_LOCK);
    for (Py_ssize_t d = 0; d < count && !failed; d++) {
        lengths[d] = encode_text_span(self, views[d].buf, views[d].len, (char *)(out + at), 8);
        failed = lengths[d] < 0;
        at += failed ? 0 : lengths[d];
    }
    PyThread_release_lock(self->lock);
    Py_END_ALLOW_THREADS
    if (failed) {
        PyErr_NoMemory();
        goto done;
    }
    result = PyList_New(count);
    for (Py_ssize_t d = 0, k = 0; result != NULL && d < count; k += lengths[d], d++) {
        PyObject *ids = ids_list(self->table, out + k, lengths[d]);
        if (ids == NULL) {
            Py_CLEAR(result);
            break;
        }
        PyList_SET_ITEM(result, d, ids);
    }
done:
    for (Py_ssize_t d = 0; d < got; d++) {
        PyBuffer_Release(&views[d]);
    }
    PyMem_Free(views);
    PyMem_Free(lengths);
    PyMem_RawFree(out);
    Py_DECREF(seq);
    return result;
}

static PyObject *
Encoder_cache_size(Encoder *self, PyObject *Py_UNUSED(ignored))
{
    return PyLong_FromSize_t(self->cache.n);
}

static PyMethodDef Encoder_methods[] = {
    {"encode", (PyCFunction)(void (*)(void))Encoder_encode, METH_VARARGS | METH_KEYWORDS,
     "encode(data, start=0, end=-1, as_list=False) -> int64 bytes (or a list) of the ids of data[start:end]"},
    {"encode_list", (PyCFunction)Encoder_encode_list, METH_O,
     "encode_list(text or bytes) -> list of the ids of the text's UTF-8 (or of the bytes)"},
    {"encode_text", (PyCFunction)Encoder_encode_text, METH_VARARGS,
     "encode_text(data, as_list=False, itemsize=8) -> the ids of data (a str: its UTF-8, or any buffer), special "
     "tokens as their ids, as a list or a bytearray of int64 (itemsize 8), uint32 (4) or uint16 (2)"},
    {"encode_many", (PyCFunction)Encoder_encode_many, METH_VARARGS,
     "encode_many(list of bytes, as_arrays=False) -> the ids of each (special tokens as their ids), as lists, "
     "or as (uint32 ids of all, int64 count of each) bytearrays; one release of the GIL for all"},
    {"cache_size", (PyCFunction)Encoder_cache_size, METH_NOARGS, "pre-tokens in the cache"},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject EncoderType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "core._bpe_kernel.Encoder",
    .tp_basicsize = sizeof(Encoder),
    .tp_dealloc = (destructor)Encoder_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Encoder(table, pattern, cache_entries, specials=()): bytes -> ids with the native pre-tokenizer.",
    .tp_methods = Encoder_methods,
    .tp_init = (initproc)Encoder_init,
    .tp_new = PyType_GenericNew,
};

static struct PyModuleDef bpe_kernel_module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "core._bpe_kernel",
    .m_doc = "Compiled BPE of many pre-tokens (see core/encode/piece_encoder.py).",
    .m_size = -1,
};

PyMODINIT_FUNC
PyInit__bpe_kernel(void)
{
    if (PyType_Ready(&BpeTableType) < 0 || PyType_Ready(&EncoderType) < 0) {
        return NULL;
    }
    PyObject *m = PyModule_Create(&bpe_kernel_module);
    if (m == NULL) {
        return NULL;
    }
    Py_INCREF(&BpeTableType);
    if (PyModule_AddObject(m, "BpeTable", (PyObject *)&BpeTableType) < 0) {
        Py_DECREF(&BpeTableType);
        Py_DECREF(m);
        return NULL;
    }
    Py_INCREF(&EncoderType);
    if (PyModule_AddObject(m, "Encoder", (PyObject *)&EncoderType) < 0) {
        Py_DECREF(&EncoderType);
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
