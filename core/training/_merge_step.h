/* One merge of the merge loop (core/training/_merge_kernel.c): the best allowed pair, its
 * words rewritten, and the changes next to it applied to the pair map and the heap.
 *
 * Invariant. A merge (a, b) -> z gathers its changes per neighbour token (delta off the
 * old pair, onto the new one) and applies them once per neighbour (flush_neighbours), so
 * after a merge the map, the holders and the heap are exactly as a recount would make
 * them, up to stale holders and stale heap items.
 */
#ifndef BPE_MERGE_STEP_H
#define BPE_MERGE_STEP_H

#include "_merge_threshold.h"

/* The neighbour key of token t on the left (side 0) or right (side 1) of a merge. */
static inline int32_t
neighbour_key(int32_t t, int side)
{
    return 2 * t + side;
}

/* How many touched neighbours ahead flush_neighbours asks for their map slots ... */
#define FLUSH_PREFETCH 8
/* ... when the map is larger than a core's cache (a smaller one is read from the cache anyway). */
#define FLUSH_PREFETCH_BYTES ((size_t)1 << 20)

/* Apply the pending changes of merge (a, b) -> z: for each touched neighbour, its
 * delta off the old pair and onto the new one, then the pending words as holders of the
 * new pairs, in the order the merge met them (skipping an immediate repeat, as
 * entry_add_holder does). Leaves the neighbours zero and nothing pending. */
static int
flush_neighbours(MergeState *s, int32_t a, int32_t b, int32_t z)
{
    /* each touched neighbour adds at most its new pair */
    if (map_make_room(s, (size_t)s->ntouched, z) < 0) {
        return -1;
    }
    int ask_ahead = s->map.cap * sizeof(PairEntry) > FLUSH_PREFETCH_BYTES;
    for (Py_ssize_t k = 0; k < s->ntouched; k++) {
        if (ask_ahead && k + FLUSH_PREFETCH < s->ntouched) { /* the map's slots are random and far apart: ask ahead */
            int32_t ahead = s->touched[k + FLUSH_PREFETCH];
            int32_t u = ahead >> 1;
            int ahead_left = (ahead & 1) == 0;
            __builtin_prefetch(&s->map.slots[home_slot(hash_key(ahead_left ? pair_key(u, a) : pair_key(b, u)), s->map.cap)], 1);
            __builtin_prefetch(&s->map.slots[home_slot(hash_key(ahead_left ? pair_key(u, z) : pair_key(z, u)), s->map.cap)], 1);
        }
        int32_t key = s->touched[k];
        Neighbour *nb = &s->neighbours[key];
        int32_t t = key >> 1;
        int left = (key & 1) == 0;
        PairEntry *old = map_find(&s->map, left ? pair_key(t, a) : pair_key(b, t));
        if (old != NULL) { /* (else a rare pair, pruned: _merge_threshold.h) */
            old->count -= nb->delta;
            if (old->count == 0 && keys_append(&s->dead, &s->ndead, &s->capdead, old->key) < 0) {
                return -1;
            }
        }
        uint64_t new_key = left ? pair_key(t, z) : pair_key(z, t);
        PairEntry *e = map_get_or_add(&s->map, new_key);
        e->count += nb->delta;
        /* new in this merge (and so listed in new_pairs) the first time a flush meets it:
         * only this merge's flushes list holders for it, and each gives it some */
        int first = e->holders == NULL;
        if (entry_reserve_holders(&s->map.block, e, nholders_of(e) + nb->occurrences) < 0) {
            return -1;
        }
        nb->entry = e;
        if (first) {
            if (s->nnew == s->capnew) {
                size_t cap = s->capnew ? s->capnew * 2 : 256;
                uint64_t *p = PyMem_Realloc(s->new_pairs, cap * sizeof(uint64_t));
                if (p == NULL) {
                    return -1;
                }
                s->new_pairs = p;
                s->capnew = cap;
            }
            s->new_pairs[s->nnew++] = new_key;
        }
    }
    for (Py_ssize_t k = 0; k < s->npending; k++) {
        PairEntry *e = s->neighbours[s->pending[k].key].entry;
        int32_t w = s->pending[k].word;
        int32_t *list = e->holders; /* room reserved above */
        if (list[0] == 0 || list[list[0]] != w) {
            list[++list[0]] = w;
        }
    }
    for (Py_ssize_t k = 0; k < s->ntouched; k++) {
        memset(&s->neighbours[s->touched[k]], 0, sizeof(Neighbour));
    }
    s->ntouched = 0;
    s->npending = 0;
    return 0;
}

/* Occurrence of the merge in word w (count c) next to token t, on the left (side 0)
 * or right (side 1): noted, applied by flush_neighbours. */
