/* The native pre-tokenizer for the GPT-2, GPT-4 and SuperBPE stage-2 patterns, and counting in the same pass.
 *
 * Optional C extension core.pretokenize._native (see core/pretokenize/native.py, which
 * decides when it may be used). The scanner itself is _scanner.h (with _ascii_cut.h, which
 * cuts GPT-2 pre-tokens of ASCII text 64 bytes at a time for counting); the count table
 * is _count_table.h, packed, added up and read out by _count_io.h.
 *
 *   pretokenize(data, pattern) -> list[bytes]      the pre-tokens of data (for the tests)
 *   Counts()                                       pre-token bytes -> occurrences
 *     .scan(data, pattern, start=0, end=-1, specials=())   count the pre-tokens of data[start:end],
 *                                                  cut at the special tokens (bytes, at most 16: not counted)
 *     .packed() -> bytes                           the counts, compact (one bytes object)
 *     .add_packed(packed)                          add counts given by packed()
 *     .add(counts)                                 add another Counts' counts
 *     .items() -> (list[bytes], list[int])         the pre-tokens and their counts
 *     .arrays() -> (lengths, counts)               int64 bytes, in the order of items()
 *     .columns(other=None) -> (keys, lengths, counts)   the keys' bytes too; with other, of
 *                                                  the sum of the two (neither changed)
 *     .invalid                                     bytes that were not valid UTF-8
 *   class_flags() -> bytes                         the table's flags of every code point
 *   tables_info() -> (regex version, digest)       where the tables came from
 *
 *     .totals() -> (total, corpus bytes)           sum of the counts, of length x count
 *     .sort_slots() -> bytes                       the slots sorted by key (uint32 each)
 *     .sorted_size(slots, other=None, other_slots=None) -> (n, key bytes)   of the sum
 *     .write_sorted(write, section, slots, other=None, other_slots=None, block=1 MiB)
 *                                                  one section of the sum's packed layout,
 *                                                  sorted by key, little-endian, in blocks
 *
 * packed(): int64 n, int64 invalid, int64 n counts, uint32 n key lengths, the keys.
 * scan(), add() and add_packed() change a table (scan and add without the GIL): meanwhile
 * any other use of it raises RuntimeError (no crash). columns(), sort_slots() and
 * write_sorted() (and add(), of its argument) read tables without the GIL: any number of
 * threads may read one at once, and only a change is refused meanwhile.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <string.h>
#include <stdlib.h>
#include "_count_io.h"
#include "_specials.h"

typedef struct {
    PyObject_HEAD
    BpeCounts map;
    int64_t invalid;
    int writing; /* changed without the GIL (scan, add) */
    int reading; /* read without the GIL by this many calls (both set and tested with the GIL held) */
} Counts;

static int in_use(void)
{
    PyErr_SetString(PyExc_RuntimeError,
                    "this Counts table is in use by another thread; give each thread its own table");
    return -1;
}

/* -1 with RuntimeError set if another thread is changing the table (scan, add). */
static int check_readable(Counts *self)
{
    return self->writing ? in_use() : 0;
}

/* -1 with RuntimeError set if another thread is changing or reading the table. */
static int check_writable(Counts *self)
{
    return self->writing || self->reading ? in_use() : 0;
}

static int check_pattern(int pattern)
{
    if (pattern != BPE_GPT2 && pattern != BPE_GPT4 && pattern != BPE_SUPERBPE) {
        PyErr_SetString(PyExc_ValueError, "pattern must be 1 (GPT-2), 2 (GPT-4) or 3 (SuperBPE's stage 2)");
        return -1;
    }
    return 0;
}

static PyObject *
Counts_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    Counts *self = (Counts *)type->tp_alloc(type, 0);
    if (!self)
        return NULL;
    if (bpe_ct_init(&self->map, 1 << 14) < 0) {
        Py_DECREF(self);
        return PyErr_NoMemory();
    }
    return (PyObject *)self;
}

