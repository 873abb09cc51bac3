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
 *   token ids in one arena (16 bits while every id is below 65536, then 32; room for its
 *   bytes: _picky_words.h), with its count and a visit stamp.
 * - pairs: a hash map (_picky_map.h). A pair's count is exactly its weighted occurrences
 *   in the words now (overlaps counted: "aaa" holds (a, a) twice); a pair whose count is
 *   0 leaves the map, and its word list is freed, at the end of the merge. Every word
 *   holding the pair is in its word list (_picky_lists.h: stale entries and repeats
 *   allowed, at most as many as its `gone`, compacted at the end of a merge once that is
 *   half of it); a merge takes its pair's list whole.
 * - tokens: id -> bytes (0-255, the special tokens, then the merged tokens in order of
 *   first creation), first parents, live flag, frequency (exact weighted occurrences in the
 *   words, int64) and, for a merged token, a word list of the same kind: every word holding
 *   it is in it (freed when its frequency is 0). A bytes -> id table of the merged tokens
 *   gives a merge whose bytes were made before that token's first id back (a restore).
 * - heap: a lazy max-heap of (count, left, right) for the pairs of count >= `heap_floor`:
 *   every such pair has an entry whose count is >= its count (a pair whose count rose in
 *   a merge is pushed at the merge's end if it reaches the floor; an entry popped with a
 *   stale count is pushed back with the actual count if that does). The rarer pairs
 *   (most of them late in training: they occur a few times) wait in the map; when the
 *   heap runs empty the floor goes down (refill_heap). So the first entry popped whose
 *   count is its pair's count is the best pair: highest count, then the greatest (left
 *   bytes, right bytes) compared as a tuple of byte strings (a proper prefix is smaller;
 *   tie_break_key in core/training/python_loop.py), then smaller ids.
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
#include "_picky_lists.h"
#include "_picky_map.h"

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

typedef struct { uint64_t *keys; size_t n, cap; } KeyList;

static int keys_push(KeyList *l, uint64_t key)
{
    if (reserve((void **)&l->keys, &l->cap, l->n + 1, sizeof(uint64_t)) < 0) return -1;
    l->keys[l->n++] = key;
    return 0;
}

/* ---------- state ---------- */

#define PAIR_RAISED ((uint64_t)2) /* (in Pair.words) its count rose in this merge: in PickyState.raised */
#define PAIR_QUEUED ((uint64_t)4) /* (in Pair.words) its list is due for compaction: in PickyState.queued */

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
    int64_t freq;             /* weighted occurrences in the words */
    int64_t offset;           /* its bytes: bytes[offset .. offset + len) */
    uint64_t prefix;          /* its first 8 bytes, big-endian, zero-padded */
    int32_t len, left, right; /* left, right: first parents (merged tokens) */
    int32_t live;             /* in the vocabulary */
    WordList words;           /* a merged token's word list */
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
    int32_t nwords;
    void *arena;          /* uint16_t, or int32_t when `wide` (_picky_words.h) */
    size_t arenalen;
    int wide;
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
    int64_t heap_floor;   /* the heap holds the pairs of this count or more */
    KeyList raised, dead; /* pairs whose count rose, or went to 0, in this merge */
    KeyList queued;       /* pairs whose word lists are due for compaction */
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
                                      0, 0};
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

static inline HeapItem heap_item(const PickyState *s, int64_t count, int32_t left, int32_t right)
{
    return (HeapItem){count, s->tokens[left].prefix, s->tokens[right].prefix, left, right};
}

