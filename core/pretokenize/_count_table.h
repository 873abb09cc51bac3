/* The count table of the counting pass: pre-token bytes -> occurrences, in first-seen order,
 * and the loop that scans a text into it (core/pretokenize/_native.c's `Counts`).
 *
 * Laid out for the cache, since on a large corpus almost all of counting's time went in
 * waiting for memory: a 1 GB web-like corpus has 3.8 M distinct pre-tokens, far more than
 * the caches hold, and each rare one looked up was a slot, an entry and a key in three
 * places (three cache misses in a row). Here a slot is the entry: 16 bytes, four to a
 * cache line, holding the key itself when it has at most 8 bytes (94% of the pre-tokens
 * of a text, 38% of the distinct ones) and its count. A key of 9 to 16 bytes (5% of the
 * pre-tokens, half the distinct ones) keeps its first 8 in the slot and the others in
 * `ext`, an array beside the slots (8 bytes a slot), where both can be fetched at once;
 * a longer key is in an arena, found through the slot and compared only when the slot's
 * hash tag matches. Open addressing with linear probing, at most 3/4 full. First-seen
 * order (which training keeps, so that any number of workers gives the same merges) is
 * an array of slot indices.
 *
 * Per distinct pre-token: 24 bytes / load of a slot and its ext (32-64), 4 of order, and a
 * long key's bytes: about 50 bytes, against 60-75 for the map of _scanner.h (a 32-byte
 * entry, an 8-byte slot / load, every key in the arena). Keys of 9 to 16 bytes are not in
 * the arena: each of their lookups there was a cache miss the prefetching did not hide (the
 * arena's place is read from the slot).
 *
 * Counts are 31 bits in the slot; a count that outgrows them moves to `big` (int64), the
 * slot keeping its index there (BPE_CT_BIG set): exact at any size, and no slot pays for
 * the rare count past two billion.
 */
#ifndef BPE_COUNT_TABLE_H
#define BPE_COUNT_TABLE_H

#include "_ascii_cut.h"
#include "_byte_map.h"

typedef struct {
    uint64_t word;  /* a key of <= 8 bytes: its bytes, the first lowest, zero above; of 9
                     * to 16: its first 8 (the others in ext, the same way);
                     * a longer one: its offset in the arena (for 255 bytes or more, the
                     * offset of its uint64 length, which the key follows), and above it
                     * the low BPE_CT_HOME_BITS bits of its hash (see bpe_ct_grow) */
    uint32_t count; /* occurrences, or BPE_CT_BIG | the index of the count in `big` */
    uint32_t meta;  /* 0: empty; else BPE_CT_USED | the hash's top 23 bits << 9 | min(len, 255) */
} BpeSlot;

/* Inlined whatever the number of callers: the counting loops specialize bpe_ct_add_word
 * for short keys, and with a third caller (adding tables) gcc made it, then bpe_count_add,
 * a call, which costs counting many instructions. */
#if defined(__GNUC__) || defined(__clang__)
#define BPE_CT_INLINE static inline __attribute__((always_inline))
#else
#define BPE_CT_INLINE static inline
#endif

#define BPE_CT_BIG 0x80000000u
#define BPE_CT_USED 0x100u
#define BPE_CT_LONG 255u /* the length field of a key of 255 bytes or more */
#define BPE_CT_MID 16 /* a key of at most this many bytes is in its slot's word and ext */
#define BPE_CT_OFFSET_BITS 40 /* a long key's offset in the arena: a terabyte of keys */
#define BPE_CT_HOME_BITS (64 - BPE_CT_OFFSET_BITS)
#define BPE_CT_MARK 4096 /* keys from one of BpeCounts's marks to the next */

typedef struct {
    BpeSlot *slots;
    uint64_t *ext;           /* bytes 8-15 of the key of 9 to 16 bytes in slots[h], in ext[h];
                              * 0 for any other key (never written, moved when growing) */
    size_t mask, limit;      /* slots - 1; the number of keys that makes the table grow */
    size_t slots_cap, ext_cap; /* the slots and ext allocated (more than mask + 1 when growing failed half-way) */
    uint32_t *order;         /* the slot of each key, in first-seen order */
    size_t n, order_cap;
    unsigned char *keys;     /* the arena of the keys longer than 16 bytes (BPE_KEY_SLACK more readable) */
    size_t keys_len, keys_cap;
    size_t key_bytes;        /* the bytes of all keys, short and long */
    size_t *marks;           /* marks[k]: key_bytes before the (k * BPE_CT_MARK)-th key (where
                              * a thread writing the keys from there starts, see bpe_ct_columns) */
    size_t marks_cap;
    int64_t *big;            /* counts past 31 bits */
    size_t nbig, big_cap;
} BpeCounts;

