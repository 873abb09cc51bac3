"""Types of ``_file_starts.c`` (optional): `core.corpus.check.read_regular_starts` says when it is used."""

def read_starts(paths: list[str], limit: int) -> list[tuple[int, int, int, int, int, bytes | None] | int]:
    """Per path, in order: ``(mode, size, mtime_ns, dev, ino, first bytes)`` (``None`` for a
    file that is not regular: not read) or the errno of the call that failed. The files are
    opened, fstat'ed and read on two threads without the GIL."""
