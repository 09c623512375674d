"""Generated ledgers and the ledger comparison: ``ledger.resolve`` and ``ledger.plan``.

Why these four kinds: the contract is about ledgers after a crash. *Valid* ledgers (the
foundation's :func:`~maka_ref.testing.strategies.ledgers`, already crash-cut and recovered at
times) check that a healthy run resolves and plans like the reference; *corrupted* ones
(:func:`~maka_ref.testing.strategies.corrupt_ledgers`, every named corruption) check that a
corrupt ledger is a result (``corruption``, ``blocked``), the same one; *truncated* ones (a
prefix cut of a valid ledger anywhere, including right after a dispatch) are what a crash
leaves; *edge* ones (:func:`~maka_ref.testing.strategies.edge_ledgers`: several invocations
drawn from tiny identity pools, then call-id reuse, identity drift, moved responses, empty
tool names...) are the shapes real stores hold and on which the reference once disagreed with
upstream. One case in eight also sends ``expectedRuntimeEventHighWater`` with ``ledger.plan``
(spec 20 §1.6), the only way to reach ``runtime_offset_mismatch``. Hypothesis shrinks every
disagreement: the events of a failing ledger are deleted and simplified until none can go,
which is what makes the failure readable.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

from conformance._fuzz._search import Disagreement
from conformance._fuzz._values import comparable, first_difference, sendable, wire

__all__ = ["LEDGER_KINDS", "LEDGER_OPS", "LedgerCase", "check_ledger", "fuzz_ledgers", "ledger_disagreements",
           "ledger_disagreements_many", "ledger_requests"]

#: The ledger operations compared, in the order they are sent.
LEDGER_OPS: tuple[str, ...] = ("ledger.resolve", "ledger.plan")
LEDGER_KINDS: tuple[str, ...] = ("valid", "corrupted", "truncated", "edge")
#: The key of spec 20 §1.6's expected high-water in ``ledger.plan``'s params.
HIGH_WATER = "expectedRuntimeEventHighWater"


@dataclass(frozen=True)
class LedgerCase:
    """One generated ledger: its kind, its events (plain JSON, before the wire), the
    ``expectedRuntimeEventHighWater`` sent with ``ledger.plan`` (``None``: not sent) and, for
    an ``edge`` ledger, the edge families applied (what a coverage run counts)."""

    kind: str
    events: list[Any]
    high_water: int | None = None
    families: tuple[str, ...] = ()

    def __repr__(self) -> str:  # what Hypothesis prints for a falsifying example
        extra = f", high_water={self.high_water}" if self.high_water is not None else ""
        extra += f", families={list(self.families)}" if self.families else ""
        return f"LedgerCase(kind={self.kind!r}{extra}, {len(self.events)} events: {[_label(e) for e in self.events]})"

    def input(self) -> dict[str, Any]:
        """The case as a bundle's ``input`` (events already in wire semantics by the caller)."""
        out: dict[str, Any] = {"events": self.events}
        if self.high_water is not None:
            out[HIGH_WATER] = self.high_water
        return out


def _label(event: Any) -> str:
    if not isinstance(event, dict):
        return type(event).__name__
    content = event.get("content") if isinstance(event.get("content"), dict) else {}
    actions = event.get("actions") if isinstance(event.get("actions"), dict) else {}
    what = content.get("kind") or next(iter(actions), None) or event.get("role")
    return f"{event.get('id')}:{what}"


def _with_high_water(case: LedgerCase) -> Any:
    """``case``, or (one time in eight) ``case`` with an expected high-water of ``len(events)``
    − 1, + 0 or + 1. Drawn so that shrinking removes it first (the simplest choice is "none")."""
    from hypothesis import strategies as st

    def pick(k: int) -> Any:
        if k < 7:
            return st.just(case)
        return st.integers(-1, 1).map(lambda delta: LedgerCase(case.kind, case.events,
                                                               max(0, len(case.events) + delta), case.families))

    return st.integers(0, 7).flatmap(pick)