static inline int
note_neighbour(MergeState *s, int32_t t, int side, int64_t c, int32_t w, int32_t a, int32_t b,
               int32_t z)
{
    int32_t key = neighbour_key(t, side);
    Neighbour *nb = &s->neighbours[key];
    if (!nb->touched) {
        nb->touched = 1;
        s->touched[s->ntouched++] = key;
    }
    nb->delta += c;
    nb->occurrences++;
    s->pending[s->npending].key = key;
    s->pending[s->npending].word = w;
    if (++s->npending < s->cappending) {
        return 0;
    }
    if (s->cappending < s->pending_max) {
        Pending *p = PyMem_Realloc(s->pending, 2 * (size_t)s->cappending * sizeof(Pending));
        if (p == NULL) {
            PyErr_NoMemory();
            return -1;
        }
        s->pending = p;
        s->cappending *= 2;
        return 0;
    }
    return flush_neighbours(s, a, b, z);
}

/* How many holders ahead the merge loop prefetches a word's record, and its tokens. */
#define PREFETCH_RECORD 32
#define PREFETCH_TOKENS 16


/* Merge (a, b) -> z in one word (its tokens of type T), noting the neighbours; the
 * tokens removed are added to *removed, the pair's occurrences in the word (overlapping
 * ones too: a a a holds (a, a) twice) to *occurrences. 0, or -1 on memory error. */
#define DEFINE_MERGE_WORD(NAME, T)                                                              \
    static inline int NAME(MergeState *s, T *word, WordRecord *record, int32_t w, int32_t a,     \
                           int32_t b, int32_t z, int64_t *removed, int32_t *occurrences)         \
    {                                                                                            \
        int32_t n = record->len;                                                                 \
        int64_t c = record->count;                                                               \
        int32_t i = 0, o = 0; /* read and write positions; o <= i */                            \
        int merged = 0;                                                                          \
        while (i < n) {                                                                          \
            if (i + 1 < n && word[i] == a && word[i + 1] == b) {                                 \
                if (o > 0 && note_neighbour(s, word[o - 1], 0, c, w, a, b, z) < 0) {             \
                    return -1;                                                                   \
                }                                                                                \
                if (i + 2 < n && note_neighbour(s, word[i + 2], 1, c, w, a, b, z) < 0) {         \
                    return -1;                                                                   \
                }                                                                                \
                word[o++] = (T)z;                                                                \
                *removed += c;                                                                   \
                *occurrences += 1 + (a == b && i + 2 < n && word[i + 2] == a);                   \
                merged = 1;                                                                      \
                i += 2;                                                                          \
            } else {                                                                             \
                word[o++] = word[i++];                                                           \
            }                                                                                    \
        }                                                                                        \
        if (merged) {                                                                            \
            record->len = o;                                                                     \
        }                                                                                        \
        return 0;                                                                                \
    }

DEFINE_MERGE_WORD(merge_word16, uint16_t)
DEFINE_MERGE_WORD(merge_word32, int32_t)

/* Whether the token left + right passes SuperBPE's stage-2 rule (max_words, colon_rule). */
static int
words_allowed(const MergeState *s, int32_t left, int32_t right)
{
    PyObject *parts[2] = {s->tokens[left], s->tokens[right]};
    Py_ssize_t words = 0;
    char prev = ' ';
    for (int k = 0; k < 2; k++) {
        const char *p = PyBytes_AS_STRING(parts[k]);
        Py_ssize_t n = PyBytes_GET_SIZE(parts[k]);
        for (Py_ssize_t i = 0; i < n; i++) {
            char c = p[i];
            if (c == ' ') {
                if (s->colon_rule && prev == ':') {
                    return 0;
                }
            } else if (prev == ' ') {
                words++;
            }
            prev = c;
        }
    }
    return s->max_words == 0 || words <= s->max_words;
}

/* The pairs of the words counted into the map, and the heap made, before the first merge
 * (not when the state is made: by then the caller has let go of the words it passed in,
 * and the memory that reading them took is given back first). 0, or -1 with an exception set. */
static int
ready_pairs(MergeState *s)
{
    if (s->pairs_ready) {
        return 0;
    }
    give_back_free_memory();
    if (s->forced_applied ? count_token_pairs(s, INT64_MAX, s->threshold_shift) < 0 : count_byte_pairs(s) < 0) {
        return -1;
    }
    /* the heap: the pairs from a 4096th of the best count (threshold_shift), heapified; the
     * rarer ones stay in the map alone (refill_heap lowers the threshold when the heap runs
     * empty) */
    s->threshold = best_count(s) >> s->threshold_shift;
    if (heap_build(s) < 0) {
        return -1;
    }
    s->pairs_ready = 1;
    return 0;
}

