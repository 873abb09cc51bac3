/* The Encoder's state and its pre-token caches (core/encode/_bpe_kernel.c): a front cache of
 * recent short pre-tokens (two-way sets of 32-byte slots, one cache line a set) before a
 * cache of all pre-tokens, with an admission filter.
 *
 * Invariant. A cached pre-token's ids are exactly merge_word's for its bytes; a cache
 * only speeds the lookup, it never changes an id. The caches are bounded: the front by its
 * size, the cache by `capacity` entries (evicted when full).
 */
#ifndef BPE_ENCODER_H
#define BPE_ENCODER_H

#include "../pretokenize/_ascii_cut.h" /* (with _scanner.h) */
#include "../pretokenize/_byte_map.h"
#include "../pretokenize/_specials.h"
#include "pythread.h"
#include <stdlib.h>

#include "_bpe_word.h"

/* A table of `size` zeroed bytes for the front cache, aligned to a cache line and, on
 * Linux, in huge pages where the system gives them (transparent huge pages, on request):
 * the front cache is looked up at random over its megabytes, and with 4 KB pages most of
 * those lookups also missed the TLB. Its pages are mapped as they are first written (2 MB at a time), so an
 * encoder of a few short texts costs little. Free it with huge_free; NULL when out of
 * memory. */
static void *
huge_zeroed(size_t size)
{
#if defined(BPE_HUGE_MAP)
    return bpe_huge_map(size);
#else
    return bpe_calloc_written(size / 64 + 1, 64); /* (its alignment: below) */
#endif
}

static void
huge_free(void *p, size_t size)
{
    if (p == NULL) {
        return;
    }
#if defined(BPE_HUGE_MAP)
    bpe_huge_unmap(p, size);
#else
    free(p);
#endif
}

#define CACHED_WORD 256 /* longer pre-tokens are merged every time, not cached */

/* The front cache's size: eight slots per entry of the cache (cache_entries), between
 * 2^MIN_FRONT_BITS and 2^MAX_FRONT_BITS slots of 32 bytes (64 MB: corpus encoding's 2^18
 * entries; more was no faster on a web-like corpus). */
#define MIN_FRONT_BITS 12
#define MAX_FRONT_BITS 21
#define SEEN_BITS 20    /* the cache's admission filter: 2^20 bits */
#define FRONT_BYTES 16  /* pre-tokens of up to 16 bytes */
#define NARROW_IDS 7    /* with up to 7 ids below 2^16 (all but a few pre-tokens that short) */
#define WIDE_IDS 3      /* or up to 3 ids of any size (a vocabulary of more than 65,536) */
#define OUT_SLACK 4     /* ids an encode_span may write past its last (front_copy); one more
                         * int64 for the alignment of its staging (staging) */

/* A front slot: 32 bytes, two to a cache line, which is the two ways of a set. */
typedef struct {
    uint64_t lo, hi; /* the pre-token's bytes (bpe_tail_words) */
    uint8_t len;     /* 0: the slot is free */
    uint8_t nids;
    uint16_t ids[NARROW_IDS]; /* the ids when all of the encoder's are below 2^16; else id j
                               * is ids[2j] | ids[2j + 1] << 16 */
} FrontSlot;

typedef char front_slot_is_32_bytes[sizeof(FrontSlot) == 32 ? 1 : -1];

typedef struct {
    PyObject_HEAD
    BpeTable *table;
    int pattern;
    size_t capacity;         /* cache entries at most; the cache is emptied when full */
    BpeMap cache;            /* pre-token bytes -> (a: offset in ids, b: number of ids) */
    int64_t *ids;            /* the cached pre-tokens' ids */
    size_t ids_len, ids_cap;
    Scratch *scratch;        /* merge_word's working memory */
    int64_t *out;            /* encode's output, kept between calls (a fresh large buffer */
    size_t out_cap;          /* per call would cost page faults) */
    PyThread_type_lock lock; /* one encoding at a time (the GIL is released while encoding) */
    FrontSlot *front;        /* in front of the cache: recent short pre-tokens (front_hit), */
    int front_bits;          /* 2^front_bits slots (see huge_zeroed) */
    int narrow;              /* every id is below 2^16: the front slots hold uint16 ids */
    uint64_t *seen;          /* a bit per pre-token hash: seen once since the last eviction */
    BpeSpecial specials[BPE_MAX_SPECIALS]; /* longest first, as BpeSpecialCut takes them, with their ids; bytes owned */
    int nspecials;
} Encoder;

/* A cache entry's b: its number of ids in the low 32 bits, its hits since the last
 * eviction above them. */
