/* Compiled Picky BPE merge loop: PythonPickyLoop.step (core/variants/picky_loop.py) in C,
 * with the same results merge for merge (the rules: core/variants/picky_reference.py).
 * PickyState(blob, lengths, counts, specials, threshold) takes the words packed (as
 * core/training/merge.py's PackedWords); step(max_merges, vocab_size, seconds) runs merges,
 * each with its removals, until max_merges are made, vocab_size tokens are live, no pair
 * is left or `seconds` have passed, and returns them as columns with the removals (splits)
 * they made. The merges run without the GIL (on the state's own memory).
 *
 * Data structures, and the invariants they keep between merges:
 * - words: each distinct pre-token of two bytes or more (shorter ones never change) as
 *   int32 token ids in one arena, with its count and a visit stamp. A word's slot has room
 *   for its bytes: it never holds more tokens than bytes, so a removal, which lengthens it
 *   (walk(x) gives >= 2 pieces), rewrites it in place.
 * - pairs: an open-addressing hash map keyed by left << 32 | right. A pair's count is
 *   exactly its weighted occurrences in the words now (overlaps counted: "aaa" holds (a, a)
 *   twice); a pair whose count is 0 leaves the map at the end of the merge. Every word
 *   holding the pair is in its word list (append-only: stale entries and repeats allowed,
 *   deduplicated by the visit stamp when read); a merge takes its pair's list whole.
 * - tokens: id -> bytes (0-255, the special tokens, then the merged tokens in order of
 *   first creation), first parents, live flag, frequency (exact weighted occurrences in the
 *   words, int64) and, for a merged token, a word list: every word holding it is in it
 *   (stale entries allowed). A bytes -> id table of the merged tokens gives a merge whose
 *   bytes were made before that token's first id back (a restore).
 * - heap: a lazy max-heap of (count, left, right). Every pair in the map has an entry whose
 *   count is >= its count: a pair whose count rose in a merge is pushed at the merge's end,
 *   and an entry popped with a stale count is pushed back with the actual count (if > 0).
 *   So the first entry popped whose count is its pair's count is the best pair: highest
 *   count, then the greatest (left bytes, right bytes) compared as a tuple of byte strings
 *   (a proper prefix is smaller; tie_break_key in core/training/merge.py), then smaller ids.
 * Every count and frequency is at most the words' weighted bytes, checked below 2**53 at
 * the start (else OverflowError: the Python loop runs), so int64 holds them and
 * made / (made + rest) in doubles is correctly rounded, as Python's int / int is.
 * Allocation failures give MemoryError; the state is then broken (no further step).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>
#if defined(_WIN32)
#include <windows.h>
#else
#include <time.h>
#endif

/* ---------- growable buffers ---------- */

/* Room for `need` items of `size` bytes in *buf of capacity *cap (doubling); -1 on memory error. */
static int reserve(void **buf, size_t *cap, size_t need, size_t size)
{
    if (need <= *cap) return 0;
    size_t c = *cap ? *cap : 64;
    while (c < need) c *= 2;
    void *p = PyMem_RawRealloc(*buf, c * size);
    if (p == NULL) return -1;
    *buf = p;
    *cap = c;
    return 0;
}

/* The room of a word list of n ids: 0, then powers of two from 4 (only n is stored). */
static inline size_t list_room(int32_t n)
{
    return n == 0 ? 0 : n <= 4 ? 4 : (size_t)1 << (64 - __builtin_clzll((unsigned long long)(n - 1)));
}

/* Append w to the list (*items, *n) unless w is its last id already; -1 on memory error. */
static int list_push(int32_t **items, int32_t *n, int32_t w)
{
    if (*n > 0 && (*items)[*n - 1] == w) return 0;
    if ((size_t)*n == list_room(*n)) {
        int32_t *p = *n == INT32_MAX ? NULL : PyMem_RawRealloc(*items, list_room(*n + 1) * sizeof(int32_t));
        if (p == NULL) return -1;
        *items = p;
    }
    (*items)[(*n)++] = w;
    return 0;
}

typedef struct { uint64_t *keys; size_t n, cap; } KeyList;

static int keys_push(KeyList *l, uint64_t key)
{
    if (reserve((void **)&l->keys, &l->cap, l->n + 1, sizeof(uint64_t)) < 0) return -1;
    l->keys[l->n++] = key;
    return 0;
}

/* ---------- pair map ---------- */

#define NO_PAIR UINT64_MAX /* a free slot (no id is 0xFFFFFFFF) */

typedef struct {
    uint64_t key;    /* left << 32 | right, NO_PAIR when free */
    int64_t count;   /* weighted occurrences in the words now */
    int32_t *words;  /* the words that may hold it (list_push) */
    int32_t nwords;
    int32_t raised;  /* listed in PickyState.raised (its count rose in this merge) */
} Pair;

