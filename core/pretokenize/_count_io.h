/* Count tables (_count_table.h) packed into bytes, added up and read out in first-seen order:
 * the C side of `Counts.packed`, `add_packed`, `add`, `keys` and `arrays` (_native.c).
 *
 * The packed layout (the same as core.pretokenize.counting.pack_counts makes): int64 n,
 * int64 invalid bytes, int64 bytes of keys, int64 x n counts, uint32 x n key lengths, the
 * keys one after another; this machine's byte order. Adding looks keys up out of order in
 * a table that may be far larger than the caches: the key BPE_ADD_AHEAD further on is
 * hashed first and its slot prefetched, so that the adds' cache misses overlap.
 */
#ifndef BPE_COUNT_IO_H
#define BPE_COUNT_IO_H

#include "_count_table.h"

#define BPE_ADD_AHEAD 16

/* Ask for the slot of the e-th key (if any): in first-seen order the slots come at random,
 * each a cache miss in a large table (adding 700 K keys of web text this way: 0.10 -> 0.07 s). */
static inline void bpe_ct_prefetch_nth(const BpeCounts *c, size_t e)
{
    if (e < c->n)
        bpe_prefetch(bpe_ct_nth(c, e));
}

static size_t bpe_ct_packed_size(const BpeCounts *c)
{
    return 3 * 8 + c->n * 12 + c->key_bytes;
}

/* c's counts packed into p (bpe_ct_packed_size bytes). */
static void bpe_ct_pack(const BpeCounts *c, int64_t invalid, unsigned char *p)
{
    int64_t header[3] = {(int64_t)c->n, invalid, (int64_t)c->key_bytes};
    unsigned char buf[24], *counts = p + sizeof(header), *lens = counts + c->n * 8, *keys = lens + c->n * 4;
    memcpy(p, header, sizeof(header));
    for (size_t e = 0; e < c->n; e++) {
        bpe_ct_prefetch_nth(c, e + BPE_ADD_AHEAD);
        int64_t count = bpe_ct_count(c, bpe_ct_nth(c, e));
        size_t len;
        const unsigned char *key = bpe_ct_key(c, bpe_ct_nth(c, e), buf, &len);
        uint32_t len32 = (uint32_t)len;
        memcpy(counts + 8 * e, &count, 8);
        memcpy(lens + 4 * e, &len32, 4);
        memcpy(keys, key, len);
        keys += len;
    }
}

/* Add the packed counts p[0:size] to c (and their invalid bytes to *invalid): 0; -1 out of
 * memory (some added); -2 not packed counts (every key length is checked before any is added). */
static int bpe_ct_add_packed(BpeCounts *c, const unsigned char *p, size_t size, int64_t *invalid)
{
    int64_t header[3];
    if (size < 24)
        return -2;
    memcpy(header, p, sizeof(header));
    if (header[0] < 0 || header[2] < 0 || (uint64_t)size != 24 + (uint64_t)header[0] * 12 + (uint64_t)header[2])
        return -2;
    size_t n = (size_t)header[0];
    const unsigned char *counts = p + 24, *lens = counts + n * 8, *keys = lens + n * 4;
    const unsigned char *keys_end = keys + header[2], *key = keys;
    uint64_t *hashes = (uint64_t *)malloc((n + 1) * sizeof(uint64_t));
    if (!hashes)
        return -1;
    for (size_t e = 0; e < n; e++) { /* the hashes first: a pass over the keys in order */
        uint32_t len;
        memcpy(&len, lens + 4 * e, 4);
        if (len > (size_t)(keys_end - key)) {
            free(hashes);
            return -2;
        }
        hashes[e] = bpe_ct_hash(key, len, (size_t)(keys_end - key) >= (size_t)len + BPE_KEY_SLACK);
        key += len;
    }
    while (c->limit < c->n + n && bpe_ct_grow(c) == 0)
        ; /* room for all at once: no growing half-way */
    key = keys;
    for (size_t e = 0; e < n; e++) {
        int64_t count;
        uint32_t len;
        memcpy(&count, counts + 8 * e, 8);
        memcpy(&len, lens + 4 * e, 4);
        if (e + BPE_ADD_AHEAD < n)
            bpe_prefetch(&c->slots[(size_t)hashes[e + BPE_ADD_AHEAD] & c->mask]);
        if (bpe_ct_add(c, key, len, hashes[e], (size_t)(keys_end - key) >= (size_t)len + BPE_KEY_SLACK, count) < 0) {
            free(hashes);
            return -1;
        }
        key += len;
    }
    free(hashes);
    *invalid += header[1];
    return 0;
}

