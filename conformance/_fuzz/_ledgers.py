"""Generated ledgers and the ledger comparison: ``ledger.resolve`` and ``ledger.plan``.

Why these three kinds: the contract is about ledgers after a crash. *Valid* ledgers (the
foundation's :func:`~maka_ref.testing.strategies.ledgers`, already crash-cut and recovered at
times) check that a healthy run resolves and plans like the reference; *corrupted* ones
(:func:`~maka_ref.testing.strategies.corrupt_ledgers`, every named corruption) check that a
corrupt ledger is a result (``corruption``, ``blocked``), the same one; *truncated* ones (a
prefix cut of a valid ledger anywhere, including right after a dispatch) are what a crash
leaves. Hypothesis shrinks every disagreement: the events of a failing ledger are deleted and
simplified until none can go, which is what makes the failure readable.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

from conformance._fuzz._search import Disagreement
from conformance._fuzz._values import comparable, first_difference, sendable, wire

__all__ = ["LEDGER_KINDS", "LEDGER_OPS", "LedgerCase", "check_ledger", "fuzz_ledgers", "ledger_requests"]

#: The ledger operations compared, in the order they are sent.
LEDGER_OPS: tuple[str, ...] = ("ledger.resolve", "ledger.plan")
LEDGER_KINDS: tuple[str, ...] = ("valid", "corrupted", "truncated")


@dataclass(frozen=True)
class LedgerCase:
    """One generated ledger: its kind and its events (plain JSON, before the wire)."""

    kind: str
    events: list[Any]

    def __repr__(self) -> str:  # what Hypothesis prints for a falsifying example
        return f"LedgerCase(kind={self.kind!r}, {len(self.events)} events: {[_label(e) for e in self.events]})"


def _label(event: Any) -> str:
    if not isinstance(event, dict):
        return type(event).__name__
    content = event.get("content") if isinstance(event.get("content"), dict) else {}
    actions = event.get("actions") if isinstance(event.get("actions"), dict) else {}
    what = content.get("kind") or next(iter(actions), None) or event.get("role")
    return f"{event.get('id')}:{what}"


def fuzz_ledgers(kinds: Sequence[str] = LEDGER_KINDS) -> Any:
    """Valid, corrupted and crash-truncated ledgers as :class:`LedgerCase` (sendable as JSON)."""
    from hypothesis import strategies as st

    from maka_ref.testing.strategies import corrupt_ledgers, ledgers

    options = []
    if "valid" in kinds:
        options.append(ledgers().map(lambda l: LedgerCase("valid", list(l.events))))
    if "truncated" in kinds:
        options.append(ledgers(crash=False, recovery=False).flatmap(
            lambda l: st.integers(0, len(l.events)).map(lambda n: LedgerCase("truncated", list(l.events[:n])))))
    if "corrupted" in kinds:
        options.append(corrupt_ledgers().map(lambda l: LedgerCase("corrupted", list(l.events))))
    if not options:
        raise ValueError(f"no ledger kind among {list(kinds)}; expected some of {LEDGER_KINDS}")
    return st.one_of(options).filter(lambda case: sendable(case.events))


def ledger_requests(events: Any, ops: Sequence[str] = LEDGER_OPS) -> list[tuple[str, dict[str, Any]]]:
    return [(op, {"events": events}) for op in ops]


def check_ledger(case: LedgerCase, impl: Any, ref: Any, ops: Sequence[str] = LEDGER_OPS) -> None:
    """Send ``case`` to both sides (one batch each); raise :class:`Disagreement` on the first
    operation whose answers differ (or on a reference that fails: it must never fail here)."""
    events = wire(case.events)
    requests = ledger_requests(events, ops)
    expected_all = ref.run(requests)
    actual_all = impl.run(requests)
    for (op, params), expected, actual in zip(requests, expected_all, actual_all):
        e, a = comparable(op, expected), comparable(op, actual)
        if not e.get("ok"):  # spec 10 §6, spec 20 §1: the resolver and planner never fail
            raise Disagreement("ledger", op, case.kind, {"events": events}, e, e,
                               {"path": "$.ok", "expected": True, "actual": False}, reference_failed=True)
        diff = first_difference(e, a)
        if diff is not None:
            raise Disagreement("ledger", op, case.kind, {"events": events}, e, a, diff,
                               size=(len(events), len(repr(events))))
