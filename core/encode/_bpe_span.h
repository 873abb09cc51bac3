/* Encoding a span of bytes (core/encode/_bpe_kernel.c): the native pre-tokenizer cuts it,
 * CUT_AHEAD pre-tokens ahead of their lookups, and the ids are written in the output's
 * width as they are found.
 *
 * Invariant. The ids written are those of encoding each pre-token on its own, in order.
 */
#ifndef BPE_SPAN_H
#define BPE_SPAN_H

#include "_bpe_encoder.h"

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

#endif /* BPE_SPAN_H */