/* Add other's counts to c, in other's first-seen order (other may be c: every count
 * doubles); -1: out of memory (the counts added so far stay). The table grows as new keys
 * come: most keys of another part of a corpus are not new (growing it for all of them at
 * once made adding two halves of 11 MB of text 2-3x slower). */
static int bpe_ct_add_table(BpeCounts *c, const BpeCounts *other)
{
    if (other == c) { /* adding key by key would see its own adds */
        for (size_t e = 0; e < c->n; e++) {
            BpeSlot *slot = &c->slots[c->order[e]];
            if (bpe_ct_bump(c, slot, bpe_ct_count(c, slot)) < 0)
                return -1;
        }
        return 0;
    }
    uint64_t hashes[BPE_ADD_AHEAD];
    unsigned char buf[24];
    for (size_t e = 0; e < other->n + BPE_ADD_AHEAD; e++) {
        if (e >= BPE_ADD_AHEAD / 2 && e - BPE_ADD_AHEAD / 2 < other->n) {
            /* the key half-way: if long, its bytes in c's arena, to compare (its slot has come) */
            size_t h = e - BPE_ADD_AHEAD / 2;
            const BpeSlot *from = bpe_ct_nth(other, h);
            const BpeSlot *to = &c->slots[(size_t)hashes[h % BPE_ADD_AHEAD] & c->mask];
            if ((from->meta & 0xFF) > 8 && to->meta == from->meta)
                bpe_prefetch(c->keys + bpe_ct_offset(to));
        }
        if (e >= BPE_ADD_AHEAD) { /* add key d, hashed BPE_ADD_AHEAD keys ago */
            size_t d = e - BPE_ADD_AHEAD, len;
            const BpeSlot *from = bpe_ct_nth(other, d);
            const unsigned char *key = bpe_ct_key(other, from, buf, &len);
            if (bpe_ct_add(c, key, len, hashes[d % BPE_ADD_AHEAD], 1, bpe_ct_count(other, from)) < 0)
                return -1;
        }
        bpe_ct_prefetch_nth(other, e + BPE_ADD_AHEAD);
        if (e < other->n) {
            uint64_t hash = bpe_ct_rehash(other, bpe_ct_nth(other, e));
            hashes[e % BPE_ADD_AHEAD] = hash;
            bpe_prefetch(&c->slots[(size_t)hash & c->mask]);
        }
    }
    return 0;
}

/* Every key's bytes one after another, in first-seen order, into p (c->key_bytes bytes). */
static void bpe_ct_keys(const BpeCounts *c, unsigned char *p)
{
    unsigned char buf[24];
    for (size_t e = 0; e < c->n; e++) {
        size_t len;
        bpe_ct_prefetch_nth(c, e + BPE_ADD_AHEAD);
        const unsigned char *key = bpe_ct_key(c, bpe_ct_nth(c, e), buf, &len);
        memcpy(p, key, len);
        p += len;
    }
}

/* Each key's length and count, in first-seen order (c->n of each). */
static void bpe_ct_lengths_counts(const BpeCounts *c, int64_t *lengths, int64_t *counts)
{
    unsigned char buf[24];
    for (size_t e = 0; e < c->n; e++) {
        size_t len;
        bpe_ct_prefetch_nth(c, e + BPE_ADD_AHEAD);
        (void)bpe_ct_key(c, bpe_ct_nth(c, e), buf, &len);
        lengths[e] = (int64_t)len;
        counts[e] = bpe_ct_count(c, bpe_ct_nth(c, e));
    }
}

#endif