static void
Counts_dealloc(Counts *self)
{
    bpe_ct_free(&self->map);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* The special tokens of a sequence of non-empty bytes objects, longest first, in out[]
 * (pointing into the objects, which `seq` keeps alive): their number, or -1 with an
 * exception set. */
static int
read_specials(PyObject *seq, BpeSpecial *out)
{
    Py_ssize_t count = PySequence_Fast_GET_SIZE(seq);
    if (count > BPE_MAX_SPECIALS) {
        PyErr_Format(PyExc_ValueError, "at most %d special tokens (split the text first)", BPE_MAX_SPECIALS);
        return -1;
    }
    for (Py_ssize_t k = 0; k < count; k++) {
        PyObject *item = PySequence_Fast_GET_ITEM(seq, k);
        if (!PyBytes_Check(item) || PyBytes_GET_SIZE(item) == 0) {
            PyErr_SetString(PyExc_TypeError, "special tokens must be non-empty bytes");
            return -1;
        }
        BpeSpecial special = {(const unsigned char *)PyBytes_AS_STRING(item), PyBytes_GET_SIZE(item), 0};
        bpe_special_insert(out, (int)k, special);
    }
    return (int)count;
}

static PyObject *
Counts_scan(Counts *self, PyObject *args, PyObject *kwds)
{
    static char *kwlist[] = {"data", "pattern", "start", "end", "specials", NULL};
    Py_buffer view;
    int pattern;
    Py_ssize_t start = 0, end = -1;
    PyObject *specials_arg = NULL, *specials_seq = NULL;
    BpeSpecial specials[BPE_MAX_SPECIALS];
    int nspecials = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "y*i|nnO", kwlist, &view, &pattern, &start, &end, &specials_arg))
        return NULL;
    if (check_pattern(pattern) < 0 || check_writable(self) < 0)
        goto fail;
    if (specials_arg) {
        specials_seq = PySequence_Fast(specials_arg, "specials must be a sequence of bytes");
        if (!specials_seq || (nspecials = read_specials(specials_seq, specials)) < 0)
            goto fail;
    }
    if (end < 0 || end > view.len)
        end = view.len;
    if (start < 0 || start > end) {
        PyErr_SetString(PyExc_ValueError, "start must be between 0 and end");
        goto fail;
    }
    const unsigned char *s = (const unsigned char *)view.buf + start;
    ptrdiff_t n = end - start;
    int failed = 0;
    self->writing = 1;
    Py_BEGIN_ALLOW_THREADS
    BpeSpecialCut cut;
    ptrdiff_t from, to;
    int special;
    bpe_special_cut_start(&cut, specials, nspecials, s, n);
    while (!failed && bpe_special_cut_next(&cut, &from, &to, &special)) {
        self->invalid += bpe_invalid_bytes(s + from, to - from);
        failed = bpe_count(&self->map, pattern, s + from, to - from) < 0;
    }
    Py_END_ALLOW_THREADS
    self->writing = 0;
    Py_XDECREF(specials_seq);
    PyBuffer_Release(&view);
    if (failed)
        return PyErr_NoMemory();
    Py_RETURN_NONE;
fail:
    Py_XDECREF(specials_seq);
    PyBuffer_Release(&view);
    return NULL;
}

static PyObject *
Counts_packed(Counts *self, PyObject *Py_UNUSED(ignored))
{
    if (check_readable(self) < 0) return NULL;
    PyObject *out = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)bpe_ct_packed_size(&self->map));
    if (out)
        bpe_ct_pack(&self->map, self->invalid, (unsigned char *)PyBytes_AS_STRING(out));
    return out;
}

static PyObject *
Counts_add_packed(Counts *self, PyObject *arg)
{
    Py_buffer view;
    if (check_writable(self) < 0) return NULL;
    if (PyObject_GetBuffer(arg, &view, PyBUF_SIMPLE) < 0)
        return NULL;
    int failed = bpe_ct_add_packed(&self->map, (const unsigned char *)view.buf, (size_t)view.len, &self->invalid);
    PyBuffer_Release(&view);
    if (failed == -1)
        return PyErr_NoMemory();
    if (failed == -2) {
        PyErr_SetString(PyExc_ValueError, "not the packed counts of Counts.packed()");
        return NULL;
    }
    Py_RETURN_NONE;
}

static PyTypeObject CountsType;

