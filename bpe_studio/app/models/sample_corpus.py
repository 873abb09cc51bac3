"""The embedded sample corpus: a deterministic generator of varied text to train on at once.

A first launch of BPE Studio preselects ``resources/sample_corpus.txt`` so one click trains.
Its text is generated here from word lists and templates written for this project (no
copied text): English prose with contractions, dialogue, numbers and dates, small code
snippets and JSON, and words in Greek, Cyrillic, Chinese, Japanese and Arabic, with
``<|endoftext|>`` between documents. The same seed always gives the same text, and a test
checks that the shipped file equals ``generate()``.

Regenerate the shipped file with ``python -m bpe_studio.app.models.sample_corpus``.
"""

from __future__ import annotations

import random
import sys
from pathlib import Path

from bpe_studio.app.resources import resource

END_OF_TEXT = "<|endoftext|>"
DEFAULT_SEED = 20240611
DEFAULT_DOCUMENTS = 700

SAMPLE_CORPUS_PATH = resource("sample_corpus.txt")

NAMES = [
    "Ada", "Boris", "Chiara", "Dmitri", "Elena", "Farid", "Greta", "Hiro", "Ines", "Jonas",
    "Kofi", "Lena", "Mateo", "Nadia", "Oskar", "Priya", "Quentin", "Rosa", "Sami", "Tomas",
    "Uma", "Viktor", "Wen", "Yara", "Zoe",
]
ADJECTIVES = [
    "quiet", "bright", "narrow", "ancient", "curious", "patient", "rapid", "gentle", "heavy",
    "golden", "hidden", "careful", "restless", "silver", "distant", "simple", "crowded",
    "broken", "fresh", "windy", "sudden", "tiny", "enormous", "familiar", "strange",
]
NOUNS = [
    "river", "garden", "library", "engine", "market", "lantern", "bridge", "harbour",
    "notebook", "mountain", "kitchen", "station", "letter", "window", "village", "forest",
    "machine", "teacher", "stranger", "bicycle", "festival", "island", "ladder", "theory",
    "question", "orchard", "tunnel", "compass", "recipe", "signal",
]
PLACES = [
    "the old town", "the northern coast", "a small valley", "the city centre",
    "the far side of the lake", "the forest road", "the harbour", "the university",
    "the night market", "a village in the hills",
]
VERBS_PAST = [
    "found", "opened", "carried", "repaired", "painted", "followed", "measured", "described",
    "forgot", "noticed", "borrowed", "built", "crossed", "studied", "watched", "counted",
]
VERBS_PRESENT = [
    "explains", "remembers", "changes", "collects", "protects", "imagines", "teaches",
    "predicts", "connects", "ignores", "reveals", "divides",
]
ADVERBS = ["slowly", "quickly", "carefully", "quietly", "suddenly", "happily", "rarely", "often"]
CONNECTORS = [
    "Later that day,", "Meanwhile,", "In the morning,", "After a while,", "Without a word,",
    "Surprisingly,", "Of course,", "By evening,", "Once again,", "For the first time,",
]
TOPICS = [
    "weather", "trains", "bread", "maps", "music", "numbers", "tea", "gardens", "books",
    "bridges", "tokenizers", "languages",
]

# Words in other scripts, each with its English meaning (written for this project).
FOREIGN_WORDS = {
    "Greek": [
        ("θάλασσα", "sea"), ("βιβλίο", "book"), ("φίλος", "friend"), ("ήλιος", "sun"),
        ("νερό", "water"), ("καλημέρα", "good morning"), ("σπίτι", "house"),
        ("δρόμος", "road"), ("ουρανός", "sky"), ("μουσική", "music"),
    ],
    "Russian": [
        ("книга", "book"), ("город", "city"), ("вода", "water"), ("время", "time"),
        ("друг", "friend"), ("привет", "hello"), ("море", "sea"), ("дорога", "road"),
        ("солнце", "sun"), ("хлеб", "bread"),
    ],
    "Chinese": [
        ("你好", "hello"), ("世界", "world"), ("朋友", "friend"), ("学习", "to study"),
        ("天气", "weather"), ("书", "book"), ("水", "water"), ("山", "mountain"),
        ("音乐", "music"), ("时间", "time"),
    ],
    "Japanese": [
        ("ありがとう", "thank you"), ("さくら", "cherry blossom"), ("本", "book"),
        ("友だち", "friend"), ("海", "sea"), ("こんにちは", "hello"), ("電車", "train"),
    ],
    "Arabic": [
        ("مرحبا", "hello"), ("كتاب", "book"), ("شمس", "sun"), ("بيت", "house"),
        ("ماء", "water"), ("صديق", "friend"), ("بحر", "sea"), ("طريق", "road"),
    ],
}
EMOJI = ["🙂", "🚲", "🌧️", "📚", "🍵", "✨", "🎵", "👍🏽"]


