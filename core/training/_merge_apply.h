/* Merges made in rank order, all at once, word by word: MergeState's forced merges
 * (core/training/_merge_kernel.c) when every forced pair uses tokens that exist by then.
 *
 * Making merge r everywhere, r = 0, 1, ... (the merge loop's way: each merge visits the
 * words holding its pair, left to right) gives each word what making, within the word
 * alone, the lowest-ranked merge it holds until it holds none gives it: merge r only
 * leaves pairs with its new token, of rank > r, so when a word's lowest-ranked pair is r,
 * merges 0..r-1 are all made in it and none of them can come back. The word's count of
 * pair r then is its count in the loop at merge r, so each merge's count and the tokens
 * it removes are added up here, word by word, exactly as the loop would report them.
 *
 * Pieces. A merge makes a token whose bytes are one of the merges' tokens, so no merge
 * ever joins two bytes x, y in a row that no merge's token holds in a row (`held`): a
 * word cut between such bytes is merged piece by piece, and each distinct piece once
 * (the pieces are mostly the words of the text: SuperBPE's stage 2 makes stage 1's merges
 * again on words that are runs of them). A piece's tokens and what each merge did in it
 * (rank, count, tokens removed) are kept, and added up, times the weight of the words it
 * was in, at the end. A piece is merged by rescanning it for its lowest-ranked pair; one of
 * 24 bytes or more with a heap of its pairs instead (no quadratic time on a long run).
 * Many words are merged by two threads (ApplyShare), each making the pieces of half of the
 * hashes, then writing the tokens of half of the words.
 */
#ifndef BPE_MERGE_APPLY_H
#define BPE_MERGE_APPLY_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define NO_RANK INT32_MAX

/* A distinct piece: its bytes (at keys[key]), its tokens after the merges (at ids[ids])
 * and the merges made in it (at events[events]: rank, count, tokens removed). len 0: a
 * free slot. 40 bytes: a corpus has millions of distinct pieces (offsets past 2**32 stop
 * the applier: `full`). */
typedef struct {
    uint64_t hash;
    uint32_t key, ids, events;
    int32_t len;
    int64_t weight; /* the counts of the words it was in, added up */
    int32_t nids, nevents;
} PieceSlot;

/* A pair and its rank in one slot: a lookup reads one cache line. */
typedef struct {
    uint64_t key;  /* rank_key(left, right); 0: a free slot */
    int64_t rank;
} RankSlot;

typedef struct {
    const int32_t *pairs;      /* merge r is (pairs[2r], pairs[2r + 1]) */
    int32_t first_id;          /* merge r makes token first_id + r */
    RankSlot *ranks;           /* pair -> the rank of its first merge (open addressing) */
    size_t rank_mask;
    uint64_t held[1024];       /* bit x << 8 | y: a merge's token holds bytes x, y in a row */
    PieceSlot *slots;
    size_t slot_mask, used;
    unsigned char *keys;
    int32_t *ids, *events, *work;
    size_t nkeys, capkeys, nids, capids, nevents, capevents, capwork;
    int full; /* more distinct pieces than 32-bit offsets reach */
    int totals_only; /* no merge's own count kept: only the tokens all of them removed */
} MergeApplier;

static inline uint64_t
apply_mix(uint64_t key)
{
    key ^= key >> 29;
    key *= 0xbf58476d1ce4e5b9ull;
    return key ^ (key >> 32);
}

static inline uint64_t
rank_key(int32_t left, int32_t right)
{
    return ((uint64_t)(uint32_t)left + 1) << 32 | (uint32_t)right;
}

static void
applier_free(MergeApplier *m)
{
    free(m->ranks);
    free(m->slots);
    free(m->keys);
    free(m->ids);
    free(m->events);
    free(m->work);
    memset(m, 0, sizeof(*m));
}