typedef struct { Pair *slots; size_t cap, used; } PairMap; /* cap: a power of two, at most 3/4 used */

static inline uint64_t pair_key(int32_t left, int32_t right)
{
    return (uint64_t)(uint32_t)left << 32 | (uint32_t)right;
}

static inline size_t hash_key(uint64_t key)
{
    key = (key ^ key >> 33) * 0xff51afd7ed558ccdULL;
    key = (key ^ key >> 33) * 0xc4ceb9fe1a85ec53ULL;
    return (size_t)(key ^ key >> 33);
}

/* The slot holding key, or the free slot where it would go. */
static inline Pair *map_slot(const PairMap *m, uint64_t key)
{
    size_t mask = m->cap - 1, j = hash_key(key) & mask;
    while (m->slots[j].key != key && m->slots[j].key != NO_PAIR) j = (j + 1) & mask;
    return &m->slots[j];
}

static inline Pair *map_find(const PairMap *m, uint64_t key)
{
    Pair *e = map_slot(m, key);
    return e->key == key ? e : NULL;
}

/* The map with cap slots (a power of two), its entries moved over; -1 on memory error. */
static int map_resize(PairMap *m, size_t cap)
{
    Pair *slots = PyMem_RawMalloc(cap * sizeof(Pair));
    if (slots == NULL) return -1;
    for (size_t i = 0; i < cap; i++) slots[i].key = NO_PAIR;
    PairMap bigger = {slots, cap, m->used};
    for (size_t i = 0; i < m->cap; i++) {
        if (m->slots[i].key != NO_PAIR) *map_slot(&bigger, m->slots[i].key) = m->slots[i];
    }
    PyMem_RawFree(m->slots);
    *m = bigger;
    return 0;
}

/* The entry of key, added with count 0 if absent (the map may grow: no entry pointer
 * survives this call); NULL on memory error. */
static Pair *map_get_or_add(PairMap *m, uint64_t key)
{
    Pair *e = map_slot(m, key);
    if (e->key == key) return e;
    if ((m->used + 1) * 4 > m->cap * 3) {
        if (map_resize(m, m->cap * 2) < 0) return NULL;
        e = map_slot(m, key);
    }
    *e = (Pair){key, 0, NULL, 0, 0};
    m->used++;
    return e;
}

/* Remove entry e and free its word list (backward-shift deletion: moves other entries). */
static void map_delete(PairMap *m, Pair *e)
{
    size_t mask = m->cap - 1, i = (size_t)(e - m->slots), j = i;
    PyMem_RawFree(e->words);
    for (;;) {
        j = (j + 1) & mask;
        if (m->slots[j].key == NO_PAIR) break;
        size_t k = hash_key(m->slots[j].key) & mask;
        if (i <= j ? (i < k && k <= j) : (i < k || k <= j)) continue; /* its home is in (i, j]: it stays */
        m->slots[i] = m->slots[j];
        i = j;
    }
    m->slots[i].key = NO_PAIR;
    m->used--;
}

/* ---------- state ---------- */

typedef struct {
    int64_t count;
    uint64_t lkey, rkey; /* the first 8 bytes of the left and right tokens (Token.prefix) */
    int32_t left, right;
} HeapItem;

typedef struct {
    int64_t count, start; /* its tokens: arena[start .. start + len), room for its bytes */
    int32_t len;
    uint32_t seen; /* the visit stamp of the last pass that read it */
} Word;

typedef struct {
    int64_t freq;                  /* weighted occurrences in the words */
    int64_t offset;                /* its bytes: bytes[offset .. offset + len) */
    uint64_t prefix;               /* its first 8 bytes, big-endian, zero-padded */
    int32_t len, left, right;      /* left, right: first parents (merged tokens) */
    int32_t nwords, *words, live;  /* a merged token's word list; live: in the vocabulary */
} Token;

typedef struct { /* a removal made in the current step */
    int64_t rank, occurrences;
    int32_t token, npieces;
    size_t pieces; /* where its pieces start in PickyState.pieces */
} SplitRecord;

#define COLUMNS 6 /* per merge: left, right, new id, pair count, tokens removed, restored */

typedef struct {
    PyObject_HEAD
    Word *words;
    int32_t nwords, *arena;
    Token *tokens;
    size_t ntokens, captokens;
    int32_t first_merged; /* 256 + the special tokens */
    Py_ssize_t nlive;     /* live merged tokens */
    unsigned char *bytes; /* every token's bytes */
    size_t nbytes, capbytes;
    int32_t *by_bytes;    /* merged tokens' ids by their bytes (open addressing, -1 free) */
    size_t bycap;
    PairMap map;
    HeapItem *heap;
    size_t heaplen, heapcap;
    KeyList raised, dead; /* pairs whose count rose, or went to 0, in this merge */
    uint32_t visit;       /* this pass's (Word.seen) */
    int32_t *stack, *scratch;
    size_t capstack, capscratch;
    double threshold;
    int64_t nmerges;
    int64_t *rows;        /* this step's merges, COLUMNS values each */
    size_t nrows, caprows;
    SplitRecord *splits;  /* this step's removals */
    size_t nsplits, capsplits;
    int32_t *pieces;      /* this step's removals' pieces */
    size_t npieces, cappieces;
    int finished, broken, busy;
} PickyState;

