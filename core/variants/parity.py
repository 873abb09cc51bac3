"""Parity-aware BPE (Foroutan et al. 2025): each merge is made for the language worst off.

The rules (VARIANTS.md, section 3): training runs on named sources, one per language. After
``global_merges`` merges chosen by all languages together, each merge is the best pair of
one language's training words: the one with the most tokens on its development set (the
same sentences in every language), or with ``ratio``, the one whose compression lags its
target ratio most; ties go to the earlier language. With ``window`` set, a language chosen
more than ``alpha / n`` of the last ``window`` times is passed over. Every merge is made in
every language's training and development words. Training stops when the vocabulary is
full, or when the chosen language has no pair left (or none occurs ``min_frequency`` times).

One merge loop per language (`core.training.merge.MergeLoop`: compiled, else Python) over its
training words, one per language over its development words: a step asks the chosen
language's loop for its best pair and has every loop make it, so the dev token counts and
the per-language pair counts are kept incrementally, never recounted. The provenance of
each merge (`TrainRun.provenance`) gives each language's count of the pair and the language
it was made for. The tokenizer is rank-based BPE, which ``tokenizer.json`` holds exactly.

Example: ``core.train({"en": "en.txt", "hi": "hi.txt"}, core.TrainOptions(32_000, [],
variant=ParityAware(dev={"en": "dev/en.txt", "hi": "dev/hi.txt"})))``.
"""

from __future__ import annotations

import math
import time
from array import array
from collections.abc import Generator, Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, ClassVar

from core.errors import OptionsError, OptionsTypeError
from core.events import Finished, MergeBatch, initial_token_bytes
from core.variants.base import Variant

if TYPE_CHECKING:
    from core.corpus.pretoken_counts import PretokenCounts
    from core.encode.tokenizer import Tokenizer
    from core.events import BatchedTrainEvent
    from core.pretokenize.patterns import Pattern
    from core.training.options import TrainOptions

__all__ = ["ParityAware"]

_BATCH = 64
_BATCH_SECONDS = 0.02