/* The applier of n merges; -1 when out of memory. Then `applier_hold` each merge's token. */
static int
applier_init(MergeApplier *m, const int32_t *pairs, size_t n, int32_t first_id)
{
    memset(m, 0, sizeof(*m));
    m->pairs = pairs;
    m->first_id = first_id;
    size_t cap = 16;
    while (cap < 2 * n) {
        cap *= 2;
    }
    m->rank_mask = cap - 1;
    m->ranks = calloc(cap, sizeof(RankSlot));
    m->slot_mask = 1023;
    m->slots = calloc(1024, sizeof(PieceSlot));
    if (m->ranks == NULL || m->slots == NULL) {
        applier_free(m);
        return -1;
    }
    for (size_t r = 0; r < n; r++) {
        uint64_t key = rank_key(pairs[2 * r], pairs[2 * r + 1]);
        size_t j = apply_mix(key) & m->rank_mask;
        while (m->ranks[j].key != 0 && m->ranks[j].key != key) {
            j = (j + 1) & m->rank_mask;
        }
        if (m->ranks[j].key == 0) { /* a pair merged again later occurs no more by then: its first rank */
            m->ranks[j].key = key;
            m->ranks[j].rank = (int64_t)r;
        }
    }
    return 0;
}

/* A merge's token: its bytes in a row are never cut apart. */
static void
applier_hold(MergeApplier *m, const unsigned char *token, size_t len)
{
    for (size_t i = 0; i + 1 < len; i++) {
        unsigned pair = (unsigned)token[i] << 8 | token[i + 1];
        m->held[pair >> 6] |= 1ull << (pair & 63);
    }
}

static inline int
applier_held(const MergeApplier *m, unsigned x, unsigned y)
{
    unsigned pair = x << 8 | y;
    return (int)(m->held[pair >> 6] >> (pair & 63)) & 1;
}

static inline int32_t
applier_rank(const MergeApplier *m, int32_t left, int32_t right)
{
    uint64_t key = rank_key(left, right);
    for (size_t j = apply_mix(key) & m->rank_mask;; j = (j + 1) & m->rank_mask) {
        if (m->ranks[j].key == key) {
            return (int32_t)m->ranks[j].rank;
        }
        if (m->ranks[j].key == 0) {
            return NO_RANK;
        }
    }
}

/* Room for n more values of size `size` in *p (holding *len of *cap); -1 when out of memory. */
static int
apply_reserve(void **p, size_t *cap, size_t len, size_t n, size_t size)
{
    if (len + n <= *cap) {
        return 0;
    }
    size_t want = *cap ? *cap : 1024;
    while (want < len + n) {
        want *= 2;
    }
    void *q = realloc(*p, want * size);
    if (q == NULL) {
        return -1;
    }
    *p = q;
    *cap = want;
    return 0;
}

/* Events of the merges made: (rank, count, tokens removed), one per rank. -1 when out of memory. */
static int
applier_event(MergeApplier *m, int32_t rank, int32_t occurrences, int32_t made)
{
    if (m->totals_only) { /* (a piece's tokens removed are its bytes less its tokens) */
        return 0;
    }
    if (apply_reserve((void **)&m->events, &m->capevents, m->nevents, 3, sizeof(int32_t)) < 0) {
        return -1;
    }
    m->events[m->nevents++] = rank;
    m->events[m->nevents++] = occurrences;
    m->events[m->nevents++] = made;
    return 0;
}

/* Make the merges in word[0:n] (rank[] room for n values): the new length; each merge made
 * appended to m->events as (rank, count, tokens removed). -1 when out of memory. */
