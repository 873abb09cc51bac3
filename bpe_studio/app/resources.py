"""Where the application's own files are: the sample corpus, the icon, the style sheet.

In a source checkout (and an editable install) they are in the repository's top-level
``resources/``; a wheel installs the same files as ``bpe_studio/resources/`` (see
``pyproject.toml``). `resource` finds them in either place, so the application works the
same however it was installed.
"""

from __future__ import annotations

from pathlib import Path

_PACKAGE = Path(__file__).resolve().parents[1]  # .../bpe_studio
_PLACES = (_PACKAGE / "resources", _PACKAGE.parent / "resources")  # installed, then checkout


def resources_dir() -> Path:
    """The folder holding the application's files (installed, else the checkout's)."""
    for place in _PLACES:
        if (place / "style.qss").is_file():
            return place
    return _PLACES[0]


def resource(name: str) -> Path:
    """The path of one of the application's files, e.g. ``resource("icon.svg")``."""
    return resources_dir() / name


def style_sheet() -> str:
    """The application's style sheet ("" if the file is missing)."""
    try:
        return resource("style.qss").read_text(encoding="utf-8")
    except OSError:
        return ""