/* Add another table's counts, in its first-seen order. */
static PyObject *
Counts_add(Counts *self, PyObject *arg)
{
    if (!PyObject_TypeCheck(arg, &CountsType)) {
        PyErr_SetString(PyExc_TypeError, "add() takes a Counts");
        return NULL;
    }
    Counts *other = (Counts *)arg;
    if (check_writable(self) < 0 || check_readable(other) < 0) return NULL;
    int failed;
    /* without the GIL: the counting threads go on meanwhile (a large add would hold them) */
    self->writing = 1;
    other->reading += other != self;
    Py_BEGIN_ALLOW_THREADS
    failed = bpe_ct_add_table(&self->map, &other->map) < 0;
    Py_END_ALLOW_THREADS
    self->writing = 0;
    other->reading -= other != self;
    if (failed)
        return PyErr_NoMemory(); /* the counts added so far stay: the table is to be dropped */
    self->invalid += other->invalid;
    Py_RETURN_NONE;
}

/* (keys, lengths, counts): every pre-token's bytes one after another, and the lengths and
 * counts as int64 bytes, in first-seen order (the order of items()); with `other`, of the
 * sum of the two tables (this one's pre-tokens first), neither changed. */
static PyObject *
Counts_columns(Counts *self, PyObject *args)
{
    PyObject *other_arg = Py_None;
    if (!PyArg_ParseTuple(args, "|O", &other_arg))
        return NULL;
    Counts *with = other_arg == Py_None ? self : (Counts *)other_arg; /* (busy with self) */
    if (other_arg != Py_None && !PyObject_TypeCheck(other_arg, &CountsType)) {
        PyErr_SetString(PyExc_TypeError, "columns() takes a Counts or None");
        return NULL;
    }
    if (check_readable(self) < 0 || check_readable(with) < 0) return NULL;
    const BpeCounts *m = &self->map, *other = other_arg == Py_None ? NULL : &with->map;
    size_t most = m->n + (other ? other->n : 0), n, bytes;
    /* (16 bytes to spare: a key of up to 16 is stored as its two words whole) */
    PyObject *keys = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)(m->key_bytes + (other ? other->key_bytes : 0) + 16));
    PyObject *lengths = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)(most * sizeof(int64_t)));
    PyObject *counts = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)(most * sizeof(int64_t)));
    if (!keys || !lengths || !counts)
        goto fail;
    int failed;
    self->reading++;
    with->reading++;
    Py_BEGIN_ALLOW_THREADS
    failed = bpe_ct_columns(m, other, (unsigned char *)PyBytes_AS_STRING(keys), (int64_t *)PyBytes_AS_STRING(lengths),
                            (int64_t *)PyBytes_AS_STRING(counts), &n, &bytes) < 0;
    Py_END_ALLOW_THREADS
    self->reading--;
    with->reading--;
    if (failed) {
        PyErr_NoMemory();
        goto fail;
    }
    if (_PyBytes_Resize(&keys, (Py_ssize_t)bytes) < 0 ||
        _PyBytes_Resize(&lengths, (Py_ssize_t)(n * sizeof(int64_t))) < 0 ||
        _PyBytes_Resize(&counts, (Py_ssize_t)(n * sizeof(int64_t))) < 0)
        goto fail; /* (_PyBytes_Resize drops the object it fails on) */
    return Py_BuildValue("(NNN)", keys, lengths, counts);
fail:
    Py_XDECREF(keys);
    Py_XDECREF(lengths);
    Py_XDECREF(counts);
    return NULL;
}

/* (lengths, counts): int64 bytes of each pre-token's length and count, in first-seen order
 * (the order of items()): the statistics of millions of pre-tokens with no object each. */
static PyObject *
Counts_arrays(Counts *self, PyObject *Py_UNUSED(ignored))
{
    if (check_readable(self) < 0) return NULL;
    const BpeCounts *m = &self->map;
    PyObject *lengths = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)(m->n * sizeof(int64_t)));
    PyObject *counts = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)(m->n * sizeof(int64_t)));
    if (!lengths || !counts) {
        Py_XDECREF(lengths);
        Py_XDECREF(counts);
        return NULL;
    }
    bpe_ct_lengths_counts(m, (int64_t *)PyBytes_AS_STRING(lengths), (int64_t *)PyBytes_AS_STRING(counts));
    PyObject *result = PyTuple_Pack(2, lengths, counts);
    Py_DECREF(lengths);
    Py_DECREF(counts);
    return result;
}