/* Slots of a table this large or larger come in 2 MB pages where the system gives them.
 * Every count looks up a slot at random: over 4 KB pages, each lookup in a table past the
 * caches (128 MB for a 1 GB web-like corpus) was a TLB miss as well, its prefetch waiting
 * on a page walk. */
#define BPE_CT_HUGE ((size_t)4 << 20)

/* `bytes` of zeroed slots (a multiple of 2 MB from BPE_CT_HUGE on), written once per 4 KB
 * page (see bpe_calloc_written); NULL when out of memory. bpe_ct_free_slot_bytes frees them. */
static void *bpe_ct_alloc_slot_bytes(size_t bytes)
{
#if defined(BPE_HUGE_MAP)
    if (bytes >= BPE_CT_HUGE) {
        unsigned char *p = (unsigned char *)bpe_huge_map(bytes);
        if (p != NULL)
            for (size_t i = 0; i < bytes; i += 4096)
                ((volatile unsigned char *)p)[i] = 0;
        return p;
    }
#endif
    return bpe_calloc_written(bytes, 1);
}

static void bpe_ct_free_slot_bytes(void *p, size_t bytes)
{
#if defined(BPE_HUGE_MAP)
    if (p && bytes >= BPE_CT_HUGE) {
        bpe_huge_unmap(p, bytes);
        return;
    }
#endif
    free(p);
}

static inline uint32_t bpe_ct_meta(uint64_t hash, size_t n)
{
    return (uint32_t)(hash >> 41) << 9 | BPE_CT_USED | (uint32_t)(n < BPE_CT_LONG ? n : BPE_CT_LONG);
}

/* A key's bytes from its words, in buf (32 bytes, zero after the key: readable padded). */
static inline const unsigned char *bpe_ct_word_bytes(uint64_t word, uint64_t ext, unsigned char *buf)
{
    for (int b = 0; b < 8; b++) {
        buf[b] = (unsigned char)(word >> (8 * b));
        buf[8 + b] = (unsigned char)(ext >> (8 * b));
    }
    memset(buf + 16, 0, 16);
    return buf;
}

/* The table's hash of a key of n <= 16 bytes, from its words (bpe_tail_words's): two
 * 64 x 64 -> 128-bit products, each folded (its high half depends on every bit of its
 * word) and neither waiting for the other, where bpe_hash_key's mixing took a dozen
 * operations; the slot is the hash's low bits, the tag in the meta its top. Keys of 1-16
 * bytes are 99% of a text's pre-tokens. The length is left out (keys that differ only in
 * trailing zero bytes share a home, and the meta, which holds the length, parts them):
 * two instructions fewer on every pre-token counted. */
static inline uint64_t bpe_ct_hash_words(uint64_t word, uint64_t ext, size_t n)
{
#if defined(__SIZEOF_INT128__)
    (void)n;
    __uint128_t first = (__uint128_t)(word ^ 0xC2B2AE3D27D4EB4Full) * 0x9E3779B97F4A7C15ull;
    __uint128_t second = (__uint128_t)(ext ^ 0x165667B19E3779F9ull) * 0xD6E8FEB86659FD93ull;
    return ((uint64_t)first ^ (uint64_t)(first >> 64)) + ((uint64_t)second ^ (uint64_t)(second >> 64));
#else
    unsigned char bytes[32];
    return bpe_hash_key(bpe_ct_word_bytes(word, ext, bytes), n, 1);
#endif
}

/* The table's hash of key p[0:n] (`padded` as for bpe_hash_key): bpe_ct_hash_words's for a
 * key of at most 16 bytes, bpe_hash_key's for a longer one. */
static inline uint64_t bpe_ct_hash(const unsigned char *p, size_t n, int padded)
{
    if (n > BPE_CT_MID)
        return bpe_hash_key(p, n, padded);
    uint64_t word, ext;
    bpe_tail_words(p, n, padded, &word, &ext);
    return bpe_ct_hash_words(word, ext, n);
}

