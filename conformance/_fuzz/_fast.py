"""Fast generation for the search phase (issue 18 item 4): the same ledger strategies, drawn
by a plain seeded ``random.Random`` instead of Hypothesis's engine.

Why: a Hypothesis example of :func:`~._ledgers.fuzz_ledgers` makes ≈ 175 draws, each through
the engine's bookkeeping (spans, choice records, constraint pools), ≈ 10 ms per ledger: the
whole search was generation-bound (≈ 55 ledgers/s end to end while checking alone ran at
≈ 1,500/s). Here the *same strategy objects* are walked by a small interpreter: ``map``,
``flatmap``, ``filter``, ``one_of``, ``sampled_from``/``just``, ``integers``, ``booleans``,
``lists``, ``tuples``, fixed dictionaries, ``@composite`` (its ``draw`` is ours) and deferred
strategies are drawn with the seeded generator; any other strategy (text, characters, floats,
recursive JSON values...) is drawn by Hypothesis itself, from a ``ConjectureData`` fed by the
same generator. So the ledger model (kinds, edge families, corruptions, crash cuts) is the
strategies' own and cannot drift from the Hypothesis mode; the *distribution* differs
(uniform choices, no bias towards small or boundary values), which is why coverage of the
spec's codes is measured for this mode too (``tests/conformance/fuzz/test_fast.py``).

Determinism: ledger ``i`` of seed ``s`` depends only on ``(s, i)`` (its own generator, seeded
from both), so a failing ledger is re-derived from its index alone. The randomness is passed
in: nothing here reads a clock.
"""

from __future__ import annotations

import random
from typing import Any, Callable, Iterator

__all__ = ["Unsatisfied", "draw_case", "fast_cases", "fast_ledger_search", "shrink_case"]


class Unsatisfied(Exception):
    """A filter or ``assume`` rejected the draw: the caller draws again."""


def _hyp() -> Any:
    from hypothesis.strategies._internal import collections, core, deferred, flatmapped, misc, numbers, strategies
    return collections, core, deferred, flatmapped, misc, numbers, strategies


