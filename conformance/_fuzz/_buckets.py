"""A search that keeps going: disagreements in buckets, one shrunk example per bucket.

Why not one Hypothesis run that stops at the first failure (what a property test does): an
implementation with two independent bugs would show one of them, and the second only after
the first is fixed and the search re-run. And Hypothesis's own "multiple bugs" mode tells
failures apart by exception type and source line, which for us is always the same line. So a
search here runs in three phases, all with the same test body:

1. **replay** (``Phase.reuse`` only): the examples saved in the example database by earlier
   runs are re-checked first, so CI re-checks yesterday's disagreements before anything new;
   one that no longer disagrees is deleted from the database;
2. **search** (``Phase.generate`` only, no database): ``N`` new examples; nothing is raised, every
   disagreement is put in its :class:`Bucket`, keyed by the operation and the first differing
   JSON path with array indices normalised (``$.result.decisions[*].status``); a bucket keeps
   its count and its smallest example (with the choice sequence that generated it);
3. **shrink**, one bucket at a time: the bucket's smallest example is handed to Hypothesis as
   a saved example (an in-memory database) and the test raises only for a disagreement *in
   that bucket*, with an exception type of that bucket, so the shrinker cannot slide into
   another bug. A disagreement met on the way is still counted (a new bucket is queued). One
   bucket's shrink runs at most :func:`shrink_limit` examples.

The replay and shrink phases rely on private Hypothesis details: the test's database key
(``_hypothesis_internal_database_key``, which ``hypothesis.find`` itself sets), the choice
sequence of the running example (``current_build_context().data.choices``), and the
``<key>.secondary`` corpus (an example saved under the primary key that replays exactly is
taken for an already shrunk failure and not shrunk again; a secondary one is shrunk). Without
them (a future Hypothesis) a bucket is reported with its smallest example, unshrunk.

The time budget (:class:`~conformance._fuzz._search.Budget`) is checked before every example:
replay and search stop at its generation deadline, shrinking at its end. Stopped by the clock
or by Ctrl-C, a search still returns every bucket it found (unshrunk ones say so).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Callable

from conformance._fuzz._search import Budget, Disagreement, OutOfTime, _quiet_test

__all__ = ["Bucket", "BucketHit", "BucketTracker", "BucketedOutcome", "ShrinkLimit", "bucket_key", "path_pattern",
           "run_bucketed", "shrink_limit"]

#: (operation, first differing path with indices normalised, the reference failed)
BucketKey = tuple[str, str, bool]
#: What a search is given: ``(body, settings, database_key) -> test``; the test calls
#: ``tracker.start_example()`` once per example and ``body(example)``.
MakeTest = Callable[[Callable[[Any], None], Any, bytes], Callable[[], None]]

_SHRINK_KEY = b"maka-fuzz-bucket"


def path_pattern(path: str) -> str:
    """``path`` with every array index replaced by ``*``: ``$.a[3].b[0]`` → ``$.a[*].b[*]``."""
    return re.sub(r"\[\d+\]", "[*]", path)


def bucket_key(d: Disagreement) -> BucketKey:
    return (d.op, path_pattern(str(d.diff.get("path", "$"))), d.reference_failed)


@dataclass
class Bucket:
    """One kind of disagreement: how often it was met, its smallest example, its shrunk one."""

    key: BucketKey
    first_example: int
    count: int = 0
    best: Disagreement | None = None
    best_choices: tuple[Any, ...] | None = None
    #: Hypothesis's minimal example of the bucket (``None`` until shrunk to the end).
    final: Disagreement | None = None
    final_choices: tuple[Any, ...] | None = None
    shrink: str = "not shrunk"
    #: Database entries (serialised choices) that reproduced this bucket in the replay phase.
    replayed: set[bytes] = field(default_factory=set)

    @property
    def op(self) -> str:
        return self.key[0]

    @property
    def path(self) -> str:
        return self.key[1]

    @property
    def reference_failed(self) -> bool:
        return self.key[2]

    @property
    def result(self) -> Disagreement:
        """The example to report: the shrunk one, else the smallest seen."""
        result = self.final if self.final is not None else self.best
        assert result is not None
        return result

    @property
    def result_choices(self) -> tuple[Any, ...] | None:
        return self.final_choices if self.final is not None else self.best_choices


class BucketHit(Exception):
    """Raised to Hypothesis for a disagreement in a targeted bucket (one subclass per bucket)."""

    def __init__(self, disagreement: Disagreement, choices: tuple[Any, ...] | None) -> None:
        super().__init__(str(disagreement))
        self.disagreement = disagreement
        self.choices = choices


_HIT_TYPES: dict[BucketKey, type[BucketHit]] = {}


def _hit(d: Disagreement, choices: tuple[Any, ...] | None) -> BucketHit:
    """A :class:`BucketHit` of ``d``'s bucket's own type: Hypothesis tells failures apart by
    type (and line), so each bucket is a failure of its own."""
    key = bucket_key(d)
    kind = _HIT_TYPES.get(key)
    if kind is None:
        kind = _HIT_TYPES[key] = type(f"Disagreement_{len(_HIT_TYPES) + 1}", (BucketHit,),
                                      {"__doc__": f"{key[0]} at {key[1]}"})
    return kind(d, choices)


class ShrinkLimit(BaseException):
    """One bucket's shrink ran its share of examples: a ``BaseException``, so Hypothesis ends
    the shrink without counting it as a failure (as :class:`OutOfTime`)."""


@dataclass
class BucketTracker:
    """What one search saw: examples run, per phase, and the buckets in discovery order."""

    budget: Budget = field(default_factory=Budget)
    phase: str = "search"  # "replay" | "search" | "shrink"
    examples: int = 0
    shrink_examples: int = 0
    buckets: dict[BucketKey, Bucket] = field(default_factory=dict)
    #: Set once :class:`OutOfTime` was raised: whatever Hypothesis raises afterwards (a state
    #: machine stopped mid-program may be reported as "flaky") means "stopped".
    out_of_time: bool = False
    #: Examples one bucket's shrink may run (``None``: Hypothesis's own limits only), and
    #: whether the current bucket reached it (:class:`ShrinkLimit`, same caveat as above).
    shrink_limit: int | None = None
    bucket_shrink_examples: int = 0
    limit_hit: bool = False

    def start_example(self) -> None:
        try:
            self.budget.check(self.phase == "shrink")
        except OutOfTime:
            self.out_of_time = True
            raise
        if self.phase == "shrink":
            if self.shrink_limit is not None and self.bucket_shrink_examples >= self.shrink_limit:
                self.limit_hit = True
                raise ShrinkLimit()
            self.bucket_shrink_examples += 1
            self.shrink_examples += 1
        else:
            self.examples += 1

    def record(self, d: Disagreement, choices: tuple[Any, ...] | None) -> Bucket:
        key = bucket_key(d)
        bucket = self.buckets.get(key)
        if bucket is None:
            bucket = self.buckets[key] = Bucket(key, self.examples)
        # Counted once per example: not the shrinker's re-runs, not Hypothesis's final replay
        # of a saved example (a bucket first met while shrinking counts its first example).
        counted = self.phase == "search" or bucket.count == 0
        if self.phase == "replay" and choices is not None:
            from hypothesis.database import choices_to_bytes

            saved = choices_to_bytes(choices)
            counted = counted or saved not in bucket.replayed
            bucket.replayed.add(saved)
        if counted:
            bucket.count += 1
        if bucket.best is None or d.size < bucket.best.size:
            bucket.best, bucket.best_choices = d, choices
        return bucket


@dataclass
class BucketedOutcome:
    """The buckets of one search, what it ran and why it stopped (``None``: it did not)."""

    buckets: list[Bucket]
    examples: int
    shrink_examples: int
    stopped: str | None = None


def _current_choices() -> tuple[Any, ...] | None:
    """The choice sequence of the running Hypothesis example (``None`` when unavailable)."""
    try:
        from hypothesis.control import current_build_context

        return tuple(current_build_context().data.choices)
    except Exception:  # noqa: BLE001 - a private hook: without it buckets are not shrunk
        return None


#: Body modes: raise for nothing (search), for any bucket (replay), or for one bucket (shrink).
_NOTHING = "nothing"
_ANY = "any"


def _body(check: Callable[[Any], list[Disagreement]], tracker: BucketTracker, target: Any) -> Callable[[Any], None]:
    def body(example: Any) -> None:
        found = check(example)
        if not found:
            return
        choices = _current_choices()
        hit = None
        for d in found:
            bucket = tracker.record(d, choices)
            if hit is None and (target == _ANY or target == bucket.key):
                hit = d
        if hit is not None:
            raise _hit(hit, choices)

    return body


def _hits(exc: BaseException) -> list[BucketHit]:
    if isinstance(exc, BucketHit):
        return [exc]
    out: list[BucketHit] = []
    for inner in getattr(exc, "exceptions", ()) or ():  # ExceptionGroup, FlakyFailure
        out.extend(_hits(inner))
    return out


def _nothing_ran(exc: BaseException) -> bool:
    """Hypothesis's ``SkipTest`` when no example could run (every saved entry unreadable)."""
    import unittest

    return isinstance(exc, unittest.SkipTest)