static int heap_push(PickyState *s, int64_t count, int32_t left, int32_t right)
{
    if (reserve((void **)&s->heap, &s->heapcap, s->heaplen + 1, sizeof(HeapItem)) < 0) return -1;
    HeapItem item = heap_item(s, count, left, right);
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

/* The heap ran empty: no pair of count >= heap_floor is left. The floor goes down to a
 * 16th, or to the best count left if lower, and every pair that reaches it is pushed
 * (heapified). Between merges: every pair in the map has a count above 0. -1 on memory error. */
static int refill_heap(PickyState *s)
{
    int64_t best = 0;
    for (size_t j = 0; j < s->map.cap; j++) {
        if (s->map.slots[j].key != EMPTY_KEY && s->map.slots[j].count > best) best = s->map.slots[j].count;
    }
    if (best == 0) return 0; /* no pair left */
    s->heap_floor = s->heap_floor / 16 < best ? s->heap_floor / 16 : best;
    for (size_t j = 0; j < s->map.cap; j++) {
        const Pair *e = &s->map.slots[j];
        if (e->key == EMPTY_KEY || e->count < s->heap_floor || e->count <= 0) continue;
        if (reserve((void **)&s->heap, &s->heapcap, s->heaplen + 1, sizeof(HeapItem)) < 0) return -1;
        s->heap[s->heaplen++] = heap_item(s, e->count, key_left(e->key), key_right(e->key));
    }
    for (size_t i = s->heaplen / 2; i-- > 0;) heap_sift_down(s, i);
    return 0;
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

/* Pair e's list is due for compaction: queued (once) for the end of the merge. */
static int queue_pair(PickyState *s, Pair *e)
{
    if (e->words & PAIR_QUEUED) return 0;
    e->words |= PAIR_QUEUED;
    return keys_push(&s->queued, e->key);
}

/* Pair (left, right) gains delta occurrences (loses -delta) in word w. A pair that rises
 * lists w (`relisted`: where w may be listed already) and is noted for the heap; one that
 * falls notes the stale entry it may leave, and reaching 0 is noted for deletion. */
static int pair_add(PickyState *s, int32_t left, int32_t right, int64_t delta, int32_t w, int relisted)
{
    uint64_t key = pair_key(left, right);
    Pair *e = map_get_or_add(&s->map, key);
    if (e == NULL) return -1;
    e->count += delta;
    if (delta < 0) {
        if (e->count == 0) return keys_push(&s->dead, key);
        return list_note(e->words) ? queue_pair(s, e) : 0;
    }
    if (list_push(&e->words, w) < 0 || (relisted && list_note(e->words) && queue_pair(s, e) < 0)) return -1;
    if (e->words & PAIR_RAISED) return 0;
    e->words |= PAIR_RAISED;
    return keys_push(&s->raised, key);
}

/* ---------- the words' tokens: 16 and 32 bits ---------- */

/* Ahead of reading word list[i] (of n): the record of a later word, and the tokens of a
 * nearer one (its record fetched before), into the cache: the words a list names lie
 * scattered over the arena. (A macro: GCC drops a call to a function that only prefetches.) */
#define PREFETCH_RECORD 16
#define PREFETCH_TOKENS 8
#define prefetch_word(s, list, n, i)                                                                    \
    do {                                                                                                \
        if ((i) + PREFETCH_RECORD < (n)) __builtin_prefetch(&(s)->words[(list)[(i) + PREFETCH_RECORD]]); \
        if ((i) + PREFETCH_TOKENS < (n)) {                                                              \
            int64_t start_ = (s)->words[(list)[(i) + PREFETCH_TOKENS]].start;                           \
            __builtin_prefetch((s)->wide ? (const void *)((const int32_t *)(s)->arena + start_)         \
                                         : (const void *)((const uint16_t *)(s)->arena + start_));      \
        }                                                                                               \
    } while (0)

#define WORD_T uint16_t
#define WORD_FN(name) name##16
#include "_picky_words.h"
#undef WORD_T
#undef WORD_FN
#define WORD_T int32_t
#define WORD_FN(name) name##32
#include "_picky_words.h"
#undef WORD_T
#undef WORD_FN

/* The arena from 16-bit to 32-bit ids (before the merge that makes id 65536); -1 on memory error. */
static int widen_arena(PickyState *s)
{
    int32_t *wide = PyMem_RawMalloc((s->arenalen + 1) * sizeof(int32_t));
    if (wide == NULL) return -1;
    const uint16_t *narrow = s->arena;
    for (int32_t w = 0; w < s->nwords; w++) { /* the words' tokens (the rest of the arena is unused) */
        for (int64_t j = s->words[w].start; j < s->words[w].start + s->words[w].len; j++) wide[j] = narrow[j];
    }
    PyMem_RawFree(s->arena);
    s->arena = wide;
    s->wide = 1;
    return 0;
}

/* Keep in list l the words that hold the pair (left, right), or the token left when
 * right < 0, once each. Only between merges' passes: every word is as they left it. */
static void compact_list(PickyState *s, WordList *l, int32_t left, int32_t right)
{
    int32_t *a = list_array(*l);
    if (a == NULL) return;
    int32_t *items = a + LIST_HEADER, n = a[LIST_N], k = 0;
    uint32_t visit = next_visit(s);
    for (int32_t i = 0; i < n; i++) {
        int32_t w = items[i];
        prefetch_word(s, items, n, i);
        if (s->words[w].seen == visit) continue; /* a repeat */
        s->words[w].seen = visit;
        if (s->wide ? word_holds32(s, w, left, right) : word_holds16(s, w, left, right)) items[k++] = w;
    }
    list_compacted(l, k);
}

/* At the end of a merge: the pairs that rose into the heap (if they reach its floor), the
 * lists due compacted, the pairs gone (count 0) out of the map. -1 on memory error. */
static int settle_pairs(PickyState *s)
{
    int failed = 0;
    for (size_t k = 0; k < s->raised.n; k++) {
        Pair *e = map_find(&s->map, s->raised.keys[k]);
        e->words &= ~PAIR_RAISED;
        if (!failed && e->count > 0 && e->count >= s->heap_floor) {
            failed = heap_push(s, e->count, key_left(e->key), key_right(e->key)) < 0;
        }
    }
    for (size_t k = 0; k < s->queued.n; k++) {
        Pair *e = map_find(&s->map, s->queued.keys[k]); /* (pairs leave the map only below) */
        e->words &= ~PAIR_QUEUED;
        if (e->count > 0) compact_list(s, &e->words, key_left(e->key), key_right(e->key));
    }
    for (size_t k = 0; k < s->dead.n; k++) {
        Pair *e = map_find(&s->map, s->dead.keys[k]);
        if (e != NULL && e->count == 0) map_delete(&s->map, e);
    }
    s->raised.n = s->dead.n = s->queued.n = 0;
    return failed ? -1 : 0;
}

/* At the end of a merge, merged token x's word list: freed when no word holds x, compacted when due. */
static void settle_token(PickyState *s, int32_t x)
{
    if (x < s->first_merged) return;
    if (s->tokens[x].freq == 0) list_clear(&s->tokens[x].words);
    else if (list_due(s->tokens[x].words)) compact_list(s, &s->tokens[x].words, x, -1);
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
    WordList taken = s->tokens[x].words;
    s->tokens[x].words = 0;
    int32_t one, nholders;
    const int32_t *holders = list_words(taken, &one, &nholders);
    uint32_t visit = next_visit(s);
    int failed = 0;
    for (int32_t h = 0; h < nholders && !failed; h++) {
        int32_t w = holders[h];
        prefetch_word(s, holders, nholders, h);
        if (s->words[w].seen == visit) continue;
        s->words[w].seen = visit;
        failed = (s->wide ? split_word32 : split_word16)(s, w, x, s->pieces + first, np) < 0;
    }
    list_clear(&taken);
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
        if (s->heaplen == 0 && refill_heap(s) < 0) return -1;
        if (s->heaplen == 0) return 0;
        top = s->heap[0];
        Pair *e = map_find(&s->map, pair_key(top.left, top.right));
        int64_t actual = e != NULL ? e->count : 0;
        if (actual == top.count) break;
        heap_pop(s);
        if (actual > 0 && actual >= s->heap_floor && heap_push(s, actual, top.left, top.right) < 0) return -1;
    }
    heap_pop(s);
    int32_t a = top.left, b = top.right;
    int restored, failed = 0;
    int32_t z = token_of_merge(s, a, b, &restored);
    if (z < 0) return z;
    if (!s->wide && z > 0xFFFF && widen_arena(s) < 0) return -1;
    s->nlive += !s->tokens[z].live;
    s->tokens[z].live = 1;
    int64_t rank = s->nmerges++, made = 0;

    /* the merge, in every word holding (a, b): all are in its list, taken whole */
    Pair *best = map_find(&s->map, pair_key(a, b));
    WordList taken = best->words & ~LIST_FLAGS;
    best->words &= LIST_FLAGS;
    int32_t one, nholders;
    const int32_t *holders = list_words(taken, &one, &nholders);
    uint32_t visit = next_visit(s);
    for (int32_t h = 0; h < nholders && !failed; h++) {
        int32_t w = holders[h];
        int64_t n;
        prefetch_word(s, holders, nholders, h);
        if (s->words[w].seen == visit) continue;
        s->words[w].seen = visit;
        failed = (s->wide ? merge_word32 : merge_word16)(s, w, a, b, z, &n) < 0 ||
                 (n > 0 && list_push(&s->tokens[z].words, w) < 0);
        if (n > 0) { /* w may hold a and b no more */
            (void)list_note(s->tokens[a].words);
            (void)list_note(s->tokens[b].words);
        }
        made += n * s->words[w].count;
    }
    list_clear(&taken);
    if (failed) return -1;
    best = map_find(&s->map, pair_key(a, b)); /* (the map may have grown) */
    best->count = 0; /* no word holds it now; overlaps (a a a) moved some of it elsewhere */
    if (keys_push(&s->dead, best->key) < 0) return -1;
    s->tokens[z].freq += made;
    s->tokens[a].freq -= made;
    s->tokens[b].freq -= made;

    /* the removals: left, then right (which sees the left's), once if a == b */
    int64_t removed = made;
    size_t first_split = s->nsplits;
    for (int side = 0; side < (a == b ? 1 : 2); side++) {
        int32_t x = side ? b : a;
        int64_t rest = s->tokens[x].freq, added;
        if (s->tokens[x].live && (double)made / (double)(made + rest) > s->threshold) {
            if (remove_token(s, x, rank, &added) < 0) return -1;
            removed -= added;
        }
    }

    if (settle_pairs(s) < 0) return -1;
    settle_token(s, a);
    settle_token(s, b);
    for (size_t k = first_split; k < s->nsplits; k++) {
        for (int32_t p = 0; p < s->splits[k].npieces; p++) settle_token(s, s->pieces[s->splits[k].pieces + (size_t)p]);
    }
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
 * bytes' frequencies, and the pairs of bytes into the map (their lists cut to fit) and
 * the heap (those from a 4096th of the best count: the floor). */
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
    s->arenalen = (size_t)blob->len;
    s->arena = PyMem_RawMalloc(((size_t)blob->len + 1) * sizeof(uint16_t));
    if (s->words == NULL || s->arena == NULL || map_init(&s->map, 1024) < 0) {
        PyErr_NoMemory();
        return -1;
    }
    uint16_t *arena = s->arena;
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
            arena[w.start + j] = p[j];
            s->tokens[p[j]].freq += c;
        }
    }
    /* the pairs of bytes: all rise; the heap takes those from the floor */
    for (int32_t w = 0; w < s->nwords; w++) {
        const uint16_t *t = arena + s->words[w].start;
        for (int32_t j = 0; j + 1 < s->words[w].len; j++) {
            if (pair_add(s, t[j], t[j + 1], s->words[w].count, w, 0) < 0) {
                PyErr_NoMemory();
                return -1;
            }
        }
    }
    int64_t best = 0;
    for (size_t k = 0; k < s->raised.n; k++) {
        Pair *e = map_find(&s->map, s->raised.keys[k]);
        list_fit(&e->words);
        best = e->count > best ? e->count : best;
    }
    s->heap_floor = best >> 12;
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
        if (s->map.slots[i].key != EMPTY_KEY) list_clear(&s->map.slots[i].words);
    }
    for (size_t i = 0; i < s->ntokens; i++) list_clear(&s->tokens[i].words);
    void *buffers[] = {s->words, s->arena, s->tokens, s->bytes, s->by_bytes, s->map.slots, s->heap, s->raised.keys,
                       s->dead.keys, s->queued.keys, s->stack, s->scratch, s->rows, s->splits, s->pieces};
    for (size_t i = 0; i < sizeof(buffers) / sizeof(buffers[0]); i++) PyMem_RawFree(buffers[i]);
    Py_TYPE(s)->tp_free((PyObject *)s);
}

static PyMethodDef PickyState_methods[] = {
    {"step", (PyCFunction)PickyState_step, METH_VARARGS,
     "step(max_merges, vocab_size, seconds=0.0) -> (left_ids, right_ids, new_ids, counts, tokens_removed,\n"
     "restored, splits): see PickyState.step in the typed stub beside this file."},
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
