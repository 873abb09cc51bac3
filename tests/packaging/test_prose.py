"""Comments, docstrings and docs/ name only files that exist, and the code cites no measured figure.

Figures go stale: they live in docs/benchmarks.md, not in a comment. A number with a unit that
is a setting the code itself uses (a 150 ms debounce, an 8 MB buffer) is a fact, not a
measurement: a time is allowed when the same number is a literal of the code within a few lines
of it or a named constant of the file (in seconds, ms or µs); a few other facts are in
``ALLOWED`` below with the reason. Quoted text (``"4.5 MB/s"``) is an example of output.
"""

from __future__ import annotations

import ast
import functools
import re
import tomllib
from collections.abc import Callable, Iterator
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
CODE_ROOTS = ("core", "bpe_studio", "tests", "tools")
GENERATED = {"core/pretokenize/_unicode_tables.h"}

# A path that starts at one of the repository's folders; not the tail of a longer path or URL.
PATH = re.compile(r"(?<![\w./-])((?:core|bpe_studio|tests|docs|tools)/[\w.*/-]*[\w*/])")
_FILE_SUFFIXES = (".py", ".pyi", ".c", ".h", ".md")
# A source file named alone or from a folder inside the tree (``counting.py``, ``training/merge.py``).
SOURCE = re.compile(r"(?<![\w./*-])((?:\w[\w-]*/)*\w[\w-]*\.(?:py|pyi|c|h))\b")
# Other projects' files that comments name.
FOREIGN = {
    "encoder.py": "OpenAI's GPT-2 encoder",
    "tok_eval.py": "the evaluation script bench_evaluate.py follows",
    "pythread.h": "Python's own header",
    "tiktoken_ext/openai_public.py": "tiktoken's list of encodings",
}

_NUMBER = r"(?<![\w.])~?(\d+(?:\.\d+)?)"
_SECONDS = {"ms": 1e-3, "µs": 1e-6, "μs": 1e-6, "us": 1e-6, "ns": 1e-9, "s": 1.0, "sec": 1.0, "second": 1.0,
            "seconds": 1.0, "minute": 60.0, "minutes": 60.0}
TIME = re.compile(_NUMBER + r"\s?(ms|µs|μs|us|ns|s|sec|seconds?|minutes?)\b(?!/)")
THROUGHPUT = re.compile(r"\d\s?(?:[kKMG]i?B|bytes|tokens|pre-tokens|ids|docs|M)/s\b")
BEFORE_AFTER = re.compile(r"\d(?:[.,]\d+)?\s?(?:%|ms|µs|s|MB|GB|kB|M)?\s?(?:->|→|=>)\s?~?\d+(?:[.,]\d+)?(?![\d.,-])")
RATIO = re.compile(r"(?<![\w.])~?\d+(?:\.\d+)?\s?[x×](?![\w])(?!\s?\d)|\d+(?:\.\d+)?\s?% (?:faster|slower|fewer|less|more)\b")
FIGURES = {"time": TIME, "throughput": THROUGHPUT, "before -> after": BEFORE_AFTER, "ratio": RATIO}
# An example of what the code prints, not a figure.
QUOTED = re.compile(r'"[^"]*"')

# Lines whose figure is a fact, not a measurement: (path, start of the line's text) -> why.
ALLOWED = {
    ("bpe_studio/app/evaluate/work.py", "largest rung"): "what a ratio of 1.250 means, not a measurement",
    ("bpe_studio/app/workers/thread_job.py", "default is 5 ms"): "Python's default switch interval",
    ("bpe_studio/app/workers/thread_job.py", "Make Python threads"): "the setting and Python's default",
}


def _code_files(roots: tuple[str, ...], suffixes: tuple[str, ...]) -> list[Path]:
    files = []
    for root in roots:
        for path in sorted((REPO / root).rglob("*")):
            rel = path.relative_to(REPO).as_posix()
            if path.suffix in suffixes and "__pycache__" not in path.parts and rel not in GENERATED:
                files.append(path)
    return files


def _without_examples(block: str) -> str:
    """``block`` with its quoted text emptied (its line breaks kept, so lines keep their numbers)."""
    return QUOTED.sub(lambda match: '""' + "\n" * match.group().count("\n"), block)


@functools.cache
def _tree(path: Path) -> ast.Module:
    return ast.parse(path.read_text(encoding="utf-8"))


