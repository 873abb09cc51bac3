"""The README and docs/ stay true to the code and to CI.

CI (`.ci/run`) runs the README's test command word for word, and that command installs only
when there is no environment yet; the README is short (at most 200 lines) and names no
absolute path, nor does any command in docs/; docs/semantics.md quotes the built-in patterns
and the tie-break order the trainer implements; every ``docs/*.md`` that the README or a
docstring points to exists; docs/modules.md lists every module of the tree once and
names nothing that is not there; the README's ten-line library example runs as written, and
docs/library.md's shows every name of ``core.__all__``.
"""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest

from core.pretokenize.patterns import GPT2_PATTERN, GPT4_PATTERN
from core.training.reference import best_pair

REPO = Path(__file__).resolve().parents[2]
TEST_COMMAND = (
    '[ -x .venv/bin/pytest ] || ($(python3 tools/test_python.py) -m venv .venv && .venv/bin/pip install -e ".[test]") && '
    "QT_QPA_PLATFORM=offscreen .venv/bin/python -m pytest"
)


def test_ci_runs_the_readme_test_command() -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    ci = (REPO / ".ci" / "run").read_text(encoding="utf-8")
    assert f"    {TEST_COMMAND}\n" in readme
    assert ci.rstrip().endswith(TEST_COMMAND)
    assert "rm -rf .venv\n" in ci  # CI always starts from a fresh environment


def _run_test_command(folder: Path) -> list[str]:
    """Run the README's test command in ``folder`` with ``python3`` (which names the Python to
    make the venv with: the stub ``chosen-python``), that one and the venv's programs replaced
    by stubs that log their arguments; returns the log."""
    stubs = folder / "stubs"
    stubs.mkdir(exist_ok=True)
    log = folder / "log"
    scripts = {
        "python3": f'echo "python3 $*" >> {log}\necho {stubs}/chosen-python\n',
        "chosen-python": f'echo "chosen-python $*" >> {log}\nmkdir -p .venv/bin\n'
                         f"cp {stubs}/venv-python .venv/bin/python\ncp {stubs}/venv-pip .venv/bin/pip\n",
        "venv-python": f'echo "venv-python $*" >> {log}\n',
        "venv-pip": f'echo "pip $*" >> {log}\ntouch .venv/bin/pytest\nchmod +x .venv/bin/pytest\n',
    }
    for name, body in scripts.items():
        (stubs / name).write_text("#!/bin/sh\n" + body)
        (stubs / name).chmod(0o755)
    env = {**os.environ, "PATH": f"{stubs}{os.pathsep}{os.environ['PATH']}"}
    subprocess.run(["bash", "-c", TEST_COMMAND], cwd=folder, env=env, check=True, timeout=60)
    lines = log.read_text().splitlines()
    log.unlink()
    return lines


def test_the_readme_test_command_installs_only_the_first_time(tmp_path: Path) -> None:
    first = _run_test_command(tmp_path)
    assert first == ["python3 tools/test_python.py", "chosen-python -m venv .venv", 'pip install -e .[test]',
                     "venv-python -m pytest"]
    again = _run_test_command(tmp_path)  # the environment is there: no new venv, no reinstall
    assert again == ["venv-python -m pytest"]


def test_the_readme_is_short_and_says_how_the_data_driven_tests_behave() -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    assert len(readme.splitlines()) <= 200
    flat = " ".join(readme.split())
    assert "../shared/" in flat and "skipped" in flat and "`CI=true`" in flat
    assert "![" in readme and (REPO / "resources" / "screenshot.png").is_file()


ABSOLUTE = re.compile(r"(?:^|[\s=(])/(?:tmp|work|home|root|mnt|opt|Users|var)/")


def test_no_absolute_machine_paths_in_the_readme_or_the_commands_of_docs() -> None:
    found = []
    for page in [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]:
        for number, line in enumerate(page.read_text(encoding="utf-8").splitlines(), 1):
            command = page.name == "README.md" or line.startswith("    ")
            if command and ABSOLUTE.search(line):
                found.append(f"{page.name}:{number}: {line.strip()}")
    assert found == []


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
MODULES = REPO / "docs" / "modules.md"
LAYOUT_ROOTS = ("core", "bpe_studio", "tools")


