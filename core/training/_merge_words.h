/* Reading the words into the merge loop's state (core/training/_merge_kernel.c): the
 * records grouped by count, their tokens in the arena (with the forced merges made, word by
 * word, _merge_apply.h), and the pairs they hold counted into the map with their holders.
 *
 * Invariant. After count_byte_pairs or count_token_pairs, every pair of adjacent tokens
 * of every word is in the map with its weighted count, and each holder list names each
 * word holding it once per run of the pair.
 */
#ifndef BPE_MERGE_WORDS_H
#define BPE_MERGE_WORDS_H

#include <pthread.h>

#include "_merge_apply.h"
#include "_merge_state.h"

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

/* The pairs of the words (of any tokens) counted in an empty map (list_token_holders then
 * lists their holders). While counting, and until then, an entry's holders field holds its
 * number of words and the last one (n << 32 | last + 1), not a list. 0, or -1 with
 * MemoryError set. */
static int
tally_token_pairs(MergeState *s)
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
    return 0;
}

/* The holders of the pairs tally_token_pairs counted (those still in the map), in one
 * block as count_byte_pairs lists them; a pair of one word holds it inline. Each list's
 * length so far and last word are kept beside the map while the words are read (its header
 * and tail are far apart in memory: reading them at each word missed the caches). 0, or -1
 * with MemoryError set. */
static int
list_token_holders(MergeState *s)
{
    size_t total = 0;
    for (size_t k = 0; k < s->map.cap; k++) {
        uint64_t n = (uint64_t)(uintptr_t)s->map.slots[k].holders >> 32;
        total += s->map.slots[k].key != EMPTY_KEY && n > 1 ? 1 + n : 0;
    }
    HolderBlock block = {0};
    uint64_t *fill = PyMem_Calloc(s->map.cap, sizeof(uint64_t)); /* by slot: words listed << 32 | last + 1 */
    if (fill == NULL || block_alloc(&block, total) < 0) {
        PyMem_Free(fill);
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
            at += 1 + (size_t)(tally >> 32);
        }
    }
    s->map.block = block;
    for (Py_ssize_t r = 0; r < s->nwords; r++) {
        const WordRecord *record = &s->records[r];
        prefetch_pairs(s, r + 4);
        for (int32_t j = 0; j + 1 < record->len; j++) {
            PairEntry *e = map_find(&s->map, pair_key(arena_token(s, record, j), arena_token(s, record, j + 1)));
            if (e == NULL || holders_inline(e->holders)) {
                continue; /* (pruned: a rare pair; or its one word, inline) */
            }
            uint64_t *f = &fill[e - s->map.slots];
            if ((uint32_t)*f != (uint32_t)r + 1) {
                uint32_t n = (uint32_t)(*f >> 32) + 1;
                e->holders[n] = (int32_t)r;
                *f = (uint64_t)n << 32 | ((uint32_t)r + 1);
            }
        }
    }
    for (size_t k = 0; k < s->map.cap; k++) {
        PairEntry *e = &s->map.slots[k];
        if (e->key != EMPTY_KEY && !holders_inline(e->holders)) {
            e->holders[0] = (int32_t)(fill[k] >> 32);
        }
    }
    PyMem_Free(fill);
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

/* An applier of s's forced merges, their tokens (made by forced_prepare) held; -1 when out
 * of memory. */