def _python_prose(path: Path, keep: Callable[[str], str]) -> Iterator[tuple[int, str]]:
    """(line, text) of every comment and every string that stands alone as a statement."""
    strings: dict[int, list[tuple[int, int]]] = {}  # line -> the columns strings take on it
    for node in ast.walk(_tree(path)):
        if isinstance(node, ast.Constant | ast.JoinedStr) and isinstance(getattr(node, "value", ""), str):
            end_line, end_col = node.end_lineno or node.lineno, node.end_col_offset or 0
            for line in range(node.lineno, end_line + 1):
                strings.setdefault(line, []).append((node.col_offset if line == node.lineno else 0,
                                                     end_col if line == end_line else 1 << 30))
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            for offset, line in enumerate(keep(node.value.value).splitlines()):
                yield node.lineno + offset, line
    # A comment starts at the first "#" of a line outside every string (columns in UTF-8 bytes).
    for number, text in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if "#" in text:
            raw = text.encode("utf-8")
            for column in (i for i, byte in enumerate(raw) if byte == 0x23):
                if not any(start <= column < end for start, end in strings.get(number, ())):
                    yield number, keep(raw[column:].decode("utf-8"))
                    break


_C_COMMENT = re.compile(r"/\*.*?\*/|//[^\n]*|\"(?:\\.|[^\"\\\n])*\"|'(?:\\.|[^'\\\n])*'", re.S)


def _c_prose(text: str, keep: Callable[[str], str]) -> Iterator[tuple[int, str]]:
    """(line, text) of every comment of a C file (string literals skipped)."""
    for match in _C_COMMENT.finditer(text):
        if match.group().startswith(("/*", "//")):
            first = text.count("\n", 0, match.start()) + 1
            for offset, line in enumerate(keep(match.group()).splitlines()):
                yield first + offset, line


@functools.cache
def _prose(path: Path, examples: bool = True) -> list[tuple[int, str]]:
    """(line, text) of the file's comments and docstrings (all of a docs page); without the
    quoted examples of output unless ``examples``."""
    text = path.read_text(encoding="utf-8")
    keep = (lambda block: block) if examples else _without_examples
    if path.suffix == ".md":
        return list(enumerate(text.splitlines(), 1))
    if path.suffix in (".py", ".pyi"):
        return sorted(set(_python_prose(path, keep)))
    return list(_c_prose(text, keep))


def _code_lines(path: Path) -> list[str]:
    """The file's lines with the prose taken out, to look for the literals of the code."""
    lines = path.read_text(encoding="utf-8").splitlines()
    for number, line in _prose(path):
        if 0 < number <= len(lines):
            lines[number - 1] = lines[number - 1].replace(line.strip(), " ")
    return lines


@functools.cache
def _installed_folders() -> dict[str, str]:
    """The folders a wheel installs under another name: ``bpe_studio/docs`` -> ``.``."""
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    folders = project["tool"]["setuptools"].get("package-dir", {})
    return {package.replace(".", "/"): folder for package, folder in folders.items()}


def _exists(mention: str) -> bool:
    mention = mention.rstrip("/.")
    for installed, folder in sorted(_installed_folders().items(), key=lambda item: -len(item[0])):
        if mention == installed or mention.startswith(installed + "/"):
            mention = (folder + mention[len(installed) :]).lstrip("./") or "."
            break
    if "*" in mention:
        return any(REPO.glob(mention))
    if (REPO / mention).exists():
        return True
    # A file named without its suffix (``core/training/merge``) or a C extension's built name.
    return any((REPO / (mention + suffix)).exists() for suffix in _FILE_SUFFIXES)


def _source_files() -> list[str]:
    return [p.relative_to(REPO).as_posix() for p in _code_files(CODE_ROOTS, (".py", ".pyi", ".c", ".h"))]


def _names_a_source(mention: str, sources: list[str]) -> bool:
    return mention in FOREIGN or any(("/" + source).endswith("/" + mention) for source in sources)


def missing_paths() -> list[str]:
    pages = sorted((REPO / "docs").glob("*.md"))
    sources = _source_files() + sorted(GENERATED)
    found = []
    for path in _code_files(CODE_ROOTS, (".py", ".pyi", ".c", ".h")) + pages:
        rel = path.relative_to(REPO).as_posix()
        for number, line in _prose(path):
            for mention in PATH.findall(line):
                if not _exists(mention):
                    found.append(f"{rel}:{number}: {mention}")
            for mention in SOURCE.findall(line):
                if mention.split("/")[0] not in CODE_ROOTS and not _names_a_source(mention, sources):
                    found.append(f"{rel}:{number}: {mention}")
    return found


