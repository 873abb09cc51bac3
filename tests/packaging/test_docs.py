"""The README and docs/ stay true to the code and to CI.

CI (`.ci/run`) runs the README's test command word for word; docs/semantics.md quotes the
built-in patterns and the tie-break order the trainer implements; every ``docs/*.md`` that
the README or a docstring points to exists; docs/architecture.md lists every module of the
tree once and names nothing that is not there; the README's library example shows every
name of ``core.__all__``.
"""

from __future__ import annotations

import re
from pathlib import Path

from core.pretokenize.patterns import GPT2_PATTERN, GPT4_PATTERN
from core.training.reference import best_pair

REPO = Path(__file__).resolve().parents[2]
TEST_COMMAND = (
    'python3 -m venv .venv && .venv/bin/pip install -e ".[test]" && '
    "QT_QPA_PLATFORM=offscreen .venv/bin/python -m pytest"
)


def test_ci_runs_the_readme_test_command() -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    ci = (REPO / ".ci" / "run").read_text(encoding="utf-8")
    assert f"    {TEST_COMMAND}\n" in readme
    assert ci.rstrip().endswith(TEST_COMMAND)


def test_semantics_page_quotes_the_patterns_and_the_tie_break() -> None:
    page = (REPO / "docs" / "semantics.md").read_text(encoding="utf-8")
    quoted = [line.strip() for line in page.splitlines() if line.startswith("      '")]
    assert quoted == [GPT2_PATTERN, GPT4_PATTERN]

    order = [(b"BA", b"A"), (b"B", b"ZZ"), (b"A", b"C"), (b"A", b"B")]
    assert '(b"BA", b"A") > (b"B", b"ZZ") > (b"A", b"C") > (b"A", b"B")' in page
    for i in range(len(order) - 1):  # each pair beats all those after it at equal counts
        assert best_pair(dict.fromkeys(order[i:], 1)) == order[i]


def test_docs_pages_referred_to_exist() -> None:
    sources = [REPO / "README.md"]
    for package in ("core", "bpe_studio"):
        sources += sorted((REPO / package).rglob("*.py"))
    referred = {
        name for path in sources for name in re.findall(r"docs/([\w-]+\.md)", path.read_text(encoding="utf-8"))
    }
    assert {"semantics.md", "formats.md", "architecture.md"} <= referred
    assert not [name for name in referred if not (REPO / "docs" / name).is_file()]


ARCHITECTURE = REPO / "docs" / "architecture.md"
LAYOUT_ROOTS = ("core", "bpe_studio", "tools")


def _layout_entries() -> list[str]:
    """The files that architecture.md's package layout lists, as paths from the repository root.

    The layout is the indented block under "## The packages": a name ending in ``/`` opens a
    folder, deeper lines are inside it; a file is its first word (``merge.py``).
    """
    page = ARCHITECTURE.read_text(encoding="utf-8")
    block = page.split("## The packages", 1)[1]
    entries: list[str] = []
    folders: list[tuple[int, str]] = []  # (indent, name) of the open folders
    for line in block.splitlines():
        if not line.startswith("    ") or not line.strip():
            continue
        indent = len(line) - len(line.lstrip())
        word = line.split()[0]
        while folders and folders[-1][0] >= indent:
            folders.pop()
        if word.endswith("/"):
            folders.append((indent, word.rstrip("/")))
        elif re.fullmatch(r"[\w.]+\.(py|c|h|pyi|typed)", word) and folders:
            entries.append("/".join([*(name for _, name in folders), word]))
    return entries


def test_architecture_lists_every_module_once_and_nothing_else() -> None:
    listed = [path for path in _layout_entries() if path.split("/")[0] in LAYOUT_ROOTS]
    real = {
        str(path.relative_to(REPO))
        for root in LAYOUT_ROOTS
        for path in (REPO / root).rglob("*")
        if path.suffix in {".py", ".c", ".h"} and "__pycache__" not in path.parts
    }
    assert [path for path in listed if not (REPO / path).is_file()] == []  # named, but not in the tree
    assert sorted({p for p in listed if listed.count(p) > 1}) == []  # each module once
    assert sorted(p for p in real - set(listed) if not p.endswith("__init__.py")) == []  # in the tree, not named


def _resolves(dotted: str) -> bool:
    """Whether ``core.a.b.name`` names a module, or a name defined in one (read, not imported)."""
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        base = REPO.joinpath(*parts[:cut])
        module = base / "__init__.py" if base.is_dir() else base.with_suffix(".py")
        if module.is_file():
            rest = parts[cut:]
            if not rest:
                return True
            text = module.read_text(encoding="utf-8")
            name = rest[0]
            return bool(re.search(rf"(?m)^\s*(def|class) {name}\b|^{name}\b\s*[:=]|\b{name}\b.*import|"
                                  rf"import .*\b{name}\b|\"{name}\":", text))
    return False


def test_architecture_names_only_what_exists() -> None:
    page = ARCHITECTURE.read_text(encoding="utf-8")
    paths = set(re.findall(r"\b((?:core|bpe_studio|tools|tests)/[\w/]+\.(?:py|c|h))\b", page))
    assert sorted(p for p in paths if not (REPO / p).is_file()) == []
    dotted = set(re.findall(r"`((?:core|bpe_studio)(?:\.\w+)+)", page))
    assert sorted(d for d in dotted if not _resolves(d)) == []
    assert _resolves("core.encode.corpus.separator_id") and not _resolves("core.encode.corpus.no_such_name")


def test_readme_library_section_shows_the_whole_api() -> None:
    import core

    readme = (REPO / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Library", 1)[1].split("\n## ", 1)[0]
    example = section.split("```python", 1)[1].split("```", 1)[0]
    assert [name for name in core.__all__ if not re.search(rf"\b{name}\b", example)] == []
    assert len(example.strip().splitlines()) <= 20


def test_the_readme_tiktoken_snippet_loads_an_export_again_after_retraining(tmp_path: Path, monkeypatch) -> None:  # noqa: ANN001
    """The README's tiktoken code, run as written on an export, gives the library's ids; run
    again after a retraining into the same folder, the new ones (tiktoken's own loader kept
    the first file's ranks in its cache, under the same path)."""
    import pytest

    pytest.importorskip("tiktoken")
    import core
    from core.formats import save_tokenizer
    from core.training.reference import train_bpe_reference

    readme = (REPO / "README.md").read_text(encoding="utf-8")
    snippet = next(block for block in re.findall(r"```python\n(.*?)```", readme, re.S) if "tiktoken.Encoding(" in block)
    monkeypatch.chdir(tmp_path)
    text = "Hello there, general Kenobi! " * 20 + "<|endoftext|>" + "low lower lowest newer wider " * 20
    sizes = []
    for vocab_size in (330, 290):  # a second training into the same folder
        vocab, merges = train_bpe_reference(text, vocab_size, ["<|endoftext|>"])
        save_tokenizer(tmp_path / "tok", vocab, merges, ["<|endoftext|>"], "gpt2")
        scope: dict[str, object] = {}
        exec(snippet, scope)  # noqa: S102 - the README's own code
        enc = scope["enc"]
        sample = "Hello lowest<|endoftext|>newer Kenobi"
        assert enc.encode(sample, allowed_special="all") == core.Tokenizer.load(tmp_path / "tok").encode(sample)  # type: ignore[attr-defined]
        sizes.append(enc.n_vocab)  # type: ignore[attr-defined]
        assert enc.n_vocab == len(vocab)  # type: ignore[attr-defined]
    assert sizes[0] != sizes[1]