/* Where the key of slot s (longer than 16 bytes) is in the arena. */
static inline size_t bpe_ct_offset(const BpeSlot *s)
{
    return (size_t)(s->word & (((uint64_t)1 << BPE_CT_OFFSET_BITS) - 1));
}

/* The length and bytes of the key in slot s (one of at most 16 bytes written into buf, 32 bytes). */
static inline const unsigned char *bpe_ct_key(const BpeCounts *c, const BpeSlot *s, unsigned char *buf, size_t *len)
{
    size_t n = s->meta & 0xFF;
    if (n <= BPE_CT_MID) {
        *len = n;
        return bpe_ct_word_bytes(s->word, c->ext[s - c->slots], buf); /* (0 for a short key) */
    }
    if (n < BPE_CT_LONG) {
        *len = n;
        return c->keys + bpe_ct_offset(s);
    }
    uint64_t long_len;
    memcpy(&long_len, c->keys + bpe_ct_offset(s), 8);
    *len = (size_t)long_len;
    return c->keys + bpe_ct_offset(s) + 8;
}

/* The slot of the e-th key in first-seen order. */
static inline const BpeSlot *bpe_ct_nth(const BpeCounts *c, size_t e)
{
    return &c->slots[c->order[e]];
}

static inline int64_t bpe_ct_count(const BpeCounts *c, const BpeSlot *s)
{
    return s->count & BPE_CT_BIG ? c->big[s->count & ~BPE_CT_BIG] : (int64_t)s->count;
}

/* The slots and ext of a table of `size` slots (bpe_ct_alloc_slot_bytes); -1: out of memory
 * (both NULL). */
static int bpe_ct_alloc_slots(BpeSlot **slots, uint64_t **ext, size_t size)
{
    *slots = (BpeSlot *)bpe_ct_alloc_slot_bytes(size * sizeof(BpeSlot));
    *ext = (uint64_t *)bpe_ct_alloc_slot_bytes(size * sizeof(uint64_t));
    if (*slots && *ext)
        return 0;
    if (*slots)
        bpe_ct_free_slot_bytes(*slots, size * sizeof(BpeSlot));
    if (*ext)
        bpe_ct_free_slot_bytes(*ext, size * sizeof(uint64_t));
    *slots = NULL;
    *ext = NULL;
    return -1;
}

/* Free c's slots and ext. */
static void bpe_ct_free_slots(BpeCounts *c)
{
    if (c->slots)
        bpe_ct_free_slot_bytes(c->slots, c->slots_cap * sizeof(BpeSlot));
    if (c->ext)
        bpe_ct_free_slot_bytes(c->ext, c->ext_cap * sizeof(uint64_t));
}

/* The `bytes` at p (bpe_ct_alloc_slot_bytes's) made `bigger` bytes, the first `bytes` kept
 * and the others zeroed (p freed); NULL when out of memory (p kept). A table's slots in 2 MB
 * pages are moved into the larger map by the page tables (mremap), not copied: only the
 * new half is paged in (written once per 4 KB page, as bpe_ct_alloc_slot_bytes does). */
static void *bpe_ct_extend_slot_bytes(void *p, size_t bytes, size_t bigger)
{
#if defined(BPE_HUGE_MAP) && defined(MREMAP_FIXED)
    if (bytes >= BPE_CT_HUGE) { /* (a multiple of 2 MB on a 2 MB boundary, as is the new map) */
        unsigned char *q = (unsigned char *)bpe_huge_map(bigger);
        if (q == NULL)
            return NULL;
        if (mremap(p, bytes, bytes, MREMAP_MAYMOVE | MREMAP_FIXED, q) == MAP_FAILED) {
            bpe_huge_unmap(q, bigger);
            return NULL;
        }
        for (size_t i = bytes; i < bigger; i += 4096)
            ((volatile unsigned char *)q)[i] = 0;
        return q;
    }
#endif
    unsigned char *q = (unsigned char *)bpe_ct_alloc_slot_bytes(bigger);
    if (q == NULL)
        return NULL;
    memcpy(q, p, bytes);
    bpe_ct_free_slot_bytes(p, bytes);
    return q;
}

