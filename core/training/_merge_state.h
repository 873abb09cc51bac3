/* The merge loop's state (core/training/_merge_kernel.c): the words as records over one
 * arena of token ids, the tokens, the pair map, the heap, and one merge's pending changes.
 *
 * Invariants. A word's tokens are arena[start .. start + len): uint16 ids while every id
 * fits (`wide` 0), int32 from the merge that makes id 65536. Between merges the
 * neighbours are all zero and nothing is pending.
 */
#ifndef BPE_MERGE_STATE_H
#define BPE_MERGE_STATE_H

#include "_pair_map.h"
#if defined(__GLIBC__)
#include <malloc.h>
#endif

/* The free pages inside the C heap given back to the system (glibc keeps them otherwise:
 * after a large structure is freed, the memory stays counted against the process). */
static inline void
give_back_free_memory(void)
{
#if defined(__GLIBC__)
    malloc_trim(0);
#endif
}

/* A heap entry. lkey and rkey are the first 8 bytes of the left and right tokens,
 * big-endian and zero-padded: comparing them as integers orders most pairs of equal
 * count without reading the tokens' bytes (a cache miss each). */
typedef struct {
    int64_t count;
    uint64_t lkey;
    uint64_t rkey;
    int32_t left;
    int32_t right;
} HeapItem;

/* What one merge (a, b) -> z has done next to token t so far: on the left side,
 * ``delta`` moved from pair (t, a) to (t, z); on the right side, from (b, t) to (z, t).
 * The merge loop adds occurrences up here and applies them to the pair map once per
 * neighbour (flush_neighbours) instead of twice per occurrence: the first merges touch
 * millions of occurrences but only a few thousand distinct neighbours. */
typedef struct {
    int64_t delta;
    struct PairEntry_ *entry; /* the new pair's entry, while flushing */
    int32_t occurrences;      /* pending holder records of this neighbour */
    int32_t touched;
} Neighbour;

/* A word to record as a holder of a new pair: the neighbour's key, the word. */
typedef struct {
    int32_t key;
    int32_t word;
} Pending;

/* Pending records before a flush (bounds the buffer: 8 MB), which starts at PENDING_FIRST
 * and doubles as a merge needs (most merges late in a run, and a small corpus's, need few). */
#define PENDING_MAX (1 << 20)
#define PENDING_FIRST (1 << 12)

/* Values in one merge's record (and columns step() returns), before its count per named
 * source (one more column, of nsources values a merge). */
#define MERGE_FIELDS 5

/* One distinct pre-token: its tokens are arena[start .. start + len). Merges shorten
 * a word in place (len goes down; the arena's space after it stays unused). */
typedef struct {
    int64_t count;
    uint32_t start; /* 16 bytes a record: the arena is checked to be shorter than 2**32 */
    int32_t len;
} WordRecord;

typedef struct {
    PyObject_HEAD
    WordRecord *records; /* one per word of at least two bytes, grouped by count (see init) */
    void *arena;         /* every word's tokens, one after the other: uint16_t while `wide`
                          * is 0 (half the memory while ids < 65536), else int32_t */
    int wide;
    Py_ssize_t nwords;
    PyObject **tokens;   /* owned refs to each token's bytes, id -> bytes */
    uint64_t *prefixes;  /* id -> first 8 bytes of the token, for HeapItem keys */
    Py_ssize_t ntokens;
    Py_ssize_t captokens;
    PyObject *token_list; /* the caller's token_bytes list, appended to */
    PairMap map;
    HeapItem *heap;
    size_t heaplen;
    size_t heapcap;
    uint64_t *new_pairs;
    size_t nnew;
    size_t capnew;
    Neighbour *neighbours; /* 2 * captokens, by neighbour_key; all zero between merges */
    int32_t *touched;      /* neighbour keys with pending changes, 2 * captokens at most */
    Py_ssize_t ntouched;
    Pending *pending;      /* room for cappending, at most pending_max (PENDING_MAX) */
    Py_ssize_t npending, cappending, pending_max;
    int64_t merges_done;
    /* Pairs with a count below `threshold` are in the map alone (not in the heap) until
     * the heap runs empty; every live pair of count >= threshold is in the heap, so the
     * heap's top is the best pair (refill_heap). Most pairs a merge makes occur a few
     * times and are never merged. */
    int64_t threshold;
    /* With `prune` set, the rare pairs can leave the map too: every pair of count >= floor
     * is in it (with its exact count and holders); a pair that is not has fewer occurrences
     * (the counts of existing pairs only go down, and a merge makes new pairs only). The
     * rarest pairs are most of the map late in a run, and far fewer are ever merged:
     * map_make_room drops those below the threshold when the map would grow, and the pairs
     * are counted again (recount_pairs) if the threshold must come down below the floor.
     * prune 2, for the tests (every path on a few words), prunes at every merge, with a
     * threshold of the best count halved at each refill, and flushes a merge's changes
     * every 8 occurrences. */
    int prune;
    int64_t floor;
    int threshold_shift;       /* the first threshold: the best count >> this */
    int64_t threshold_divisor; /* each refill divides the threshold by this */
    uint64_t *dead;      /* pairs whose count went to 0 in this merge: removed at its end */
    size_t ndead, capdead;
    int finished;
    Py_ssize_t max_token_length; /* 0: no limit */
    Py_ssize_t max_words;        /* 0: no limit */
    int colon_rule;              /* no token holding ": " */
    int64_t min_frequency;
    int32_t *forced;             /* left, right ids of the merges to make first */
    Py_ssize_t nforced;
    Py_ssize_t forced_done;
    Py_ssize_t nsources;         /* named sources (provenance), 0 when none: */
    uint16_t *record_sources;    /* each record's source */
    int has_chosen;              /* merge(left, right): the next merge is this pair */
    int forced_totals_only;      /* forced_counts=False: made at the start, the forced merges report
                                  * no counts (0), and the last one all the tokens they removed */
    int32_t chosen_left, chosen_right;
    int forced_applied;          /* made in the words at the start (forced_prepare): */
    int64_t *forced_counts;      /* each one's count then */
    int64_t *forced_removed;     /* and the tokens it removed */
    int pairs_ready; /* the pairs counted and the heap made (ready_pairs, at the first merge) */
    int broken; /* a step failed midway: the state may be half-updated, so no step runs again */
    int steps_untrimmed; /* steps since the last malloc_trim */
} MergeState;

/* The first 8 bytes of b, big-endian, zero-padded: for two tokens whose prefixes
 * differ, the integer order is their lexicographic order (a token that ends first
 * pads with 0, below any byte it is compared with when the prefixes differ there). */
static uint64_t
token_prefix(PyObject *b)
{
    const unsigned char *p = (const unsigned char *)PyBytes_AS_STRING(b);
    Py_ssize_t n = PyBytes_GET_SIZE(b);
    uint64_t key = 0;
    for (int i = 0; i < 8; i++) {
        key = key << 8 | (i < n ? p[i] : 0);
    }
    return key;
}

#endif /* BPE_MERGE_STATE_H */