def fuzz_ledgers(kinds: Sequence[str] = LEDGER_KINDS) -> Any:
    """Valid, corrupted, crash-truncated and edge ledgers as :class:`LedgerCase` (sendable as JSON)."""
    from hypothesis import strategies as st

    from maka_ref.testing.strategies import corrupt_ledgers, edge_ledgers, ledgers

    options = []
    if "valid" in kinds:
        options.append(ledgers().map(lambda l: LedgerCase("valid", list(l.events))))
    if "truncated" in kinds:
        options.append(ledgers(crash=False, recovery=False).flatmap(
            lambda l: st.integers(0, len(l.events)).map(lambda n: LedgerCase("truncated", list(l.events[:n])))))
    if "corrupted" in kinds:
        options.append(corrupt_ledgers().map(lambda l: LedgerCase("corrupted", list(l.events))))
    if "edge" in kinds:
        # Two branches (built twice: ``one_of`` drops a branch it already holds) when mixed
        # with others: the shapes on which implementations disagreed, and the kind that reaches
        # the most codes (``fuzz --coverage``), are two draws in five of the mix.
        for _ in range(2 if options else 1):
            options.append(edge_ledgers().map(lambda l: LedgerCase("edge", list(l.events), families=l.families)))
    if not options:
        raise ValueError(f"no ledger kind among {list(kinds)}; expected some of {LEDGER_KINDS}")
    return st.one_of(options).flatmap(_with_high_water).filter(lambda case: sendable(case.events))


def ledger_requests(events: Any, ops: Sequence[str] = LEDGER_OPS,
                    high_water: int | None = None) -> list[tuple[str, dict[str, Any]]]:
    """The requests of one case: ``{"events"}`` each, plus the expected high-water for ``ledger.plan``."""
    out = []
    for op in ops:
        params: dict[str, Any] = {"events": events}
        if op == "ledger.plan" and high_water is not None:
            params[HIGH_WATER] = high_water
        out.append((op, params))
    return out


def ledger_disagreements(case: LedgerCase, impl: Any, ref: Any, ops: Sequence[str] = LEDGER_OPS) -> list[Disagreement]:
    """Send ``case`` to both sides (one batch each); every operation whose answers differ (or
    whose reference answer is a failure: the resolver and planner never fail), in ``ops`` order."""
    return ledger_disagreements_many([case], impl, ref, ops)[0]


def ledger_disagreements_many(cases: Sequence[LedgerCase], impl: Any, ref: Any,
                              ops: Sequence[str] = LEDGER_OPS) -> list[list[Disagreement]]:
    """:func:`ledger_disagreements` of several cases with one call to each side (the fast
    search sends many ledgers per ``batch`` round trip); one list per case, in order."""
    wired = [wire(case.events) for case in cases]
    requests = [ledger_requests(events, ops, case.high_water) for case, events in zip(cases, wired)]
    flat = [r for rs in requests for r in rs]
    expected_all, actual_all = ref.run(flat), impl.run(flat)
    out, at = [], 0
    for case, events, reqs in zip(cases, wired, requests):
        input_ = LedgerCase(case.kind, events, case.high_water).input()
        found = []
        for (op, _), expected, actual in zip(reqs, expected_all[at:at + len(reqs)], actual_all[at:at + len(reqs)]):
            e, a = comparable(op, expected), comparable(op, actual)
            if not e.get("ok"):  # spec 10 §6, spec 20 §1: the resolver and planner never fail
                found.append(Disagreement("ledger", op, case.kind, input_, e, e,
                                          {"path": "$.ok", "expected": True, "actual": False}, reference_failed=True))
                continue
            diff = first_difference(e, a)
            if diff is not None:
                found.append(Disagreement("ledger", op, case.kind, input_, e, a, diff,
                                          size=(len(events), len(repr(events)))))
        out.append(found)
        at += len(reqs)
    return out


def check_ledger(case: LedgerCase, impl: Any, ref: Any, ops: Sequence[str] = LEDGER_OPS) -> None:
    """:func:`ledger_disagreements`, raising the first one (what ``replay`` needs)."""
    found = ledger_disagreements(case, impl, ref, ops)
    if found:
        raise found[0]
