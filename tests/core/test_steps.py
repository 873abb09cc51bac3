"""Step-generators (`core.steps`): one way to take their result, and nowhere else reads `StopIteration`."""

from __future__ import annotations

import re
from collections.abc import Generator
from pathlib import Path

import pytest

from core.steps import map_steps, run_steps

REPO = Path(__file__).resolve().parents[2]


def _work(log: list[str]) -> Generator[int, None, str]:
    try:
        yield 1
        yield 2
        return "done"
    finally:
        log.append("closed")


def test_run_steps_gives_every_step_then_the_result() -> None:
    log: list[str] = []
    seen: list[int] = []
    assert run_steps(_work(log), seen.append) == "done"
    assert seen == [1, 2] and log == ["closed"]


def test_a_stop_raised_by_the_caller_closes_the_work_at_once() -> None:
    log: list[str] = []

    def stop(step: int) -> None:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run_steps(_work(log), stop)
    assert log == ["closed"]  # its cleanup ran before the stop reached the caller


def test_map_steps_restates_the_steps_and_keeps_the_result() -> None:
    def outer() -> Generator[str, None, str]:
        result = yield from map_steps(_work([]), lambda n: f"step {n}")
        return result.upper()

    seen: list[str] = []
    assert run_steps(outer(), seen.append) == "DONE"
    assert seen == ["step 1", "step 2"]


def test_no_module_reads_a_result_out_of_stop_iteration() -> None:
    readers = [path.relative_to(REPO).as_posix()
               for folder in ("core", "bpe_studio") for path in (REPO / folder).rglob("*.py")
               if re.search(r"except StopIteration as|\.value\b.*StopIteration|StopIteration\)\.value",
                            path.read_text(encoding="utf-8"))]
    assert readers == [], f"use core.steps.run_steps / map_steps instead: {readers}"