static PyObject *
Counts_items(Counts *self, PyObject *Py_UNUSED(ignored))
{
    if (check_readable(self) < 0) return NULL;
    const BpeCounts *m = &self->map;
    unsigned char buf[32];
    PyObject *words = PyList_New((Py_ssize_t)m->n), *counts = PyList_New((Py_ssize_t)m->n);
    if (!words || !counts)
        goto fail;
    for (size_t e = 0; e < m->n; e++) {
        const BpeSlot *slot = bpe_ct_nth(m, e);
        size_t len;
        const unsigned char *key = bpe_ct_key(m, slot, buf, &len);
        PyObject *w = PyBytes_FromStringAndSize((const char *)key, (Py_ssize_t)len);
        PyObject *c = PyLong_FromLongLong(bpe_ct_count(m, slot));
        if (!w || !c) {
            Py_XDECREF(w);
            Py_XDECREF(c);
            goto fail;
        }
        PyList_SET_ITEM(words, (Py_ssize_t)e, w);
        PyList_SET_ITEM(counts, (Py_ssize_t)e, c);
    }
    return Py_BuildValue("(NN)", words, counts);
fail:
    Py_XDECREF(words);
    Py_XDECREF(counts);
    return NULL;
}

static Py_ssize_t Counts_len(Counts *self)
{
    if (check_readable(self) < 0) return -1;
    return (Py_ssize_t)self->map.n;
}

static PyObject *Counts_get_invalid(Counts *self, void *closure)
{
    if (check_readable(self) < 0) return NULL;
    return PyLong_FromLongLong(self->invalid);
}


static PyObject *
Counts_totals(Counts *self, PyObject *Py_UNUSED(ignored))
{
    uint64_t total, corpus_bytes;
    if (check_readable(self) < 0) return NULL;
    bpe_ct_totals(&self->map, &total, &corpus_bytes);
    return Py_BuildValue("(KK)", (unsigned long long)total, (unsigned long long)corpus_bytes);
}

/* The table's slot indices sorted by their keys' bytes, as uint32 bytes (4 a key). */
static PyObject *
Counts_sort_slots(Counts *self, PyObject *Py_UNUSED(ignored))
{
    if (check_readable(self) < 0) return NULL;
    PyObject *out = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)(self->map.n * sizeof(uint32_t)));
    if (!out)
        return NULL;
    self->reading++;
    Py_BEGIN_ALLOW_THREADS
    bpe_ct_sorted_slots(&self->map, (uint32_t *)PyBytes_AS_STRING(out));
    Py_END_ALLOW_THREADS
    self->reading--;
    return out;
}

/* A sorted walk over self and other (or None) from their sort_slots(); -1 with an exception. */
static int
sorted_walk(Counts *self, Py_buffer *slots, PyObject *other_arg, Py_buffer *other_slots, BpeSortedWalk *walk)
{
    memset(walk, 0, sizeof(*walk));
    walk->a = &self->map;
    walk->va = (const uint32_t *)slots->buf;
    if ((size_t)slots->len != self->map.n * sizeof(uint32_t))
        goto bad;
    if (other_arg != Py_None) {
        if (!PyObject_TypeCheck(other_arg, &CountsType) || other_arg == (PyObject *)self) {
            PyErr_SetString(PyExc_TypeError, "other must be another Counts or None");
            return -1;
        }
        if (check_readable((Counts *)other_arg) < 0)
            return -1;
        walk->b = &((Counts *)other_arg)->map;
        walk->vb = (const uint32_t *)other_slots->buf;
        if ((size_t)other_slots->len != walk->b->n * sizeof(uint32_t))
            goto bad;
    }
    for (size_t k = 0; k < walk->a->n; k++) /* (a slot past the table would be read out of bounds) */
        if (walk->va[k] > walk->a->mask)
            goto bad;
    for (size_t k = 0; walk->b && k < walk->b->n; k++)
        if (walk->vb[k] > walk->b->mask)
            goto bad;
    return 0;
bad:
    PyErr_SetString(PyExc_ValueError, "slots must be the table's sort_slots()");
    return -1;
}

