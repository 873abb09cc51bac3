"""Encoding a corpus to ``.npy`` from the window: the progress strip."""