static uint64_t token_prefix(const unsigned char *p, size_t n)
{
    uint64_t key = 0;
    for (size_t i = 0; i < 8; i++) key = key << 8 | (i < n ? p[i] : 0);
    return key;
}

/* Token t of n bytes (already in s->bytes at `offset`), in the token table. */
static void add_token(PickyState *s, size_t offset, size_t n, int32_t left, int32_t right)
{
    s->tokens[s->ntokens++] = (Token){0, (int64_t)offset, token_prefix(s->bytes + offset, n), (int32_t)n, left, right,
                                      0, NULL, 0};
}

/* <0, 0, >0 as token x's bytes are lexicographically below, equal to, above y's. */
static int token_cmp(const PickyState *s, int32_t x, int32_t y)
{
    const Token *tx = &s->tokens[x], *ty = &s->tokens[y];
    int c = memcmp(s->bytes + tx->offset, s->bytes + ty->offset, (size_t)(tx->len < ty->len ? tx->len : ty->len));
    return c != 0 ? c : (tx->len > ty->len) - (tx->len < ty->len);
}

/* 1 if item x pops before item y: the higher count, then the greater (left, right) bytes
 * (the prefixes decide most ties without reading the bytes), then the smaller ids. */
static inline int heap_before(const PickyState *s, const HeapItem *x, const HeapItem *y)
{
    if (x->count != y->count) return x->count > y->count;
    if (x->lkey != y->lkey) return x->lkey > y->lkey;
    if (x->left == y->left && x->rkey != y->rkey) return x->rkey > y->rkey;
    int c = x->left == y->left ? 0 : token_cmp(s, x->left, y->left);
    if (c == 0 && x->right != y->right) c = token_cmp(s, x->right, y->right);
    if (c != 0) return c > 0;
    return x->left != y->left ? x->left < y->left : x->right < y->right;
}

static void heap_sift_down(PickyState *s, size_t i)
{
    HeapItem *h = s->heap, item = h[i];
    for (size_t c; (c = 2 * i + 1) < s->heaplen; i = c) {
        if (c + 1 < s->heaplen && heap_before(s, &h[c + 1], &h[c])) c++;
        if (!heap_before(s, &h[c], &item)) break;
        h[i] = h[c];
    }
    h[i] = item;
}

static int heap_push(PickyState *s, int64_t count, int32_t left, int32_t right)
{
    if (reserve((void **)&s->heap, &s->heapcap, s->heaplen + 1, sizeof(HeapItem)) < 0) return -1;
    HeapItem item = {count, s->tokens[left].prefix, s->tokens[right].prefix, left, right};
    size_t i = s->heaplen++;
    for (; i > 0 && heap_before(s, &item, &s->heap[(i - 1) / 2]); i = (i - 1) / 2) s->heap[i] = s->heap[(i - 1) / 2];
    s->heap[i] = item;
    return 0;
}

static void heap_pop(PickyState *s)
{
    s->heap[0] = s->heap[--s->heaplen];
    if (s->heaplen > 0) heap_sift_down(s, 0);
}

/* A stamp for a new pass over words (Word.seen); when it wraps, every word is unseen again. */
static uint32_t next_visit(PickyState *s)
{
    if (++s->visit == 0) {
        for (int32_t w = 0; w < s->nwords; w++) s->words[w].seen = 0;
        s->visit = 1;
    }
    return s->visit;
}

/* Pair (left, right) gains delta occurrences (loses -delta) in word w. A pair that rises
 * lists w and is noted for the heap; one that reaches 0 is noted for deletion. */
static int pair_add(PickyState *s, int32_t left, int32_t right, int64_t delta, int32_t w)
{
    uint64_t key = pair_key(left, right);
    Pair *e = map_get_or_add(&s->map, key);
    if (e == NULL) return -1;
    e->count += delta;
    if (delta < 0) return e->count == 0 ? keys_push(&s->dead, key) : 0;
    if (list_push(&e->words, &e->nwords, w) < 0) return -1;
    if (e->raised) return 0;
    e->raised = 1;
    return keys_push(&s->raised, key);
}

/* At the end of a merge: the pairs that rose into the heap (with their count), the pairs
 * gone (count 0) out of the map. -1 on memory error. */