static int bpe_ct_init(BpeCounts *c, size_t slots)
{
    memset(c, 0, sizeof(*c));
    size_t s = 1024;
    while (s < slots)
        s <<= 1;
    c->keys_cap = 1 << 16;
    c->keys = (unsigned char *)malloc(c->keys_cap + BPE_KEY_SLACK);
    c->order_cap = 1024;
    c->order = (uint32_t *)malloc(c->order_cap * sizeof(uint32_t));
    if (!c->keys || !c->order || bpe_ct_alloc_slots(&c->slots, &c->ext, s) < 0) {
        free(c->keys);
        free(c->order);
        memset(c, 0, sizeof(*c));
        return -1;
    }
    c->mask = s - 1;
    c->limit = s / 4 * 3;
    c->slots_cap = c->ext_cap = s;
    return 0;
}

static void bpe_ct_free(BpeCounts *c)
{
    bpe_ct_free_slots(c);
    free(c->order);
    free(c->keys);
    free(c->big);
    free(c->marks);
    memset(c, 0, sizeof(*c));
}

/* The hash of the key of slot s (its ext `ext`), as bpe_ct_hash gave it when the key came. */
static inline uint64_t bpe_ct_rehash_ext(const BpeCounts *c, const BpeSlot *s, uint64_t ext)
{
    size_t len = s->meta & 0xFF;
    if (len <= BPE_CT_MID) /* (ext whatever the length: 0 for a short key) */
        return bpe_ct_hash_words(s->word, ext, len);
    unsigned char buf[32];
    const unsigned char *key = bpe_ct_key(c, s, buf, &len);
    return bpe_hash_key(key, len, 1); /* the arena has BPE_KEY_SLACK bytes after its end */
}

/* The hash of the key in slot s of c. */
static inline uint64_t bpe_ct_rehash(const BpeCounts *c, const BpeSlot *s)
{
    return bpe_ct_rehash_ext(c, s, c->ext[s - c->slots]);
}

/* Where the key of slot s (its ext `ext`) goes in a table of mask + 1 slots: its hash's
 * low bits, which a long key's slot keeps (see BpeSlot) for a table of up to
 * 2^BPE_CT_HOME_BITS slots. */
static inline size_t bpe_ct_home_ext(const BpeCounts *c, const BpeSlot *s, uint64_t ext, size_t mask)
{
    if ((s->meta & 0xFF) > BPE_CT_MID && mask >> BPE_CT_HOME_BITS == 0)
        return (size_t)(s->word >> BPE_CT_OFFSET_BITS) & mask;
    return (size_t)bpe_ct_rehash_ext(c, s, ext) & mask;
}

/* bpe_ct_home_ext for the key in slot s of c. */
static inline size_t bpe_ct_home(const BpeCounts *c, const BpeSlot *s, size_t mask)
{
    return bpe_ct_home_ext(c, s, c->ext[s - c->slots], mask);
}

/* Room for `more` bytes in a growing array (doubling); -1 when out of memory. */
static int bpe_ct_reserve(void **p, size_t *cap, size_t len, size_t more, size_t item, size_t slack)
{
    if (len + more <= *cap)
        return 0;
    size_t cap2 = *cap ? *cap * 2 : 16;
    while (cap2 < len + more)
        cap2 *= 2;
    void *q = realloc(*p, cap2 * item + slack);
    if (!q)
        return -1;
    *p = q;
    *cap = cap2;
    return 0;
}

/* Twice the slots, grown where they are: the slots and ext are made twice as long (the new
 * half zeroed) and the keys rehashed in place. A key's home in the larger table is its old
 * home h or h plus the old size. The old slots are walked from the one after an empty one
 * (each run of full slots from its start), each key taken out and put at the first empty
 * slot from its new home, which is at or before its old place (the slots between were
 * walked already) or in the new half (which holds walked keys only); a search passing the
 * last slot goes on at slot 0 only for the keys walked after slot 0 (a key walked before
 * would need more walked keys than there are: its search ends in the new half), so it
 * meets walked slots only. Every key is then found from its home, with no slot emptied
 * after it was passed. The order's slot indices are moved after, through the new place
 * of each old slot (4 bytes a slot).
 *
 * Growing by copying into a new table of twice the size paged in and zeroed all of it and
 * held three times the old size at once: in place, the old half stays where it was (moved
 * by the page tables for slots in 2 MB pages), so counting peaks lower and adding many new
 * keys is faster. (Taking the keys in first-seen order would make each a cache miss twice
 * over.) */
