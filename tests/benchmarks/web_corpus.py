"""A deterministic web-like corpus of any size, streamed to disk (used by ``make_corpus.py --kind web``).

Real crawls have a long tail: a few words make most of the text and millions occur a
handful of times, which is what makes a trainer's memory grow with the corpus. This
generator draws words from Zipf-distributed vocabularies (rank ``r`` has weight
``1 / r**s``; short words get the low ranks, as in natural language) and builds
documents of five kinds, separated by ``<|endoftext|>``:

- prose (most of it): sentences of Latin-script words, capitalised starts, commas and
  full stops, quotes and parentheses, numbers (years, counts, prices), paragraphs;
- code: indented lines of identifiers (snake_case and dotted), keywords, operators,
  brackets and numbers;
- non-Latin prose: Cyrillic, Greek, Arabic, Hebrew, Devanagari, Thai, CJK and Hangul
  words from their own Zipf vocabularies, with a few emoji;
- lists and tables: numbers, dates, percentages and short labels.

Everything comes from one ``numpy`` generator seeded by ``--seed``: the same command
(and numpy version) writes the same file. Text is produced and written a block of a few
MB at a time, so a 10 GB file needs no more memory than a small one.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import IO

import numpy as np

SEPARATOR = "<|endoftext|>"

LATIN_ONSETS = (
    "b c d f g h j k l m n p r s t v w y z bl br ch cl cr dr fl fr gl gr kn ph pl pr qu sc sh "
    "sk sl sm sn sp st str sw th tr tw wh wr"
).split() + [""] * 3
LATIN_VOWELS = "a e i o u a e i o u ea ee ai ou io ie oo au".split()
LATIN_CODAS = "- - - n r s t l m d ng nt st rd ck ll ss th sh x ght nd rs ts".split()

SCRIPTS = {
    "cyrillic": ("бвгджзклмнпрстфхцчшщ", "аеиоуыэюяё"),
    "greek": ("βγδζθκλμνξπρστφχψ", "αεηιουω"),
    "arabic": ("بتثجحخدذرزسشصضطظعغفقكلمنهوي", "اوي"),
    "hebrew": ("בגדהזחטכלמנסעפצקרשת", "אוי"),
    "devanagari": ("कखगघचछजझटठडढणतथदधनपफबभमयरलवशषसह", "ािीुूेैोौं"),
    "thai": ("กขคงจฉชซญดตถทธนบปผพฟภมยรลวศษสหอฮ", "ะาิีึืุูเแโใไ่้"),
    "cjk": ("的一是不了人我在有他这中大来上个国到说们为子和你地出道也时年得就那要下以生会自着去之过家学对可她里后小么心多天而能好都然没日于起还发成事只作当想看文无开手十用主行方又如前所本见经头面公同三已老从动两长知民样现分将外但身些与高意进把法此实回二理美点月明其种声全工己话儿者向情部正名定女问力机给等几很业最间新什打便位因重被走电四第门相次东政海口使教西再平真听世气信北少关并内加化由却代军产入先山五太水万市眼体别处总才场师书比住员九笑性通目华报立马命张活难神数件安表原车白应路期叫死常提感金何更反合放做系计", ""),
    "hangul": ("".join(chr(0xAC00 + 28 * k) for k in range(0, 399, 7)), ""),
}
EMOJI = ["😀", "😂", "🙂", "👍", "👍🏽", "🎉", "🚀", "❤️", "🔥", "✨", "🌍", "🤔", "💡", "✅"]
KEYWORDS = (
    "def return if else elif for while in not and or import from class self None True False with as try "
    "except lambda yield const let var function new this null int char void static struct"
).split()
OPERATORS = "( ) ( ) [ ] { } = == != += -> => . , , : ; + - * / % < > <= >= && || ! :: ' \" # // /* */ @ & | ^ ~ ? _".split()
PROSE_SEPARATORS = [" "] * 90 + [", ", ", ", ". ", ". ", ". ", "; ", ": ", "! ", "? ", " - ", " (", ") ", "\" ", " \"", "'s ", ".\n\n", ".\n", "... ", " & ", "/"]


class _Zipf:
    """Draws indices ``0..n-1`` with weight ``1 / (i + 1) ** s``, nearly: the inverse of the
    distribution function tabulated at 2**22 points, uniform between them (a binary search
    per draw made the generator five times slower)."""

    POINTS = 1 << 22

    def __init__(self, n: int, s: float) -> None:
        weights = 1.0 / np.arange(1, n + 1, dtype=np.float64) ** s
        cdf = np.cumsum(weights)
        cdf /= cdf[-1]
        grid = np.arange(self.POINTS + 1, dtype=np.float64) / self.POINTS
        self.lut = np.minimum(np.searchsorted(cdf, grid), n - 1).astype(np.int64)
        self.n = n

    def draw(self, rng: np.random.Generator, k: int) -> np.ndarray:
        x = rng.random(k) * self.POINTS
        j = x.astype(np.int64)
        lo = self.lut[j]
        return np.minimum(lo + ((x - j) * (self.lut[j + 1] - lo + 1)).astype(np.int64), self.n - 1)


def _latin_words(rng: np.random.Generator, n: int) -> np.ndarray:
    """``n`` distinct pseudo-English words, shortest first (they get the frequent ranks)."""
    onsets, vowels = np.array(LATIN_ONSETS, dtype=object), np.array(LATIN_VOWELS, dtype=object)
    codas = np.array([c.strip("-") for c in LATIN_CODAS], dtype=object)
    seen: dict[str, None] = {}
    while len(seen) < n:
        k = 2 * (n - len(seen)) + 1000
        syllables = rng.choice([1, 1, 2, 2, 2, 3, 3, 4, 5], size=k)
        words = np.full(k, "", dtype=object)
        for j in range(5):
            more = syllables > j
            m = int(more.sum())
            words[more] += onsets[rng.integers(0, len(onsets), m)] + vowels[rng.integers(0, len(vowels), m)] \
                + codas[rng.integers(0, len(codas), m)]
        for w in words:
            if w and len(seen) < n:
                seen.setdefault(w)
    out = list(seen)
    order = np.lexsort((rng.random(len(out)), np.array([len(w) for w in out])))
    return np.array(out, dtype=object)[order]


def _script_words(rng: np.random.Generator, n: int, letters: str, marks: str) -> np.ndarray:
    seen: dict[str, None] = {}
    marks = marks or " "
    while len(seen) < n:
        k = 4 * n
        lengths = rng.integers(1, 7, k).tolist()
        picks = rng.integers(0, len(letters), 6 * k).tolist()
        signs = rng.integers(0, 2 * len(marks), 6 * k).tolist()
        at = 0
        for length in lengths:
            word = "".join(letters[picks[at + j]] + (marks[signs[at + j]] if signs[at + j] < len(marks) else "")
                           for j in range(length))
            at += length
            seen.setdefault(word.replace(" ", ""))
            if len(seen) >= n:
                break
    return np.array(sorted(seen, key=len), dtype=object)


class WebCorpus:
    """Yields the corpus as text blocks; `write` streams ``size`` bytes of it to a file.

    Every document is a sequence of *pieces* (words, numbers, separators, code tokens),
    drawn as indices into one table of byte strings; a block's text is one numpy gather
    from the table's bytes (no Python string per word), about 50 MB/s.
    """

    def __init__(self, seed: int = 1, words: int = 1_200_000, zipf_s: float = 1.07, numbers: int = 500_000) -> None:
        rng = self.rng = np.random.default_rng(seed)
        latin = _latin_words(rng, words)
        capital = [w[:1].upper() + w[1:] for w in latin[:50_000]]
        scripts = [_script_words(rng, 40_000, a, b) for a, b in SCRIPTS.values()]
        number_strings = self._number_table(numbers)
        tables: dict[str, list[str]] = {
            "latin": list(latin), "capital": capital, "numbers": number_strings,
            **{f"script{k}": list(t) for k, t in enumerate(scripts)},
            "emoji": EMOJI, "code": KEYWORDS + OPERATORS, "prose_sep": PROSE_SEPARATORS,
            "code_sep": ["", "", " ", " ", " ", "\n", "\n    ", "\n        ", "\n\t"],
            "foreign_sep": [" "] * 12 + ["", ", ", "。", "، ", ". ", "\n"],
            "table_sep": [" | ", " | ", "\t", ", ", "\n"],
            "underscore": ["_"], "end": [SEPARATOR], "newline": ["\n"],
        }
        self.base: dict[str, int] = {}
        self.size: dict[str, int] = {}
        pieces: list[bytes] = []
        for name, table in tables.items():
            self.base[name], self.size[name] = len(pieces), len(table)
            pieces += [p.encode("utf-8") for p in table]
        self.lengths = np.fromiter(map(len, pieces), dtype=np.int64, count=len(pieces))
        self.starts = np.cumsum(self.lengths) - self.lengths
        self.blob = np.frombuffer(b"".join(pieces), dtype=np.uint8)
        self.zipf = _Zipf(words, zipf_s)
        self.zipf_small = _Zipf(50_000, zipf_s)
        self.zipf_script = _Zipf(40_000, zipf_s)
        self.zipf_numbers = _Zipf(numbers, 0.9)

    def _number_table(self, k: int) -> list[str]:
        """Numbers as text: years, counts, prices and percentages (drawn with a Zipf over the table)."""
        rng = self.rng
        kind = rng.integers(0, 5, k)
        ints = (10 ** rng.uniform(0, 7, k)).astype(np.int64)
        years = rng.integers(1800, 2030, k)
        out = np.where(kind == 0, years, ints).astype(str).astype(object)
        cents = np.char.zfill(rng.integers(0, 100, k).astype(str), 2).astype(object)
        price = kind == 2
        out[price] = "$" + out[price] + "." + cents[price]
        pct = kind == 3
        out[pct] = out[pct] + "." + cents[pct] + "%"
        return list(out)

    def _pick(self, name: str, k: int, zipf: _Zipf | None = None) -> np.ndarray:
        if zipf is None:
            return self.base[name] + self.rng.integers(0, self.size[name], k)
        return self.base[name] + zipf.draw(self.rng, k)

    def _interleave(self, items: np.ndarray, seps: np.ndarray) -> np.ndarray:
        out = np.empty(2 * len(items), dtype=np.int64)
        out[0::2], out[1::2] = items, seps
        return out

    def prose(self, n: int) -> np.ndarray:
        rng = self.rng
        words = self._pick("latin", n, self.zipf)
        caps = rng.random(n) < 0.08
        words[caps] = self._pick("capital", int(caps.sum()), self.zipf_small)
        nums = rng.random(n) < 0.03
        words[nums] = self._pick("numbers", int(nums.sum()), self.zipf_numbers)
        return self._interleave(words, self._pick("prose_sep", n))

    def code(self, n: int) -> np.ndarray:
        rng = self.rng
        tokens = self._pick("latin", n, self.zipf_small)
        pick = rng.random(n)
        other = pick >= 0.45
        tokens[other] = self._pick("code", int(other.sum()))
        nums = pick > 0.93
        tokens[nums] = self._pick("numbers", int(nums.sum()), self.zipf_numbers)
        seps = self._pick("code_sep", n)
        snake = (rng.random(n) < 0.15) & ~other  # identifier_identifier
        seps[snake] = self.base["underscore"]
        return np.append(self._interleave(tokens, seps), self.base["newline"])

    def foreign(self, n: int) -> np.ndarray:
        rng = self.rng
        words = self._pick(f"script{int(rng.integers(0, len(SCRIPTS)))}", n, self.zipf_script)
        emoji = rng.random(n) < 0.01
        words[emoji] = self._pick("emoji", int(emoji.sum()))
        return self._interleave(words, self._pick("foreign_sep", n))

    def table(self, n: int) -> np.ndarray:
        rng = self.rng
        cells = self._pick("numbers", n, self.zipf_numbers)
        labels = rng.random(n) < 0.25
        cells[labels] = self._pick("capital", int(labels.sum()), self.zipf_small)
        return self._interleave(cells, self._pick("table_sep", n))

    def _text(self, pieces: np.ndarray) -> bytes:
        lengths = self.lengths[pieces]
        ends = np.cumsum(lengths)
        shift = np.repeat(self.starts[pieces] - (ends - lengths), lengths)
        return self.blob[np.arange(int(ends[-1]), dtype=np.int64) + shift].tobytes()

    def blocks(self) -> Iterator[bytes]:
        """Endless blocks of whole documents (UTF-8), each document ending in the separator."""
        rng = self.rng
        makers = [self.prose, self.code, self.foreign, self.table]
        shares = np.array([0.78, 0.10, 0.08, 0.04])
        end = np.array([self.base["end"]])
        while True:
            docs: list[np.ndarray] = []
            pieces = 0
            while pieces < 1_000_000:
                maker = makers[int(rng.choice(len(makers), p=shares))]
                docs += [maker(int(rng.integers(80, 3000))), end]
                pieces += len(docs[-2])
            yield self._text(np.concatenate(docs))

    def write(self, out: IO[bytes], size: int) -> int:
        """Write at least ``size`` bytes (whole documents) to ``out``; returns the bytes written."""
        written = 0
        for block in self.blocks():
            out.write(block)
            written += len(block)
            if written >= size:
                return written
        return written