static int
forced_applier(const MergeState *s, MergeApplier *applier)
{
    if (applier_init(applier, s->forced, (size_t)s->nforced, (int32_t)s->ntokens) < 0) {
        return -1;
    }
    applier->totals_only = s->forced_totals_only;
    for (Py_ssize_t r = 0; r < s->nforced; r++) {
        PyObject *token = s->tokens[s->ntokens + r];
        applier_hold(applier, (const unsigned char *)PyBytes_AS_STRING(token), (size_t)PyBytes_GET_SIZE(token));
    }
    return 0;
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
    if (s->forced_counts == NULL || s->forced_removed == NULL || forced_applier(s, applier) < 0) {
        PyErr_NoMemory();
        return -1;
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

/* From this many words, the forced merges are made in packed words by two threads. */
#define APPLY_SHARED_FROM (1 << 15)

/* The forced merges made in every word of a packed source at once, by two threads
 * (ApplyShare: each distinct piece made once, by the thread its hash names, `applier` holding
 * half of them), before the first pass, which then only reads made_len: the tokens of each
 * word of two bytes or more, in the arena's width, in order in *made for the words before
 * *second_from and in *made_second for the others (*first_len tokens in the first), each
 * one's number in made_len. Both appliers' totals are added to s's and the appliers freed.
 * 0, or -1 with an exception set. */
static int
forced_words_shared(MergeState *s, WordSource *ws, MergeApplier *applier, void **made, void **made_second,
                    Py_ssize_t *second_from, size_t *first_len, int32_t *made_len)
{
    const int64_t *lengths = (const int64_t *)ws->lengths.buf;
    size_t blob_len = (size_t)ws->blob.len, at = 0, half_at = 0;
    Py_ssize_t half = ws->n;
    for (Py_ssize_t i = 0; i < ws->n; i++) {
        int64_t len = lengths[i];
        if (len < 0 || (uint64_t)len > blob_len - at) {
            PyErr_Format(PyExc_ValueError, "packed word %zd runs past the end of the words' bytes", i);
            return -1;
        }
        if (len > INT32_MAX) {
            PyErr_Format(PyExc_OverflowError, "words[%zd] is too long", i);
            return -1;
        }
        if (half == ws->n && at >= blob_len / 2) {
            half = i;
            half_at = at;
        }
        at += (size_t)len;
    }
    MergeApplier second;
    if (forced_applier(s, &second) < 0) {
        PyErr_NoMemory();
        return -1;
    }
    const unsigned char *blob = (const unsigned char *)ws->blob.buf;
    const int64_t *counts = (const int64_t *)ws->packed_counts.buf;
    size_t width = s->wide ? sizeof(int32_t) : sizeof(uint16_t);
    ApplyShare pieces[2] = {
        {{applier, &second}, 0, blob, lengths, counts, 0, ws->n, 0, width, NULL, 0, 0, made_len, 0},
        {{applier, &second}, 1, blob, lengths, counts, 0, ws->n, 0, width, NULL, 0, 0, made_len, 0},
    };
    ApplyShare words[2] = {
        {{applier, &second}, 0, blob, lengths, counts, 0, half, 0, width, NULL, 0, 0, made_len, 0},
        {{applier, &second}, 0, blob, lengths, counts, half, ws->n, half_at, width, NULL, 0, 0, made_len, 0},
    };
    int status;
    Py_BEGIN_ALLOW_THREADS
    apply_in_two(apply_pieces, pieces);
    status = pieces[0].status < 0 ? pieces[0].status : pieces[1].status;
    if (status == 0) {
        apply_in_two(apply_words, words);
        status = words[0].status < 0 ? words[0].status : words[1].status;
    }
    Py_END_ALLOW_THREADS
    if (status == 0) {
        applier_totals(applier, s->forced_counts, s->forced_removed, (size_t)s->nforced);
        applier_totals(&second, s->forced_counts, s->forced_removed, (size_t)s->nforced);
    }
    applier_free(applier);
    applier_free(&second);
    give_back_free_memory(); /* the pieces' tables (the helper thread's malloc arena too) */
    if (status < 0) {
        free(words[0].made);
        free(words[1].made);
        if (status == -2) { /* (merge_pairs runs the Python loop on OverflowError) */
            PyErr_SetString(PyExc_OverflowError, "too many distinct pieces for the kernel's forced merges");
        } else {
            PyErr_NoMemory();
        }
        return -1;
    }
    *made = words[0].made;
    *made_second = words[1].made;
    *second_from = half;
    *first_len = words[0].nmade;
    return 0;
}

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

#endif /* BPE_MERGE_WORDS_H */
