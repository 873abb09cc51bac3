"""``bpe-studio docs [PAGE]``: the documentation that comes with this copy, in the terminal.

Without PAGE it lists the pages (name, title, file); with one it prints that page's
Markdown. The pages are the README and docs/*.md, found by `bpe_studio.manual` in an
installed copy as in a checkout, so every ``--help`` can point here.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from bpe_studio.cli.usage import UsageError
from bpe_studio.manual import docs_root, expected_root, find_page, pages


def docs_pointer() -> str:
    """The two lines every ``--help`` ends with: how to read the documentation, and where it is."""
    root = docs_root()
    where = f"are in {root}" if root is not None else f"were not found (looked in {expected_root()})"
    return ("Documentation: 'bpe-studio docs' lists the pages, 'bpe-studio docs PAGE' prints one.\n"
            f"README.md and docs/*.md {where}")


class PointerFormatter(argparse.HelpFormatter):
    """argparse's formatter, except that the documentation pointer keeps its lines: a path
    wrapped at a hyphen could not be copied."""

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        head, sep, pointer = text.partition("Documentation: ")
        filled = super()._fill_text(head, width, indent) if head.strip() else ""
        if not sep:
            return filled
        return (filled + "\n\n" if filled else "") + indent + sep + pointer


def add_docs_parser(commands: Any) -> None:
    parser = commands.add_parser(
        "docs",
        help="list the documentation's pages, or print one",
        description="The documentation that comes with this copy: the README and docs/*.md, as Markdown.",
    )
    parser.add_argument("page", nargs="?", metavar="PAGE",
                        help="the page to print, e.g. readme, formats or semantics (default: list them)")
    parser.set_defaults(run=run_docs)


def run_docs(args: argparse.Namespace) -> int:
    if args.page:
        try:
            page = find_page(args.page)
        except ValueError as e:  # no such page (the message lists them), or no documentation
            raise UsageError(str(e)) from None
        try:
            text = page.path.read_text(encoding="utf-8")
        except OSError as e:
            raise UsageError(f"cannot read {page.path}: {e.strerror or e}") from e
        sys.stdout.write(text if text.endswith("\n") else text + "\n")
        return 0
    found = pages()
    if not found:
        raise UsageError(f"no documentation found in this installation (looked in {expected_root()})")
    width = max(len(p.name) for p in found)
    for page in found:
        print(f"{page.name.ljust(width)}  {page.title}  ({page.path})")
    print(f"\n'bpe-studio docs PAGE' prints a page; README.md and docs/*.md are in {docs_root()}.")
    return 0
