"""The text the inspector and the compare view start with: a little of everything a tokenizer meets. No Qt."""

from __future__ import annotations

SAMPLE_TEXT = (
    "Hello world! Tokenizers cut text into pieces:\n"
    "\tnumbers 1234567, code `x += 1`, café, naïve,\n"
    "日本語のテキスト, emoji 😀👍🏽, and <|endoftext|> between documents.\n"
)
