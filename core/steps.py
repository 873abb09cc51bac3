"""Work written as a generator of steps that returns its result, and the one way to run it.

Long work in `core` (counting, evaluating, counting on a cluster) is a generator: it yields
its progress and *returns* its result, so a caller can show progress, stop between two steps
(closing the generator runs its cleanup) or just take the result. Another step-generator
uses one with ``yield from`` (or `map_steps`, to restate its steps); anything else with
`run_steps`.
"""

from __future__ import annotations

from collections.abc import Callable, Generator
from typing import TypeVar

__all__ = ["map_steps", "run_steps"]

Step = TypeVar("Step")
Shown = TypeVar("Shown")
Result = TypeVar("Result")


def run_steps(steps: Generator[Step, None, Result], each: Callable[[Step], None] | None = None) -> Result:
    """Run ``steps`` to its end, calling ``each`` with every value it yields; its result.

    An exception raised by ``each`` (a cancel, say) closes ``steps`` and propagates.

        >>> def work():
        ...     yield 1
        ...     yield 2
        ...     return "done"
        >>> seen = []
        >>> run_steps(work(), seen.append), seen
        ('done', [1, 2])
    """
    outcome: list[Result] = []
    try:
        for value in _kept(steps, outcome):
            if each is not None:
                each(value)
    finally:
        steps.close()
    return outcome[0]


def map_steps(steps: Generator[Step, None, Result], show: Callable[[Step], Shown]) -> Generator[Shown, None, Result]:
    """``steps`` with each step restated by ``show``; the same result.

        >>> def work():
        ...     yield 1
        ...     return "done"
        >>> list(map_steps(work(), str))
        ['1']
    """
    outcome: list[Result] = []
    for value in _kept(steps, outcome):
        yield show(value)
    return outcome[0]


def _kept(steps: Generator[Step, None, Result], outcome: list[Result]) -> Generator[Step, None, None]:
    """``steps``' values; its result appended to ``outcome`` when it ends."""
    outcome.append((yield from steps))
