/* A map: byte strings -> two int64 (the encoder's pre-token cache), with the hashing, the
 * zeroed and huge-page tables and the prefetch that counting's own table (_count_table.h)
 * shares.
 *
 * Invariant. Open addressing with linear probing; a key's bytes are kept with BPE_KEY_SLACK
 * bytes to spare, so a key is compared and hashed in whole 8-byte words.
 */
#ifndef BPE_BYTE_MAP_H
#define BPE_BYTE_MAP_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#if defined(__linux__)
#include <sys/mman.h>
#endif

/* The encoder's cache (core/encode/_bpe_kernel.c). Counting has a table of its own, laid out
 * for millions of keys (_count_table.h); functions it does not use are `static inline`, so
 * that _native.c compiles without unused-function warnings. */

/* 32 bytes (a 32-bit offset, no padding): two to a cache line, and less memory for the
 * millions of distinct pre-tokens of a large corpus. */
typedef struct {
    uint64_t hash;
    int64_t a, b;   /* the values */
    uint32_t key;   /* offset of the key in the key arena (kept below 4 GB: bpe_map_get_key) */
    uint32_t len;
} BpeEntry;

typedef struct {
    BpeEntry *entries; /* in insertion order */
    size_t n, cap;
    uint64_t *slots;   /* open addressing: the hash's high 32 bits << 32 | entry index + 1; 0 = empty
                        * (the high bits tell most non-matching slots without reading the entry) */
    size_t mask;
    unsigned char *keys; /* keys_cap bytes and BPE_KEY_SLACK more: any key can be read in whole words */
    size_t keys_len, keys_cap;
} BpeMap;

/* Bytes readable after a key's end for the word-at-a-time hash and comparison: past the
 * key arena's end, and past a pre-token's end where the counting loop uses them. */
#define BPE_KEY_SLACK 16

/* The k <= 8 bytes at p as a word, the first byte lowest, zero above. */
static inline uint64_t bpe_load_bytes(const unsigned char *p, size_t k)
{
    uint64_t w = 0;
    for (size_t b = 0; b < k; b++)
        w |= (uint64_t)p[b] << (8 * b);
    return w;
}

/* The last n <= 16 bytes of a key at p as two words, zero past its end (with n, that is
 * the whole tail); `padded`: the 16 bytes at p may be read, so the two words are loaded
 * and masked, with no branch on n. */
static inline void bpe_tail_words(const unsigned char *p, size_t n, int padded, uint64_t *first, uint64_t *second)
{
    if (padded) {
        *first = bpe_load64(p) & bpe_tail_masks[n][0];
        *second = bpe_load64(p + 8) & bpe_tail_masks[n][1];
    } else {
        *first = bpe_load_bytes(p, n < 8 ? n : 8);
        *second = bpe_load_bytes(p + 8, n > 8 ? n - 8 : 0);
    }
}

/* bpe_hash of p[0:n]; `padded`: the BPE_KEY_SLACK bytes after p[n-1] may be read, so
 * the last (up to) 16 bytes are two words read and masked, with no branch on n.
 *
 * For n <= 8 the hash is a bijection of the key's word `first` (second = 0): xor with a
 * constant, multiplication by an odd constant and h ^= h >> k (k > 0) are each invertible
 * on 64-bit words. So two keys of the same length <= 8 with the same hash are the same
 * key, and bpe_map_probe compares no bytes for them: keep every step invertible. */
static inline uint64_t bpe_hash_key(const unsigned char *p, size_t n, int padded)
{
    uint64_t h = 0x9E3779B97F4A7C15ull ^ (n * 0xC2B2AE3D27D4EB4Full), first, second;
    for (; n > 16; p += 8, n -= 8) {
        h = (h ^ bpe_load64(p)) * 0xFF51AFD7ED558CCDull;
        h ^= h >> 32;
    }
    bpe_tail_words(p, n, padded, &first, &second);
    h = (h ^ first) * 0xFF51AFD7ED558CCDull;
    h ^= h >> 32;
    h = (h ^ second) * 0xC4CEB9FE1A85EC53ull;
    h ^= h >> 29;
    h *= 0x94D049BB133111EBull;
    h ^= h >> 32;
    return h;
}

static inline uint64_t bpe_hash(const unsigned char *p, size_t n)
{
    return bpe_hash_key(p, n, 0);
}

