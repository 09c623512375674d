"""One Hypothesis search: settings, the time budget, and what a search ends with.

Why the budget is enforced from inside the test body: Hypothesis has an example count, not a
clock. Every example (and every shrink attempt) starts by asking :class:`Budget` whether
there is time left; when there is not it raises :class:`OutOfTime`, a ``BaseException`` that
Hypothesis does not treat as a test failure (it is neither ``Exception`` nor ``SystemExit``),
so it ends the run cleanly without being "shrunk". Generation stops at one deadline; once a
disagreement is found, shrinking may go on until a later one. Because a stopped run never
reports its smallest failure, :class:`Tracker` keeps the smallest disagreement seen so far,
and that is what gets written when the clock (or Ctrl-C) stops the shrinker.

The differential fuzzer's searches keep going after the first disagreement and shrink one
example per bucket (:mod:`._buckets`, which uses :class:`Budget`, :class:`OutOfTime` and
:class:`Disagreement` from here); :class:`Tracker` and :func:`run_search` (one failure, shrunk
by Hypothesis) serve ``fuzz --self``, whose findings are exceptions, not buckets.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Callable

__all__ = ["Budget", "Disagreement", "OutOfTime", "SearchOutcome", "Tracker", "fuzz_settings", "run_search"]


class Disagreement(Exception):
    """The implementation's answer differs from the reference's (or the reference failed)."""

    def __init__(self, prop: str, op: str, case: str, input_: dict[str, Any], expected: Any, actual: Any,
                 diff: dict[str, Any], *, size: tuple[int, int] | None = None, reference_failed: bool = False,
                 step: int | None = None) -> None:
        where = f" (step {step})" if step is not None else ""
        super().__init__(f"{op}{where}: first difference at {diff.get('path')}: "
                         f"expected {diff.get('expected')!r}, got {diff.get('actual')!r}")
        self.prop, self.op, self.case, self.input = prop, op, case, input_
        self.expected, self.actual, self.diff = expected, actual, diff
        self.size = size if size is not None else (1 << 30, 0)
        self.reference_failed = reference_failed
        self.step = step


class OutOfTime(BaseException):
    """The time budget is spent: ends a Hypothesis run without counting as a failure."""


@dataclass
class Budget:
    """Monotonic deadlines (``None``: no limit): stop generating, stop shrinking."""

    generate_until: float | None = None
    stop_at: float | None = None

    @classmethod
    def split(cls, start: float, seconds: float | None, generate_share: float = 0.6) -> "Budget":
        if seconds is None:
            return cls()
        return cls(start + seconds * generate_share, start + seconds)

    def check(self, shrinking: bool) -> None:
        now = time.monotonic()
        limit = self.stop_at if shrinking else self.generate_until
        if limit is not None and now > limit:
            raise OutOfTime()


@dataclass
class Tracker:
    """What one search saw: examples run, and the smallest disagreement so far."""

    budget: Budget = field(default_factory=Budget)
    examples: int = 0
    best: Disagreement | None = None

    @property
    def found(self) -> bool:
        return self.best is not None

    #: Set once :class:`OutOfTime` was raised: whatever Hypothesis raises afterwards (for a
    #: state machine stopped mid-program it may report a "flaky" strategy) means "stopped".
    out_of_time: bool = False

    def start_example(self) -> None:
        try:
            self.budget.check(self.found)
        except OutOfTime:
            self.out_of_time = True
            raise
        self.examples += 1

    def record(self, disagreement: Disagreement) -> None:
        if self.best is None or disagreement.size < self.best.size:
            self.best = disagreement


@dataclass
class SearchOutcome:
    """``disagreement`` (None: none found); ``shrink`` says how far it was shrunk."""

    disagreement: Disagreement | None
    examples: int
    shrink: str = "complete"
    stopped: str | None = None


def fuzz_settings(max_examples: int, database: Any, *, steps: int | None = None) -> Any:
    """Hypothesis settings of a fuzz search (the database is where CI's cache lives)."""
    from hypothesis import HealthCheck, Phase, Verbosity, settings

    extra = {"stateful_step_count": steps} if steps is not None else {}
    return settings(max_examples=max(1, max_examples), deadline=None, database=database,
                    suppress_health_check=list(HealthCheck), report_multiple_bugs=False, print_blob=False,
                    verbosity=Verbosity.quiet, derandomize=False,
                    phases=(Phase.explicit, Phase.reuse, Phase.generate, Phase.shrink), **extra)


def _find_disagreement(exc: BaseException) -> Disagreement | None:
    if isinstance(exc, Disagreement):
        return exc
    for inner in getattr(exc, "exceptions", ()) or ():  # FlakyFailure and other exception groups
        found = _find_disagreement(inner)
        if found is not None:
            return found
    return None


def _quiet_test(test: Callable[[], None]) -> None:
    """Run ``test`` without Hypothesis's "Generating overly large repr" warning: one of its
    shrink passes renders our recursive JSON strategies (whose arguments hold whole corpora)
    for its own bookkeeping; nothing is printed from it, so the warning is only noise on a
    fuzz run's stderr."""
    import warnings

    from hypothesis.errors import HypothesisWarning

    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Generating overly large repr", category=HypothesisWarning)
        test()


def run_search(test: Callable[[], None], tracker: Tracker) -> SearchOutcome:
    """Run one Hypothesis test whose body raises :class:`Disagreement`; never raises it."""
    try:
        _quiet_test(test)
    except (OutOfTime, KeyboardInterrupt) as exc:
        stopped = "time budget" if isinstance(exc, OutOfTime) else "interrupted"
        shrink = f"stopped by the {stopped}" if tracker.found else "complete"
        return SearchOutcome(tracker.best, tracker.examples, shrink, stopped)
    except Exception as exc:  # noqa: BLE001 - Hypothesis' final report of the minimal example
        found = _find_disagreement(exc)
        if tracker.out_of_time and (found is None or found is not exc):
            shrink = "stopped by the time budget" if tracker.found else "complete"
            return SearchOutcome(tracker.best, tracker.examples, shrink, "time budget")
        if found is None:
            raise
        if found is not exc and tracker.best is not None:
            return SearchOutcome(tracker.best, tracker.examples, f"flaky ({type(exc).__name__}): smallest seen")
        return SearchOutcome(found, tracker.examples)
    return SearchOutcome(None, tracker.examples)
