/* The words' tokens in core/variants/_picky_kernel.c, which includes this file twice:
 * with WORD_T uint16_t and WORD_FN(name) name##16, then int32_t and name##32.
 *
 * Word w's tokens are arena[start .. start + len) as WORD_T: 16 bits while every id is
 * below 65536 (PickyState.wide == 0; half the memory of the largest structure), 32 from
 * the merge that makes id 65536 on (widen_arena). A word's slot has room for its bytes:
 * it never holds more tokens than bytes, so a removal, which lengthens it (walk(x) gives
 * two pieces or more), rewrites it in place. The functions here keep the pairs' counts
 * and word lists exact for the words they change (pair_add), each list's `gone`
 * counting what may have left it a stale entry or a repeat (_picky_lists.h).
 */

/* Merge (a, b) -> z in word w, left to right without overlap: the pairs beside each
 * occurrence move to z (the left neighbour is the output's, maybe z; the right one the
 * input's). *made = the occurrences merged; -1 on memory error. */
static int WORD_FN(merge_word)(PickyState *s, int32_t w, int32_t a, int32_t b, int32_t z, int64_t *made)
{
    WORD_T *t = (WORD_T *)s->arena + s->words[w].start;
    int32_t n = s->words[w].len, i = 0, o;
    int64_t c = s->words[w].count;
    *made = 0;
    while (i + 1 < n && !(t[i] == a && t[i + 1] == b)) i++;
    for (o = i; i < n;) { /* the tokens before the first occurrence stay */
        if (i + 1 < n && t[i] == a && t[i + 1] == b) {
            if (o > 0 && (pair_add(s, t[o - 1], a, -c, w, 0) < 0 || pair_add(s, t[o - 1], z, c, w, 0) < 0)) return -1;
            if (i + 2 < n && (pair_add(s, b, t[i + 2], -c, w, 0) < 0 || pair_add(s, z, t[i + 2], c, w, 0) < 0)) return -1;
            t[o++] = (WORD_T)z;
            i += 2;
            (*made)++;
        } else {
            t[o++] = t[i++];
        }
    }
    s->words[w].len = o;
    return 0;
}

/* Word w with each x replaced by pieces[0:np]: the pairs touching an x go, the pairs
 * touching a piece come, and w joins the merged pieces' word lists (where it may be
 * already: noted). -1 on memory error. */
static int WORD_FN(split_word)(PickyState *s, int32_t w, int32_t x, const int32_t *pieces, int32_t np)
{
    WORD_T *t = (WORD_T *)s->arena + s->words[w].start;
    int32_t n = s->words[w].len, found = 0, o = 0;
    int64_t c = s->words[w].count;
    for (int32_t j = 0; j < n; j++) found += t[j] == x;
    if (found == 0) return 0; /* a stale entry */
    int32_t m = n + found * (np - 1); /* at most the word's bytes: its slot holds them */
    if (reserve((void **)&s->scratch, &s->capscratch, (size_t)n + (size_t)m, sizeof(int32_t)) < 0) return -1;
    int32_t *old = s->scratch, *from_piece = s->scratch + n;
    for (int32_t j = 0; j < n; j++) old[j] = t[j];
    for (int32_t j = 0; j + 1 < n; j++) {
        if ((old[j] == x || old[j + 1] == x) && pair_add(s, old[j], old[j + 1], -c, w, 0) < 0) return -1;
    }
    for (int32_t j = 0; j < n; j++) {
        for (int32_t k = 0; k < (old[j] == x ? np : 1); k++) {
            from_piece[o] = old[j] == x;
            t[o++] = (WORD_T)(old[j] == x ? pieces[k] : old[j]);
        }
    }
    s->words[w].len = m;
    for (int32_t j = 0; j + 1 < m; j++) {
        if ((from_piece[j] || from_piece[j + 1]) && pair_add(s, t[j], t[j + 1], c, w, 1) < 0) return -1;
    }
    for (int32_t k = 0; k < np; k++) { /* (the pieces' lists are settled after the removal) */
        if (pieces[k] < s->first_merged) continue;
        WordList *l = &s->tokens[pieces[k]].words;
        if (list_push(l, w) < 0) return -1;
        (void)list_note(*l);
    }
    return 0;
}

/* Whether word w holds the pair (left, right), or the token left when right < 0. */
static int WORD_FN(word_holds)(const PickyState *s, int32_t w, int32_t left, int32_t right)
{
    const WORD_T *t = (const WORD_T *)s->arena + s->words[w].start;
    int32_t n = s->words[w].len;
    if (right < 0) {
        for (int32_t j = 0; j < n; j++) {
            if (t[j] == left) return 1;
        }
        return 0;
    }
    for (int32_t j = 0; j + 1 < n; j++) {
        if (t[j] == left && t[j + 1] == right) return 1;
    }
    return 0;
}