def _a(word: str) -> str:
    """``word`` with its indefinite article: ``_a("island") -> "an island"``."""
    return f"an {word}" if word[0] in "aeiou" else f"a {word}"


def _plural(noun: str) -> str:
    """``_plural("theory") -> "theories"``, ``_plural("compass") -> "compasses"``."""
    if noun.endswith("y") and noun[-2] not in "aeiou":
        return noun[:-1] + "ies"
    if noun.endswith(("s", "x", "ch", "sh")):
        return noun + "es"
    return noun + "s"


def _sentence(rng: random.Random) -> str:
    name = rng.choice(NAMES)
    forms = [
        lambda: f"{name} {rng.choice(VERBS_PAST)} the {rng.choice(ADJECTIVES)} {rng.choice(NOUNS)} "
        f"near {rng.choice(PLACES)}.",
        lambda: f"The {rng.choice(NOUNS)} {rng.choice(VERBS_PRESENT)} more than the "
        f"{rng.choice(NOUNS)} ever could.",
        lambda: f"{rng.choice(CONNECTORS)} {name} {rng.choice(ADVERBS)} {rng.choice(VERBS_PAST)} "
        f"{_a(rng.choice(ADJECTIVES))} {rng.choice(NOUNS)}.",
        lambda: f"It's {rng.choice(ADJECTIVES)}, and {name}'s {rng.choice(NOUNS)} isn't "
        f"where it used to be.",
        lambda: f"Nobody knew why the {rng.choice(NOUNS)} in {rng.choice(PLACES)} was so "
        f"{rng.choice(ADJECTIVES)}.",
        lambda: f"We'll need {rng.randint(2, 12)} more {_plural(rng.choice(NOUNS))} before "
        f"{rng.choice(['Monday', 'Friday', 'the spring', 'noon', 'the festival'])}.",
    ]
    return rng.choice(forms)()


def _prose(rng: random.Random) -> str:
    title = f"{rng.choice(ADJECTIVES).title()} {rng.choice(NOUNS).title()}"
    paragraphs = []
    for _ in range(rng.randint(2, 5)):
        paragraphs.append(" ".join(_sentence(rng) for _ in range(rng.randint(3, 7))))
    return f"{title}\n\n" + "\n\n".join(paragraphs) + "\n"


def _dialogue(rng: random.Random) -> str:
    a, b = rng.sample(NAMES, 2)
    lines = []
    for i in range(rng.randint(4, 9)):
        speaker = a if i % 2 == 0 else b
        lines.append(rng.choice([
            f'"I\'ve never seen {_a(rng.choice(ADJECTIVES))} {rng.choice(NOUNS)} like that," said {speaker}.',
            f'"Don\'t you think the {rng.choice(NOUNS)} is {rng.choice(ADJECTIVES)}?" asked {speaker}.',
            f'"We\'re late again!" {speaker} laughed. "You\'d better hurry."',
            f'"They\'ll be here at {rng.randint(1, 12)}:{rng.choice(["00", "15", "30", "45"])}," {speaker} replied.',
            f'{speaker} shrugged. "I\'m not sure it\'s worth {rng.randint(3, 99)} euros."',
            f'"What\'s the word for {rng.choice(TOPICS)} in your language?" {speaker} wondered.',
        ]))
    return "\n".join(lines) + "\n"


def _numbers(rng: random.Random) -> str:
    rows = [f"Report {rng.randint(1, 400)} on {rng.choice(TOPICS)}", ""]
    rows.append("| date       | item       | quantity | price   |")
    rows.append("|------------|------------|---------:|--------:|")
    for _ in range(rng.randint(3, 8)):
        date = f"{rng.randint(1990, 2030)}-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}"
        rows.append(
            f"| {date} | {rng.choice(NOUNS):<10} | {rng.randint(1, 5000):>8} | "
            f"{rng.randint(0, 999)}.{rng.randint(0, 99):02d} |"
        )
    total = rng.randint(1000, 99999)
    rows.append("")
    rows.append(
        f"Total: {total:,} units, {rng.random() * 100:.1f}% more than last year; "
        f"the median was {rng.randint(10, 900)} and the peak {rng.randint(1000, 9999)}."
    )
    rows.append(f"Phone: +{rng.randint(1, 99)} {rng.randint(100, 999)} {rng.randint(1000, 9999)}, "
                f"ref. #{rng.randint(10000, 99999)}")
    return "\n".join(rows) + "\n"


