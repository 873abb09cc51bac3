"""The user's documentation, wherever this copy of BPE Studio is: README.md and docs/*.md.

A wheel ships them inside the package as ``bpe_studio/docs/`` in the repository's own layout
(``README.md``, ``docs/*.md``, the README's screenshot under ``resources/``), so the pages'
relative links work in either place; a source checkout or an editable install has them at
the repository's top. `docs_root` finds them; ``bpe-studio docs`` and Help › Documentation
read them from there (no network, no browser). Importing this module loads no Qt.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

_PACKAGE = Path(__file__).resolve().parent  # .../bpe_studio
_PLACES = (_PACKAGE / "docs", _PACKAGE.parent)  # installed (package data), then the checkout


@dataclass(frozen=True)
class Page:
    """One page of the documentation: ``name`` is what ``bpe-studio docs NAME`` takes
    ("readme", "formats"), ``title`` its first heading."""

    name: str
    title: str
    path: Path


def docs_root() -> Path | None:
    """The folder holding README.md and docs/ (installed, else the checkout's), or None."""
    for place in _PLACES:
        if (place / "README.md").is_file() and (place / "docs").is_dir():
            return place
    return None


def expected_root() -> Path:
    """Where an installed copy keeps its documentation (for a message when it is missing)."""
    return _PLACES[0]


def _title(path: Path) -> str:
    try:
        with path.open(encoding="utf-8") as f:
            for line in f:
                if line.startswith("# "):
                    return line[2:].strip()
    except (OSError, UnicodeDecodeError):
        pass
    return path.stem


def pages() -> list[Page]:
    """The README first, then docs/*.md by name; empty when no documentation is found."""
    root = docs_root()
    if root is None:
        return []
    paths = [root / "README.md", *sorted((root / "docs").glob("*.md"))]
    return [Page("readme" if p.name == "README.md" else p.stem, _title(p), p) for p in paths]


def find_page(name: str) -> Page:
    """The page called ``name`` ("formats", "formats.md", "docs/formats.md", "README" all work).

    Raises:
        ValueError: no such page (the message lists the pages), or no documentation found.
    """
    found = pages()
    if not found:
        raise ValueError(f"no documentation found in this installation (looked in {expected_root()})")
    key = Path(name.strip()).name.lower().removesuffix(".md")
    for page in found:
        if page.name == key:
            return page
    raise ValueError(f"no documentation page {name!r}; the pages are: {', '.join(p.name for p in found)}")