static int settle_pairs(PickyState *s)
{
    for (size_t k = 0; k < s->raised.n; k++) {
        Pair *e = map_find(&s->map, s->raised.keys[k]);
        e->raised = 0;
        if (e->count > 0 && heap_push(s, e->count, (int32_t)(e->key >> 32), (int32_t)e->key) < 0) return -1;
    }
    for (size_t k = 0; k < s->dead.n; k++) {
        Pair *e = map_find(&s->map, s->dead.keys[k]);
        if (e != NULL && e->count == 0) map_delete(&s->map, e);
    }
    s->raised.n = s->dead.n = 0;
    return 0;
}

/* The by_bytes slot of the merged token spelled p[0:n], or the free slot where it would go. */
static size_t bytes_slot(const PickyState *s, const unsigned char *p, size_t n)
{
    uint64_t h = 0xcbf29ce484222325ULL; /* FNV-1a */
    for (size_t i = 0; i < n; i++) h = (h ^ p[i]) * 0x100000001b3ULL;
    for (size_t mask = s->bycap - 1, j = hash_key(h) & mask;; j = (j + 1) & mask) {
        int32_t id = s->by_bytes[j];
        if (id < 0 || ((size_t)s->tokens[id].len == n && memcmp(s->bytes + s->tokens[id].offset, p, n) == 0)) return j;
    }
}

/* The token a + b: its first id if its bytes were made before (*restored = 1), else a new
 * id. -1 on memory error, -2 when int32 ids run out. */
static int32_t token_of_merge(PickyState *s, int32_t a, int32_t b, int *restored)
{
    size_t la = (size_t)s->tokens[a].len, lb = (size_t)s->tokens[b].len;
    if (reserve((void **)&s->bytes, &s->capbytes, s->nbytes + la + lb, 1) < 0 ||
        reserve((void **)&s->tokens, &s->captokens, s->ntokens + 1, sizeof(Token)) < 0) return -1;
    if ((s->ntokens + 1 - (size_t)s->first_merged) * 2 > s->bycap) { /* at most half full */
        size_t cap = s->bycap ? 2 * s->bycap : 1024;
        int32_t *old = s->by_bytes, *table = PyMem_RawMalloc(cap * sizeof(int32_t));
        if (table == NULL) return -1;
        memset(table, 0xFF, cap * sizeof(int32_t));
        s->by_bytes = table;
        s->bycap = cap;
        for (size_t id = (size_t)s->first_merged; id < s->ntokens; id++) {
            table[bytes_slot(s, s->bytes + s->tokens[id].offset, (size_t)s->tokens[id].len)] = (int32_t)id;
        }
        PyMem_RawFree(old);
    }
    unsigned char *p = s->bytes + s->nbytes; /* after the last token's: kept if new */
    memcpy(p, s->bytes + s->tokens[a].offset, la);
    memcpy(p + la, s->bytes + s->tokens[b].offset, lb);
    size_t slot = bytes_slot(s, p, la + lb);
    if ((*restored = s->by_bytes[slot] >= 0)) return s->by_bytes[slot];
    if (s->ntokens >= INT32_MAX || la + lb > INT32_MAX) return -2;
    s->by_bytes[slot] = (int32_t)s->ntokens;
    add_token(s, s->nbytes, la + lb, a, b);
    s->nbytes += la + lb;
    return s->by_bytes[slot];
}

/* Merge (a, b) -> z in word w, left to right without overlap: the pairs beside each
 * occurrence move to z (the left neighbour is the output's, maybe z; the right one the
 * input's). *made = the occurrences merged; -1 on memory error. */
static int merge_word(PickyState *s, int32_t w, int32_t a, int32_t b, int32_t z, int64_t *made)
{
    int32_t *t = s->arena + s->words[w].start;
    int32_t n = s->words[w].len, i = 0, o;
    int64_t c = s->words[w].count;
    *made = 0;
    while (i + 1 < n && !(t[i] == a && t[i + 1] == b)) i++;
    for (o = i; i < n;) { /* the tokens before the first occurrence stay */
        if (i + 1 < n && t[i] == a && t[i + 1] == b) {
            if (o > 0 && (pair_add(s, t[o - 1], a, -c, w) < 0 || pair_add(s, t[o - 1], z, c, w) < 0)) return -1;
            if (i + 2 < n && (pair_add(s, b, t[i + 2], -c, w) < 0 || pair_add(s, z, t[i + 2], c, w) < 0)) return -1;
            t[o++] = z;
            i += 2;
            (*made)++;
        } else {
            t[o++] = t[i++];
        }
    }
    s->words[w].len = o;
    return 0;
}

/* Appends the pieces of removed token x to s->pieces: down its first parents to live
 * tokens or single ones (bytes), left to right. Returns how many; -1 on memory error. */