static int bpe_ct_grow(BpeCounts *c)
{
    enum { AHEAD = 16 };
    size_t old_size = c->mask + 1, size = old_size * 2;
    if (size > ((size_t)1 << 32))
        return -1; /* order holds 32-bit slot indices */
    uint32_t *moved = (uint32_t *)malloc(old_size * sizeof(uint32_t));
    if (!moved)
        return -1;
    if (c->slots_cap < size) {
        BpeSlot *slots = (BpeSlot *)bpe_ct_extend_slot_bytes(c->slots, c->slots_cap * sizeof(BpeSlot),
                                                             size * sizeof(BpeSlot));
        if (!slots) {
            free(moved);
            return -1;
        }
        c->slots = slots;
        c->slots_cap = size;
    }
    if (c->ext_cap < size) {
        uint64_t *ext = (uint64_t *)bpe_ct_extend_slot_bytes(c->ext, c->ext_cap * sizeof(uint64_t),
                                                            size * sizeof(uint64_t));
        if (!ext) { /* (the table stays as it was, with more slots than it uses) */
            free(moved);
            return -1;
        }
        c->ext = ext;
        c->ext_cap = size;
    }
    BpeSlot *slots = c->slots;
    uint64_t *ext = c->ext;
    size_t empty = 0;
    while (slots[empty].meta) /* (at most 3/4 full: there is one) */
        empty++;
    for (size_t step = 1; step <= old_size; step++) {
        size_t h = (empty + step) & (old_size - 1);
        if (!slots[h].meta)
            continue;
        BpeSlot key = slots[h];
        uint64_t key_ext = ext[h];
        size_t to = bpe_ct_home_ext(c, &key, key_ext, size - 1);
        memset(&slots[h], 0, sizeof(BpeSlot));
        ext[h] = 0;
        while (slots[to].meta)
            to = (to + 1) & (size - 1);
        slots[to] = key;
        ext[to] = key_ext;
        moved[h] = (uint32_t)to;
    }
    for (size_t e = 0; e < c->n; e++) {
        if (e + AHEAD < c->n)
            bpe_prefetch(&moved[c->order[e + AHEAD]]);
        c->order[e] = moved[c->order[e]];
    }
    free(moved);
    c->mask = size - 1;
    c->limit = size / 4 * 3;
    return 0;
}

/* s->count += add, exactly (a count past 31 bits, or a negative one, moves to `big`). */
static int bpe_ct_add_big(BpeCounts *c, BpeSlot *s, int64_t add)
{
    if (s->count & BPE_CT_BIG) {
        c->big[s->count & ~BPE_CT_BIG] += add;
        return 0;
    }
    /* (at most BPE_CT_BIG - 2 indices: one plus 1 keeps the top bit, see bpe_ct_bump) */
    if (c->nbig >= BPE_CT_BIG - 1 || bpe_ct_reserve((void **)&c->big, &c->big_cap, c->nbig, 1, sizeof(int64_t), 0) < 0)
        return -1;
    c->big[c->nbig] = (int64_t)s->count + add;
    s->count = BPE_CT_BIG | (uint32_t)c->nbig++;
    return 0;
}

static inline int bpe_ct_bump(BpeCounts *c, BpeSlot *s, int64_t add)
{
    if (add == 1) { /* (where the counting loops add 1: the sum's top bit the one test) */
        uint32_t sum = s->count + 1;
        s->count = sum;
        if (!(sum & BPE_CT_BIG))
            return 0;
        s->count = sum - 1;
        return bpe_ct_add_big(c, s, add);
    }
    if (!(s->count & BPE_CT_BIG) && add >= 0 && (uint64_t)s->count + (uint64_t)add < BPE_CT_BIG) {
        s->count += (uint32_t)add;
        return 0;
    }
    return bpe_ct_add_big(c, s, add);
}

/* Whether long key p[0:n] (n > 8) is the one of slot s, whose meta matches. */
static inline int bpe_ct_long_eq(const BpeCounts *c, const BpeSlot *s, const unsigned char *p, size_t n, int padded)
{
    const unsigned char *key = c->keys + bpe_ct_offset(s);
    if (n >= BPE_CT_LONG) {
        uint64_t long_len;
        memcpy(&long_len, key, 8);
        if (long_len != n)
            return 0;
        key += 8;
    }
    return bpe_key_eq(key, p, n, padded);
}