/* The best pair (highest count, ties to the greater bytes) that may be merged, at the top
 * of the heap (not popped) in *top: 1, or 0 when no pair is left, -1 on error. */
static int
best_pair(MergeState *s, HeapItem *top)
{
    for (;;) {
        if (s->heaplen == 0 && refill_heap(s, INT64_MAX) < 0) {
            return -1;
        }
        if (s->heaplen == 0) {
            return 0;
        }
        *top = s->heap[0];
        PairEntry *e = map_find(&s->map, pair_key(top->left, top->right));
        int64_t actual = e ? e->count : 0;
        if (actual == top->count && actual < s->threshold) {
            /* low pairs may tie with it or beat it: into the heap first */
            if (refill_heap(s, actual) < 0) {
                return -1;
            }
            continue;
        }
        if (actual == top->count) {
            if (s->max_token_length > 0 &&
                PyBytes_GET_SIZE(s->tokens[top->left]) + PyBytes_GET_SIZE(s->tokens[top->right]) >
                    s->max_token_length) {
                heap_pop(s); /* never chosen; its count only goes down, so never pushed again */
                continue;
            }
            if ((s->max_words > 0 || s->colon_rule) && !words_allowed(s, top->left, top->right)) {
                heap_pop(s); /* the same: never chosen */
                continue;
            }
            return 1;
        }
        heap_pop(s);
        if (actual > 0 && heap_offer(s, actual, top->left, top->right) < 0) {
            return -1;
        }
    }
}

/* One merge: fills out[0..4] with (left, right, new_id, count, tokens_removed) (and its
 * count per named source after them) and returns 1; returns 0 when no pair is left, -1
 * on error. The merge is the next forced one, else the pair merge() chose, else the best. */
