"""A lineage's boundary facts and the coverage rule (spec-phase4 §5.2, §6.1).

Why pure over stored events: the resume gate and the capture points must agree on "the current
boundary" and on "nothing after it can have changed the workspace"; both read the same rows.

The lineage of a run is the run itself preceded by the runs its ``continuationStart`` names
(``immediateSource``), oldest first. Coverage is broken by any model tool call
(``content.kind == "function_call"``) of a tool the host does not declare read-only, in either
tool protocol (a T1 dispatch is committed with its call, so the call is the earlier of the two).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from maka_ref._events.boundary import decode_boundary_fact

__all__ = ["READ_ONLY_TOOLS", "BoundaryRef", "breaks_coverage", "current_boundary", "first_uncovered", "lineage_runs"]

#: The reference host's read-only tools (spec-phase4 §5.1: "a tool the host does not declare
#: read-only" mutates). Of ``maka_ref._runtime.tools.TOOLS`` only ``Read`` writes nothing (the
#: catalog's exact name: a lowercase ``read`` matched no tool, so every Read call broke coverage).
READ_ONLY_TOOLS: Final = frozenset({"Read"})


@dataclass(frozen=True, slots=True)
class BoundaryRef:
    """One boundary fact where it is stored: its run, its ``event_seq``, the fact."""

    run_id: str
    event_id: str
    event_seq: int
    kind: str
    boundary: Mapping[str, Any]


def lineage_runs(read_events: Callable[[str], Sequence[Mapping[str, Any]]], run_id: str) -> list[str]:
    """``run_id`` and its continuation ancestors, oldest first (cycles stop the walk)."""
    chain: list[str] = []
    current: str | None = run_id
    while current is not None and current not in chain:
        chain.append(current)
        events = read_events(current)
        start = (events[0].get("actions") or {}).get("continuationStart") if events else None
        current = start["immediateSource"]["runId"] if isinstance(start, Mapping) else None
    return list(reversed(chain))


def boundary_facts(run_id: str, events: Sequence[Mapping[str, Any]]) -> list[BoundaryRef]:
    """Every boundary fact of one run, in ``event_seq`` order; raises ``WorkspaceBoundaryError``
    on a fact that does not decode (§6.2 (b))."""
    out: list[BoundaryRef] = []
    for seq, event in enumerate(events, start=1):
        fact = (event.get("actions") or {}).get("workspaceBoundary")
        if fact is None:
            continue
        decoded = decode_boundary_fact(fact)
        out.append(BoundaryRef(run_id, event["id"], seq, decoded["kind"], decoded["payload"]["boundary"]))
    return out


def current_boundary(facts: Sequence[BoundaryRef]) -> BoundaryRef | None:
    """§6.1: the last fact in lineage order (``previous``/``from`` are history, never candidates)."""
    return facts[-1] if facts else None


def breaks_coverage(event: Mapping[str, Any], read_only: frozenset[str] = READ_ONLY_TOOLS) -> bool:
    content = event.get("content")
    return (
        isinstance(content, Mapping)
        and content.get("kind") == "function_call"
        and content.get("name") not in read_only
    )


def first_uncovered(
    lineage: Sequence[tuple[str, Sequence[Mapping[str, Any]]]], boundary: BoundaryRef,
    read_only: frozenset[str] = READ_ONLY_TOOLS,
) -> str | None:
    """§5.2 (2): the id of the first mutating call after ``boundary`` in the lineage, or None."""
    seen = False
    for run_id, events in lineage:
        for seq, event in enumerate(events, start=1):
            if not seen:
                seen = run_id == boundary.run_id and seq == boundary.event_seq
                continue
            if breaks_coverage(event, read_only):
                return str(event["id"])
    return None