static int32_t walk(PickyState *s, int32_t x)
{
    size_t nstack = 0, first = s->npieces;
    if (reserve((void **)&s->stack, &s->capstack, 1, sizeof(int32_t)) < 0) return -1;
    s->stack[nstack++] = x;
    while (nstack > 0) {
        int32_t t = s->stack[--nstack];
        if (t < s->first_merged || s->tokens[t].live) {
            if (reserve((void **)&s->pieces, &s->cappieces, s->npieces + 1, sizeof(int32_t)) < 0) return -1;
            s->pieces[s->npieces++] = t;
        } else {
            if (reserve((void **)&s->stack, &s->capstack, nstack + 2, sizeof(int32_t)) < 0) return -1;
            s->stack[nstack++] = s->tokens[t].right;
            s->stack[nstack++] = s->tokens[t].left; /* taken first */
        }
    }
    return (int32_t)(s->npieces - first);
}

/* Word w with each x replaced by pieces[0:np]: the pairs touching an x go, the pairs
 * touching a piece come, and w joins the merged pieces' word lists. -1 on memory error. */
static int split_word(PickyState *s, int32_t w, int32_t x, const int32_t *pieces, int32_t np)
{
    int32_t *t = s->arena + s->words[w].start;
    int32_t n = s->words[w].len, found = 0, o = 0;
    int64_t c = s->words[w].count;
    for (int32_t j = 0; j < n; j++) found += t[j] == x;
    if (found == 0) return 0; /* a stale entry */
    int32_t m = n + found * (np - 1); /* at most the word's bytes: its slot holds them */
    if (reserve((void **)&s->scratch, &s->capscratch, (size_t)n + (size_t)m, sizeof(int32_t)) < 0) return -1;
    int32_t *old = s->scratch, *from_piece = s->scratch + n;
    memcpy(old, t, (size_t)n * sizeof(int32_t));
    for (int32_t j = 0; j + 1 < n; j++) {
        if ((old[j] == x || old[j + 1] == x) && pair_add(s, old[j], old[j + 1], -c, w) < 0) return -1;
    }
    for (int32_t j = 0; j < n; j++) {
        for (int32_t k = 0; k < (old[j] == x ? np : 1); k++) {
            from_piece[o] = old[j] == x;
            t[o++] = old[j] == x ? pieces[k] : old[j];
        }
    }
    s->words[w].len = m;
    for (int32_t j = 0; j + 1 < m; j++) {
        if ((from_piece[j] || from_piece[j + 1]) && pair_add(s, t[j], t[j + 1], c, w) < 0) return -1;
    }
    for (int32_t k = 0; k < np; k++) {
        Token *p = &s->tokens[pieces[k]];
        if (pieces[k] >= s->first_merged && list_push(&p->words, &p->nwords, w) < 0) return -1;
    }
    return 0;
}

/* Remove token x after the merge of rank `rank`: it leaves the vocabulary and each of its
 * occurrences becomes its pieces (recorded in s->splits). *added = the tokens this adds to
 * the corpus; -1 on memory error. */
static int remove_token(PickyState *s, int32_t x, int64_t rank, int64_t *added)
{
    s->tokens[x].live = 0;
    s->nlive--;
    size_t first = s->npieces;
    int32_t np = walk(s, x);
    if (np < 0 || reserve((void **)&s->splits, &s->capsplits, s->nsplits + 1, sizeof(SplitRecord)) < 0) return -1;
    int64_t occurrences = s->tokens[x].freq;
    s->splits[s->nsplits++] = (SplitRecord){rank, occurrences, x, np, first};
    int32_t *holders = s->tokens[x].words, nholders = s->tokens[x].nwords;
    s->tokens[x].words = NULL;
    s->tokens[x].nwords = 0;
    uint32_t visit = next_visit(s);
    int failed = 0;
    for (int32_t h = 0; h < nholders && !failed; h++) {
        int32_t w = holders[h];
        if (s->words[w].seen == visit) continue;
        s->words[w].seen = visit;
        failed = split_word(s, w, x, s->pieces + first, np) < 0;
    }
    PyMem_RawFree(holders);
    s->tokens[x].freq = 0;
    for (int32_t k = 0; k < np; k++) s->tokens[s->pieces[first + (size_t)k]].freq += occurrences;
    *added = occurrences * (np - 1);
    return failed ? -1 : 0;
}

/* One merge and its removals, into row[0:COLUMNS]: 1, or 0 when no pair is left; -1 on
 * memory error, -2 when int32 ids run out. */