static int
merge_once(MergeState *s, int64_t *out)
{
    HeapItem top;
    if (ready_pairs(s) < 0) {
        return -1;
    }
    memset(out + MERGE_FIELDS, 0, (size_t)s->nsources * sizeof(int64_t));
    int from_list = s->forced_done < s->nforced;
    int forced = from_list || s->has_chosen;
    if (forced) {
        /* a forced merge: made whatever its count (0 if the pair does not occur) */
        if (from_list) {
            top.left = s->forced[2 * s->forced_done];
            top.right = s->forced[2 * s->forced_done + 1];
            s->forced_done++;
        } else {
            top.left = s->chosen_left;
            top.right = s->chosen_right;
            s->has_chosen = 0;
        }
        if (top.left < 0 || top.right < 0 || top.left >= s->ntokens || top.right >= s->ntokens) {
            PyErr_SetString(PyExc_ValueError, "a forced merge uses a token id that does not exist yet");
            return -1;
        }
        if (from_list && s->forced_applied) {
            top.count = s->forced_counts[s->forced_done - 1];
        } else {
            PairEntry *e = map_find(&s->map, pair_key(top.left, top.right));
            if (e == NULL && s->floor > 0) { /* perhaps a rare pair, pruned: all counted again */
                if (recount_pairs(s, 0) < 0) {
                    return -1;
                }
                e = map_find(&s->map, pair_key(top.left, top.right));
            }
            top.count = e ? e->count : 0;
        }
    } else {
        int found = best_pair(s, &top);
        if (found <= 0) {
            return found;
        }
        if (top.count < s->min_frequency) {
            return 0;
        }
        heap_pop(s);
    }
    int32_t a = top.left, b = top.right;
    if (s->ntokens >= INT32_MAX) {
        PyErr_SetString(PyExc_OverflowError, "too many tokens");
        return -1;
    }
    int32_t z = (int32_t)s->ntokens;
    if (!s->wide && z > 0xFFFF && widen_arena(s) < 0) {
        return -1;
    }

    if (from_list && s->forced_applied) { /* made at the start, its token too: its figures were kept */
        if (PyList_Append(s->token_list, s->tokens[z]) < 0) {
            return -1;
        }
        s->ntokens++;
        s->merges_done++;
        out[0] = a;
        out[1] = b;
        out[2] = z;
        out[3] = top.count;
        out[4] = s->forced_removed[s->forced_done - 1];
        return 1;
    }

    /* the new token's bytes, in the C table and in the caller's list */
    PyObject *ba = s->tokens[a], *bb = s->tokens[b];
    Py_ssize_t la = PyBytes_GET_SIZE(ba), lb = PyBytes_GET_SIZE(bb);
    PyObject *bz = PyBytes_FromStringAndSize(NULL, la + lb);
    if (bz == NULL) {
        return -1;
    }
    memcpy(PyBytes_AS_STRING(bz), PyBytes_AS_STRING(ba), (size_t)la);
    memcpy(PyBytes_AS_STRING(bz) + la, PyBytes_AS_STRING(bb), (size_t)lb);
    if (PyList_Append(s->token_list, bz) < 0) {
        Py_DECREF(bz);
        return -1;
    }
    if (s->ntokens == s->captokens && grow_tokens(s, s->captokens * 2) < 0) {
        Py_DECREF(bz);
        return -1;
    }
    s->prefixes[s->ntokens] = token_prefix(bz);
    s->tokens[s->ntokens++] = bz; /* the reference from FromStringAndSize */

    /* take the holders of the merged pair; its count is gone with its occurrences */
    PairEntry *best = map_find(&s->map, pair_key(a, b));
    int32_t *holders = NULL;
    int32_t nholders = 0;
    int occurs = best != NULL;
    if (occurs) { /* a forced pair may not occur at all */
        holders = best->holders;
        nholders = nholders_of(best);
        best->holders = NULL;
        best->count = 0;
    }

    s->nnew = 0;
    int64_t removed = 0;
    int failed = 0;
    int32_t single = holders != NULL && holders_inline(holders) ? inline_word(holders) : 0;
    const int32_t *list = holders == NULL ? NULL : holders_inline(holders) ? &single : holders + 1; /* after the header */
    for (int32_t h = 0; h < nholders && !failed; h++) {
        /* the holders are mostly far apart in memory: fetch a record ahead, and the
         * tokens of a nearer word whose record was fetched before */
        if (h + PREFETCH_RECORD < nholders) {
            __builtin_prefetch(&s->records[list[h + PREFETCH_RECORD]]);
        }
        if (h + PREFETCH_TOKENS < nholders) {
            uint32_t start = s->records[list[h + PREFETCH_TOKENS]].start;
            __builtin_prefetch(s->wide ? (void *)((int32_t *)s->arena + start) : (void *)((uint16_t *)s->arena + start));
        }
        WordRecord *record = &s->records[list[h]];
        int32_t occurrences = 0;
        if (s->wide) {
            failed = merge_word32(s, (int32_t *)s->arena + record->start, record, list[h], a, b, z, &removed,
                                  &occurrences) < 0;
        } else {
            failed = merge_word16(s, (uint16_t *)s->arena + record->start, record, list[h], a, b, z, &removed,
                                  &occurrences) < 0;
        }
        if (s->nsources > 0) { /* the merge's count per source (out after the five fields) */
            out[MERGE_FIELDS + s->record_sources[list[h]]] += occurrences * record->count;
        }
    }
    holders_free(&s->map.block, holders, 1 + nholders);
    if (!failed && flush_neighbours(s, a, b, z) < 0) {
        failed = 1;
    }
    if (failed) {
        PyErr_NoMemory();
        return -1;
    }
    if (occurs) {
        /* overlapping occurrences (a a a) shifted counts off the merged pair itself; it is
         * gone (the map may have moved: find it again) */
        PairEntry *merged = map_find(&s->map, pair_key(a, b));
        if (merged != NULL) { /* (else pruned meanwhile) */
            merged->count = 0;
        }
    }
    s->merges_done++;
    for (size_t k = 0; k < s->nnew; k++) {
        uint64_t key = s->new_pairs[k];
        PairEntry *e = map_find(&s->map, key);
        if (e->count > 0 &&
            heap_offer(s, e->count, key_left(key), key_right(key)) < 0) {
            return -1;
        }
        /* its holders are all listed: no merge after this one adds to them (every pair a
         * merge makes holds its new token), so the power-of-two room can go, and a list of
         * one word becomes that word, inline */
        int32_t n = nholders_of(e);
        if (n == 1 && !holders_inline(e->holders)) {
            int32_t word = e->holders[1];
            PyMem_Free(e->holders);
            e->holders = inline_holders(word);
        } else if (n > 0 && holder_capacity(n) - n >= 8) {
            int32_t *h = PyMem_Realloc(e->holders, (1 + (size_t)n) * sizeof(int32_t));
            if (h != NULL) {
                e->holders = h;
            }
        }
    }
    /* pairs gone (count 0: never merged, never made again, since a pair is only made
     * with a new token) leave the map, their holders freed */
    if (occurs && keys_append(&s->dead, &s->ndead, &s->capdead, pair_key(a, b)) < 0) {
        return -1;
    }
    for (size_t k = 0; k < s->ndead; k++) {
        PairEntry *e = map_find(&s->map, s->dead[k]);
        if (e != NULL && e->count == 0) {
            map_delete(&s->map, e);
        }
    }
    s->ndead = 0;
    out[0] = a;
    out[1] = b;
    out[2] = z;
    out[3] = top.count;
    out[4] = removed;
    return 1;
}

#endif /* BPE_MERGE_STEP_H */