def _settings(max_examples: int, database: Any, phases: tuple[Any, ...], *, multiple: bool,
              steps: int | None) -> Any:
    from hypothesis import HealthCheck, Verbosity, settings

    extra = {"stateful_step_count": steps} if steps is not None else {}
    return settings(max_examples=max(1, max_examples), deadline=None, database=database,
                    suppress_health_check=list(HealthCheck), report_multiple_bugs=multiple, print_blob=False,
                    verbosity=Verbosity.quiet, derandomize=False, phases=phases, **extra)


def _stopped(exc: BaseException, tracker: BucketTracker) -> str | None:
    """``"time budget"`` / ``"interrupted"`` when ``exc`` (or what Hypothesis made of it) stops the search."""
    if isinstance(exc, KeyboardInterrupt):
        return "interrupted"
    if isinstance(exc, OutOfTime) or tracker.out_of_time:
        return "time budget"
    return None


def shrink_limit(examples: int) -> int:
    """How many examples one bucket's shrink may run: ``max(200, 2 × examples)``. Hypothesis
    alone stops after 500 *successful* shrinks or five minutes, per failure; with several
    buckets and a slow implementation that is too long for a run without a time budget."""
    return max(200, 2 * examples)


def run_bucketed(make_test: MakeTest, check: Callable[[Any], list[Disagreement]], tracker: BucketTracker, *,
                 database: Any, database_key: bytes, examples: int, steps: int | None = None,
                 generate: bool = True) -> BucketedOutcome:
    """Replay, search and shrink (see the module docstring); never raises a disagreement.

    ``check(example)`` returns the example's disagreements (empty when both sides agree).
    ``database`` (``None``: none) keeps the minimal example of every bucket under
    ``database_key`` for the next run. Each bucket's shrink runs at most
    :func:`shrink_limit` examples (unless ``tracker.shrink_limit`` is set already).
    ``generate=False`` skips the search phase (``fuzz --search fast`` replays the database
    here and searches with its own generator).
    """
    from hypothesis import Phase
    from hypothesis.database import InMemoryExampleDatabase, choices_to_bytes

    if tracker.shrink_limit is None:
        tracker.shrink_limit = shrink_limit(examples)
    stopped: str | None = None

    def run(test: Callable[[], None]) -> BaseException | None:
        try:
            _quiet_test(test)
        except BaseException as exc:  # noqa: BLE001 - sorted out by the caller
            return exc
        return None

    # 1. replay what earlier runs saved (a limit on examples would end the replay before
    #    Hypothesis deletes the entries that no longer fail, hence one above their number)
    saved = len(list(database.fetch(database_key))) if database is not None else 0
    if saved:
        tracker.phase = "replay"
        exc = run(make_test(_body(check, tracker, _ANY),
                            _settings(saved + 1, database, (Phase.reuse,), multiple=True, steps=steps), database_key))
        if exc is not None:
            stopped = _stopped(exc, tracker)
            if stopped is None and not _hits(exc) and not _nothing_ran(exc):
                raise exc
    # 2. search
    if stopped is None and generate:
        tracker.phase = "search"
        exc = run(make_test(_body(check, tracker, _NOTHING),
                            _settings(examples, None, (Phase.generate,), multiple=False, steps=steps), database_key))
        if exc is not None:
            stopped = _stopped(exc, tracker)
            if stopped is None:
                raise exc
    # 3. shrink, one bucket at a time (a bucket found on the way is queued)
    tracker.phase = "shrink"
    done = 0
    while done < len(tracker.buckets):
        bucket = list(tracker.buckets.values())[done]
        done += 1
        if stopped is not None:
            bucket.shrink = f"not shrunk (stopped by the {stopped})" if stopped == "time budget" else \
                "not shrunk (interrupted)"
            continue
        if bucket.best_choices is None:
            bucket.shrink = "not shrunk (no choice sequence): smallest seen"
            continue
        tracker.bucket_shrink_examples, tracker.limit_hit = 0, False
        memory = InMemoryExampleDatabase()
        # As a *secondary* entry: Hypothesis does not shrink a primary entry that replays
        # exactly (it takes it for an already shrunk failure), a secondary one it does.
        memory.save(_SHRINK_KEY + b".secondary", choices_to_bytes(bucket.best_choices))
        tracker.out_of_time = False
        exc = run(make_test(_body(check, tracker, bucket.key),
                            _settings(examples, memory, (Phase.reuse, Phase.shrink), multiple=False, steps=steps),
                            _SHRINK_KEY))
        if exc is None or _nothing_ran(exc):
            bucket.shrink = "not reproduced (a flaky implementation?): smallest seen"
            continue
        if isinstance(exc, ShrinkLimit) or (tracker.limit_hit and not tracker.out_of_time
                                            and not isinstance(exc, KeyboardInterrupt)):
            bucket.shrink = f"stopped at the shrink limit ({tracker.shrink_limit} examples): smallest seen"
            continue
        stopped = _stopped(exc, tracker)
        if stopped is not None:
            bucket.shrink = "stopped by the time budget" if stopped == "time budget" else "stopped: interrupted"
            continue
        hits = [h for h in _hits(exc) if bucket_key(h.disagreement) == bucket.key]
        if not hits:
            raise exc
        if hits[0] is exc:
            bucket.final, bucket.final_choices = exc.disagreement, exc.choices  # type: ignore[attr-defined]
            bucket.shrink = "complete"
        else:
            bucket.shrink = f"flaky ({type(exc).__name__}): smallest seen"
    # keep the minimal example of every bucket for the next run (and drop what it replaces)
    if database is not None:
        for bucket in tracker.buckets.values():
            if bucket.result_choices is None:
                continue
            entry = choices_to_bytes(bucket.result_choices)
            database.save(database_key, entry)
            for old in bucket.replayed - {entry}:  # (Hypothesis may have moved it to its secondary key)
                database.delete(database_key, old)
                database.delete(database_key + b".secondary", old)
    return BucketedOutcome(list(tracker.buckets.values()), tracker.examples, tracker.shrink_examples, stopped)