static int merge_once(PickyState *s, int64_t *row)
{
    HeapItem top;
    for (;;) { /* the best pair: the first entry whose count is its pair's */
        if (s->heaplen == 0) return 0;
        top = s->heap[0];
        Pair *e = map_find(&s->map, pair_key(top.left, top.right));
        int64_t actual = e != NULL ? e->count : 0;
        if (actual == top.count) break;
        heap_pop(s);
        if (actual > 0 && heap_push(s, actual, top.left, top.right) < 0) return -1;
    }
    heap_pop(s);
    int32_t a = top.left, b = top.right;
    int restored, failed = 0;
    int32_t z = token_of_merge(s, a, b, &restored);
    if (z < 0) return z;
    s->nlive += !s->tokens[z].live;
    s->tokens[z].live = 1;
    int64_t rank = s->nmerges++, made = 0;

    /* the merge, in every word holding (a, b): all are in its list, taken whole */
    Pair *best = map_find(&s->map, pair_key(a, b));
    int32_t *holders = best->words, nholders = best->nwords;
    best->words = NULL;
    best->nwords = 0;
    uint32_t visit = next_visit(s);
    for (int32_t h = 0; h < nholders && !failed; h++) {
        int32_t w = holders[h];
        int64_t n;
        if (s->words[w].seen == visit) continue;
        s->words[w].seen = visit;
        failed = merge_word(s, w, a, b, z, &n) < 0 || (n > 0 && list_push(&s->tokens[z].words, &s->tokens[z].nwords, w) < 0);
        made += n * s->words[w].count;
    }
    PyMem_RawFree(holders);
    if (failed) return -1;
    best = map_find(&s->map, pair_key(a, b)); /* (the map may have grown) */
    best->count = 0; /* no word holds it now; overlaps (a a a) moved some of it elsewhere */
    if (keys_push(&s->dead, best->key) < 0) return -1;
    s->tokens[z].freq += made;
    s->tokens[a].freq -= made;
    s->tokens[b].freq -= made;

    /* the removals: left, then right (which sees the left's), once if a == b */
    int64_t removed = made;
    for (int side = 0; side < (a == b ? 1 : 2); side++) {
        int32_t x = side ? b : a;
        int64_t rest = s->tokens[x].freq, added;
        if (s->tokens[x].live && (double)made / (double)(made + rest) > s->threshold) {
            if (remove_token(s, x, rank, &added) < 0) return -1;
            removed -= added;
        }
    }

    if (settle_pairs(s) < 0) return -1;
    memcpy(row, (int64_t[COLUMNS]){a, b, z, top.count, removed, restored}, COLUMNS * sizeof(int64_t));
    return 1;
}

static double monotonic_seconds(void)
{
#if defined(_WIN32)
    return (double)GetTickCount64() / 1000.0;
#else
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
#endif
}

/* The merges of one step (without the GIL): 0, -1 on memory error, -2 when ids run out. */
static int run_merges(PickyState *s, Py_ssize_t max_merges, Py_ssize_t vocab_size, double seconds)
{
    double started = monotonic_seconds();
    while ((Py_ssize_t)s->nrows < max_merges && !s->finished && s->first_merged + s->nlive < vocab_size) {
        if (reserve((void **)&s->rows, &s->caprows, (s->nrows + 1) * COLUMNS, sizeof(int64_t)) < 0) return -1;
        int r = merge_once(s, s->rows + s->nrows * COLUMNS);
        if (r < 0) return r;
        s->finished = r == 0;
        s->nrows += (size_t)r;
        if (seconds > 0 && monotonic_seconds() - started >= seconds) break;
    }
    return 0;
}

/* The step's result: COLUMNS bytes of int64 and the list of splits (rank, token id,
 * pieces' ids as bytes of int32, occurrences); NULL with an exception set. */
static PyObject *step_result(PickyState *s)
{
    PyObject *result = PyTuple_New(COLUMNS + 1), *splits;
    if (result == NULL) return NULL;
    if ((splits = PyList_New((Py_ssize_t)s->nsplits)) == NULL) goto fail;
    PyTuple_SET_ITEM(result, COLUMNS, splits);
    for (int f = 0; f < COLUMNS; f++) {
        PyObject *column = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)(s->nrows * sizeof(int64_t)));
        if (column == NULL) goto fail;
        for (size_t i = 0; i < s->nrows; i++) { /* memcpy: bytes' data need not be 8-aligned */
            memcpy(PyBytes_AS_STRING(column) + i * sizeof(int64_t), &s->rows[i * COLUMNS + f], sizeof(int64_t));
        }
        PyTuple_SET_ITEM(result, f, column);
    }
    for (size_t k = 0; k < s->nsplits; k++) { /* the pieces as native int32 */
        const SplitRecord *r = &s->splits[k];
        PyObject *item = Py_BuildValue("(Liy#L)", (long long)r->rank, (int)r->token, (const char *)(s->pieces + r->pieces),
                                       (Py_ssize_t)((size_t)r->npieces * sizeof(int32_t)), (long long)r->occurrences);
        if (item == NULL) goto fail;
        PyList_SET_ITEM(splits, (Py_ssize_t)k, item);
    }
    return result;