/* The slot of key p[0:n] (its meta `meta`, bpe_ct_meta's; its home `home`, its hash's low
 * bits; `word`, `ext`: bpe_tail_words's, for n <= 16), or the empty slot where it would go
 * (*found = 0). */
static inline BpeSlot *bpe_ct_probe_at(const BpeCounts *c, const unsigned char *p, size_t n, uint32_t meta,
                                       size_t home, uint64_t word, uint64_t ext, int padded, int *found)
{
    size_t h = home;
    for (;;) {
        BpeSlot *s = &c->slots[h];
        if (s->meta == meta && (n <= 8                ? s->word == word
                                : n <= BPE_CT_MID ? s->word == word && c->ext[h] == ext
                                                  : bpe_ct_long_eq(c, s, p, n, padded))) {
            *found = 1;
            return s;
        }
        if (!s->meta) {
            *found = 0;
            return s;
        }
        h = (h + 1) & c->mask;
    }
}

/* bpe_ct_probe_at for key p[0:n] of bpe_ct_hash `hash`. */
static inline BpeSlot *bpe_ct_probe(const BpeCounts *c, const unsigned char *p, size_t n, uint64_t hash,
                                    uint64_t word, uint64_t ext, int padded, int *found)
{
    return bpe_ct_probe_at(c, p, n, bpe_ct_meta(hash, n), (size_t)hash & c->mask, word, ext, padded, found);
}

/* Ask for the home slot of a key of n bytes and bpe_ct_hash `hash`, and for its ext if it
 * has 9 to 16 bytes (without a branch: ext[0] for the others). */
static inline void bpe_ct_prefetch_home(const BpeCounts *c, uint64_t hash, size_t n)
{
    size_t h = (size_t)hash & c->mask;
    bpe_prefetch(&c->slots[h]);
    bpe_prefetch(&c->ext[n - 9 < BPE_CT_MID - 8 ? h : 0]);
}

/* Put key p[0:n] in empty slot s (its hash `hash`, its words `word`, `ext` if of at most 16
 * bytes); -1: out of memory. */
static int bpe_ct_insert(BpeCounts *c, BpeSlot *s, const unsigned char *p, size_t n, uint64_t hash, uint64_t word,
                         uint64_t ext)
{
    if (c->n >= UINT32_MAX || bpe_ct_reserve((void **)&c->order, &c->order_cap, c->n, 1, sizeof(uint32_t), 0) < 0)
        return -1;
    if (c->n % BPE_CT_MARK == 0) {
        if (bpe_ct_reserve((void **)&c->marks, &c->marks_cap, c->n / BPE_CT_MARK, 1, sizeof(size_t), 0) < 0)
            return -1;
        c->marks[c->n / BPE_CT_MARK] = c->key_bytes;
    }
    if (n > 8 && n <= BPE_CT_MID)
        c->ext[s - c->slots] = ext;
    if (n > BPE_CT_MID) {
        size_t head = n >= BPE_CT_LONG ? 8 : 0;
        if (c->keys_len + head + n >= ((size_t)1 << BPE_CT_OFFSET_BITS) ||
            bpe_ct_reserve((void **)&c->keys, &c->keys_cap, c->keys_len, head + n, 1, BPE_KEY_SLACK) < 0)
            return -1;
        if (head) {
            uint64_t long_len = n;
            memcpy(c->keys + c->keys_len, &long_len, 8);
        }
        memcpy(c->keys + c->keys_len + head, p, n);
        word = c->keys_len | hash << BPE_CT_OFFSET_BITS;
        c->keys_len += head + n;
    }
    s->word = word;
    s->count = 0;
    s->meta = bpe_ct_meta(hash, n);
    c->order[c->n++] = (uint32_t)(s - c->slots);
    c->key_bytes += n;
    return 0;
}

/* Add `add` to the count of key p[0:n] (bpe_ct_hash `hash`, `padded` as for it; `word`,
 * `ext`: bpe_tail_words's for n <= 16), the key put in first if absent: 0, or 1 if it was
 * put in (the table may have grown); -1: out of memory. */
