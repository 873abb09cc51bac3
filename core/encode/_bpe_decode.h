/* Token ids -> bytes (core/encode/_bpe_kernel.c): Decoder, what Tokenizer.decode_bytes gives.
 *
 * Invariant. The tokens' bytes lie one after another in one arena, with DECODE_PAD bytes
 * after the last; token id is arena[start[id] : start[id] + size[id]], and size[id] is -1
 * where the vocabulary has no such id. A decode joins the tokens of ids that are all ints
 * naming one, in one pass (a token of up to DECODE_PAD bytes copied as one fixed-size
 * block: the output keeps that much room past its end, as the arena does); at anything
 * else (an id of another type, out of range, or missing) it returns None and the caller's
 * own path, which names the id, runs: this one never raises for an id.
 */
#ifndef BPE_DECODE_H
#define BPE_DECODE_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#define DECODE_PAD 16

typedef struct {
    PyObject_HEAD
    char *arena;
    int64_t *start;
    int32_t *size;
    Py_ssize_t ntokens;
} Decoder;

static void
decoder_free(Decoder *self)
{
    PyMem_Free(self->arena);
    PyMem_Free(self->start);
    PyMem_Free(self->size);
    self->arena = NULL;
    self->start = NULL;
    self->size = NULL;
    self->ntokens = 0;
}

static int
Decoder_init(Decoder *self, PyObject *args, PyObject *kwds)
{
    static char *kwlist[] = {"tokens", NULL};
    PyObject *list;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "O!", kwlist, &PyList_Type, &list)) {
        return -1;
    }
    if (self->arena != NULL) {
        PyErr_SetString(PyExc_RuntimeError, "Decoder is already initialised");
        return -1;
    }
    Py_ssize_t n = PyList_GET_SIZE(list), total = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *token = PyList_GET_ITEM(list, i);
        if (token != Py_None) {
            if (!PyBytes_CheckExact(token) || PyBytes_GET_SIZE(token) > INT32_MAX) {
                PyErr_SetString(PyExc_TypeError, "tokens must be bytes (under 2 GiB) or None");
                return -1;
            }
            total += PyBytes_GET_SIZE(token);
        }
    }
    self->arena = PyMem_Malloc((size_t)total + DECODE_PAD);
    self->start = PyMem_Malloc((n > 0 ? (size_t)n : 1) * sizeof(int64_t));
    self->size = PyMem_Malloc((n > 0 ? (size_t)n : 1) * sizeof(int32_t));
    if (self->arena == NULL || self->start == NULL || self->size == NULL) {
        decoder_free(self);
        PyErr_NoMemory();
        return -1;
    }
    memset(self->arena + total, 0, DECODE_PAD);
    Py_ssize_t at = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *token = PyList_GET_ITEM(list, i);
        self->start[i] = at;
        self->size[i] = -1;
        if (token != Py_None) {
            Py_ssize_t size = PyBytes_GET_SIZE(token);
            memcpy(self->arena + at, PyBytes_AS_STRING(token), (size_t)size);
            self->size[i] = (int32_t)size;
            at += size;
        }
    }
    self->ntokens = n;
    return 0;
}

static void
Decoder_dealloc(Decoder *self)
{
    decoder_free(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* The id of a list item, or -1 when it is not an int (bools are not) that fits. */
static inline long long
item_id(PyObject *item)
{
    if (!PyLong_CheckExact(item)) {
        return -1;
    }
#if PY_VERSION_HEX < 0x030C0000
    /* (up to 3.11: the sign and number of 30-bit digits in ob_size) */
    Py_ssize_t digits = Py_SIZE(item);
    if (digits == 0 || digits == 1) {
        return digits ? (long long)((PyLongObject *)item)->ob_digit[0] : 0;
    }
#endif
    int overflow;
    long long v = PyLong_AsLongLongAndOverflow(item, &overflow);
    return overflow ? -1 : v;
}

/* Join the tokens of ids (a list of ints, or a contiguous int64 buffer) in one pass, into
 * a buffer that grows as it must; None at an id naming no token. */
static PyObject *
Decoder_decode(Decoder *self, PyObject *ids)
{
    Py_buffer view = {0};
    int is_list = PyList_Check(ids);
    if (!is_list) {
        if (PyObject_GetBuffer(ids, &view, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0) {
            return NULL;
        }
        if (view.itemsize != 8 || view.format == NULL || (strcmp(view.format, "q") != 0 && strcmp(view.format, "l") != 0)) {
            PyBuffer_Release(&view);
            PyErr_SetString(PyExc_TypeError, "decode takes a list of ints or a buffer of int64");
            return NULL;
        }
    }
    Py_ssize_t n = is_list ? PyList_GET_SIZE(ids) : view.len / 8;
    const int64_t *values = is_list ? NULL : (const int64_t *)view.buf;
    size_t cap = (size_t)n * 4 + 64, len = 0;
    char *out = PyMem_Malloc(cap + DECODE_PAD);
    PyObject *result = NULL;
    if (out == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        long long v = is_list ? item_id(PyList_GET_ITEM(ids, i)) : values[i];
        if ((unsigned long long)v >= (unsigned long long)self->ntokens || self->size[v] < 0) {
            result = Py_None;
            Py_INCREF(result);
            goto done;
        }
        size_t size = (size_t)self->size[v];
        const char *token = self->arena + self->start[v];
        if (len + size > cap) {
            size_t more = cap * 2 > len + size ? cap * 2 : len + size;
            char *grown = PyMem_Realloc(out, more + DECODE_PAD);
            if (grown == NULL) {
                PyErr_NoMemory();
                goto done;
            }
            out = grown;
            cap = more;
        }
        if (size <= DECODE_PAD) {
            memcpy(out + len, token, DECODE_PAD); /* (room for it in both: their padding) */
        } else {
            memcpy(out + len, token, size);
        }
        len += size;
    }
    result = PyBytes_FromStringAndSize(out, (Py_ssize_t)len);
done:
    PyMem_Free(out);
    if (!is_list) {
        PyBuffer_Release(&view);
    }
    return result;
}

static PyMethodDef Decoder_methods[] = {
    {"decode", (PyCFunction)Decoder_decode, METH_O,
     "decode(ids) -> bytes, or None at an id that is not an int naming a token (a list of ints, or int64 buffer)"},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject DecoderType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "core._bpe_kernel.Decoder",
    .tp_basicsize = sizeof(Decoder),
    .tp_dealloc = (destructor)Decoder_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Decoder(tokens): ids -> bytes; tokens[id] is the token's bytes, or None for an id not in the vocabulary.",
    .tp_methods = Decoder_methods,
    .tp_init = (initproc)Decoder_init,
    .tp_new = PyType_GenericNew,
};

#endif /* BPE_DECODE_H */