static PyObject *
Counts_sorted_size(Counts *self, PyObject *args)
{
    Py_buffer slots, other_slots = {0};
    PyObject *other = Py_None, *result = NULL;
    BpeSortedWalk walk;
    if (!PyArg_ParseTuple(args, "y*|Oy*", &slots, &other, &other_slots))
        return NULL;
    if (check_readable(self) == 0 && sorted_walk(self, &slots, other, &other_slots, &walk) == 0) {
        size_t n, bytes;
        bpe_ct_walk_size(walk, &n, &bytes);
        result = Py_BuildValue("(nn)", (Py_ssize_t)n, (Py_ssize_t)bytes);
    }
    PyBuffer_Release(&slots);
    if (other_slots.obj)
        PyBuffer_Release(&other_slots);
    return result;
}

/* One section of the sum's packed layout, sorted, handed to write() block by block. */
static PyObject *
Counts_write_sorted(Counts *self, PyObject *args, PyObject *kwds)
{
    static char *kwlist[] = {"write", "section", "slots", "other", "other_slots", "block", NULL};
    Py_buffer slots, other_slots = {0};
    PyObject *write, *other = Py_None, *result = NULL;
    int section;
    Py_ssize_t block = 1 << 20;
    BpeSortedWriter w;
    memset(&w, 0, sizeof(w));
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "Oiy*|Oy*n", kwlist, &write, &section, &slots, &other,
                                     &other_slots, &block))
        return NULL;
    if (section < 0 || section > 2 || block < 8 || block % 8) {
        PyErr_SetString(PyExc_ValueError, "section must be 0, 1 or 2 and block a positive multiple of 8");
        goto done;
    }
    if (check_readable(self) < 0 || sorted_walk(self, &slots, other, &other_slots, &w.walk) < 0)
        goto done;
    w.section = section;
    Counts *with = other == Py_None ? self : (Counts *)other;
    self->reading++;
    with->reading++;
    for (;;) {
        PyObject *out = PyBytes_FromStringAndSize(NULL, block);
        if (!out)
            break;
        size_t used = bpe_ct_writer_fill(&w, (unsigned char *)PyBytes_AS_STRING(out), (size_t)block);
        if (used == 0) {
            Py_DECREF(out);
            result = Py_None;
            Py_INCREF(result);
            break;
        }
        if (used < (size_t)block && _PyBytes_Resize(&out, (Py_ssize_t)used) < 0)
            break;
        PyObject *r = PyObject_CallOneArg(write, out);
        Py_DECREF(out);
        if (!r)
            break;
        Py_DECREF(r);
    }
    self->reading--;
    with->reading--;
done:
    PyBuffer_Release(&slots);
    if (other_slots.obj)
        PyBuffer_Release(&other_slots);
    return result;
}

