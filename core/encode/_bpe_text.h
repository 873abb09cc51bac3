/* A batch of words from a str (BpeTable.encode_text, core/encode/_bpe_kernel.c): the
 * bytes each character is encoded as, and the batch's output buffers.
 */
#ifndef BPE_TEXT_H
#define BPE_TEXT_H

#include "_bpe_word.h"

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

#endif /* BPE_TEXT_H */
