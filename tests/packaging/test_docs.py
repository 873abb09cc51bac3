"""The README and docs/ stay true to the code and to CI.

CI (`.ci/run`) runs the README's test command word for word; docs/semantics.md quotes the
built-in patterns and the tie-break order the trainer implements; every ``docs/*.md`` that
the README or a docstring points to exists.
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