fail:
    Py_DECREF(result);
    return NULL;
}

static PyObject *PickyState_step(PickyState *s, PyObject *args)
{
    Py_ssize_t max_merges, vocab_size;
    double seconds = 0.0;
    if (!PyArg_ParseTuple(args, "nn|d:step", &max_merges, &vocab_size, &seconds)) return NULL;
    if (s->tokens == NULL || s->broken || s->busy) {
        PyErr_SetString(PyExc_RuntimeError, s->busy ? "PickyState.step is running in another thread"
                                                    : "this PickyState is not initialized, or failed and is half-updated");
        return NULL;
    }
    s->busy = 1;
    s->nrows = s->nsplits = s->npieces = 0;
    int status;
    Py_BEGIN_ALLOW_THREADS
    status = run_merges(s, max_merges, vocab_size, seconds);
    Py_END_ALLOW_THREADS
    s->busy = 0;
    if (status < 0) {
        PyErr_SetString(status == -1 ? PyExc_MemoryError : PyExc_OverflowError,
                        status == -1 ? "out of memory" : "more tokens than int32 ids");
    }
    PyObject *result = status < 0 ? NULL : step_result(s);
    s->broken = result == NULL; /* the merges of this call are lost to the caller */
    return result;
}

/* ---------- construction ---------- */

/* Every count and frequency is at most the words' weighted bytes: kept below this, they
 * and made + rest are exact in a double. */
#define MAX_WEIGHTED_BYTES ((int64_t)1 << 53)

/* The packed words (every word's bytes one after another, and each word's int64 length
 * and count, as core/training/merge.py's PackedWords holds them) into the arena, with the
 * bytes' frequencies, and the pairs of bytes into the map and the heap. */
static int read_words(PickyState *s, const Py_buffer *blob, const Py_buffer *lengths, const Py_buffer *counts)
{
    Py_ssize_t n = lengths->len / (Py_ssize_t)sizeof(int64_t);
    if (lengths->len % (Py_ssize_t)sizeof(int64_t) != 0 || counts->len != lengths->len) {
        PyErr_SetString(PyExc_ValueError, "packed words need int64 lengths and as many int64 counts");
        return -1;
    }
    if (n >= INT32_MAX) {
        PyErr_SetString(PyExc_OverflowError, "too many words for the kernel; use the Python loop");
        return -1;
    }
    s->words = PyMem_RawMalloc(((size_t)n + 1) * sizeof(Word));
    s->arena = PyMem_RawMalloc(((size_t)blob->len + 1) * sizeof(int32_t));
    if (s->words == NULL || s->arena == NULL || map_resize(&s->map, 1024) < 0) {
        PyErr_NoMemory();
        return -1;
    }
    int64_t total = 0, at = 0, len, c, part;
    for (Py_ssize_t i = 0; i < n; i++) {
        memcpy(&len, (const char *)lengths->buf + i * (Py_ssize_t)sizeof(int64_t), sizeof(int64_t));
        memcpy(&c, (const char *)counts->buf + i * (Py_ssize_t)sizeof(int64_t), sizeof(int64_t));
        if (len < 0 || len > blob->len - at || c < 1) {
            PyErr_Format(PyExc_ValueError, len < 0 || len > blob->len - at ? "word %zd runs past the words' bytes"
                                                                          : "the count of word %zd is not positive", i);
            return -1;
        }
        const unsigned char *p = (const unsigned char *)blob->buf + at;
        Word w = {c, at, (int32_t)len, 0};
        at += len;
        if (len < 2) continue; /* no pair, and never changes */
        if (len > INT32_MAX || __builtin_mul_overflow(c, len, &part) || __builtin_add_overflow(total, part, &total) ||
            total >= MAX_WEIGHTED_BYTES) {
            PyErr_SetString(PyExc_OverflowError, "the weighted pre-token bytes reach 2**53; use the Python loop");
            return -1;
        }
        s->words[s->nwords++] = w; /* its slot: where its bytes are in the blob */
        for (int64_t j = 0; j < len; j++) {
            s->arena[w.start + j] = p[j];
            s->tokens[p[j]].freq += c;
        }
    }
    /* the pairs of bytes: all rise, into the heap */
    for (int32_t w = 0; w < s->nwords; w++) {
        const int32_t *t = s->arena + s->words[w].start;
        for (int32_t j = 0; j + 1 < s->words[w].len; j++) {
            if (pair_add(s, t[j], t[j + 1], s->words[w].count, w) < 0) {
                PyErr_NoMemory();
                return -1;
            }
        }
    }
    if (settle_pairs(s) < 0) {
        PyErr_NoMemory();
        return -1;
    }
    return 0;
}

