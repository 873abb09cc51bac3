"""tiktoken's ``.tiktoken`` rank files: one ``base64(token bytes) rank`` line per token.

Adds writing ``tokenizer.tiktoken`` (every ordinary token, by id; the special tokens are not
in the file: tiktoken takes them as an ``Encoding``'s ``special_tokens``, and
``tokenizer_config.json`` lists them with their ids) and reading any such file back into a
byte-level BPE tokenizer. A rank file holds no merges and no pattern:

- the merges are recovered from the ranks as tiktoken itself encodes: a token of rank
  ``r`` is the merge of the two parts that byte-pair encoding with the tokens of rank
  below ``r`` leaves of its bytes (``b"ab"`` at rank 300 -> ``(b"a", b"b")``);
- the pattern and special tokens come from a ``tokenizer_config.json`` beside the file,
  from the caller, or from a known encoding name (`KNOWN_ENCODINGS`: ``cl100k_base``,
  ``o200k_base``, ``r50k_base``, ``p50k_base``, the constants tiktoken itself uses).

Ranks must be distinct. When the special tokens' ids are given (a ``tokenizer_config.json``
beside the file, as an export writes, a known encoding, or a dict), ids that no token has
are allowed, as in ``vocab.json`` (within `TokenIds`' bound): ``cl100k_base`` leaves
100256 and 100261-100275 unused, and a vocabulary with gaps saves and loads back to the
same ids. Special tokens whose ids are not given take the gaps first, in order, then the
ids after the last rank (the ids a BPE Studio export gives them: 256, 257, ...); a gap
they leave is refused, since nothing says which token it was for.
"""

from __future__ import annotations

import base64
import binascii
import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from core.formats.base import FormatError, Merges, TokenIds, Vocab, line_pieces, read_text
from core.pretokenize.native import python_forced
from core.pretokenize.patterns import GPT2_PATTERN, GPT4_PATTERN, Pattern, resolve_pattern

_native_merges: Callable[[list[bytes]], list[tuple[bytes, bytes]] | int] | None
try:
    from core.formats._reading import merges_from_ranks as _native_merges
except ImportError:  # built without a C compiler: the merges found in Python
    _native_merges = None

__all__ = [
    "KNOWN_ENCODINGS", "TIKTOKEN_NAME", "KnownEncoding", "load_tiktoken_ranks", "merges_from_ranks",
    "place_special_tokens", "tiktoken_chunks", "tiktoken_text",
]

TIKTOKEN_NAME = "tokenizer.tiktoken"

