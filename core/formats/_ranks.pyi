"""Types of ``_ranks.c`` (optional): `core.formats.tiktoken_file.merges_from_ranks` says when it is used."""

def merges_from_ranks(tokens: list[bytes], /) -> list[tuple[bytes, bytes]] | int:
    """The ``(left, right)`` parts of every token of more than one byte, in rank order, or
    the place in ``tokens`` of the first that is not the merge of two tokens before it."""
