/* Which pairs the merge loop keeps where (core/training/_merge_kernel.c): the heap holds
 * the pairs from the threshold up, the map the pairs from the floor up.
 *
 * Invariants. floor <= threshold. Every live pair of count >= threshold is in the heap
 * (_merge_heap.h). Every pair of count >= floor is in the map, with its exact count and
 * holders; a pair that is not occurs fewer than floor times (floor 0: every pair is
 * there). This holds as pairs leave the map because the counts of existing pairs only go
 * down: a merge makes new pairs only, each holding its new token. The threshold only
 * comes down; the floor goes up to it when the rare pairs are pruned (map_make_room), and
 * back down when they are counted again (count_token_pairs, from the words).
 */
#ifndef BPE_MERGE_THRESHOLD_H
#define BPE_MERGE_THRESHOLD_H

#include "_merge_heap.h"
#include "_merge_words.h"

/* The slots for a map of `cap` slots left with `kept` pairs after pruning: room for four
 * times as many, so that the rare pairs the next merges make fill it for a while before it
 * is pruned again (a pruning reads and rewrites the whole map); the same slots unless that
 * is more, or less than half (the map rebuilt in place, its pages kept). */
static size_t
pruned_cap(size_t kept, size_t cap)
{
    size_t want = 4 * kept > MAP_MIN_CAP ? 4 * kept : MAP_MIN_CAP;
    return want > cap || want < cap / 2 ? want : cap;
}

/* The pairs of the words counted in a new map (tally_token_pairs, list_token_holders).
 * With `prune` set, only those of count >= min(limit, best count >> shift) are kept (the
 * new floor), else all. 0, or -1 with MemoryError set. */
static int
count_token_pairs(MergeState *s, int64_t limit, int shift)
{
    if (tally_token_pairs(s) < 0) {
        return -1;
    }
    int64_t floor = 0;
    if (s->prune) {
        int64_t from_best = best_count(s) >> shift;
        floor = limit < from_best ? limit : from_best;
        size_t kept = 0;
        for (size_t j = 0; j < s->map.cap; j++) {
            PairEntry *e = &s->map.slots[j];
            if (e->key != EMPTY_KEY && entry_dropped(e, floor, -1)) {
                e->holders = NULL; /* (a tally, not a list: nothing to free) */
            } else {
                kept += e->key != EMPTY_KEY;
            }
        }
        size_t cap = 2 * kept > MAP_MIN_CAP ? 2 * kept : MAP_MIN_CAP; /* (read whole next: no more room) */
        if (kept < s->map.used && map_rebuild(&s->map, cap < s->map.cap ? cap : s->map.cap, floor, -1) < 0) {
            PyErr_NoMemory();
            return -1;
        }
    }
    s->floor = floor;
    return list_token_holders(s);
}

/* Every pair counted again from the words, in a new map (pairs below the floor are not in
 * the old one), keeping those of count >= min(limit, best count) with `prune` set. 0, or
 * -1 with MemoryError set. */
static int
recount_pairs(MergeState *s, int64_t limit)
{
    map_free(&s->map);
    return count_token_pairs(s, limit, 0);
}

/* Room in the map for `need` more pairs (map_reserve). With `prune` set, when the map would
 * grow and a quarter of its pairs or more are below the threshold, those go first (not the
 * pairs of token `keep`: the merge being made, whose counts are not all in yet), and the
 * floor comes up to the threshold. -1 when out of memory. */
static int
map_make_room(MergeState *s, size_t need, int32_t keep)
{
    PairMap *m = &s->map;
    int full = (m->used + need) * 4 > m->cap * 3;
    if (s->prune && s->threshold > 0 && (full || s->prune == 2)) {
        size_t dropped = 0;
        for (size_t j = 0; j < m->cap; j++) {
            dropped += m->slots[j].key != EMPTY_KEY && entry_dropped(&m->slots[j], s->threshold, keep);
        }
        if (dropped > 0 && (dropped * 4 >= m->used || s->prune == 2)) {
            if (map_rebuild(m, pruned_cap(m->used - dropped + need, m->cap), s->threshold, keep) < 0) {
                return -1;
            }
            s->floor = s->threshold;
        }
    }
    return map_reserve(m, need);
}

/* The heap is empty, or its best pair's count (`ceiling`) is below the threshold: the
 * threshold goes down (to a 16th: threshold_divisor), to at most `ceiling` (so that every
 * pair of that count is in the heap when it is chosen) and to at most the best count left,
 * and the heap is made anew from the map: every live pair that reaches the threshold, once
 * (no stale items). If the floor is above the new threshold, the pairs are counted again
 * first. A read of the map, a few times a run. -1 with MemoryError set. */
static int
refill_heap(MergeState *s, int64_t ceiling)
{
    if (s->threshold == 0) {
        return 0; /* every live pair has been offered to the heap since: none is left to choose */
    }
    int64_t threshold = s->threshold / s->threshold_divisor;
    threshold = threshold < ceiling ? threshold : ceiling;
    int64_t best = best_count(s);
    if ((threshold < best ? threshold : best) < s->floor) {
        if (recount_pairs(s, threshold) < 0) {
            return -1;
        }
        best = best_count(s);
    }
    s->threshold = threshold < best ? threshold : best;
    return heap_build(s);
}

#endif /* BPE_MERGE_THRESHOLD_H */
