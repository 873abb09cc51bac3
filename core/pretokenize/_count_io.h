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
#if defined(__unix__) || defined(__APPLE__)
#include <pthread.h>
#define BPE_THREADS 1
#endif

#define BPE_ADD_AHEAD 16

/* Ask for the slot of the e-th key (if any) and its ext: in first-seen order the slots come
 * at random, each a cache miss in a large table; ext is asked for whatever the key's length,
 * which the slot holds. */
static inline void bpe_ct_prefetch_nth(const BpeCounts *c, size_t e)
{
    if (e < c->n) {
        bpe_prefetch(&c->slots[c->order[e]]);
        bpe_prefetch(&c->ext[c->order[e]]);
    }
}

static size_t bpe_ct_packed_size(const BpeCounts *c)
{
    return 3 * 8 + c->n * 12 + c->key_bytes;
}

/* c's counts packed into p (bpe_ct_packed_size bytes). */
static void bpe_ct_pack(const BpeCounts *c, int64_t invalid, unsigned char *p)
{
    int64_t header[3] = {(int64_t)c->n, invalid, (int64_t)c->key_bytes};
    unsigned char buf[32], *counts = p + sizeof(header), *lens = counts + c->n * 8, *keys = lens + c->n * 4;
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
        if (e + BPE_ADD_AHEAD < n) {
            uint32_t ahead_len;
            memcpy(&ahead_len, lens + 4 * (e + BPE_ADD_AHEAD), 4);
            bpe_ct_prefetch_home(c, hashes[e + BPE_ADD_AHEAD], ahead_len);
        }
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

/* Other's slot h looked up in c, for a pass over other's slots in their order (which reads
 * c's in order too, a key's home in c being near its home in other): 0 when the slot is
 * empty; else 1, *to the slot of the same key in c or NULL. The bytes of the long key
 * BPE_ADD_AHEAD slots on are asked for. */
static inline int bpe_ct_find_nth_slot(const BpeCounts *c, const BpeCounts *other, size_t h, BpeSlot **to)
{
    if (h + BPE_ADD_AHEAD <= other->mask) {
        const BpeSlot *ahead = &other->slots[h + BPE_ADD_AHEAD];
        bpe_prefetch(other->keys + ((ahead->meta & 0xFF) > BPE_CT_MID ? bpe_ct_offset(ahead) : 0));
    }
    const BpeSlot *from = &other->slots[h];
    if (!from->meta)
        return 0;
    unsigned char buf[32];
    size_t len = from->meta & 0xFF;
    int found;
    const unsigned char *key = len > BPE_CT_MID ? bpe_ct_key(other, from, buf, &len) : NULL; /* (else its words) */
    BpeSlot *slot = bpe_ct_probe_at(c, key, len, from->meta, bpe_ct_home(other, from, c->mask), from->word,
                                    other->ext[h], 1, &found);
    *to = found ? slot : NULL;
    return 1;
}

/* Add other's counts to c, in other's first-seen order (other may be c: every count
 * doubles); -1: out of memory (the counts added so far stay).
 *
 * In two passes. First other's slots in their order, each key looked up in c, where it is
 * at the same home (give or take the two sizes' bits): both tables are read in order, and
 * a key found gets its count; one not found is marked. Then the marked keys are put in c
 * in other's first-seen order, c grown for all of them at once (their number is known).
 * Adding key by key in first-seen order made two cache misses of every key, where now
 * only the new ones are looked up at random. */
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
    enum { AHEAD = BPE_ADD_AHEAD };
    size_t size = other->mask + 1, fresh = 0;
    uint64_t *absent = (uint64_t *)calloc(size / 64 + 1, sizeof(uint64_t));
    if (!absent)
        return -1;
    unsigned char buf[32];
    for (size_t h = 0; h < size; h++) {
        BpeSlot *to;
        if (!bpe_ct_find_nth_slot(c, other, h, &to))
            continue;
        if (!to) {
            absent[h / 64] |= (uint64_t)1 << (h % 64);
            fresh++;
        } else if (bpe_ct_bump(c, to, bpe_ct_count(other, &other->slots[h])) < 0) {
            free(absent);
            return -1;
        }
    }
    while (c->limit < c->n + fresh)
        if (bpe_ct_grow(c) < 0) {
            free(absent);
            return -1;
        }
    uint64_t hashes[AHEAD];
    for (size_t e = 0; e < other->n + AHEAD; e++) {
        if (e >= AHEAD) { /* put key d, hashed AHEAD keys ago, if new */
            size_t d = e - AHEAD, o = other->order[d];
            if (absent[o / 64] >> (o % 64) & 1) {
                const BpeSlot *from = &other->slots[o];
                size_t len = from->meta & 0xFF;
                int64_t count = bpe_ct_count(other, from);
                uint64_t hash = hashes[d % AHEAD];
                int failed;
                if (len <= BPE_CT_MID) { /* (by its words) */
                    failed = bpe_ct_add_word(c, NULL, len, from->word, other->ext[o], hash, 1, count);
                } else { /* the key first: it sets len past 254 (not in the same call: C leaves the order of
                          * the arguments open) */
                    const unsigned char *key = bpe_ct_key(other, from, buf, &len);
                    failed = bpe_ct_add(c, key, len, hash, 1, count);
                }
                if (failed < 0) {
                    free(absent);
                    return -1;
                }
            }
        }
        if (e + AHEAD < other->n) { /* the slot of a new key AHEAD on */
            size_t o = other->order[e + AHEAD];
            if (absent[o / 64] >> (o % 64) & 1)
                bpe_ct_prefetch_nth(other, e + AHEAD);
        }
        if (e < other->n) { /* the home in c of new key e (its slot asked for AHEAD keys ago) */
            size_t o = other->order[e];
            if (absent[o / 64] >> (o % 64) & 1) {
                uint64_t hash = bpe_ct_rehash(other, &other->slots[o]);
                hashes[e % AHEAD] = hash;
                bpe_ct_prefetch_home(c, hash, other->slots[o].meta & 0xFF);
            }
        }
    }
    free(absent);
    return 0;
}

