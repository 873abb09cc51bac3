"""Build the benchmark corpora under /tmp (never committed): diverse text of a chosen size.

    python tests/benchmarks/make_corpus.py --size-mb 24  --out /tmp/bench24.txt
    python tests/benchmarks/make_corpus.py --size-mb 500 --out /tmp/bench500.txt
    python tests/benchmarks/make_corpus.py --kind web --size-mb 1000 --out /tmp/web1g.txt

``--kind web`` writes a synthetic web-like corpus instead (Zipf-distributed words, numbers,
punctuation, code and non-Latin scripts; see web_corpus.py), streamed, of any size.
``--kind random`` writes high-cardinality text, nearly every word new: random 12-digit hex
words and numbers and 6-character CJK words, separated by spaces and newlines (what bounds
an encoder's caches: ``--kind random --size-mb 1000``).
Otherwise (``--kind mixed``, the default):

The text is documents separated by ``<|endoftext|>``, taken in turn from three sources:
``../shared/corpora/pydocs.txt`` (English documentation, cut at blank lines), the Python
sources and documentation installed on this machine (``.py``, ``.rst``, ``.txt``, ``.md``
files under the standard library's folder and /usr/share/doc), and generated
multilingual text (words drawn from the Latin, Cyrillic, Greek, Arabic, Hebrew,
Devanagari, Thai, CJK, Hangul and emoji ranges, with digits and punctuation; seeded, so
the same command makes the same file). Each source is repeated as needed.
"""

from __future__ import annotations

import argparse
import random
import sysconfig
from collections.abc import Iterator
from pathlib import Path

SHARED = Path(__file__).resolve().parents[2].parent / "shared"
SEPARATOR = "<|endoftext|>"

SCRIPTS = {
    "latin": "abcdefghijklmnopqrstuvwxyzäöüéèàçñß",
    "cyrillic": "абвгдеёжзийклмнопрстуфхцчшщъыьэюя",
    "greek": "αβγδεζηθικλμνξοπρστυφχψω",
    "arabic": "ابتثجحخدذرزسشصضطظعغفقكلمنهوي",
    "hebrew": "אבגדהוזחטיכלמנסעפצקרשת",
    "devanagari": "अआइईउऊएऐओऔकखगघचछजझटठडढणतथदधनपफबभमयरलवशषसह्ािीुूेैोौं",
    "thai": "กขคงจฉชซญดตถทธนบปผพฟภมยรลวศษสหอฮะาิีึืุูเแโใไ่้๊๋",
    "cjk": "的一是不了人我在有他这中大来上个国到说们为子和你地出道也时年得就那要下以生会自着去之过家学对可她里后小么心多天而能好都然没日于起还发成事只作当想看文无开手十用主行方又如前所本见经头面公同三已老从动两长知民样现分将外但身些与高意进把法此实回二理美点月明其种声全工己话儿者向情部正名定女问力机给等几很业最间新什打便位因重被走电四第门相次东政海口使教西再平真听世气信北少关并内加化由却代军产入先山五太水万市眼体别处总才场师书比住员九笑性通目华报立马命张活难神数件安表原车白应路期叫死常提感金何更反合放做系计",
    "hangul": "가나다라마바사아자차카타파하한국어문장입니다",
    "emoji": "😀😂🙂👍🏽🎉🚀❤️🔥✨🌍",
}


def pydocs_documents() -> Iterator[str]:
    text = (SHARED / "corpora" / "pydocs.txt").read_text(encoding="utf-8", errors="replace")
    for doc in text.replace(SEPARATOR, "\n\n").split("\n\n\n"):
        if doc.strip():
            yield doc


def installed_documents() -> Iterator[str]:
    roots = [Path(sysconfig.get_paths()["stdlib"]), Path("/usr/share/doc")]
    for root in roots:
        for path in sorted(root.rglob("*")):
            if path.suffix in (".py", ".rst", ".txt", ".md") and path.is_file():
                try:
                    text = path.read_text(encoding="utf-8")
                except (OSError, UnicodeDecodeError):
                    continue
                if text.strip() and SEPARATOR not in text:
                    yield text


def generated_documents(seed: int) -> Iterator[str]:
    rng = random.Random(seed)
    names = list(SCRIPTS)
    while True:
        script = SCRIPTS[rng.choice(names)]
        words = []
        for _ in range(rng.randint(50, 400)):
            r = rng.random()
            if r < 0.85:
                words.append("".join(rng.choices(script, k=rng.randint(1, 9))))
            elif r < 0.93:
                words.append(str(rng.randint(0, 10 ** rng.randint(1, 6))))
            else:
                words.append(rng.choice([",", ".", "!", "?", ";", ":", "—", "(", ")", "«", "»", "\n"]))
        yield " ".join(words) + "\n"


def cycle(make: object) -> Iterator[str]:
    while True:
        yield from make()  # type: ignore[operator]


def write_random(out: str, target: int, seed: int) -> int:
    """``--kind random``: hex words, numbers and CJK words, nearly all distinct, in blocks."""
    import numpy as np

    rng = np.random.default_rng(seed)
    digits = np.frombuffer(b"0123456789abcdef", np.uint8)
    total = 0
    with open(out, "wb") as f:
        while total < target:
            n = 100_000  # words of each kind a block
            hexes = digits[rng.integers(0, 16, size=(n, 13))]
            hexes[:, 12] = ord(" ")
            numbers = digits[rng.integers(0, 10, size=(n, 13))]
            numbers[:, 12] = ord("\n") if rng.random() < 0.5 else ord(" ")
            cjk = "".join(map(chr, rng.integers(0x4E00, 0xA000, size=6 * n // 4)))
            words = [hexes.tobytes(), numbers.tobytes(),
                     " ".join(cjk[i : i + 6] for i in range(0, len(cjk), 6)).encode("utf-8") + b"\n"]
            for k in rng.permutation(3):
                f.write(words[k])
                total += len(words[k])
    return total


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size-mb", type=float, default=24)
    parser.add_argument("--out", default="/tmp/bench24.txt")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--kind", choices=["mixed", "web", "random"], default="mixed")
    args = parser.parse_args()
    target = int(args.size_mb * 1e6)
    if args.kind == "random":
        total = write_random(args.out, target, args.seed)
        print(f"{args.out}: {total / 1e6:.1f} MB (high-cardinality, seed {args.seed})")
        return
    if args.kind == "web":
        from web_corpus import WebCorpus

        with open(args.out, "wb") as f:
            total = WebCorpus(seed=args.seed).write(f, target)
        print(f"{args.out}: {total / 1e6:.1f} MB (web-like, seed {args.seed})")
        return
    sources = [cycle(pydocs_documents), cycle(installed_documents), generated_documents(args.seed)]
    shares = [0.35, 0.35, 0.30]
    written = [0, 0, 0]
    total = 0
    with open(args.out, "w", encoding="utf-8") as out:
        while total < target:
            # the source furthest behind its share goes next
            k = min(range(3), key=lambda i: written[i] / shares[i])
            doc = next(sources[k]) + SEPARATOR
            size = len(doc.encode("utf-8"))
            out.write(doc)
            written[k] += size
            total += size
    print(f"{args.out}: {total / 1e6:.1f} MB (pydocs {written[0] / 1e6:.1f}, installed sources/docs "
          f"{written[1] / 1e6:.1f}, generated multilingual {written[2] / 1e6:.1f})")


if __name__ == "__main__":
    main()
