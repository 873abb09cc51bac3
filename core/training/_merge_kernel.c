/* Compiled BPE merge loop: the hot loop of core/training/merge.py (merge_pairs_python) in C.
 *
 * MergeState(words, counts, token_bytes) holds the words of two bytes or more as
 * records (count, where its tokens start in one arena, length; the arena holds uint16 ids
 * while every id fits, int32 from the merge that makes id 65536), a pair -> (count,
 * words holding it) open-addressing hash map (pairs whose count reaches 0 leave it), and
 * a lazy binary max-heap of (count, left, right) for the pairs above a threshold, the
 * rarer ones in the map alone until it comes down to them (the heap is then made anew
 * from the map). A merge visits the words holding its pair (prefetching ahead: they are
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
 * Its parts, each a header with the invariant it keeps: the pair map (_pair_map.h), the
 * state (_merge_state.h), the heap (_merge_heap.h), reading the words (_merge_words.h),
 * which pairs the heap and the map hold (_merge_threshold.h), one merge (_merge_step.h);
 * this file is the Python type.
 * CPython API only, C99.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>
#include "_merge_step.h"
/* Every this many steps, the free pages inside the C heap go back to the system
 * (give_back_free_memory): the holders lists grow, move and are freed by the million, and
 * the memory they leave free is otherwise kept. */
#define TRIM_EVERY_STEPS 20

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
    PyMem_Free(s->dead);
    Py_TYPE(s)->tp_free((PyObject *)s);
}

static int
MergeState_init(MergeState *s, PyObject *args, PyObject *kwds)
{
    static char *kwlist[] = {"words", "counts", "token_bytes", "max_token_length", "min_frequency",
                             "forced", "max_words", "colon_rule", "sources", "nsources", "forced_counts", "prune", NULL};
    PyObject *words, *counts_list, *token_list;
    Py_ssize_t max_token_length = 0, max_words = 0;
    long long min_frequency = 0;
    int colon_rule = 0;
    Py_buffer forced = {0}, sources = {0};
    Py_ssize_t nsources = 0;
    int forced_counts = 1, prune = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "OOO!|$nLy*npy*npi:MergeState", kwlist, &words, &counts_list,
                                     &PyList_Type, &token_list, &max_token_length, &min_frequency,
                                     &forced, &max_words, &colon_rule, &sources, &nsources, &forced_counts,
                                     &prune)) {
        return -1;
    }
    if (prune < 0 || prune > 2) {
        if (forced.buf != NULL) {
            PyBuffer_Release(&forced);
        }
        if (sources.buf != NULL) {
            PyBuffer_Release(&sources);
        }
        PyErr_SetString(PyExc_ValueError, "prune must be 0 (never), 1 (when the map would grow) or 2 (at every merge)");
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
    s->prune = prune;
    s->floor = 0;
    s->threshold_shift = prune == 2 ? 0 : 12;
    s->threshold_divisor = prune == 2 ? 2 : 16;
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
    s->pending = PyMem_Malloc(PENDING_FIRST * sizeof(Pending));
    s->cappending = PENDING_FIRST;
    s->pending_max = PENDING_MAX;
    if (s->prune == 2) { /* (the tests: a merge's changes applied 8 at a time, once grown to 8) */
        s->cappending = 2;
        s->pending_max = 8;
    }
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
    void *made_second = NULL; /* (made by two threads: the words from second_from on) */
    Py_ssize_t second_from = n;
    size_t first_len = 0;
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
    /* many packed words: the forced merges made in them at once, by two threads */
    int shared = applying && source.words == NULL && n >= APPLY_SHARED_FROM;
    if (shared && forced_words_shared(s, &source, &applier, &made, &made_second, &second_from, &first_len,
                                      made_len) < 0) {
        goto fail;
    }
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
            if (shared) {
                len = made_len[i];
            } else if (applying) {
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
            const char *from = i < second_from ? (const char *)made + at * width
                                               : (const char *)made_second + (at - first_len) * width;
            memcpy((char *)s->arena + r->start * width, from, (size_t)len * width);
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
    free(made_second);
    made_second = NULL;
    PyMem_Free(made_len);
    made_len = NULL;
    word_source_close(&source);

    if (applying) {
        if (!shared) { /* (forced_words_shared added its own and freed it) */
            applier_totals(&applier, s->forced_counts, s->forced_removed, (size_t)s->nforced);
            applier_free(&applier);
        }
        s->forced_applied = 1;
    }
    /* the pairs are counted at the first merge (ready_pairs), once the caller has let go
     * of the words it gave */
    return 0;

fail:
    PyMem_Free(counts);
    PyMem_Free(merged);
    PyMem_Free(record_sources);
    free(made);
    free(made_second);
    PyMem_Free(made_len);
    applier_free(&applier);
    word_source_close(&source);
    return -1;
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
    if (++s->steps_untrimmed >= TRIM_EVERY_STEPS) {
        s->steps_untrimmed = 0;
        give_back_free_memory();
    }
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
    return Py_BuildValue("{s:n,s:n,s:n,s:n,s:n,s:n,s:n,s:n,s:n,s:n,s:n,s:L}",
                         "records", (Py_ssize_t)(s->nwords * (Py_ssize_t)sizeof(WordRecord)),
                         "arena_live_tokens", (Py_ssize_t)arena,
                         "holders", (Py_ssize_t)holders, "block_live", (Py_ssize_t)block_live,
                         "block", (Py_ssize_t)(s->map.block.len * sizeof(int32_t)),
                         "block_resident", (Py_ssize_t)block_resident,
                         "holders_of_gone_pairs", (Py_ssize_t)stale,
                         "pairs_held_inline", (Py_ssize_t)inline_pairs,
                         "map", (Py_ssize_t)(s->map.cap * sizeof(PairEntry)),
                         "map_used", (Py_ssize_t)s->map.used,
                         "heap", (Py_ssize_t)(s->heapcap * sizeof(HeapItem)),
                         "floor", (long long)s->floor);
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
    int found = ready_pairs(s) < 0 ? -1 : best_pair(s, &top);
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