/* Each key's length and count, in first-seen order (c->n of each). */
static void bpe_ct_lengths_counts(const BpeCounts *c, int64_t *lengths, int64_t *counts)
{
    unsigned char buf[32];
    for (size_t e = 0; e < c->n; e++) {
        const BpeSlot *slot = bpe_ct_nth(c, e);
        size_t len = slot->meta & 0xFF;
        bpe_ct_prefetch_nth(c, e + BPE_ADD_AHEAD);
        if (len == BPE_CT_LONG) /* (255 bytes or more: the length is in the arena) */
            (void)bpe_ct_key(c, slot, buf, &len);
        lengths[e] = (int64_t)len;
        counts[e] = bpe_ct_count(c, slot);
    }
}

/* The e-th key of c in first-seen order, its bytes appended at *keys (16 bytes written
 * for a key of up to 16 when there is room for them before `end`), its length and count
 * (plus `more`) put in lengths[at], counts[at]. */
static inline void bpe_ct_column(const BpeCounts *c, size_t e, unsigned char **keys, const unsigned char *end,
                                 int64_t *lengths, int64_t *counts, size_t at, int64_t more)
{
    size_t o = c->order[e], len = c->slots[o].meta & 0xFF;
    if (len <= BPE_CT_MID && *keys + 16 <= end) { /* its two words (ext is 0 for a short key) */
        memcpy(*keys, &c->slots[o].word, 8);
        memcpy(*keys + 8, &c->ext[o], 8);
    } else {
        unsigned char buf[32];
        const unsigned char *key = bpe_ct_key(c, &c->slots[o], buf, &len);
        memcpy(*keys, key, len);
    }
    *keys += len;
    lengths[at] = (int64_t)len;
    counts[at] = bpe_ct_count(c, &c->slots[o]) + more;
}

/* A part of bpe_ct_columns, for one thread (see its two steps below). */
typedef struct BpeColumnsPart {
    const BpeCounts *c, *other;
    int64_t *more;             /* other's count of the key in each slot of c */
    uint64_t *absent;          /* other's slots whose key c lacks */
    size_t from, to;           /* finding: other's slots [from, to), multiples of 64 (each part
                                * its own words of absent); writing: c's keys [from, to) */
    size_t found;              /* finding: the keys marked in absent */
    unsigned char *keys, *end; /* where the columns go, and where this part's bytes must end */
    int64_t *lengths, *counts;
    size_t at;                 /* the place of the next key written (other's new keys) */
    struct BpeColumnsPart *fresh; /* writing: other's new keys, written after c's (or NULL) */
} BpeColumnsPart;

typedef void *(*BpeColumnsStep)(void *part);

/* Other's slots [from, to) looked up in c: the count of each key c has put in more, beside
 * its slot in c; the others marked in absent. */