/* calloc(n, size) with every page written at once. A table probed before it is written
 * (a hash table, a cache) otherwise first reads calloc's untouched pages, which maps them
 * to the shared zero page, and then writes them, which copies the zero page and flushes
 * its mapping from every core running this process: an inter-processor interrupt per
 * 4 KB. Two threads growing their count tables spent a tenth of their time in those on
 * 500 MB. (A store per page, through volatile: malloc + memset would be made a calloc.) */
static void *bpe_calloc_written(size_t n, size_t size)
{
    volatile unsigned char *p = (volatile unsigned char *)calloc(n, size);
    if (p)
        for (size_t i = 0; i < n * size; i += 4096)
            p[i] = 0;
    return (void *)p;
}

static inline int bpe_map_init(BpeMap *m, size_t slots)
{
    memset(m, 0, sizeof(*m));
    size_t s = 1024;
    while (s < slots)
        s <<= 1;
    m->slots = (uint64_t *)bpe_calloc_written(s, sizeof(uint64_t));
    m->mask = s - 1;
    m->cap = s / 2;
    m->entries = (BpeEntry *)malloc(m->cap * sizeof(BpeEntry));
    m->keys_cap = 1 << 16;
    m->keys = (unsigned char *)malloc(m->keys_cap + BPE_KEY_SLACK);
    if (!m->slots || !m->entries || !m->keys) {
        free(m->slots);
        free(m->entries);
        free(m->keys);
        memset(m, 0, sizeof(*m));
        return -1;
    }
    return 0;
}

static inline void bpe_map_free(BpeMap *m)
{
    free(m->slots);
    free(m->entries);
    free(m->keys);
    memset(m, 0, sizeof(*m));
}

static inline void bpe_map_clear(BpeMap *m)
{
    memset(m->slots, 0, (m->mask + 1) * sizeof(uint64_t));
    m->n = 0;
    m->keys_len = 0;
}

static inline int bpe_map_grow(BpeMap *m)
{
    size_t size = (m->mask + 1) * 2;
    if (size > ((size_t)1 << 31))
        return -1;
    uint64_t *slots = (uint64_t *)bpe_calloc_written(size, sizeof(uint64_t));
    BpeEntry *entries = (BpeEntry *)realloc(m->entries, size / 2 * sizeof(BpeEntry));
    if (!slots || !entries) {
        free(slots);
        if (entries)
            m->entries = entries;
        return -1;
    }
    m->entries = entries;
    free(m->slots);
    m->slots = slots;
    m->mask = size - 1;
    m->cap = size / 2;
    for (size_t e = 0; e < m->n; e++) {
        size_t h = (size_t)entries[e].hash & m->mask;
        while (slots[h])
            h = (h + 1) & m->mask;
        slots[h] = (entries[e].hash & 0xFFFFFFFF00000000ull) | (uint64_t)(e + 1);
    }
    return 0;
}

/* a[0:n] == b[0:n], a being a key of the arena; `padded`: b's BPE_KEY_SLACK bytes after
 * b[n-1] may be read (the arena's may), so both go a word at a time, the last (up to) 16
 * bytes as two masked words with no branch on n. */
static inline int bpe_key_eq(const unsigned char *a, const unsigned char *b, size_t n, int padded)
{
    if (!padded) {
        for (; n >= 8; a += 8, b += 8, n -= 8)
            if (bpe_load64(a) != bpe_load64(b))
                return 0;
        while (n--)
            if (*a++ != *b++)
                return 0;
        return 1;
    }
    for (; n > 16; a += 8, b += 8, n -= 8)
        if (bpe_load64(a) != bpe_load64(b))
            return 0;
    uint64_t first = (bpe_load64(a) ^ bpe_load64(b)) & bpe_tail_masks[n][0];
    uint64_t second = (bpe_load64(a + 8) ^ bpe_load64(b + 8)) & bpe_tail_masks[n][1];
    return (first | second) == 0;
}

/* Where key p[0:n] (bpe_hash `hash`) is: its entry, or NULL and in *free_slot the empty
 * slot that ends its probe sequence. `padded` as for bpe_key_eq. */
static inline BpeEntry *bpe_map_probe(const BpeMap *m, const unsigned char *p, size_t n, uint64_t hash,
                                      int padded, size_t *free_slot)
{
    size_t h = (size_t)hash & m->mask;
    uint64_t slot, tag = hash & 0xFFFFFFFF00000000ull;
    while ((slot = m->slots[h]) != 0) {
        if ((slot & 0xFFFFFFFF00000000ull) == tag) {
            BpeEntry *e = &m->entries[(uint32_t)slot - 1];
            /* no bytes to compare for n <= 8: the hash is the key (see bpe_hash_key) */
            if (e->hash == hash && e->len == n && (n <= 8 || bpe_key_eq(m->keys + e->key, p, n, padded)))
                return e;
        }
        h = (h + 1) & m->mask;
    }
    *free_slot = h;
    return NULL;
}

