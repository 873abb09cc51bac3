"""Types of ``_reading.c`` (optional): `core.formats.bytes_unicode.strings_to_bytes` and
`core.formats.tiktoken_file.merges_from_ranks` say when it is used."""

def texts_to_bytes(texts: list[str], table: str, /) -> list[bytes] | None:
    """Each text's bytes through GPT-2's byte map (``table``: the character of each byte),
    or ``None`` at a character outside it."""


def merges_from_ranks(tokens: list[bytes], /) -> list[tuple[bytes, bytes]] | int:
    """The ``(left, right)`` parts of every token of more than one byte, in rank order, or
    the place in ``tokens`` of the first that is not the merge of two tokens before it."""