class _Interpreter:
    """Draws from Hypothesis strategy objects with ``rnd``; see the module docstring."""

    def __init__(self, rnd: random.Random) -> None:
        from hypothesis.control import BuildContext
        from hypothesis.internal.conjecture.data import ConjectureData

        self.rnd = rnd
        self.data = ConjectureData(random=random.Random(rnd.getrandbits(64)), max_choices=1 << 20)
        self.context = BuildContext(self.data, is_final=False, wrapped_test=None)  # type: ignore[arg-type]
        col, core, deferred, flat, misc, numbers, strat = _hyp()
        self.table: list[tuple[type, Callable[[Any], Any]]] = [
            (strat.MappedStrategy, lambda s: s.pack(self.draw(s.mapped_strategy))),
            (flat.FlatMapStrategy, lambda s: self.draw(s.expand(self.draw(s.base)))),
            (strat.FilteredStrategy, self._filtered),
            (strat.OneOfStrategy, lambda s: self.draw(self.rnd.choice(s.element_strategies))),
            (misc.JustStrategy, self._sampled),
            (strat.SampledFromStrategy, self._sampled),
            (misc.BooleansStrategy, lambda s: self.rnd.random() < 0.5),
            (numbers.IntegersStrategy, self._integers),
            (col.TupleStrategy, lambda s: tuple(self.draw(e) for e in s.element_strategies)),
            (col.FixedDictStrategy, self._fixed_dict),
            (core.CompositeStrategy, lambda s: s.definition(self.draw, *s.args, **s.kwargs)),
            (deferred.DeferredStrategy, lambda s: self.draw(s.wrapped_strategy)),
        ]
        from hypothesis.strategies._internal import recursive, strings

        self.table += [(strings.TextStrategy, self._text),
                       (col.UniqueSampledListStrategy, self._unique_sampled),
                       (col.UniqueListStrategy, self._unique),
                       (recursive.RecursiveStrategy, self._recursive)]
        self.depth = 0
        self.lists = col.ListStrategy
        self.not_satisfied = strat.filter_not_satisfied
        self.unique_lists = col.UniqueListStrategy
        self.cache: dict[type, Callable[[Any], Any] | None] = {}
        from hypothesis.strategies._internal.lazy import unwrap_strategies

        self.unwrap = unwrap_strategies

    def draw(self, strategy: Any, label: Any = None) -> Any:
        s = self.unwrap(strategy)
        kind = type(s)
        handler = self.cache.get(kind, False)
        if handler is False:
            handler = None
            if kind is self.lists:
                handler = self._list
            else:
                for base, h in self.table:
                    if kind is base:
                        handler = h
                        break
            self.cache[kind] = handler
        if handler is None:  # a leaf (text, floats, recursive...) Hypothesis draws itself
            return self.data.draw(s)
        return handler(s)

    def _filtered(self, s: Any) -> Any:
        for _ in range(3):
            value = self.draw(s.filtered_strategy)
            if all(c(value) for c in s.flat_conditions):
                return value
        raise Unsatisfied()

    def _sampled(self, s: Any) -> Any:
        if not s._transformations:
            return self.rnd.choice(s.elements)
        for _ in range(3):
            value = s._transform(self.rnd.choice(s.elements), data=None)
            if value is not self.not_satisfied:
                return value
        raise Unsatisfied()

    def _size(self, low: int, high: float) -> int:
        """A list's length: Hypothesis's average (small lists common, long ones possible)."""
        high = high if high != float("inf") else low + 10
        average = min(max(low * 2, low + 5), 0.5 * (low + high))
        size = low
        p = 1 - 1 / (1 + max(0.0, average - low))
        while size < high and self.rnd.random() < p:
            size += 1
        return size

    def _text(self, s: Any) -> str:
        chars = self.unwrap(s.element_strategy)
        intervals = getattr(chars, "intervals", None)
        if intervals is None or not len(intervals):
            return self.data.draw(s)
        n, rnd = len(intervals), self.rnd
        ascii_ = intervals.index_above(32)
        out = []
        for _ in range(self._size(s.min_size, s.max_size)):
            r = rnd.random()
            if r < 0.7 and n > ascii_ + 95:  # mostly printable ASCII, as in real ledgers
                i = ascii_ + rnd.randrange(95)
            else:  # any of the alphabet: the BMP, astral characters, controls
                i = rnd.randrange(n)
            out.append(chr(intervals[i]))
        return "".join(out)

    def _unique(self, s: Any) -> list[Any]:
        size = self._size(s.min_size, s.max_size)
        seen: list[set[Any]] = [set() for _ in s.keys]
        out: list[Any] = []
        for _ in range(2 * size + 2):
            if len(out) >= size:
                break
            value = self.draw(s.element_strategy)
            keys = [k(value) for k in s.keys]
            if any(k in ss for k, ss in zip(keys, seen)):
                continue
            for k, ss in zip(keys, seen):
                ss.add(k)
            if s.tuple_suffixes is not None:  # dictionaries: (key, value)
                value = (value, *self.draw(s.tuple_suffixes))
            out.append(value)
        if len(out) < s.min_size:
            raise Unsatisfied()
        return out

    def _recursive(self, s: Any) -> Any:
        """A leaf, or (less often the deeper it is, never below depth 4) one extension of it."""
        if self.depth >= 4 or self.rnd.random() < 0.4 + 0.15 * self.depth:
            return self.draw(s.base)
        self.depth += 1
        try:
            return self.draw(s.extend(s))
        finally:
            self.depth -= 1

    def _unique_sampled(self, s: Any) -> Any:
        inner = self.unwrap(s.element_strategy)
        if not hasattr(inner, "elements") or inner._transformations:
            return self.data.draw(s)
        pool = list(inner.elements)
        self.rnd.shuffle(pool)
        return pool[:min(len(pool), self._size(s.min_size, min(s.max_size, len(pool))))]

    def _integers(self, s: Any) -> Any:
        if s.start is None or s.end is None:
            return self.data.draw(s)
        return self.rnd.randint(s.start, s.end)

    def _fixed_dict(self, s: Any) -> Any:
        out = {k: self.draw(v) for k, v in s.mapping.items()}
        for k, v in (s.optional or {}).items():
            if self.rnd.random() < 0.5:
                out[k] = self.draw(v)
        return out

    def _list(self, s: Any) -> list[Any]:
        return [self.draw(s.element_strategy) for _ in range(self._size(s.min_size, s.max_size))]

    def run(self, strategy: Any) -> Any:
        from hypothesis.errors import StopTest, UnsatisfiedAssumption

        try:
            with self.context:
                return self.draw(strategy)
        except (UnsatisfiedAssumption, StopTest) as exc:
            raise Unsatisfied() from exc