/* The 256 bytes, then the special tokens; 0, or -1 with an exception set. */
static int read_tokens(PickyState *s, PyObject *specials)
{
    Py_ssize_t nspecials = PyList_GET_SIZE(specials);
    if (nspecials > INT32_MAX / 2) {
        PyErr_SetString(PyExc_OverflowError, "too many special tokens");
        return -1;
    }
    s->first_merged = (int32_t)(256 + nspecials);
    for (Py_ssize_t i = -256; i < nspecials; i++) { /* i < 0: the byte i + 256 */
        PyObject *t = i < 0 ? NULL : PyList_GET_ITEM(specials, i);
        if (t != NULL && (!PyBytes_Check(t) || PyBytes_GET_SIZE(t) > INT32_MAX)) {
            PyErr_Format(PyExc_TypeError, "special token %zd must be bytes", i);
            return -1;
        }
        size_t n = t == NULL ? 1 : (size_t)PyBytes_GET_SIZE(t);
        if (reserve((void **)&s->bytes, &s->capbytes, s->nbytes + n, 1) < 0 ||
            reserve((void **)&s->tokens, &s->captokens, s->ntokens + 1, sizeof(Token)) < 0) {
            PyErr_NoMemory();
            return -1;
        }
        if (t == NULL) s->bytes[s->nbytes] = (unsigned char)(i + 256);
        else memcpy(s->bytes + s->nbytes, PyBytes_AS_STRING(t), n);
        add_token(s, s->nbytes, n, -1, -1);
        s->nbytes += n;
    }
    return 0;
}

static int PickyState_init(PickyState *s, PyObject *args, PyObject *kwds)
{
    static char *kwlist[] = {"blob", "lengths", "counts", "specials", "threshold", NULL};
    Py_buffer blob, lengths, counts;
    PyObject *specials;
    if (s->tokens != NULL) {
        PyErr_SetString(PyExc_RuntimeError, "PickyState is already initialized");
        return -1;
    }
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "y*y*y*O!d:PickyState", kwlist, &blob, &lengths, &counts,
                                     &PyList_Type, &specials, &s->threshold)) return -1;
    s->broken = 1; /* until the whole state is made */
    int r = read_tokens(s, specials) < 0 || read_words(s, &blob, &lengths, &counts) < 0 ? -1 : 0;
    PyBuffer_Release(&blob);
    PyBuffer_Release(&lengths);
    PyBuffer_Release(&counts);
    s->broken = r < 0;
    return r;
}

static void PickyState_dealloc(PickyState *s)
{
    for (size_t i = 0; s->map.slots != NULL && i < s->map.cap; i++) {
        if (s->map.slots[i].key != NO_PAIR) PyMem_RawFree(s->map.slots[i].words);
    }
    for (size_t i = 0; i < s->ntokens; i++) PyMem_RawFree(s->tokens[i].words);
    void *buffers[] = {s->words, s->arena, s->tokens, s->bytes, s->by_bytes, s->map.slots, s->heap, s->raised.keys,
                       s->dead.keys, s->stack, s->scratch, s->rows, s->splits, s->pieces};
    for (size_t i = 0; i < sizeof(buffers) / sizeof(buffers[0]); i++) PyMem_RawFree(buffers[i]);
    Py_TYPE(s)->tp_free((PyObject *)s);
}

static PyMethodDef PickyState_methods[] = {
    {"step", (PyCFunction)PickyState_step, METH_VARARGS,
     "step(max_merges, vocab_size, seconds=0.0) -> (left_ids, right_ids, new_ids, counts, tokens_removed,\n"
     "restored, splits): see core/variants/_picky_kernel.pyi."},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject PickyStateType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "core.variants._picky_kernel.PickyState",
    .tp_basicsize = sizeof(PickyState),
    .tp_dealloc = (destructor)PickyState_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "PickyState(blob, lengths, counts, specials, threshold)\n\n"
              "Picky BPE's incremental merge loop with removals, in C; see step().",
    .tp_methods = PickyState_methods,
    .tp_init = (initproc)PickyState_init,
    .tp_new = PyType_GenericNew,
};

static struct PyModuleDef picky_kernel_module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "core.variants._picky_kernel",
    .m_doc = "Compiled Picky BPE merge loop (optional: core.variants.picky falls back to Python).",
    .m_size = -1,
};

PyMODINIT_FUNC PyInit__picky_kernel(void)
{
    if (PyType_Ready(&PickyStateType) < 0) return NULL;
    PyObject *m = PyModule_Create(&picky_kernel_module);
    if (m == NULL) return NULL;
    if (PyModule_AddObjectRef(m, "PickyState", (PyObject *)&PickyStateType) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
