/* The loops of reading tokenizer files, in C; each follows a Python function, its
 * reference, step by step (and the Python runs without this module).
 *
 * texts_to_bytes (core/formats/bytes_unicode.py, strings_to_bytes): GPT-2 token texts to
 * bytes through the byte map, a character at a time, or None at a character outside it.
 *
 * merges_from_ranks (core/formats/tiktoken_file.py): the merges a tiktoken rank file
 * stands for. A token of order k (its place among the tokens sorted by rank) with more
 * than one byte is the merge of the two parts that byte-pair encoding of its bytes leaves,
 * using only the tokens of lower order: at each step the adjacent pair whose concatenation
 * is the token of lowest order below k is merged, the leftmost among equals. The
 * invariant: the parts are always runs of the token's own bytes, in order, so a pair's
 * concatenation is looked up in place (no copy), and only the two pairs beside a merge
 * change their order.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stdint.h>
#include <string.h>

typedef struct {
    const char *data; /* a token's bytes (held by the caller's list), NULL for an empty slot */
    Py_ssize_t size;
    Py_ssize_t order;
} Slot;

typedef struct {
    Slot *slots;
    size_t mask;
} Table;

static uint64_t hash_bytes(const char *p, Py_ssize_t n) {
    uint64_t h = 0xcbf29ce484222325ULL ^ (uint64_t)n;
    for (Py_ssize_t i = 0; i < n; i++) {
        h = (h ^ (unsigned char)p[i]) * 0x100000001b3ULL;
    }
    return h ^ (h >> 29);
}

/* The order of the token with these bytes, or -1. */
static Py_ssize_t order_of(const Table *t, const char *p, Py_ssize_t n) {
    size_t i = (size_t)hash_bytes(p, n) & t->mask;
    for (;;) {
        const Slot *s = &t->slots[i];
        if (s->data == NULL) return -1;
        if (s->size == n && memcmp(s->data, p, (size_t)n) == 0) return s->order;
        i = (i + 1) & t->mask;
    }
}

/* The order of the pair (parts i, i + 1) when it is a token of order below k, else -1. */
static Py_ssize_t pair_order(const Table *t, const char *token, const Py_ssize_t *start,
                             const Py_ssize_t *size, Py_ssize_t i, Py_ssize_t k) {
    Py_ssize_t o = order_of(t, token + start[i], size[i] + size[i + 1]);
    return o < k ? o : -1;
}

/* Byte-pair encode token k with the tokens of lower order; its two parts (the size of the
 * first), or -1 when it does not end in two such tokens. `start`, `size` and `pairs` have
 * room for the token's length. */
static Py_ssize_t split_of(const Table *t, const char *token, Py_ssize_t length, Py_ssize_t k,
                           Py_ssize_t *start, Py_ssize_t *size, Py_ssize_t *pairs) {
    Py_ssize_t parts = length;
    for (Py_ssize_t i = 0; i < length; i++) {
        start[i] = i;
        size[i] = 1;
    }
    if (parts > 2) {
        for (Py_ssize_t i = 0; i + 1 < parts; i++) pairs[i] = pair_order(t, token, start, size, i, k);
    }
    while (parts > 2) {
        Py_ssize_t best = -1;
        for (Py_ssize_t i = 0; i + 1 < parts; i++) {
            if (pairs[i] >= 0 && (best < 0 || pairs[i] < pairs[best])) best = i;
        }
        if (best < 0) break;
        size[best] += size[best + 1];
        Py_ssize_t after = parts - best - 2; /* parts after the merged one */
        memmove(start + best + 1, start + best + 2, (size_t)after * sizeof(Py_ssize_t));
        memmove(size + best + 1, size + best + 2, (size_t)after * sizeof(Py_ssize_t));
        if (after > 0) memmove(pairs + best + 1, pairs + best + 2, (size_t)(after - 1) * sizeof(Py_ssize_t));
        parts--;
        if (best > 0) pairs[best - 1] = pair_order(t, token, start, size, best - 1, k);
        if (best + 1 < parts) pairs[best] = pair_order(t, token, start, size, best, k);
    }
    if (parts != 2) return -1;
    Py_ssize_t left = order_of(t, token, size[0]), right = order_of(t, token + size[0], size[1]);
    return left >= 0 && left < k && right >= 0 && right < k ? size[0] : -1;
}