/* The entry of key p[0:n] (whose bpe_hash is `hash`), or NULL if there is none. */
static inline BpeEntry *bpe_map_find(const BpeMap *m, const unsigned char *p, size_t n, uint64_t hash)
{
    size_t free_slot;
    return bpe_map_probe(m, p, n, hash, 0, &free_slot);
}

/* bpe_map_get_hashed, `padded` as for bpe_key_eq. */
static inline BpeEntry *bpe_map_get_key(BpeMap *m, const unsigned char *p, size_t n, uint64_t hash, int padded,
                                        int *created)
{
    size_t h;
    BpeEntry *e = bpe_map_probe(m, p, n, hash, padded, &h);
    *created = 0;
    if (e)
        return e;
    if (m->n >= m->cap) {
        if (bpe_map_grow(m) < 0)
            return NULL;
        h = (size_t)hash & m->mask;
        while (m->slots[h])
            h = (h + 1) & m->mask;
    }
    if (m->keys_len + n > UINT32_MAX)
        return NULL; /* 4 GB of distinct pre-tokens: more than this table is for */
    if (m->keys_len + n > m->keys_cap) {
        size_t cap = m->keys_cap * 2;
        while (cap < m->keys_len + n)
            cap *= 2;
        unsigned char *keys = (unsigned char *)realloc(m->keys, cap + BPE_KEY_SLACK);
        if (!keys)
            return NULL;
        m->keys = keys;
        m->keys_cap = cap;
    }
    memcpy(m->keys + m->keys_len, p, n);
    e = &m->entries[m->n];
    e->hash = hash;
    e->key = (uint32_t)m->keys_len;
    e->len = (uint32_t)n;
    e->a = e->b = 0;
    m->keys_len += n;
    m->n++;
    m->slots[h] = (hash & 0xFFFFFFFF00000000ull) | (uint64_t)m->n;
    *created = 1;
    return e;
}

/* The entry of key p[0:n] (whose bpe_hash is `hash`), created with values (0, 0) if
 * absent; NULL when out of memory. */
static inline BpeEntry *bpe_map_get_hashed(BpeMap *m, const unsigned char *p, size_t n, uint64_t hash, int *created)
{
    return bpe_map_get_key(m, p, n, hash, 0, created);
}

static inline BpeEntry *bpe_map_get(BpeMap *m, const unsigned char *p, size_t n, int *created)
{
    return bpe_map_get_hashed(m, p, n, bpe_hash(p, n), created);
}

/* Tables looked up at random over megabytes (counting's slots, the encoder's front cache)
 * come in 2 MB pages where the system gives them (transparent huge pages, on request):
 * with 4 KB pages most of those lookups also missed the TLB. */
#if defined(__linux__) && defined(MAP_ANONYMOUS)
#define BPE_HUGE_MAP 1
#define BPE_HUGE_PAGE ((size_t)2 << 20)

/* `size` zeroed bytes starting on a 2 MB boundary, mapped as they are first written;
 * NULL when mmap fails. Free with bpe_huge_unmap(p, size). */
static inline void *bpe_huge_map(size_t size)
{
    /* mapped with a page to spare, the table starting on a 2 MB boundary in it */
    unsigned char *map = (unsigned char *)mmap(NULL, size + BPE_HUGE_PAGE, PROT_READ | PROT_WRITE,
                                               MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (map == (unsigned char *)MAP_FAILED)
        return NULL;
    unsigned char *p = (unsigned char *)(((uintptr_t)map + BPE_HUGE_PAGE - 1) & ~(uintptr_t)(BPE_HUGE_PAGE - 1));
    if (p > map) /* the unaligned head and the tail back to the system */
        munmap(map, (size_t)(p - map));
    munmap(p + size, (size_t)(map + BPE_HUGE_PAGE - p));
#if defined(MADV_HUGEPAGE)
    madvise(p, size, MADV_HUGEPAGE); /* a hint: 4 KB pages if refused */
#endif
    return p;
}

static inline void bpe_huge_unmap(void *p, size_t size)
{
    munmap(p, size);
}
#endif

/* Ask for the cache line at p (a hint only). */
static inline void bpe_prefetch(const void *p)
{
#if defined(__GNUC__) || defined(__clang__)
    __builtin_prefetch(p);
#else
    (void)p;
#endif
}

#endif /* BPE_BYTE_MAP_H */