BPE_CT_INLINE int bpe_ct_add_word(BpeCounts *c, const unsigned char *p, size_t n, uint64_t word, uint64_t ext,
                                  uint64_t hash, int padded, int64_t add)
{
    int found;
    BpeSlot *s = bpe_ct_probe(c, p, n, hash, word, ext, padded, &found);
    if (found)
        return bpe_ct_bump(c, s, add);
    if (c->n >= c->limit) {
        if (bpe_ct_grow(c) < 0)
            return -1;
        s = bpe_ct_probe(c, p, n, hash, word, ext, padded, &found);
    }
    if (bpe_ct_insert(c, s, p, n, hash, word, ext) < 0 || bpe_ct_bump(c, s, add) < 0)
        return -1;
    return 1;
}

static inline int bpe_ct_add(BpeCounts *c, const unsigned char *p, size_t n, uint64_t hash, int padded, int64_t add)
{
    uint64_t word = 0, ext = 0;
    if (n <= BPE_CT_MID)
        bpe_tail_words(p, n, padded, &word, &ext);
    return bpe_ct_add_word(c, p, n, word, ext, hash, padded, add);
}

/* Count the pre-tokens of s[0:n] (pattern BPE_GPT2 or BPE_GPT4) into c; -1: out of memory.
 * A pre-token ending BPE_KEY_SLACK bytes or more before n is hashed and compared a word
 * at a time (reading text after it).
 *
 * Once the table outgrows the caches (BPE_COUNT_BIG slots), the pre-tokens are cut and
 * hashed BPE_COUNT_AHEAD ahead of the one counted: the slot of the one BPE_COUNT_AHEAD
 * ahead is prefetched, and, for a long key, its bytes in the arena when the one half as
 * far ahead is reached (its slot read by then), so that the cache misses of rare
 * pre-tokens overlap. While the table fits the caches the plain loop is faster. 32 ahead
 * was faster than 16 on a large web-like corpus, and 64 or 128 no faster. */
#define BPE_COUNT_AHEAD 32 /* a power of two */
#define BPE_COUNT_BIG ((size_t)1 << 17)

/* A pre-token to count: where it is, its word and hash (in bpe_count_ahead, cut, hashed
 * and its slot prefetched, waiting for its turn). */
typedef struct {
    ptrdiff_t i;   /* s[i:i + len] */
    size_t len;
    uint64_t hash; /* bpe_ct_hash's */
    uint64_t word, ext; /* bpe_tail_words's, for len <= 16 */
} BpeCountKey;

/* The word of a pre-token p[0:n] of at most 8 bytes with BPE_KEY_SLACK readable after it
 * (90% of the Python docs' pre-tokens, 94% of web-like text's). Counted apart from longer
 * ones, its ext known to be 0 (bpe_ct_hash_words's second product a constant) and its
 * slot's word alone compared, which saves instructions on every short pre-token. */
static inline uint64_t bpe_count_short(const unsigned char *p, size_t n)
{
    return bpe_load64(p) & bpe_tail_masks[n][0];
}

/* The word and table hash of pre-token s[i:j] of s[0:n] into a. */
static inline void bpe_count_key(BpeCountKey *a, const unsigned char *s, ptrdiff_t i, ptrdiff_t j, ptrdiff_t n)
{
    size_t len = (size_t)(j - i);
    int padded = j + BPE_KEY_SLACK <= n;
    a->i = i;
    a->len = len;
    if (len <= 8 && padded) { /* bpe_count_short's */
        a->word = bpe_count_short(s + i, len);
        a->ext = 0;
        a->hash = bpe_ct_hash_words(a->word, 0, len);
        return;
    }
    /* (bpe_ct_hash's, the words read once for the hash and the slot) */
    bpe_tail_words(s + i, len <= BPE_CT_MID ? len : 0, padded, &a->word, &a->ext);
    a->hash = len <= BPE_CT_MID ? bpe_ct_hash_words(a->word, a->ext, len) : bpe_hash_key(s + i, len, padded);
}

/* Add 1 to the count of pre-token `key` of s[0:n]: bpe_ct_add_word's 0, 1 (a new key) or -1. */
BPE_CT_INLINE int bpe_count_add(BpeCounts *c, const unsigned char *s, const BpeCountKey *key, ptrdiff_t n)
{
    if (key->len <= 8) /* bpe_ct_add_word made for a short key (its word compared, no bytes) */
        return bpe_ct_add_word(c, s + key->i, key->len, key->word, 0, key->hash, 1, 1);
    if (key->len <= BPE_CT_MID) /* and for one of 9 to 16 bytes (its two words) */
        return bpe_ct_add_word(c, s + key->i, key->len, key->word, key->ext, key->hash, 1, 1);
    return bpe_ct_add_word(c, s + key->i, key->len, 0, 0, key->hash,
                           key->i + (ptrdiff_t)key->len + BPE_KEY_SLACK <= n, 1);
}