@dataclass(frozen=True)
class ParityAware(Variant):
    """Parity-aware BPE: each merge for the language whose text costs the most tokens.

    Args:
        dev: each language's development text (the same sentences in every language), as
            any source `core.train` takes (a path, a folder, texts); names as the sources'.
        ratio: instead of ``dev``, each language's target compression relative to the
            first's (``{"en": 1.0, "hi": 1.6}``); positive numbers.
        global_merges: the first merges, chosen by all languages together.
        window: the moving-window variant: the last ``window`` choices are remembered, and
            a language chosen more than ``alpha / n`` of them is passed over.
        alpha: the window's allowance (see ``window``); positive.
    """

    dev: Mapping[str, Any] | None = None
    ratio: Mapping[str, float] | None = None
    global_merges: int = 0
    window: int | None = None
    alpha: float = 2.0
    options: TrainOptions | None = field(default=None, compare=False, repr=False)

    name: ClassVar[str] = "parity"
    title: ClassVar[str] = "Parity-aware BPE"
    summary: ClassVar[str] = ("each merge for the language whose text costs the most tokens, so that no "
                              "language pays a premium (named sources, one per language)")
    named_sources: ClassVar[bool] = True

    def __post_init__(self) -> None:
        if (self.dev is None) == (self.ratio is None):
            raise OptionsError("ParityAware needs one of dev={name: text, ...} or ratio={name: number, ...}")
        given = self.dev if self.dev is not None else self.ratio
        if not isinstance(given, Mapping) or not given:
            raise OptionsTypeError(f"{'dev' if self.dev is not None else 'ratio'} must be a mapping from each "
                                   f"source's name, got {given!r}")
        if self.ratio is not None:
            for name, value in self.ratio.items():
                if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) \
                        or value <= 0:
                    raise OptionsError(f"ratio of {name!r} must be a positive number, got {value!r}")
        checked: tuple[tuple[str, object, int], ...] = (("global_merges", self.global_merges, 0),
                                                         ("window", self.window, 1))
        for label, number, low in checked:
            if number is None and label == "window":
                continue
            if isinstance(number, bool) or not isinstance(number, int) or number < low:
                raise OptionsError(f"{label} must be an integer of at least {low}, got {number!r}")
        if isinstance(self.alpha, bool) or not isinstance(self.alpha, (int, float)) or not self.alpha > 0:
            raise OptionsError(f"alpha must be a positive number, got {self.alpha!r}")

    def check(self, options: TrainOptions) -> None:
        for option, plain in (("max_token_length", None), ("initial", None)):
            if getattr(options, option) != plain:
                raise OptionsError(f"{option} is not supported with variant={self!r}; leave it at {plain!r}")

    def bound(self, options: TrainOptions) -> ParityAware:
        return replace(self, options=options)

    def check_sources(self, names: tuple[str, ...]) -> None:
        given = self.dev if self.dev is not None else self.ratio
        assert given is not None
        if set(given) != set(names):
            kind = "dev" if self.dev is not None else "ratio"
            missing, extra = sorted(set(names) - set(given)), sorted(set(given) - set(names))
            raise OptionsError(f"{kind} must name exactly the sources ({', '.join(names)}): "
                               + "; ".join(part for part in (f"missing {', '.join(missing)}" if missing else "",
                                                           f"not a source: {', '.join(extra)}" if extra else "") if part))

    def parameters(self) -> dict[str, object]:
        return {"dev": sorted(self.dev) if self.dev is not None else None,
                "ratio": dict(self.ratio) if self.ratio is not None else None,
                "global_merges": self.global_merges, "window": self.window, "alpha": self.alpha}

    def merge(
        self, counts: list[PretokenCounts], vocab_size: int, specials: list[str]
    ) -> Generator[BatchedTrainEvent]:
        from core.corpus.count_run import count_pretokens
        from core.corpus.named_counts import NamedCounts
        from core.training.merge import MergeLoop
        from core.training.trainer import packed_input

        named = counts.pop(0)
        if not isinstance(named, NamedCounts):
            raise OptionsError(f"{self.title} trains on named sources, one per language: {{name: source, ...}}")
        names = named.sources
        self.check_sources(names)
        options = self.options
        min_frequency = options.min_frequency if options is not None else 1
        _words, _counts, corpus_bytes, counting_done = packed_input(named)
        del _words, _counts
        yield replace(counting_done, sources=names)
        del counting_done

        def loop(share: PretokenCounts) -> tuple[MergeLoop, list[bytes], int]:
            tokens = initial_token_bytes(specials)
            packed = share.packed_words()
            if packed is not None:
                from core.training.merge import PackedWords

                words = PackedWords(*packed)
                lengths, weights = array("q", words.lengths), array("q", words.counts)
                made = MergeLoop(words, None, tokens)
            else:
                word_list, count_list = share.columns()
                lengths, weights = array("q", map(len, word_list)), array("q", count_list)
                made = MergeLoop(word_list, count_list, tokens)
            return made, tokens, sum(map(int.__mul__, lengths, weights))

        train = [loop(named.source(name)) for name in names]
        train_loops = [made for made, _, _ in train]
        tokens = [size for _, _, size in train]
        initial = list(tokens)
        dev_tokens: list[int] = []
        dev_loops = []
        if self.dev is not None:
            pattern = options.compiled_pattern.source if options is not None else "gpt2"
            dev_counts = count_pretokens({name: self.dev[name] for name in names}, specials, pattern=pattern,
                                         workers=options.workers if options is not None else None)
            assert isinstance(dev_counts, NamedCounts)
            for name in names:
                made, _, size = loop(dev_counts.source(name))
                dev_loops.append(made)
                dev_tokens.append(size)
        together = loop(named)[0] if self.global_merges else None
        del named

        token_bytes = initial_token_bytes(specials)
        merges: list[tuple[bytes, bytes]] = []
        history: list[int] = []
        n = len(names)
        corpus_tokens = corpus_bytes
        columns: list[array[int]] = [array("q") for _ in range(7)]
        started = time.monotonic()
        while len(token_bytes) < vocab_size:
            if len(merges) < self.global_merges and together is not None:
                lang = -1
                best = together.best()
            else:
                together = None
                if self.dev is not None:
                    order = sorted(range(n), key=lambda i: -dev_tokens[i])
                else:
                    assert self.ratio is not None
                    targets = [self.ratio[name] / self.ratio[names[0]] for name in names]
                    order = sorted(range(n), key=lambda i: (initial[i] / tokens[i]) / targets[i]
                                   if tokens[i] else math.inf)
                if self.window is not None:
                    recent = history[-self.window:]
                    kept = [i for i in order if recent.count(i) / self.window <= self.alpha / n]
                    order = kept or order
                lang = order[0]
                history.append(lang)
                best = train[lang][0].best()
            if best is None or best[2] < min_frequency:
                break
            a, b, _ = best
            per_source = MergeLoop.merge_all(train_loops, a, b)
            for i, (_count, removed) in enumerate(per_source):
                tokens[i] -= removed
            for i, (_count, removed) in enumerate(MergeLoop.merge_all(dev_loops, a, b)):
                dev_tokens[i] -= removed
            if together is not None:
                together.merge(a, b)
            token_bytes.append(token_bytes[a] + token_bytes[b])
            merges.append((token_bytes[a], token_bytes[b]))
            corpus_tokens -= sum(removed for _, removed in per_source)
            for column, value in zip(columns, (len(token_bytes) - 1, a, b, sum(c for c, _ in per_source),
                                               corpus_tokens, lang)):
                column.append(value)
            columns[6].extend(c for c, _ in per_source)
            if len(columns[0]) == _BATCH or time.monotonic() - started >= _BATCH_SECONDS:
                yield _batch(len(merges), columns)
                columns = [array("q") for _ in range(7)]
                started = time.monotonic()
        if columns[0]:
            yield _batch(len(merges), columns)
        yield Finished(vocab=dict(enumerate(token_bytes)), merges=merges)

    def tokenizer(self, finished: Finished, specials: list[str], pattern: Pattern) -> Tokenizer:
        from core.encode.tokenizer import Tokenizer

        return Tokenizer(finished.vocab, finished.merges, specials, pattern=pattern)


def _batch(merges: int, columns: list[array[int]]) -> MergeBatch:
    new_ids, lefts, rights, counts, tokens, chosen, per_source = columns
    return MergeBatch(merges - len(new_ids), new_ids, lefts, rights, counts, tokens, per_source=per_source,
                      chosen=chosen)
