"""The PySide6 pin guard (many signal emissions), the shipped sample corpus and resources,
and `bpe_studio` staying importable without loading Qt."""

from __future__ import annotations

import subprocess
import sys
import textwrap

from bpe_studio.app.models import sample_corpus
from bpe_studio.app.resources import resource, style_sheet

EMIT_SCRIPT = textwrap.dedent(
    """
    import os, threading
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    from PySide6.QtCore import QCoreApplication, QObject, QThread, Signal, Slot

    class Source(QObject):
        value = Signal(object)
        flag = Signal(bool)

    class Sink(QObject):
        def __init__(self):
            super().__init__()
            self.count = 0
        @Slot(object)
        def on_value(self, v):
            self.count += 1
        @Slot(bool)
        def on_flag(self, v):
            self.count += 1

    app = QCoreApplication([])
    source, sink = Source(), Sink()
    source.value.connect(sink.on_value)
    source.flag.connect(sink.on_flag)
    for i in range(20_000):   # direct connections, in this thread
        source.value.emit([i])
        source.flag.emit(i % 2 == 0)
    # queued: emitted from another thread, delivered here
    def emit_from_thread():
        for i in range(20_000):
            source.value.emit(i)
    thread = threading.Thread(target=emit_from_thread)
    thread.start(); thread.join()
    app.processEvents()
    while sink.count < 60_000:
        app.processEvents()
    print(sink.count)
    """
)


def test_twenty_thousand_signal_emissions_do_not_crash():
    # PySide6 6.12.0 aborted the interpreter after a few hundred emissions
    # ("bool_dealloc: deallocating True"): run it in a child so a crash is a failure.
    result = subprocess.run([sys.executable, "-c", EMIT_SCRIPT], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.strip() == "60000"


def test_shipped_sample_corpus_is_the_generators_output():
    shipped = sample_corpus.SAMPLE_CORPUS_PATH.read_bytes()
    generated = sample_corpus.generate().encode("utf-8")
    assert shipped == generated, "run `python -m bpe_studio.app.models.sample_corpus` to regenerate resources/sample_corpus.txt"


def test_sample_corpus_is_varied_prose_with_document_separators():
    text = sample_corpus.generate()
    assert 200_000 < len(text.encode("utf-8")) < 800_000
    assert text.count("<|endoftext|>") == sample_corpus.DEFAULT_DOCUMENTS - 1
    assert sample_corpus.generate() == text  # deterministic
    assert sample_corpus.generate(seed=1) != text
    for sample in ("θάλασσα", "книга", "你好", "ありがとう", "مرحبا", "def ", "{", "2", "'s", "\t"):
        assert sample in text, sample


def test_resources_exist():
    assert resource("icon.svg").is_file()
    assert "QPushButton#trainButton" in style_sheet()


def test_importing_bpe_studio_does_not_load_qt():
    code = "import sys, bpe_studio, bpe_studio.app.models.session, bpe_studio.app.models.sample_corpus; print(any(m.startswith('PySide6') for m in sys.modules))"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "False"