static int32_t
apply_ranked(MergeApplier *m, int32_t *word, int32_t *rank, int32_t n)
{
    for (int32_t j = 0; j + 1 < n; j++) {
        rank[j] = applier_rank(m, word[j], word[j + 1]);
    }
    rank[n - 1] = NO_RANK; /* (no pair starts at the last token: copied, never read) */
    for (;;) {
        int32_t best = NO_RANK, occurrences = 0;
        for (int32_t j = 0; j + 1 < n; j++) {
            if (rank[j] < best) {
                best = rank[j];
                occurrences = 1;
            } else if (rank[j] == best) {
                occurrences++;
            }
        }
        if (best == NO_RANK) {
            return n;
        }
        int32_t a = m->pairs[2 * best], b = m->pairs[2 * best + 1], z = m->first_id + best;
        int32_t i = 0, o = 0;
        while (i < n) {
            if (i + 1 < n && word[i] == a && word[i + 1] == b) {
                word[o] = z;
                if (o > 0) {
                    rank[o - 1] = -1; /* looked up again below */
                }
                rank[o++] = -1;
                i += 2;
            } else {
                word[o] = word[i];
                rank[o++] = rank[i++];
            }
        }
        for (int32_t j = 0; j + 1 < o; j++) {
            if (rank[j] < 0) {
                rank[j] = applier_rank(m, word[j], word[j + 1]);
            }
        }
        rank[o - 1] = NO_RANK;
        if (applier_event(m, best, occurrences, n - o) < 0) {
            return -1;
        }
        n = o;
    }
}

/* A long piece's merges with a heap (apply_ranked rescans the word per merge: quadratic):
 * the tokens in a linked list, a min-heap of (rank, position) for the pairs that start at
 * each position, popped in rank order and, within a rank, left to right, as the loop
 * makes them; entries whose position went or whose pair changed are skipped. A merge only
 * makes pairs of higher rank than its own, so each rank's pops are its occurrences, left
 * to right. work[] is room for 10 n values. The new length, or -1 when out of memory. */
#define HEAP_FROM 24