static PyObject *merges_from_ranks(PyObject *self, PyObject *arg) {
    (void)self;
    if (!PyList_Check(arg)) {
        PyErr_SetString(PyExc_TypeError, "merges_from_ranks expects a list of bytes in rank order");
        return NULL;
    }
    Py_ssize_t n = PyList_GET_SIZE(arg), longest = 1;
    size_t capacity = 16;
    while (capacity < 2 * (size_t)n) capacity *= 2;
    Table table = {PyMem_Calloc(capacity, sizeof(Slot)), capacity - 1};
    if (table.slots == NULL) return PyErr_NoMemory();
    for (Py_ssize_t k = 0; k < n; k++) {
        PyObject *token = PyList_GET_ITEM(arg, k);
        if (!PyBytes_Check(token)) {
            PyMem_Free(table.slots);
            PyErr_SetString(PyExc_TypeError, "merges_from_ranks expects a list of bytes in rank order");
            return NULL;
        }
        const char *data = PyBytes_AS_STRING(token);
        Py_ssize_t size = PyBytes_GET_SIZE(token);
        if (size > longest) longest = size;
        size_t i = (size_t)hash_bytes(data, size) & table.mask;
        while (table.slots[i].data != NULL) {
            if (table.slots[i].size == size && memcmp(table.slots[i].data, data, (size_t)size) == 0) break;
            i = (i + 1) & table.mask;
        }
        if (table.slots[i].data == NULL) { /* (a token given twice keeps its first order) */
            table.slots[i] = (Slot){data, size, k};
        }
    }
    Py_ssize_t *room = PyMem_Malloc(3 * (size_t)longest * sizeof(Py_ssize_t));
    PyObject *merges = PyList_New(0);
    if (room == NULL || merges == NULL) {
        PyMem_Free(table.slots);
        PyMem_Free(room);
        Py_XDECREF(merges);
        return room == NULL ? PyErr_NoMemory() : NULL;
    }
    for (Py_ssize_t k = 0; k < n; k++) {
        PyObject *token = PyList_GET_ITEM(arg, k);
        const char *data = PyBytes_AS_STRING(token);
        Py_ssize_t length = PyBytes_GET_SIZE(token);
        if (length == 1) continue;
        Py_ssize_t cut = length < 2 ? -1 : split_of(&table, data, length, k, room, room + longest, room + 2 * longest);
        if (cut < 0) { /* the caller names the token */
            Py_DECREF(merges);
            merges = PyLong_FromSsize_t(k);
            break;
        }
        PyObject *pair = Py_BuildValue("(y#y#)", data, cut, data + cut, length - cut);
        if (pair == NULL || PyList_Append(merges, pair) < 0) {
            Py_XDECREF(pair);
            Py_CLEAR(merges);
            break;
        }
        Py_DECREF(pair);
    }
    PyMem_Free(table.slots);
    PyMem_Free(room);
    return merges;
}

/* texts_to_bytes(texts, table): table is the byte map as a charmap decoding table (the
 * character of each byte, in byte order). */
static PyObject *texts_to_bytes(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *texts, *table;
    if (!PyArg_ParseTuple(args, "O!U", &PyList_Type, &texts, &table)) return NULL;
    if (PyUnicode_GET_LENGTH(table) != 256) {
        PyErr_SetString(PyExc_ValueError, "the table maps 256 bytes");
        return NULL;
    }
    enum { CHARS = 512 }; /* GPT-2's characters are below U+0144 */
    uint16_t byte_of[CHARS];
    for (int c = 0; c < CHARS; c++) byte_of[c] = 0xFFFF;
    for (Py_ssize_t b = 0; b < 256; b++) {
        Py_UCS4 c = PyUnicode_READ_CHAR(table, b);
        if (c >= CHARS) {
            PyErr_SetString(PyExc_ValueError, "the table's characters must be below U+0200");
            return NULL;
        }
        byte_of[c] = (uint16_t)b;
    }
    Py_ssize_t n = PyList_GET_SIZE(texts);
    PyObject *out = PyList_New(n);
    if (out == NULL) return NULL;
    for (Py_ssize_t k = 0; k < n; k++) {
        PyObject *text = PyList_GET_ITEM(texts, k);
        if (!PyUnicode_Check(text)) {
            Py_DECREF(out);
            PyErr_SetString(PyExc_TypeError, "texts_to_bytes expects a list of str");
            return NULL;
        }
        Py_ssize_t length = PyUnicode_GET_LENGTH(text);
        int kind = PyUnicode_KIND(text);
        const void *data = PyUnicode_DATA(text);
        PyObject *token = PyBytes_FromStringAndSize(NULL, length);
        if (token == NULL) {
            Py_DECREF(out);
            return NULL;
        }
        char *bytes = PyBytes_AS_STRING(token);
        for (Py_ssize_t i = 0; i < length; i++) {
            Py_UCS4 c = PyUnicode_READ(kind, data, i);
            if (c >= CHARS || byte_of[c] == 0xFFFF) { /* outside the map: the caller names it */
                Py_DECREF(token);
                Py_DECREF(out);
                Py_RETURN_NONE;
            }
            bytes[i] = (char)byte_of[c];
        }
        PyList_SET_ITEM(out, k, token);
    }
    return out;
}

static PyMethodDef methods[] = {
    {"texts_to_bytes", texts_to_bytes, METH_VARARGS,
     "texts_to_bytes(texts, table) -> each text's bytes through GPT-2's byte map, or None at a character outside it"},
    {"merges_from_ranks", merges_from_ranks, METH_O,
     "merges_from_ranks(tokens in rank order) -> [(left, right)] of the tokens of more than one byte, "
     "or the place of the first that is not the merge of two tokens before it"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_reading",
    "The loops of reading tokenizer files, in C (see core/formats/bytes_unicode.py and tiktoken_file.py).", -1,
    methods,
};

PyMODINIT_FUNC PyInit__reading(void) { return PyModule_Create(&module); }