#define IDS_OF(b) ((Py_ssize_t)((b) & 0xFFFFFFFF))
#define HITS_OF(b) ((b) >> 32)

/* Whether the pre-token of this hash was seen since the last eviction; marks it seen. Every
 * pre-token in the cache is marked (encoder_evict marks the ones it keeps), so one not seen
 * is not in the cache. */
static inline int
seen_before(Encoder *self, uint64_t hash)
{
    uint64_t bit = hash >> (64 - SEEN_BITS), mask = (uint64_t)1 << (bit & 63);
    int seen = (self->seen[bit >> 6] & mask) != 0;
    self->seen[bit >> 6] |= mask;
    return seen;
}

/* The cache is full: keep the entries used since the last eviction (the text's frequent
 * pre-tokens) if they fill at most half of it, else empty it. 0, or -1 when out of memory. */
static int
encoder_evict(Encoder *self)
{
    BpeMap *old = &self->cache;
    memset(self->seen, 0, ((size_t)1 << (SEEN_BITS - 6)) * sizeof(uint64_t));
    size_t keep = 0, keep_ids = 0;
    for (size_t k = 0; k < old->n; k++) {
        if (HITS_OF(old->entries[k].b) > 0) {
            keep++;
            keep_ids += (size_t)IDS_OF(old->entries[k].b);
        }
    }
    if (keep == 0 || keep > self->capacity / 2) {
        bpe_map_clear(old);
        self->ids_len = 0;
        return 0;
    }
    BpeMap fresh;
    int64_t *ids = PyMem_RawMalloc((keep_ids ? keep_ids : 1) * sizeof(int64_t));
    if (ids == NULL || bpe_map_init(&fresh, 2 * keep) < 0) {
        PyMem_RawFree(ids);
        return -1;
    }
    size_t at = 0;
    int created;
    for (size_t k = 0; k < old->n; k++) {
        BpeEntry *e = &old->entries[k];
        if (HITS_OF(e->b) == 0) {
            continue;
        }
        BpeEntry *f = bpe_map_get_hashed(&fresh, old->keys + e->key, e->len, e->hash, &created);
        if (f == NULL) {
            bpe_map_free(&fresh);
            PyMem_RawFree(ids);
            return -1;
        }
        seen_before(self, e->hash);
        memcpy(ids + at, self->ids + e->a, (size_t)IDS_OF(e->b) * sizeof(int64_t));
        f->a = (int64_t)at;
        f->b = IDS_OF(e->b);
        at += (size_t)IDS_OF(e->b);
    }
    bpe_map_free(old);
    *old = fresh;
    PyMem_RawFree(self->ids);
    self->ids = ids;
    self->ids_len = at;
    self->ids_cap = keep_ids ? keep_ids : 1;
    return 0;
}

/* encode_pretoken without the front cache: the cache of all pre-tokens, else merge_word. */
static Py_ssize_t
encode_pretoken_cached(Encoder *self, const unsigned char *s, Py_ssize_t n, int64_t *out)
{
    if (n > CACHED_WORD) {
        return merge_word(self->table, s, n, out, self->scratch);
    }
    int created;
    uint64_t hash = bpe_hash(s, (size_t)n);
    if (!seen_before(self, hash)) { /* so not cached: merged at once, without the cache's
                                     * probe (a random access into its megabytes for each
                                     * pre-token seen once) */
        return merge_word(self->table, s, n, out, self->scratch);
    }
    BpeEntry *e = bpe_map_find(&self->cache, s, (size_t)n, hash);
    if (e != NULL) {
        Py_ssize_t k = IDS_OF(e->b);
        memcpy(out, self->ids + e->a, (size_t)k * sizeof(int64_t));
        if (HITS_OF(e->b) < 0x7FFFFFFF) {
            e->b += (int64_t)1 << 32;
        }
        return k;
    }
    Py_ssize_t k = merge_word(self->table, s, n, out, self->scratch);
    if (k < 0) {
        return -1;
    }
    /* Admission: a pre-token enters the cache the second time it is missed (its seen bit
     * was set the first time), so the many seen once (names, numbers, words of a rare
     * script) do not fill it and push the frequent ones out. */
    if (self->cache.n >= self->capacity) {
        if (encoder_evict(self) < 0) {
            return -1;
        }
        seen_before(self, hash); /* (the eviction cleared its mark) */
    }
    e = bpe_map_get_hashed(&self->cache, s, (size_t)n, hash, &created);
    if (e == NULL) {
        return -1;
    }
    if (self->ids_len + (size_t)k > self->ids_cap) {
        size_t cap = self->ids_cap * 2;
        while (cap < self->ids_len + (size_t)k) {
            cap *= 2;
        }
        int64_t *ids = PyMem_RawRealloc(self->ids, cap * sizeof(int64_t));
        if (ids == NULL) {
            return -1;
        }
        self->ids = ids;
        self->ids_cap = cap;
    }
    memcpy(self->ids + self->ids_len, out, (size_t)k * sizeof(int64_t));
    e->a = (int64_t)self->ids_len;
    e->b = k;
    self->ids_len += (size_t)k;
    return k;
}