static void *bpe_ct_columns_find(void *part)
{
    BpeColumnsPart *w = (BpeColumnsPart *)part;
    for (size_t h = w->from; h < w->to; h++) {
        BpeSlot *to;
        if (!bpe_ct_find_nth_slot(w->c, w->other, h, &to))
            continue;
        if (to)
            w->more[to - w->c->slots] = bpe_ct_count(w->other, &w->other->slots[h]);
        else {
            w->absent[h / 64] |= (uint64_t)1 << (h % 64);
            w->found++;
        }
    }
    return NULL;
}

/* The columns of other's keys marked in absent, in other's first-seen order, from place at
 * (the slot of each asked for BPE_ADD_AHEAD keys before, if it is marked). */
static void bpe_ct_columns_fresh(BpeColumnsPart *w)
{
    const BpeCounts *other = w->other;
    for (size_t e = 0; e < other->n; e++) {
        if (e + BPE_ADD_AHEAD < other->n) {
            size_t ahead = other->order[e + BPE_ADD_AHEAD];
            if (w->absent[ahead / 64] >> (ahead % 64) & 1)
                bpe_ct_prefetch_nth(other, e + BPE_ADD_AHEAD);
        }
        size_t o = other->order[e];
        if (w->absent[o / 64] >> (o % 64) & 1)
            bpe_ct_column(other, e, &w->keys, w->end, w->lengths, w->counts, w->at++, 0);
    }
}

/* The columns of c's keys [from, to) (each count plus more's, if any), then, if the part
 * has them, other's new keys. */
static void *bpe_ct_columns_write(void *part)
{
    BpeColumnsPart *w = (BpeColumnsPart *)part;
    const BpeCounts *c = w->c;
    for (size_t e = w->from; e < w->to; e++) {
        bpe_ct_prefetch_nth(c, e + BPE_ADD_AHEAD);
        if (w->more)
            bpe_prefetch(&w->more[c->order[e + BPE_ADD_AHEAD < c->n ? e + BPE_ADD_AHEAD : e]]);
        bpe_ct_column(c, e, &w->keys, w->end, w->lengths, w->counts, e, w->more ? w->more[c->order[e]] : 0);
    }
    if (w->fresh)
        bpe_ct_columns_fresh(w->fresh);
    return NULL;
}

/* Step a on part a and step b on part b at once, b in a thread of its own where threads
 * can be started (else after a). */
static void bpe_ct_columns_both(BpeColumnsStep step_a, BpeColumnsPart *a, BpeColumnsStep step_b, BpeColumnsPart *b)
{
#if defined(BPE_THREADS)
    pthread_t thread;
    int started = pthread_create(&thread, NULL, step_b, b) == 0;
    step_a(a);
    if (started) {
        pthread_join(thread, NULL);
        return;
    }
#else
    step_a(a);
#endif
    step_b(b);
}

/* The bytes of c's keys before its e-th (e a multiple of BPE_CT_MARK, or c->n). */
static size_t bpe_ct_bytes_before(const BpeCounts *c, size_t e)
{
    return e >= c->n ? c->key_bytes : c->marks[e / BPE_CT_MARK];
}

/* The columns of c's counts with other's added (other NULL: c's alone), neither table
 * changed: every key's bytes one after another into keys, its length and count into
 * lengths and counts, in the first-seen order of c then other (c's keys, then other's
 * that c lacks). keys (16 bytes more), lengths and counts have room for both tables'
 * keys; *n and *bytes are the keys and bytes written. -1: out of memory. Called without
 * the GIL, in two threads.
 *
 * What training reads of the sum of the last two tables counted, without making it: adding
 * other to c would grow c and put in every key it lacks, most of the add's time, in one
 * thread while the other core idles. Other's keys are looked up
 * first, in its slots' order (c's are read in order too), their counts put beside c's
 * slots, half the slots in each thread. Then the columns are written: c's keys [0, m) by
 * one thread, the rest and other's new keys after them by the other, m a multiple of
 * BPE_CT_MARK, where c's marks say how many bytes the keys before it take; m is chosen
 * for the two to take as long, a new key of other's costing about 4/5 of one of c's and
 * each of other's keys 1/20 for the look at absent (measured on web-like text). Splitting
 * by table instead (c's keys in one thread, other's new ones in the other) leaves the
 * threads unequal, the first with about three times the second's work. */