def _literals(path: Path) -> list[tuple[int, float, bool]]:
    """(line, value, whether a named constant) of the numbers in the file's code."""
    found: list[tuple[int, float, bool]] = []
    if path.suffix in (".py", ".pyi"):
        for node in ast.walk(_tree(path)):
            if isinstance(node, ast.Constant) and type(node.value) in (int, float):
                found.append((node.lineno, float(node.value), False))
        for node in _tree(path).body:
            target = node.targets[0] if isinstance(node, ast.Assign) else getattr(node, "target", None)
            value = getattr(node, "value", None)
            if isinstance(target, ast.Name) and target.id.isupper() and isinstance(value, ast.Constant):
                if type(value.value) in (int, float):
                    found.append((node.lineno, float(value.value), True))
        return found
    for number, line in enumerate(_code_lines(path), 1):
        named = line.lstrip().startswith("#define")
        for literal in re.findall(r"(?<![\w.])(\d+(?:\.\d+)?)(?:[uUlLfF]*)(?![\w.])", line):
            found.append((number, float(literal), named))
    return found


def _is_setting(value: str, unit: str, number: int, literals: list[tuple[int, float, bool]]) -> bool:
    """Whether a time of ``value`` ``unit`` is a number of the code: a literal within three lines,
    or a named constant of the file, in seconds, milliseconds or microseconds."""
    seconds = float(value) * _SECONDS[unit]
    near = {float(value), seconds}
    anywhere = {seconds, seconds * 1e3, seconds * 1e6}
    return any(
        any(abs(v - x) <= 1e-9 * max(1.0, abs(x)) for x in (near | anywhere if abs(line - number) <= 3 else anywhere))
        for line, v, named in literals
        if abs(line - number) <= 3 or named
    )


def cited_figures() -> list[str]:
    found = []
    for path in _code_files(("core", "bpe_studio"), (".py", ".pyi", ".c", ".h")):
        rel = path.relative_to(REPO).as_posix()
        literals = _literals(path)
        for number, line in _prose(path, examples=False):
            if any(rel == p and line.strip().startswith(s) for p, s in ALLOWED):
                continue
            for kind, pattern in FIGURES.items():
                for match in pattern.finditer(line):
                    if kind == "time" and _is_setting(match.group(1), match.group(2), number, literals):
                        continue
                    found.append(f"{rel}:{number}: {kind} {match.group()!r} in {line.strip()!r}")
    return found


def test_prose_names_only_files_that_exist() -> None:
    assert missing_paths() == []


def test_code_prose_cites_no_measured_figure() -> None:
    assert cited_figures() == []


def test_the_figure_patterns_tell_a_measurement_from_a_fact() -> None:
    measured = [
        "111 ms of the ~1.6 s of counting 300 MB",
        "141 -> 162 MB/s",
        "~10 ms a chart, ~4x the curve itself",
        "took 45 ms, this 25",
        "10x faster than the regex path",
        "185 → 150 ms for two tables",
        "12% faster on the web-like corpus",
    ]
    facts = [
        "reads 8 MB at a time",
        "in 2 MB pages",
        "ids=[1, 2, 3, 1, 2], pair=(1, 2), idx=4 -> [4, 3, 4]",
        "0x1F is the last control byte",
        "a 16-byte key",
        "see docs/benchmarks.md",
    ]
    assert all(any(p.search(text) for p in FIGURES.values()) for text in measured)
    assert not [text for text in facts if any(p.search(text) for p in FIGURES.values())]
    literals = [(1, 150.0, True), (9, 45.0, False)]  # DEBOUNCE_MS = 150 ... f(45)
    assert _is_setting("150", "ms", 30, literals) and _is_setting("0.15", "s", 30, literals)
    assert _is_setting("45", "ms", 10, literals) and not _is_setting("45", "ms", 30, literals)
    assert PATH.findall("see core/merge.py, ../shared/core/x.py and tests/core/") == ["core/merge.py", "tests/core/"]
    assert not _exists("core/merge.py") and _exists("core/training/") and _exists("core/encode/_bpe_*.h")
    assert _exists("bpe_studio/docs/resources/") and not _exists("bpe_studio/docs/nowhere.md")
    assert SOURCE.findall("see merge.py, training/_merge_kernel.c and core/x.py") [:2] == ["merge.py", "training/_merge_kernel.c"]
    sources = _source_files()
    assert _names_a_source("training/_merge_kernel.c", sources) and not _names_a_source("merge.c", sources)
