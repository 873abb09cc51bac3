"""The Evaluate tab: tokenizers measured on held-out text (core.evaluate)."""