def _layout_entries() -> list[str]:
    """The files that modules.md's package layout lists, as paths from the repository root.

    The layout is the indented block under "## The packages": a name ending in ``/`` opens a
    folder, deeper lines are inside it; a file is its first word (``merge.py``).
    """
    page = MODULES.read_text(encoding="utf-8")
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


def test_architecture_fits_two_pages_and_says_where_ideas_go() -> None:
    page = ARCHITECTURE.read_text(encoding="utf-8")
    assert len(page.splitlines()) <= 130 and max(map(len, page.splitlines())) <= 100
    where = page.split("## Where each idea lives", 1)[1].split("\n## ", 1)[0]
    assert all(f"**{idea}" in where for idea in ("A training variant", "A file format", "A measure"))
    assert "## Running work" in page


@pytest.mark.parametrize("doc", [ARCHITECTURE, MODULES], ids=lambda p: p.name)
def test_architecture_names_only_what_exists(doc: Path) -> None:
    page = doc.read_text(encoding="utf-8")
    paths = set(re.findall(r"\b((?:core|bpe_studio|tools|tests)/[\w/]+\.(?:py|c|h))\b", page))
    assert sorted(p for p in paths if not (REPO / p).is_file()) == []
    dotted = set(re.findall(r"`((?:core|bpe_studio)(?:\.\w+)+)", page))
    assert sorted(d for d in dotted if not _resolves(d)) == []
    assert _resolves("core.encode.corpus.separator_id") and not _resolves("core.encode.corpus.no_such_name")


def test_library_page_shows_the_whole_api() -> None:
    import core

    page = (REPO / "docs" / "library.md").read_text(encoding="utf-8")
    section = page.split("## The whole API", 1)[1].split("\n## ", 1)[0]
    example = section.split("```python", 1)[1].split("```", 1)[0]
    assert [name for name in core.__all__ if not re.search(rf"\b{name}\b", example)] == []
    assert len(example.strip().splitlines()) <= 20


def test_the_readme_library_example_runs_in_ten_lines(tmp_path: Path, monkeypatch) -> None:  # noqa: ANN001
    import numpy as np

    readme = (REPO / "README.md").read_text(encoding="utf-8")
    section = readme.split("## The library in ten lines", 1)[1].split("\n## ", 1)[0]
    example = section.split("```python", 1)[1].split("```", 1)[0]
    assert len([line for line in example.splitlines() if line.strip()]) <= 10
    monkeypatch.chdir(tmp_path)
    text = (REPO / "resources" / "sample_corpus.txt").read_text(encoding="utf-8")[:30_000]
    (tmp_path / "corpus.txt").write_text(text, encoding="utf-8")
    scope: dict[str, object] = {}
    exec(example, scope)  # noqa: S102 - the README's own code
    assert (tmp_path / "tok" / "tokenizer.json").is_file()
    ids = np.load(tmp_path / "ids.npy")
    assert ids.size > 0 and scope["tok"].decode(ids.tolist()).replace("<|endoftext|>", "") == text.replace(  # type: ignore[attr-defined]
        "<|endoftext|>", "")


def test_the_library_page_tiktoken_snippet_loads_an_export_again_after_retraining(tmp_path: Path, monkeypatch) -> None:  # noqa: ANN001
    """docs/library.md's tiktoken code, run as written on an export, gives the library's ids; run
    again after a retraining into the same folder, the new ones (tiktoken's own loader kept
    the first file's ranks in its cache, under the same path)."""
    import pytest

    pytest.importorskip("tiktoken")
    import core
    from core.formats import save_tokenizer
    from core.training.reference import train_bpe_reference

    page = (REPO / "docs" / "library.md").read_text(encoding="utf-8")
    snippet = next(block for block in re.findall(r"```python\n(.*?)```", page, re.S) if "tiktoken.Encoding(" in block)
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
