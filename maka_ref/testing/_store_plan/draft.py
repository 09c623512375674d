"""The mutable state of one plan while it is drawn: ids, clock, runs, operations, writes.

``_Spine`` is the identity shared by the events of one run, ``_Op`` one tool operation
under construction, ``_Run`` one run, ``_Draft`` the plan itself. Kept apart so that the
draws a plan makes once (id style, seed, start time) sit in one place.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

from hypothesis import strategies as st

from maka_ref.testing._store_plan.model import StoreWrite
from maka_ref.testing._strategies.builder import _Spine, styled_event_id

@dataclass
class _Op:
    run_index: int
    spine: _Spine
    path: str
    call_id: str
    name: str
    args: Any
    operation_id: str
    recovery_mode: str
    call_first: bool = False
    batch: bool = False
    is_error: bool = False
    observation: str | None = None
    call: dict[str, Any] | None = None
    dispatch: dict[str, Any] | None = None
    response: dict[str, Any] | None = None
    reconcile: dict[str, Any] | None = None
    outcome: dict[str, Any] | None = None
    decision: dict[str, Any] | None = None
    record: dict[str, Any] | None = None
    journal: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class _Run:
    index: int
    spine: _Spine
    opening: str  # "marker" | "plain" | "none"
    terminal: str | None  # None | "append" | "barrier"
    event_ids: list[str] = field(default_factory=list)
    terminal_event_id: str | None = None


class _Draft:
    """Mutable state while one plan is drawn: ids, clock, stored events, projections."""

    def __init__(self, draw: Callable[[Any], Any]) -> None:
        self.draw = draw
        self.n_event = 0
        self.id_style = draw(st.sampled_from(("seq", "run", "uuid", "unicode")))
        self.seed = draw(st.integers(0, 2**32 - 1))
        self.ts: float = draw(st.one_of(st.just(1), st.integers(1_600_000_000_000, 1_900_000_000_000)))
        self.writes: list[StoreWrite] = []
        self.stored: set[str] = set()

    def tick(self) -> float:
        self.ts = self.ts + self.draw(st.sampled_from((0, 1, 1, 7, 250, 0.5)))
        return self.ts

    def committed_at(self) -> int | float:
        """A caller ``committedAt`` for T1/T2 (Unix ms): equal to or apart from the clock,
        now and then fractional (stored as REAL; rebuild must reproduce it exactly)."""
        base = int(self.ts)
        return base + self.draw(st.sampled_from((0, 0, 1, 3, 1000, 0.25)))

    def event_id(self, run: _Spine) -> str:
        self.n_event += 1
        return styled_event_id(self.id_style, self.n_event, run.run_id, self.seed)
