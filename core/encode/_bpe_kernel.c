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
 * Its parts, each a header with the invariant it keeps: the merges (_bpe_table.h), one
 * word's BPE (_bpe_word.h), a str's words (_bpe_text.h), the Encoder and its caches
 * (_bpe_encoder.h), a span's encoding (_bpe_span.h), ids back to bytes (_bpe_decode.h);
 * this file is the Python types.
 * CPython API only, C99 (and, on Linux, mmap and madvise for the front cache's huge pages).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>
#include "_bpe_text.h"
#include "_bpe_span.h"
#include "_bpe_decode.h"

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
    PyMem_Free(self->filter);
    for (Py_ssize_t i = 0; i < self->nlongs; i++) {
        Py_DECREF(self->longs[i]);
    }
    PyMem_Free(self->longs);
    Py_TYPE(self)->tp_free((PyObject *)self);
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
    if (PyType_Ready(&BpeTableType) < 0 || PyType_Ready(&EncoderType) < 0 || PyType_Ready(&DecoderType) < 0) {
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
    Py_INCREF(&DecoderType);
    if (PyModule_AddObject(m, "Decoder", (PyObject *)&DecoderType) < 0) {
        Py_DECREF(&DecoderType);
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