static int bpe_ct_columns(const BpeCounts *c, const BpeCounts *other, unsigned char *keys, int64_t *lengths,
                          int64_t *counts, size_t *n, size_t *bytes)
{
    BpeColumnsPart mine = {c, other, NULL, NULL, 0, 0, 0, keys, keys + c->key_bytes + 16, lengths, counts, 0, NULL};
    BpeColumnsPart theirs = mine, fresh = mine;
    size_t work = c->n, m;
    if (other) {
        size_t size = other->mask + 1; /* (a power of two of at least 1024) */
        mine.more = (int64_t *)calloc(c->mask + 1, sizeof(int64_t));
        mine.absent = (uint64_t *)calloc(size / 64, sizeof(uint64_t));
        if (!mine.more || !mine.absent) {
            free(mine.more);
            free(mine.absent);
            return -1;
        }
        theirs = mine;
        mine.to = theirs.from = size / 2;
        theirs.to = size;
        bpe_ct_columns_both(bpe_ct_columns_find, &mine, bpe_ct_columns_find, &theirs);
        work += (mine.found + theirs.found) / 5 * 4 + other->n / 20;
        fresh = mine;
        fresh.keys = keys + c->key_bytes;
        fresh.end = fresh.keys + other->key_bytes + 16;
        fresh.at = c->n;
        theirs.fresh = &fresh;
    }
    m = work / 2 < c->n ? work / 2 / BPE_CT_MARK * BPE_CT_MARK : c->n;
    mine.from = 0;
    mine.to = theirs.from = m;
    theirs.to = c->n;
    mine.end = theirs.keys = keys + bpe_ct_bytes_before(c, m); /* (none of the bytes after written) */
    theirs.end = keys + c->key_bytes + (other ? 0 : 16);
    if (other || c->n >= 4 * BPE_CT_MARK)
        bpe_ct_columns_both(bpe_ct_columns_write, &mine, bpe_ct_columns_write, &theirs);
    else { /* (too few for a thread) */
        mine.to = c->n;
        mine.end = keys + c->key_bytes + 16;
        bpe_ct_columns_write(&mine);
    }
    free(mine.more);
    free(mine.absent);
    *n = other ? fresh.at : c->n;
    *bytes = other ? (size_t)(fresh.keys - keys) : c->key_bytes;
    return 0;
}


/* -- Sorted by key bytes, for the counts file (core/corpus/bpc_file.py) ------------------------
 *
 * A table is written sorted without a copy of its keys: an array of its slot indices (4
 * bytes a key) is sorted by the keys' bytes, then walked once per section of the packed
 * layout (counts, lengths, keys), a block at a time. Two tables (a CountTable's first and
 * the sum of those after it) are each sorted and walked together, a key in both written
 * once with the sum of its counts: their sum is never made. */

/* The first 8 bytes of a key of at most 16 bytes as a number that orders as the bytes do. */
static inline uint64_t bpe_ct_order_word(uint64_t word)
{
#if defined(__GNUC__) || defined(__clang__)
    return __builtin_bswap64(word); /* (the word holds the first byte lowest, see BpeSlot) */
#else
    uint64_t w = 0;
    for (int b = 0; b < 8; b++)
        w = w << 8 | ((word >> (8 * b)) & 0xFF);
    return w;
#endif
}

/* <0, 0, >0 as the key of slot a of c sorts before, with or after the key of slot b of d
 * (bytes compared as unsigned, a key before any longer key it starts). */
static int bpe_ct_key_cmp(const BpeCounts *c, uint32_t a, const BpeCounts *d, uint32_t b)
{
    const BpeSlot *sa = &c->slots[a], *sb = &d->slots[b];
    size_t la = sa->meta & 0xFF, lb = sb->meta & 0xFF;
    if (la <= BPE_CT_MID && lb <= BPE_CT_MID) { /* both in their words (zero after the key) */
        uint64_t wa = bpe_ct_order_word(sa->word), wb = bpe_ct_order_word(sb->word);
        if (wa == wb && (la > 8 || lb > 8)) {
            wa = bpe_ct_order_word(c->ext[a]);
            wb = bpe_ct_order_word(d->ext[b]);
        }
        if (wa != wb)
            return wa < wb ? -1 : 1;
        return (la > lb) - (la < lb);
    }
    unsigned char ba[32], bb[32];
    size_t na, nb;
    const unsigned char *ka = bpe_ct_key(c, sa, ba, &na), *kb = bpe_ct_key(d, sb, bb, &nb);
    int r = memcmp(ka, kb, na < nb ? na : nb);
    return r ? r : (na > nb) - (na < nb);
}

