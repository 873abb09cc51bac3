"""Comparing two tokenizers on the same text."""