O200K_PATTERN = "|".join(
    [
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""\p{N}{1,3}""",
        r""" ?[^\s\p{L}\p{N}]+[\r\n/]*""",
        r"""\s*[\r\n]+""",
        r"""\s+(?!\S)""",
        r"""\s+""",
    ]
)
"""tiktoken's ``o200k_base`` pre-tokenization regex (a public constant of tiktoken)."""


@dataclass(frozen=True)
class KnownEncoding:
    """A tiktoken encoding whose rank file can be opened by name: its pattern and special token ids."""

    pattern: str
    special_tokens: Mapping[str, int]


_EOT, _FIM_P, _FIM_M, _FIM_S, _EOP = (
    "<|endoftext|>", "<|fim_prefix|>", "<|fim_middle|>", "<|fim_suffix|>", "<|endofprompt|>",
)

KNOWN_ENCODINGS: dict[str, KnownEncoding] = {
    # r50k/p50k's pattern in tiktoken is written differently but matches exactly as GPT-2's
    "r50k_base": KnownEncoding(GPT2_PATTERN, {_EOT: 50256}),
    "p50k_base": KnownEncoding(GPT2_PATTERN, {_EOT: 50256}),
    "cl100k_base": KnownEncoding(
        GPT4_PATTERN, {_EOT: 100257, _FIM_P: 100258, _FIM_M: 100259, _FIM_S: 100260, _EOP: 100276}
    ),
    "o200k_base": KnownEncoding(O200K_PATTERN, {_EOT: 199999, _EOP: 200018}),
}
"""tiktoken's public encodings: name -> pattern and special tokens (tiktoken_ext/openai_public.py)."""


def tiktoken_chunks(vocab: Vocab, special_ids: Mapping[str, int]) -> Iterator[str]:
    """The ``.tiktoken`` file as pieces, a token at a time (`core.formats.atomic` writes
    them as they come: a vocabulary of huge tokens is never one huge string). Checked
    before any piece is made.

    Raises:
        FormatError: two ordinary tokens have the same bytes (tiktoken keys ranks by bytes).
    """
    specials = set(special_ids.values())
    seen: dict[bytes, int] = {}
    for token_id in sorted(vocab):
        if token_id in specials:
            continue
        token = vocab[token_id]
        if token in seen:
            raise FormatError(
                f"{TIKTOKEN_NAME}: ids {seen[token]} and {token_id} are both {token[:60]!r}; "
                "tiktoken needs every token's bytes to be distinct"
            )
        seen[token] = token_id
    return _tiktoken_lines(vocab, specials)


def _tiktoken_lines(vocab: Vocab, specials: set[int]) -> Iterator[str]:
    for token_id in sorted(vocab):
        if token_id not in specials:
            yield from line_pieces("", base64.b64encode(vocab[token_id]).decode("ascii"), f" {token_id}\n")


def tiktoken_text(vocab: Vocab, special_ids: Mapping[str, int]) -> str:
    """The ``.tiktoken`` text of a vocabulary: every token but the special tokens, by id.

    ``{0: b"\\x00", ..., 256: b"ab"}`` -> ``"AA== 0\\n...\\nYWI= 256\\n"``

    Raises:
        FormatError: two ordinary tokens have the same bytes (tiktoken keys ranks by bytes).
    """
    chunks = tiktoken_chunks(vocab, special_ids)
    return "".join(chunks)


def load_tiktoken_ranks(path: str | os.PathLike[str], *, spare_ids: int = 0) -> dict[bytes, int]:
    """Read a ``.tiktoken`` file into ``{token bytes: rank}``, checking every line.

    Each rank is checked against the file's own size as it is read (`TokenIds`: below the
    number of tokens plus ``spare_ids`` plus `UNUSED_IDS_ALLOWED`), so a hostile rank
    (``99999999999999999999``) is refused at its line, before anything is sized by it.

    Args:
        spare_ids: how many special tokens may fill ids the ranks leave free.

    Raises:
        FormatError: naming the file and line: not ``TOKEN RANK``, a token that is not
            base64, a rank that is not a non-negative integer or out of range, a token or a
            rank given twice.
    """
    p = Path(path)
    lines = read_text(p).split("\n")
    ids = TokenIds(sum(1 for line in lines if line.strip()) + spare_ids)
    ranks: dict[bytes, int] = {}
    line_of_rank: dict[int, int] = {}
    for lineno, line in enumerate(lines, start=1):
        line = line.rstrip("\r")
        if not line:
            continue
        where = f"{p}:{lineno}"
        parts = line.split()
        if len(parts) != 2:
            raise FormatError(f"{where}: expected 'BASE64_TOKEN RANK', got {line[:80]!r}; is this a .tiktoken file?")
        token_text, rank_text = parts
        try:
            token = base64.b64decode(token_text, validate=True)
        except (binascii.Error, ValueError) as e:
            raise FormatError(f"{where}: the token {token_text[:40]!r} is not base64") from e
        if not token:
            raise FormatError(f"{where}: the token is empty")
        if not (rank_text.isascii() and rank_text.isdigit()):
            raise FormatError(f"{where}: the rank {rank_text[:40]!r} is not a non-negative integer")
        # a rank of thousands of digits is out of range whatever the file; int() would refuse it unclearly
        rank = ids.check(token, int(rank_text) if len(rank_text) < 1000 else 10**1000, where)
        if token in ranks:
            raise FormatError(f"{where}: the token {token!r} is given twice (first with rank {ranks[token]})")
        if rank in line_of_rank:
            raise FormatError(f"{where}: rank {rank} is given twice (first on line {line_of_rank[rank]})")
        ranks[token] = rank
        line_of_rank[rank] = lineno
    if not ranks:
        raise FormatError(f"{p}: no tokens; a .tiktoken file has one 'BASE64_TOKEN RANK' line per token")
    return ranks


def place_special_tokens(
    ranks: Mapping[bytes, int],
    special_tokens: Sequence[str] | Mapping[str, int],
    where: str,
) -> dict[str, int]:
    """Ids of the special tokens of a rank file.

    A mapping gives the ids (other ids may stay unused); a sequence puts the tokens, in
    order, into the gaps of the ranks, then after the last rank, and must fill every gap:
    ranks ``0..255, 258..`` and ``["<a>", "<b>"]`` -> ``{"<a>": 256, "<b>": 257}``.

    Raises:
        FormatError: a special id that is also a rank or repeats, or (a sequence) a gap left over.
    """
    taken = set(ranks.values())
    if isinstance(special_tokens, Mapping):
        ids = dict(special_tokens)
        for token, token_id in ids.items():
            if token_id in taken:
                raise FormatError(f"{where}: the special token {token!r} has id {token_id}, which is also a rank in the file")
        if len(set(ids.values())) != len(ids):
            raise FormatError(f"{where}: two special tokens have the same id")
        return ids  # ids no token has are unused, as a vocab.json may leave them
    else:
        if len(set(special_tokens)) != len(special_tokens):
            raise FormatError(f"{where}: a special token is given twice")
        end = max(taken) + 1
        free = [i for i in range(end) if i not in taken][: len(special_tokens)]
        free += range(end, end + len(special_tokens) - len(free))
        ids = dict(zip(special_tokens, free))
    used = taken | set(ids.values())
    top = max(taken) + 1  # special ids above the last rank may leave ids unused, as tiktoken's own do
    if len(used & set(range(top))) != top:
        missing = next(i for i in range(top) if i not in used)
        known = f" and the {len(ids)} special token ids" if ids else ""
        raise FormatError(
            f"{where}: the ranks{known} skip {missing}; ranks must run 0..N-1 without gaps "
            "(give the special tokens that fill them, or fix the file)"
        )
    return ids


def merges_from_ranks(ranks: Mapping[bytes, int], where: str) -> Merges:
    """The merges that byte-pair encoding by ``ranks`` performs, in rank order.

    A token of rank ``r`` with more than one byte is the merge of the two parts that BPE
    with the tokens of rank below ``r`` leaves of its bytes — the way tiktoken encodes it.

    Raises:
        FormatError: a single byte is missing, or a token that no two lower-ranked tokens make.
    """
    missing = [b for b in range(256) if bytes([b]) not in ranks]
    if missing:
        raise FormatError(
            f"{where}: the single byte {bytes([missing[0]])!r} has no rank ({len(missing)} bytes missing); "
            "a byte-level rank file needs all 256"
        )
    ordered = sorted(ranks.items(), key=lambda item: item[1])
    native = None if python_forced() else _native_merges
    if native is not None:
        found: Merges | int = native([token for token, _ in ordered])
        if isinstance(found, int):
            raise _not_a_merge(where, *ordered[found])
        return found
    merges: Merges = []
    get = ranks.get
    for token, rank in ordered:
        if len(token) == 1:
            continue
        parts = [token[i : i + 1] for i in range(len(token))]
        while len(parts) > 2:
            best = None
            best_rank = rank
            for i in range(len(parts) - 1):
                r = get(parts[i] + parts[i + 1])
                if r is not None and r < best_rank:
                    best, best_rank = i, r
            if best is None:
                break
            parts[best : best + 2] = [parts[best] + parts[best + 1]]
        if len(parts) != 2 or get(parts[0], rank) >= rank or get(parts[1], rank) >= rank:
            raise _not_a_merge(where, token, rank)
        merges.append((parts[0], parts[1]))
    return merges


def _not_a_merge(where: str, token: bytes, rank: int) -> FormatError:
    return FormatError(
        f"{where}: the token {token!r} (rank {rank}) is not the merge of two tokens of lower rank; "
        "this is not a byte-pair encoding rank file"
    )


def vocab_from_ranks(ranks: Mapping[bytes, int], special_ids: Mapping[str, int]) -> Vocab:
    """``{id: bytes}`` of the ranks and the special tokens."""
    vocab: Vocab = {rank: token for token, rank in ranks.items()}
    for token, token_id in special_ids.items():
        vocab[token_id] = token.encode("utf-8")
    return dict(sorted(vocab.items()))


def known_encoding(path: Path) -> KnownEncoding | None:
    """The known encoding a file is named after (``cl100k_base.tiktoken``), if any."""
    name = path.name.removesuffix(".tiktoken")
    return KNOWN_ENCODINGS.get(name)


def resolve_tiktoken_pattern(pattern: str | Pattern) -> Pattern:
    """A pattern given for a rank file: a `Pattern`, a known encoding's name, ``gpt2``/``gpt4`` or a regex."""
    if isinstance(pattern, Pattern):
        return pattern
    if pattern in KNOWN_ENCODINGS:
        return resolve_pattern(KNOWN_ENCODINGS[pattern].pattern)
    return resolve_pattern(pattern)