static inline void
heap_push_rank(uint64_t *heap, int32_t *len, uint64_t item)
{
    int32_t i = (*len)++;
    while (i > 0 && heap[(i - 1) / 2] > item) {
        heap[i] = heap[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    heap[i] = item;
}

/* Put `item` at position i of the heap of n entries, or below it where it belongs. */
static inline void
heap_place_rank(uint64_t *heap, int32_t n, int32_t i, uint64_t item)
{
    for (;;) {
        int32_t c = 2 * i + 1;
        if (c >= n) {
            break;
        }
        if (c + 1 < n && heap[c + 1] < heap[c]) {
            c++;
        }
        if (heap[c] >= item) {
            break;
        }
        heap[i] = heap[c];
        i = c;
    }
    heap[i] = item;
}

static inline uint64_t
heap_pop_rank(uint64_t *heap, int32_t *len)
{
    uint64_t top = heap[0], last = heap[--*len];
    if (*len > 0) {
        heap_place_rank(heap, *len, 0, last);
    }
    return top;
}

static int32_t
apply_heap(MergeApplier *m, int32_t *word, int32_t *work, int32_t n)
{
    int32_t *next = work, *prev = work + n, *rank = work + 2 * n;
    uint64_t *heap = (uint64_t *)(work + 4 * (size_t)n); /* (8-byte aligned) 6 n int32: 3 n entries (below) */
    int32_t len = 0, alive = n;
    for (int32_t j = 0; j < n; j++) {
        next[j] = j + 1 < n ? j + 1 : -1;
        prev[j] = j - 1;
        rank[j] = j + 1 < n ? applier_rank(m, word[j], word[j + 1]) : NO_RANK;
        if (rank[j] != NO_RANK) {
            heap[len++] = (uint64_t)(uint32_t)rank[j] << 32 | (uint32_t)j;
        }
    }
    for (int32_t i = len / 2; i-- > 0;) { /* heapify */
        heap_place_rank(heap, len, i, heap[i]);
    }
    int32_t current = NO_RANK, occurrences = 0, made = 0;
    while (len > 0) {
        uint64_t item = heap_pop_rank(heap, &len);
        int32_t r = (int32_t)(item >> 32), p = (int32_t)(uint32_t)item;
        if (rank[p] != r) {
            continue; /* the position went, or its pair changed */
        }
        if (r != current) {
            if (current != NO_RANK && applier_event(m, current, occurrences, made) < 0) {
                return -1;
            }
            current = r;
            occurrences = made = 0;
        }
        int32_t a = m->pairs[2 * r], q = next[p], after = next[q];
        occurrences += 1 + (a == m->pairs[2 * r + 1] && after >= 0 && word[after] == a);
        made++;
        alive--;
        word[p] = m->first_id + r;
        rank[q] = NO_RANK - 1; /* gone: no entry of it is taken again */
        next[p] = after;
        if (after >= 0) {
            prev[after] = p;
        }
        /* at most two new entries a merge (and n - 1 merges), the n first: 3 n in all, room made */
        rank[p] = after >= 0 ? applier_rank(m, word[p], word[after]) : NO_RANK;
        if (rank[p] != NO_RANK) {
            heap_push_rank(heap, &len, (uint64_t)(uint32_t)rank[p] << 32 | (uint32_t)p);
        }
        if (prev[p] >= 0) {
            int32_t before = prev[p];
            rank[before] = applier_rank(m, word[before], word[p]);
            if (rank[before] != NO_RANK) {
                heap_push_rank(heap, &len, (uint64_t)(uint32_t)rank[before] << 32 | (uint32_t)before);
            }
        }
    }
    if (current != NO_RANK && applier_event(m, current, occurrences, made) < 0) {
        return -1;
    }
    int32_t o = 0;
    for (int32_t j = 0; j >= 0; j = next[j]) {
        word[o++] = word[j];
    }
    (void)alive;
    return o;
}

/* Where the piece of word p[0:n] that starts at `start` ends: at the first two bytes in a
 * row that no forced token holds, or at n. */
static inline int32_t
piece_end(const MergeApplier *m, const unsigned char *p, int32_t n, int32_t start)
{
    int32_t end = start + 1;
    while (end < n && applier_held(m, p[end - 1], p[end])) {
        end++;
    }
    return end;
}

static inline uint64_t
piece_hash(const unsigned char *p, int32_t n)
{
    uint64_t hash = 0x9E3779B97F4A7C15ull ^ (uint64_t)n;
    for (int32_t i = 0; i < n; i++) {
        hash = (hash ^ p[i]) * 0x100000001B3ull;
    }
    return apply_mix(hash);
}

/* The slot of piece p[0:n] of this hash, NULL if it has none (no piece is made). */
static const PieceSlot *
applier_find(const MergeApplier *m, const unsigned char *p, int32_t n, uint64_t hash)
{
    for (size_t j = hash & m->slot_mask; m->slots[j].len != 0; j = (j + 1) & m->slot_mask) {
        const PieceSlot *e = &m->slots[j];
        if (e->hash == hash && e->len == n && memcmp(m->keys + e->key, p, (size_t)n) == 0) {
            return e;
        }
    }
    return NULL;
}

/* The slot of piece p[0:n] of this hash (piece_hash), found or made with its merges made;
 * NULL when out of memory. */
static PieceSlot *
applier_piece(MergeApplier *m, const unsigned char *p, int32_t n, uint64_t hash)
{
    const PieceSlot *found = applier_find(m, p, n, hash);
    if (found != NULL) {
        return &m->slots[found - m->slots];
    }
    size_t j = hash & m->slot_mask;
    while (m->slots[j].len != 0) { /* the free slot it takes */
        j = (j + 1) & m->slot_mask;
    }
    if (m->nkeys + (size_t)n > UINT32_MAX || m->nids + (size_t)n > UINT32_MAX || m->nevents + 3 * (size_t)n > UINT32_MAX) {
        m->full = 1;
        return NULL;
    }
    if ((m->used + 1) * 4 > (m->slot_mask + 1) * 3) { /* grow, then find the free slot again */
        size_t cap = 2 * (m->slot_mask + 1);
        PieceSlot *slots = calloc(cap, sizeof(PieceSlot));
        if (slots == NULL) {
            return NULL;
        }
        for (size_t k = 0; k <= m->slot_mask; k++) {
            if (m->slots[k].len != 0) {
                size_t t = m->slots[k].hash & (cap - 1);
                while (slots[t].len != 0) {
                    t = (t + 1) & (cap - 1);
                }
                slots[t] = m->slots[k];
            }
        }
        free(m->slots);
        m->slots = slots;
        m->slot_mask = cap - 1;
        for (j = hash & m->slot_mask; m->slots[j].len != 0; j = (j + 1) & m->slot_mask) {
        }
    }
    if (apply_reserve((void **)&m->keys, &m->capkeys, m->nkeys, (size_t)n, 1) < 0 ||
        apply_reserve((void **)&m->ids, &m->capids, m->nids, (size_t)n, sizeof(int32_t)) < 0 ||
        apply_reserve((void **)&m->work, &m->capwork, 0, 10 * (size_t)n, sizeof(int32_t)) < 0) {
        return NULL;
    }
    int32_t *word = m->ids + m->nids;
    for (int32_t i = 0; i < n; i++) {
        word[i] = p[i];
    }
    size_t events = m->nevents;
    int32_t len = n >= HEAP_FROM ? apply_heap(m, word, m->work, n) : apply_ranked(m, word, m->work, n);
    if (len < 0) {
        return NULL;
    }
    PieceSlot *e = &m->slots[j];
    memcpy(m->keys + m->nkeys, p, (size_t)n);
    *e = (PieceSlot){hash, (uint32_t)m->nkeys, (uint32_t)m->nids, (uint32_t)events, n, 0, len,
                     (int32_t)((m->nevents - events) / 3)};
    m->nkeys += (size_t)n;
    m->nids += (size_t)len;
    m->used++;
    return e;
}

/* Make the merges in a word of bytes p[0:n] of count c: its tokens into out (room for n).
 * The new length, or -1 when out of memory. */
static int32_t
applier_word(MergeApplier *m, const unsigned char *p, int32_t n, int64_t c, int32_t *out)
{
    int32_t o = 0;
    for (int32_t start = 0, end; start < n; start = end) {
        end = piece_end(m, p, n, start);
        if (end - start == 1) {
            out[o++] = p[start];
        } else {
            PieceSlot *e = applier_piece(m, p + start, end - start, piece_hash(p + start, end - start));
            if (e == NULL) {
                return -1;
            }
            memcpy(out + o, m->ids + e->ids, (size_t)e->nids * sizeof(int32_t));
            o += e->nids;
            e->weight += c;
        }
    }
    return o;
}

/* The forced merges made in many packed words by two threads, each piece held once: first
 * each thread makes the pieces whose hash has its `owner` bit (every word read by both,
 * each piece's weight added by its owner alone: apply_pieces), then each thread writes the
 * tokens of its half of the words, reading both threads' pieces, which no longer change
 * (apply_words): each word of two bytes or more's tokens appended to `made` (width bytes
 * each), their number in made_len[i]. No Python call: the GIL is released meanwhile. */
typedef struct {
    MergeApplier *pieces[2]; /* the pieces of hash bit 63 clear, and set */
    int owner;               /* apply_pieces: the pieces this thread makes */
    const unsigned char *blob; /* word lo starts at blob + at */
    const int64_t *lengths, *counts;
    Py_ssize_t lo, hi;
    size_t at;
    size_t width;
    void *made;
    size_t nmade, capmade;
    int32_t *made_len;
    int status; /* 0; -1 out of memory; -2 an applier is full */
} ApplyShare;

static void *
apply_pieces(void *arg)
{
    ApplyShare *sh = arg;
    MergeApplier *m = sh->pieces[sh->owner];
    size_t at = sh->at;
    for (Py_ssize_t i = sh->lo; i < sh->hi; i++) {
        int32_t len = (int32_t)sh->lengths[i];
        const unsigned char *p = sh->blob + at;
        at += (size_t)len;
        for (int32_t start = 0, end; len > 1 && start < len; start = end) {
            end = piece_end(m, p, len, start);
            uint64_t hash = end - start > 1 ? piece_hash(p + start, end - start) : 0;
            if (end - start > 1 && (int)(hash >> 63) == sh->owner) {
                PieceSlot *e = applier_piece(m, p + start, end - start, hash);
                if (e == NULL) {
                    sh->status = m->full ? -2 : -1;
                    return NULL;
                }
                e->weight += sh->counts[i];
            }
        }
    }
    return NULL;
}

static void *
apply_words(void *arg)
{
    ApplyShare *sh = arg;
    int32_t *merged = NULL;
    int32_t room = 0;
    size_t at = sh->at;
    for (Py_ssize_t i = sh->lo; i < sh->hi; i++) {
        int32_t len = (int32_t)sh->lengths[i];
        const unsigned char *p = sh->blob + at;
        at += (size_t)len;
        if (len < 2) {
            continue;
        }
        if (len > room) {
            int32_t *grown = realloc(merged, (size_t)len * sizeof(int32_t));
            if (grown == NULL) {
                sh->status = -1;
                break;
            }
            merged = grown;
            room = len;
        }
        int32_t o = 0;
        for (int32_t start = 0, end; start < len; start = end) {
            end = piece_end(sh->pieces[0], p, len, start);
            if (end - start == 1) {
                merged[o++] = p[start];
            } else {
                uint64_t hash = piece_hash(p + start, end - start);
                const MergeApplier *m = sh->pieces[hash >> 63];
                const PieceSlot *e = applier_find(m, p + start, end - start, hash); /* made by apply_pieces */
                memcpy(merged + o, m->ids + e->ids, (size_t)e->nids * sizeof(int32_t));
                o += e->nids;
            }
        }
        if (apply_reserve(&sh->made, &sh->capmade, sh->nmade, (size_t)o, sh->width) < 0) {
            sh->status = -1;
            break;
        }
        for (int32_t j = 0; j < o; j++) {
            if (sh->width == sizeof(int32_t)) {
                ((int32_t *)sh->made)[sh->nmade + (size_t)j] = merged[j];
            } else {
                ((uint16_t *)sh->made)[sh->nmade + (size_t)j] = (uint16_t)merged[j];
            }
        }
        sh->made_len[i] = o;
        sh->nmade += (size_t)o;
    }
    free(merged);
    return NULL;
}

/* run(shares[0]) here and run(shares[1]) on another thread, at once (in turn if no thread
 * can be started). */
static void
apply_in_two(void *(*run)(void *), ApplyShare *shares)
{
    pthread_t helper;
    int helped = pthread_create(&helper, NULL, run, &shares[1]) == 0;
    run(&shares[0]);
    if (helped) {
        pthread_join(helper, NULL);
    } else {
        run(&shares[1]);
    }
}

/* What the merges did in all the words: each merge's count and tokens removed added to
 * counts[] and removed[] (n merges); with totals_only, all the tokens they removed to the
 * last one's. */
static void
applier_totals(const MergeApplier *m, int64_t *counts, int64_t *removed, size_t n)
{
    for (size_t j = 0; j <= m->slot_mask; j++) {
        const PieceSlot *e = &m->slots[j];
        if (m->totals_only) {
            removed[n - 1] += e->weight * (e->len - e->nids);
            continue;
        }
        const int32_t *ev = m->events + e->events;
        for (int32_t k = 0; k < e->nevents; k++, ev += 3) {
            counts[ev[0]] += e->weight * ev[1];
            removed[ev[0]] += e->weight * ev[2];
        }
    }
}

#endif