def _code(rng: random.Random) -> str:
    noun = rng.choice(NOUNS)
    other = rng.choice(NOUNS)
    n = rng.randint(2, 64)
    snippets = [
        f"def count_{noun}s(items: list[str]) -> dict[str, int]:\n"
        f'    """Count each {noun} in items."""\n'
        f"    counts: dict[str, int] = {{}}\n"
        f"    for item in items:\n"
        f"        counts[item] = counts.get(item, 0) + 1\n"
        f"    return counts\n",
        f"for i in range({n}):\n"
        f"    if i % {rng.randint(2, 7)} == 0:\n"
        f"        print(f\"{noun} {{i}} is ready\")\n"
        f"    else:\n"
        f"        {other}s.append(i * {rng.randint(2, 9)})\n",
        f'{{\n  "{noun}": {{"id": {rng.randint(1, 9999)}, "name": "{rng.choice(NAMES)}", '
        f'"active": {rng.choice(["true", "false"])}}},\n'
        f'  "{other}s": [{", ".join(str(rng.randint(0, 99)) for _ in range(rng.randint(2, 6)))}],\n'
        f'  "ratio": {rng.random():.3f}\n}}\n',
        f"class {noun.title()}:\n"
        f"    def __init__(self, size={n}):\n"
        f"        self.size = size\n"
        f"        self.{other} = None\n\n"
        f"    def __repr__(self):\n"
        f"        return f\"{noun.title()}(size={{self.size}})\"\n",
        f"# {rng.choice(ADJECTIVES)} {noun} loop\n"
        f"while ({noun}_count < {n} && !done) {{\n"
        f"\t{noun}_count += step;\n"
        f"\tdone = check({other}, {noun}_count);\n"
        f"}}\n",
    ]
    intro = f"A small example about {_plural(noun)}:\n\n"
    return intro + rng.choice(snippets)


def _multilingual(rng: random.Random) -> str:
    lines = []
    for _ in range(rng.randint(3, 7)):
        language = rng.choice(sorted(FOREIGN_WORDS))
        word, meaning = rng.choice(FOREIGN_WORDS[language])
        lines.append(rng.choice([
            f"In {language}, the word for \"{meaning}\" is {word}.",
            f"{rng.choice(NAMES)} wrote {word} ({meaning}) on the {rng.choice(NOUNS)} {rng.choice(EMOJI)}",
            f"{word} — {meaning}, as {rng.choice(NAMES)} learned in {rng.choice(PLACES)}.",
            f"{language}: {word}, {rng.choice(FOREIGN_WORDS[language])[0]}, "
            f"{rng.choice(FOREIGN_WORDS[language])[0]}.",
        ]))
    return "\n".join(lines) + "\n"


def _listing(rng: random.Random) -> str:
    lines = [f"## Notes on {rng.choice(TOPICS)}", ""]
    for i in range(rng.randint(3, 6)):
        lines.append(f"{i + 1}. {_sentence(rng)}")
    lines.append("")
    lines.append(f"- {rng.choice(ADJECTIVES)} {_plural(rng.choice(NOUNS))}: {rng.randint(1, 99)}")
    lines.append(f"- {rng.choice(ADJECTIVES)} {_plural(rng.choice(NOUNS))}: {rng.randint(1, 99)}")
    return "\n".join(lines) + "\n"


_KINDS = [
    (_prose, 5),
    (_dialogue, 3),
    (_numbers, 2),
    (_code, 2),
    (_multilingual, 2),
    (_listing, 2),
]


def generate(documents: int = DEFAULT_DOCUMENTS, seed: int = DEFAULT_SEED) -> str:
    """The sample corpus text: ``documents`` documents separated by ``<|endoftext|>``.

    Deterministic: the same arguments always give the same text.
    """
    rng = random.Random(seed)
    kinds = [kind for kind, weight in _KINDS for _ in range(weight)]
    docs = [rng.choice(kinds)(rng) for _ in range(documents)]
    return END_OF_TEXT.join(docs)


def write(path: Path = SAMPLE_CORPUS_PATH) -> Path:
    """Write ``generate()`` to ``path`` (UTF-8, ``\\n`` newlines) and return the path."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8", newline="\n") as f:
        f.write(generate())
    return path


if __name__ == "__main__":
    print(write(Path(sys.argv[1]) if len(sys.argv) > 1 else SAMPLE_CORPUS_PATH))