/* The front slot of a pre-token of 1 to FRONT_BYTES bytes whose key is (lo, hi): its
 * bytes as two words (bpe_tail_words), which with its length are the whole pre-token. */
static inline FrontSlot *
front_slot(FrontSlot *front, int set_shift, uint64_t lo, uint64_t hi, Py_ssize_t n)
{
    /* two multiplications: the product's top bits depend on every bit of lo, hi and n */
    uint64_t h = (lo + hi * 0xC2B2AE3D27D4EB4FULL + (uint64_t)n) * 0x9E3779B97F4A7C15ULL;
    return front + ((h >> set_shift) << 1);
}

/* Whether the front slot f holds the pre-token of n bytes whose key is (lo, hi).
 *
 * The front cache holds the short pre-tokens (most of a text's) in one 32-byte slot each,
 * key and ids, in sets of two slots that share a cache line: one memory access per hit,
 * where the cache of all pre-tokens takes four (slot, entry, key, ids). Each set keeps
 * its two most recently used pre-tokens, the newer first. A miss is merged at once, not
 * looked up in that cache: on a web-like corpus, whose long tail of rare words misses
 * both, the cache's probe, its admission and its insertion cost more than merging a short
 * word. A hit is one comparison and four ids copied whatever their count
 * (the ids past it are overwritten by the next pre-token's, or are past the end): the
 * number of ids varies from one pre-token to the next, and a branch on it was mispredicted. */
static inline int
front_hit(const FrontSlot *f, uint64_t lo, uint64_t hi, Py_ssize_t n)
{
    return ((f->lo ^ lo) | (f->hi ^ hi) | (uint64_t)(f->len ^ (uint8_t)n)) == 0;
}

/* The ids in the front slot f, written to out (room for 4 at least, and for their
 * number): their number. */
static inline Py_ssize_t
front_copy(int narrow, const FrontSlot *f, int64_t *out)
{
    const uint16_t *ids = f->ids;
    if (narrow) {
        out[0] = ids[0];
        out[1] = ids[1];
        out[2] = ids[2];
        out[3] = ids[3];
        if (f->nids > 4) { /* (few pre-tokens have more than four ids) */
            for (int j = 4; j < f->nids; j++) {
                out[j] = ids[j];
            }
        }
    } else {
        out[0] = (int64_t)ids[0] | (int64_t)ids[1] << 16;
        out[1] = (int64_t)ids[2] | (int64_t)ids[3] << 16;
        out[2] = (int64_t)ids[4] | (int64_t)ids[5] << 16;
    }
    return f->nids;
}

/* The ids of a pre-token that is not in the newer slot of its set (front_hit): from the
 * older slot, else merged (and then put in the newer slot). Out of line, so that the loop
 * of the hits keeps its registers. */
#if defined(__GNUC__) || defined(__clang__)
__attribute__((noinline))
#endif
static Py_ssize_t
front_miss(Encoder *self, const unsigned char *s, Py_ssize_t n, uint64_t lo, uint64_t hi, FrontSlot *f, int64_t *out)
{
    if (front_hit(f + 1, lo, hi, n)) { /* the older of the two: it becomes the newer */
        FrontSlot hit = f[1];
        f[1] = f[0];
        f[0] = hit;
        return front_copy(self->narrow, f, out);
    }
    Py_ssize_t k = merge_word(self->table, s, n, out, self->scratch);
    if (k > 0 && k <= (self->narrow ? NARROW_IDS : WIDE_IDS)) { /* the newer slot now holds it */
        f[1] = f[0];
        f->lo = lo;
        f->hi = hi;
        f->len = (uint8_t)n;
        f->nids = (uint8_t)k;
        for (Py_ssize_t j = 0; j < k; j++) {
            if (self->narrow) {
                f->ids[j] = (uint16_t)out[j];
            } else {
                f->ids[2 * j] = (uint16_t)out[j];
                f->ids[2 * j + 1] = (uint16_t)(out[j] >> 16);
            }
        }
    }
    return k;
}

#endif /* BPE_ENCODER_H */
