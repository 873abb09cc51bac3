"""Stage 1 — text to pre-tokens: the patterns, special tokens, safe cut points and counting.

- `core.pretokenize.patterns`: the GPT-2 / GPT-4 regexes (or a custom one) and their safe cut points;
- `core.pretokenize.specials`: validating special tokens and splitting text at them;
- `core.pretokenize.pieces`: cutting text into *pieces* at safe cut points (C-speed ``re``);
- `core.pretokenize.counting`: counting pre-tokens, the regex run once per distinct piece.
"""