static PyMethodDef Counts_methods[] = {
    {"scan", (PyCFunction)(void (*)(void))Counts_scan, METH_VARARGS | METH_KEYWORDS,
     "scan(data, pattern, start=0, end=-1, specials=()): count the pre-tokens of data[start:end], "
     "cut at the special tokens (not counted)"},
    {"packed", (PyCFunction)Counts_packed, METH_NOARGS, "the counts as one bytes object"},
    {"add_packed", (PyCFunction)Counts_add_packed, METH_O, "add the counts of packed()"},
    {"add", (PyCFunction)Counts_add, METH_O, "add the counts of another Counts"},
    {"items", (PyCFunction)Counts_items, METH_NOARGS, "(pre-tokens, counts), in first-seen order"},
    {"arrays", (PyCFunction)Counts_arrays, METH_NOARGS, "(lengths, counts) as int64 bytes, in the order of items()"},
    {"columns", (PyCFunction)Counts_columns, METH_VARARGS,
     "(keys, lengths, counts): every pre-token's bytes, and lengths and counts as int64 bytes, in the order of items();"
     " columns(other): of the sum with another table"},
    {"totals", (PyCFunction)Counts_totals, METH_NOARGS,
     "(sum of the counts, sum of length x count), each at most 2**64 - 1"},
    {"sort_slots", (PyCFunction)Counts_sort_slots, METH_NOARGS, "the table's slots sorted by key, uint32 bytes"},
    {"sorted_size", (PyCFunction)Counts_sorted_size, METH_VARARGS,
     "sorted_size(slots, other=None, other_slots=None) -> (distinct keys, key bytes) of the sum"},
    {"write_sorted", (PyCFunction)(void (*)(void))Counts_write_sorted, METH_VARARGS | METH_KEYWORDS,
     "write_sorted(write, section, slots, other=None, other_slots=None, block=1 MiB): section 0 (counts), "
     "1 (lengths) or 2 (keys) of the sum's packed layout sorted by key, little-endian, to write() in blocks"},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef Counts_getset[] = {
    {"invalid", (getter)Counts_get_invalid, NULL, "bytes that were not valid UTF-8", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PySequenceMethods Counts_as_sequence = {
    .sq_length = (lenfunc)Counts_len,
};

static PyTypeObject CountsType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "core.pretokenize._native.Counts",
    .tp_basicsize = sizeof(Counts),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Pre-token bytes -> occurrences, counted by the native scanner.",
    .tp_new = Counts_new,
    .tp_dealloc = (destructor)Counts_dealloc,
    .tp_methods = Counts_methods,
    .tp_getset = Counts_getset,
    .tp_as_sequence = &Counts_as_sequence,
};

static PyObject *
native_pretokenize(PyObject *module, PyObject *args)
{
    Py_buffer view;
    int pattern;
    if (!PyArg_ParseTuple(args, "y*i", &view, &pattern))
        return NULL;
    if (check_pattern(pattern) < 0) {
        PyBuffer_Release(&view);
        return NULL;
    }
    PyObject *out = PyList_New(0);
    const unsigned char *s = (const unsigned char *)view.buf;
    ptrdiff_t i = 0, n = view.len;
    while (out && i < n) {
        ptrdiff_t j = bpe_next(pattern, s, i, n);
        PyObject *token = PyBytes_FromStringAndSize((const char *)s + i, j - i);
        if (!token || PyList_Append(out, token) < 0)
            Py_CLEAR(out);
        Py_XDECREF(token);
        i = j;
    }
    PyBuffer_Release(&view);
    return out;
}

static PyObject *
native_class_flags(PyObject *module, PyObject *Py_UNUSED(ignored))
{
    PyObject *out = PyBytes_FromStringAndSize(NULL, 0x110000);
    if (!out)
        return NULL;
    unsigned char *p = (unsigned char *)PyBytes_AS_STRING(out);
    for (uint32_t cp = 0; cp < 0x110000; cp++)
        p[cp] = (unsigned char)bpe_flags_of(cp);
    return out;
}

static PyObject *native_tables_info(PyObject *module, PyObject *Py_UNUSED(ignored))
{ return Py_BuildValue("(ss)", BPE_TABLES_REGEX_VERSION, BPE_TABLES_DIGEST); }

static PyMethodDef native_methods[] = {
    {"pretokenize", native_pretokenize, METH_VARARGS, "pretokenize(data, pattern) -> the pre-tokens of data"},
    {"class_flags", native_class_flags, METH_NOARGS, "the tables' flags of every code point"},
    {"tables_info", native_tables_info, METH_NOARGS, "(regex version, digest) of the tables"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef native_module = {
    PyModuleDef_HEAD_INIT, "_native",
    "The native pre-tokenizer for the GPT-2, GPT-4 and SuperBPE stage-2 patterns (see core/pretokenize/native.py).",
    -1, native_methods,
};

PyMODINIT_FUNC
PyInit__native(void)
{
    if (PyType_Ready(&CountsType) < 0)
        return NULL;
    PyObject *m = PyModule_Create(&native_module);
    if (!m)
        return NULL;
    Py_INCREF(&CountsType);
    if (PyModule_AddObject(m, "Counts", (PyObject *)&CountsType) < 0 ||
        PyModule_AddIntConstant(m, "GPT2", BPE_GPT2) < 0 || PyModule_AddIntConstant(m, "GPT4", BPE_GPT4) < 0 ||
        PyModule_AddIntConstant(m, "SUPERBPE", BPE_SUPERBPE) < 0) {
        Py_DECREF(&CountsType);
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