/* Ask for the slot of index v and its ext (each key's place is random: the sort and the
 * walks ask for those they will compare BPE_SORT_AHEAD places on, so that the misses overlap). */
#define BPE_SORT_AHEAD 24
static inline void bpe_ct_prefetch_slot(const BpeCounts *c, uint32_t v)
{
    bpe_prefetch(&c->slots[v]);
    bpe_prefetch(&c->ext[v]);
}

static void bpe_ct_sift(const BpeCounts *c, uint32_t *v, size_t root, size_t n)
{
    for (;;) {
        size_t child = 2 * root + 1;
        if (child >= n)
            return;
        if (child + 1 < n && bpe_ct_key_cmp(c, v[child], c, v[child + 1]) < 0)
            child++;
        if (bpe_ct_key_cmp(c, v[root], c, v[child]) >= 0)
            return;
        uint32_t t = v[root];
        v[root] = v[child];
        v[child] = t;
        root = child;
    }
}

/* Sort slot indices v[0:n] of c by their keys: quicksort (median of three, the smaller side
 * first), heapsort past a depth that only a hostile order reaches, insertion sort below 16. */
static void bpe_ct_sort(const BpeCounts *c, uint32_t *v, size_t n, int depth)
{
    while (n > 16) {
        if (depth-- == 0) {
            for (size_t i = n / 2; i-- > 0;)
                bpe_ct_sift(c, v, i, n);
            for (size_t end = n - 1; end > 0; end--) {
                uint32_t t = v[0];
                v[0] = v[end];
                v[end] = t;
                bpe_ct_sift(c, v, 0, end);
            }
            return;
        }
        size_t mid = n / 2;
        uint32_t a = v[0], b = v[mid], z = v[n - 1], pivot;
        if (bpe_ct_key_cmp(c, a, c, b) < 0)
            pivot = bpe_ct_key_cmp(c, b, c, z) < 0 ? b : bpe_ct_key_cmp(c, a, c, z) < 0 ? z : a;
        else
            pivot = bpe_ct_key_cmp(c, a, c, z) < 0 ? a : bpe_ct_key_cmp(c, b, c, z) < 0 ? z : b;
        size_t i = 0, j = n - 1;
        for (;;) { /* Hoare's partition: [0, j] <= pivot <= [j + 1, n) */
            while (bpe_ct_prefetch_slot(c, v[i + BPE_SORT_AHEAD < n ? i + BPE_SORT_AHEAD : n - 1]),
                   bpe_ct_key_cmp(c, v[i], c, pivot) < 0)
                i++;
            while (bpe_ct_prefetch_slot(c, v[j >= BPE_SORT_AHEAD ? j - BPE_SORT_AHEAD : 0]),
                   bpe_ct_key_cmp(c, v[j], c, pivot) > 0)
                j--;
            if (i >= j)
                break;
            uint32_t t = v[i];
            v[i] = v[j];
            v[j] = t;
            i++;
            j--;
        }
        size_t left = j + 1;
        if (left < n - left) {
            bpe_ct_sort(c, v, left, depth);
            v += left;
            n -= left;
        } else {
            bpe_ct_sort(c, v + left, n - left, depth);
            n = left;
        }
    }
    for (size_t i = 1; i < n; i++) {
        uint32_t t = v[i];
        size_t j = i;
        for (; j > 0 && bpe_ct_key_cmp(c, v[j - 1], c, t) > 0; j--)
            v[j] = v[j - 1];
        v[j] = t;
    }
}

/* c's slot indices sorted by key into v (c->n of them). */
static void bpe_ct_sorted_slots(const BpeCounts *c, uint32_t *v)
{
    int depth = 2;
    memcpy(v, c->order, c->n * sizeof(uint32_t));
    for (size_t k = c->n; k > 1; k >>= 1)
        depth += 2;
    bpe_ct_sort(c, v, c->n, depth);
}

/* One walk over two sorted tables (b may have none), a key in both met once. */
typedef struct {
    const BpeCounts *a, *b;
    const uint32_t *va, *vb; /* sorted slot indices */
    size_t i, j;
} BpeSortedWalk;

/* The next key of the walk: its table and slot, and its count (the sum where both have
 * it); 0 at the end. */