/* Pre-token s[i:j] of s[0:n] into a, and its home prefetched. */
static inline void bpe_count_key_ahead(const BpeCounts *c, BpeCountKey *a, const unsigned char *s, ptrdiff_t i,
                                       ptrdiff_t j, ptrdiff_t n)
{
    bpe_count_key(a, s, i, j, n);
    bpe_ct_prefetch_home(c, a->hash, a->len);
}

/* A long key's bytes in the arena prefetched when its slot (prefetched) has come and holds
 * it; without a branch on the key's length, which is a coin toss (the arena's start is
 * prefetched for a short key). */
static inline void bpe_count_key_bytes_ahead(const BpeCounts *c, const BpeCountKey *a)
{
    const BpeSlot *slot = &c->slots[(size_t)a->hash & c->mask];
    int held = (a->len > BPE_CT_MID) & (slot->meta == bpe_ct_meta(a->hash, a->len));
    bpe_prefetch(c->keys + (held ? bpe_ct_offset(slot) : 0));
}

#if defined(__GNUC__) || defined(__clang__)
__attribute__((noinline)) /* its own function: the plain loop's inlining stays as it was */
#endif
static int bpe_count_ahead(BpeCounts *c, int pattern, const unsigned char *s, ptrdiff_t cut, ptrdiff_t n)
{
    enum { MASK = BPE_COUNT_AHEAD - 1 };
    BpeCountKey ring[BPE_COUNT_AHEAD];
    unsigned filled = 0, head = 0;
    BpeCutter cutter;
    bpe_cut_start(&cutter, pattern, s, n);
    for (; filled < BPE_COUNT_AHEAD && cut < n; filled++) {
        ptrdiff_t j = bpe_cut_next(&cutter, cut);
        bpe_count_key_ahead(c, &ring[filled], s, cut, j, n);
        cut = j;
    }
    if (filled == BPE_COUNT_AHEAD) /* the ring full: count the oldest, cut the next in its place */
        for (; cut < n; head = (head + 1) & MASK) {
            bpe_count_key_bytes_ahead(c, &ring[(head + BPE_COUNT_AHEAD / 2) & MASK]);
            if (bpe_count_add(c, s, &ring[head], n) < 0)
                return -1;
            ptrdiff_t j = bpe_cut_next(&cutter, cut);
            bpe_count_key_ahead(c, &ring[head], s, cut, j, n);
            cut = j;
        }
    for (; filled; filled--, head = (head + 1) & MASK)
        if (bpe_count_add(c, s, &ring[head], n) < 0)
            return -1;
    return 0;
}

static int bpe_count(BpeCounts *c, int pattern, const unsigned char *s, ptrdiff_t n)
{
    ptrdiff_t i = 0;
    BpeCutter cutter;
    if (c->mask >= BPE_COUNT_BIG)
        return bpe_count_ahead(c, pattern, s, 0, n);
    bpe_cut_start(&cutter, pattern, s, n);
    while (i < n) {
        ptrdiff_t j = bpe_cut_next(&cutter, i);
        int added;
        size_t len = (size_t)(j - i);
        if (len <= 8 && j + BPE_KEY_SLACK <= n) { /* (bpe_count_short's) */
            uint64_t word = bpe_count_short(s + i, len);
            added = bpe_ct_add_word(c, s + i, len, word, 0, bpe_ct_hash_words(word, 0, len), 1, 1);
        } else {
            BpeCountKey key;
            bpe_count_key(&key, s, i, j, n);
            added = bpe_count_add(c, s, &key, n);
        }
        i = j;
        if (added) { /* a new key (the table grown past the caches?), or out of memory */
            if (added < 0)
                return -1;
            if (c->mask >= BPE_COUNT_BIG && i < n) /* (a block's starts not handed out are found again) */
                return bpe_count_ahead(c, pattern, s, i, n);
        }
    }
    return 0;
}

#endif
