"""The package's face: `core.__all__` is the API — small, every name real, nothing from typing,
and ``import core`` light (no numpy: training and counting do not need it)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import core

REPO = Path(__file__).resolve().parents[2]


def test_all_is_the_api_at_most_thirty_names_each_real() -> None:
    assert len(core.__all__) <= 30
    assert len(set(core.__all__)) == len(core.__all__)
    for name in core.__all__:
        assert getattr(core, name) is not None, name
    for name in ("train", "train_bpe", "TrainRun", "TrainOptions", "ReadOptions", "count_pretokens",
                 "PretokenCounts", "Tokenizer", "save_tokenizer"):
        assert name in core.__all__


def test_dir_shows_the_api_and_no_typing_names() -> None:
    names = dir(core)
    assert "Tokenizer" in names and "train" in names
    for leaked in ("Any", "TYPE_CHECKING", "annotations", "Union", "Iterable"):
        assert leaked not in names
    assert set(core.__all__) <= set(names)


def test_train_is_the_entry_and_the_stage_package_stays_reachable() -> None:
    import core.training.reference as oracle  # the stage package is core.training, so core.train stays the function
    from core.training.trainer import train

    assert core.train is train and core.training.merge.KERNEL_BATCH > 0
    assert core.train(iter(["aa aa"]), core.TrainOptions(257)).result()[1] == [(b"a", b"a")]
    assert oracle.train_bpe_reference("aa aa", 257, [])[1] == [(b"a", b"a")]


def test_all_is_a_literal_list_of_the_lazy_names() -> None:
    # type checkers read __all__ literally (no implicit re-exports under --strict)
    assert set(core.__all__) == set(core._HOMES)


def test_unknown_names_raise_attribute_error() -> None:
    try:
        core.train_bpe_events  # noqa: B018 - one training entry now: core.train
    except AttributeError as e:
        assert "train_bpe_events" in str(e)
    else:
        raise AssertionError("core.train_bpe_events still exists")


def test_import_core_loads_no_numpy() -> None:
    code = "import sys, core; print('numpy' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "False"


def test_counting_texts_loads_no_numpy() -> None:
    # counting never needs numpy (the statistics before the merges do)
    code = (
        "import sys, core\n"
        "counts = core.count_pretokens(iter(['low low lower']), workers=1)\n"
        "print('numpy' in sys.modules, len(counts))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["False", "3"]  # low, " low", " lower"