static inline int bpe_ct_walk_next(BpeSortedWalk *w, const BpeCounts **c, const BpeSlot **slot, int64_t *count)
{
    size_t na = w->a->n, nb = w->b ? w->b->n : 0;
    if (w->i + BPE_SORT_AHEAD < na)
        bpe_ct_prefetch_slot(w->a, w->va[w->i + BPE_SORT_AHEAD]);
    if (w->j + BPE_SORT_AHEAD < nb)
        bpe_ct_prefetch_slot(w->b, w->vb[w->j + BPE_SORT_AHEAD]);
    int r = w->i >= na ? 1 : w->j >= nb ? -1 : bpe_ct_key_cmp(w->a, w->va[w->i], w->b, w->vb[w->j]);
    if (w->i >= na && w->j >= nb)
        return 0;
    if (r <= 0) {
        *c = w->a;
        *slot = &w->a->slots[w->va[w->i++]];
        *count = bpe_ct_count(w->a, *slot);
        if (r == 0) {
            const BpeSlot *other = &w->b->slots[w->vb[w->j++]];
            *count += bpe_ct_count(w->b, other);
        }
    } else {
        *c = w->b;
        *slot = &w->b->slots[w->vb[w->j++]];
        *count = bpe_ct_count(w->b, *slot);
    }
    return 1;
}

/* The keys and key bytes of the sum of the walk's tables. */
static void bpe_ct_walk_size(BpeSortedWalk w, size_t *n, size_t *bytes)
{
    const BpeCounts *c;
    const BpeSlot *slot;
    int64_t count;
    unsigned char buf[32];
    *n = *bytes = 0;
    while (bpe_ct_walk_next(&w, &c, &slot, &count)) {
        size_t len;
        (void)bpe_ct_key(c, slot, buf, &len);
        ++*n;
        *bytes += len;
    }
}

/* A walk written out as one section of the packed layout (0: the counts, int64; 1: the key
 * lengths, uint32; 2: the keys), little-endian, a block at a time. */
typedef struct {
    BpeSortedWalk walk;
    int section;
    int has;                 /* a key taken from the walk and not all written yet: */
    const BpeCounts *c;
    const BpeSlot *slot;
    int64_t count;
    size_t partial;          /* of its bytes, those written (a key longer than a block) */
} BpeSortedWriter;

/* The next bytes of the section into out (`room` bytes, a multiple of 8): how many, 0 at the end. */
static size_t bpe_ct_writer_fill(BpeSortedWriter *w, unsigned char *out, size_t room)
{
    size_t used = 0;
    unsigned char buf[32];
    while (used < room) {
        if (!w->has) {
            if (!bpe_ct_walk_next(&w->walk, &w->c, &w->slot, &w->count))
                break;
            w->has = 1;
            w->partial = 0;
        }
        size_t len;
        const unsigned char *key = bpe_ct_key(w->c, w->slot, buf, &len);
        if (w->section == 2) {
            size_t take = len - w->partial < room - used ? len - w->partial : room - used;
            memcpy(out + used, key + w->partial, take);
            used += take;
            w->partial += take;
            w->has = w->partial < len;
            continue;
        }
        size_t size = w->section == 0 ? 8 : 4;
        if (room - used < size)
            break;
        uint64_t v = w->section == 0 ? (uint64_t)w->count : (uint64_t)len;
        for (size_t b = 0; b < size; b++)
            out[used + b] = (unsigned char)(v >> (8 * b));
        used += size;
        w->has = 0;
    }
    return used;
}

/* (the sum of the counts, the sum of each key's length times its count), each saturated at
 * UINT64_MAX: what the counts file and training can hold is checked against them. */
static void bpe_ct_totals(const BpeCounts *c, uint64_t *total, uint64_t *corpus_bytes)
{
    unsigned char buf[32];
    *total = *corpus_bytes = 0;
    for (size_t h = 0; h <= c->mask; h++) { /* (the slots in order: no cache miss to wait for) */
        const BpeSlot *s = &c->slots[h];
        if (!s->meta)
            continue;
        size_t len = s->meta & 0xFF;
        if (len == BPE_CT_LONG)
            (void)bpe_ct_key(c, s, buf, &len);
        int64_t count = bpe_ct_count(c, s);
        uint64_t n = count < 0 ? 0 : (uint64_t)count;
        *total = n > UINT64_MAX - *total ? UINT64_MAX : *total + n;
        uint64_t bytes = len && n > UINT64_MAX / len ? UINT64_MAX : n * len;
        *corpus_bytes = bytes > UINT64_MAX - *corpus_bytes ? UINT64_MAX : *corpus_bytes + bytes;
    }
}

#endif
