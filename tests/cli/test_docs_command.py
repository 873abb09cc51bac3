"""``bpe-studio docs`` shows the documentation this copy carries, and every ``--help`` points
to it with a folder that exists (issue 38, item 2; the installed wheel: tests/packaging)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from bpe_studio.cli import COMMANDS
from bpe_studio.manual import find_page, pages
from tests.cli_run import run_cli

REPO = Path(__file__).resolve().parents[2]


def _pointed_folder(help_text: str) -> Path:
    match = re.search(r"^Documentation: 'bpe-studio docs' lists the pages, 'bpe-studio docs PAGE' prints one\.\n"
                      r"README\.md and docs/\*\.md are in (.+)$", help_text, re.M)
    assert match, f"no pointer to the documentation in:\n{help_text}"
    return Path(match.group(1))


def test_docs_lists_the_readme_and_every_page_with_its_file() -> None:
    result = run_cli("docs")
    assert result.returncode == 0, result.stderr
    listed = {line.split()[0]: line for line in result.stdout.splitlines() if line.strip() and not line.startswith("'")}
    expected = {"readme", *(p.stem for p in (REPO / "docs").glob("*.md"))}
    assert set(listed) == expected
    assert f"({REPO / 'docs' / 'formats.md'})" in listed["formats"]
    assert "Files" in listed["formats"]  # the page's title


@pytest.mark.parametrize("name", ["formats", "FORMATS.md", "docs/formats.md"])
def test_docs_page_prints_the_page(name: str) -> None:
    result = run_cli("docs", name)
    assert result.returncode == 0, result.stderr
    assert result.stdout == (REPO / "docs" / "formats.md").read_text(encoding="utf-8")


def test_docs_readme_prints_the_readme() -> None:
    result = run_cli("docs", "readme")
    assert result.returncode == 0 and result.stdout == (REPO / "README.md").read_text(encoding="utf-8")


def test_an_unknown_page_is_one_line_that_lists_the_pages() -> None:
    result = run_cli("docs", "nosuch")
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr.count("\n") == 1 and "Traceback" not in result.stderr
    assert "no documentation page 'nosuch'" in result.stderr and "readme, " in result.stderr
    with pytest.raises(ValueError, match="semantics"):
        find_page("nosuch")


@pytest.mark.parametrize("command", [None, *COMMANDS])
def test_every_help_points_to_documentation_that_exists(command: str | None) -> None:
    result = run_cli(*([command] if command else []), "--help")
    assert result.returncode == 0, result.stderr
    folder = _pointed_folder(result.stdout)
    assert (folder / "README.md").is_file() and [p.path for p in pages()][1:] == sorted((folder / "docs").glob("*.md"))