def draw_case(strategy: Any, seed: int, index: int) -> Any:
    """Ledger ``index`` of ``seed`` (``None`` when ten attempts were all rejected by a filter)."""
    rnd = random.Random(f"maka-fast:{seed}:{index}")
    for _ in range(10):
        try:
            return _Interpreter(rnd).run(strategy)
        except Unsatisfied:
            continue
    return None


def fast_cases(strategy: Any, seed: int, start: int = 0) -> Iterator[tuple[int, Any]]:
    """``(index, case)`` for index ``start``, ``start + 1``... (an endless stream; rejected indices are skipped)."""
    index = start
    while True:
        case = draw_case(strategy, seed, index)
        if case is not None:
            yield index, case
        index += 1


def fast_ledger_search(strategy: Any, seed: int, check_many: Callable[[list[Any]], list[list[Any]]],
                       tracker: Any, *, examples: int, chunk: int = 64) -> tuple[dict[Any, Any], str | None]:
    """The search phase of ``fuzz --search fast``: ``examples`` cases of ``strategy`` drawn
    with :func:`fast_cases`, checked ``chunk`` at a time (one ``batch`` round trip per side),
    every disagreement recorded in ``tracker`` (a :class:`~._buckets.BucketTracker`; no
    choice sequence). Returns each bucket's smallest case (what :func:`shrink_case` starts
    from) and why the search stopped (``None``: it ran all its examples)."""
    from conformance._fuzz._buckets import bucket_key
    from conformance._fuzz._search import OutOfTime

    smallest: dict[Any, tuple[Any, Any]] = {}
    tracker.phase = "search"
    stream = fast_cases(strategy, seed)
    done = 0
    try:
        while done < examples:
            cases = []
            for _ in range(min(chunk, examples - done)):
                tracker.start_example()
                cases.append(next(stream)[1])
            try:
                answers = check_many(cases)
            except KeyboardInterrupt:  # none of this chunk was checked: not counted
                tracker.examples -= len(cases)
                raise
            done += len(cases)
            for case, found in zip(cases, answers):
                for d in found:
                    tracker.record(d, None)
                    key = bucket_key(d)
                    if key not in smallest or d.size < smallest[key][1].size:
                        smallest[key] = (case, d)
    except OutOfTime:
        return {k: v[0] for k, v in smallest.items()}, "time budget"
    except KeyboardInterrupt:
        return {k: v[0] for k, v in smallest.items()}, "interrupted"
    return {k: v[0] for k, v in smallest.items()}, None


def shrink_case(case: Any, key: Any, check_one: Callable[[Any], list[Any]], *, limit: int,
                budget: Any = None) -> tuple[Any, Any, str]:
    """The smallest ``case`` still disagreeing in bucket ``key``: drop the expected high-water,
    then delete runs of events (halves, quarters... single events) while the bucket persists.

    Why not Hypothesis's shrinker: a fast case has no choice sequence to hand it. Deleting
    events is what makes a failure readable (Hypothesis's shrinker spends most of its passes
    there too); it checks at most ``limit`` candidates and stops at the ``budget``'s end.
    Returns ``(case, its disagreement, how far it was shrunk)``."""
    from dataclasses import replace

    from conformance._fuzz._buckets import bucket_key
    from conformance._fuzz._search import OutOfTime

    tried = 0

    def hit(candidate: Any) -> Any:
        nonlocal tried
        tried += 1
        for d in check_one(candidate):
            if bucket_key(d) == key:
                return d
        return None

    best_d = hit(case)
    if best_d is None:
        return case, None, "not reproduced (a flaky implementation?): smallest seen"
    try:
        if case.high_water is not None:
            d = hit(replace(case, high_water=None))
            if d is not None:
                case, best_d = replace(case, high_water=None), d
        size = max(1, len(case.events) // 2)
        while size >= 1:
            i, progress = 0, False
            while i < len(case.events):
                if tried >= limit:
                    return case, best_d, f"stopped at the shrink limit ({limit} examples): event deletion"
                if budget is not None:
                    budget.check(True)
                candidate = replace(case, events=case.events[:i] + case.events[i + size:])
                d = hit(candidate)
                if d is not None:
                    case, best_d, progress = candidate, d, True
                else:
                    i += size
            if not progress:
                size //= 2
    except OutOfTime:
        return case, best_d, "stopped by the time budget: event deletion"
    return case, best_d, "complete"
