"""The mutable state of one run while it is drawn: id styles, counters, clock, operations.

``_Spine`` is the identity shared by the events of one invocation, ``_Op`` one tool
operation under construction, ``_Builder`` the run itself. Kept apart from the event
builders so that the draws a run makes once (id style, seed, session and run ids, start
time) sit in one place.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from hypothesis import strategies as st

from maka_ref.testing._strategies.values import _ints, _pick


@dataclass(frozen=True)
class _Spine:
    session_id: str
    run_id: str
    turn_id: str
    invocation_id: str

    def envelope(self, event_id: str, ts: float, role: str, author: str, partial: bool = False) -> dict[str, Any]:
        return {
            "id": event_id,
            "invocationId": self.invocation_id,
            "runId": self.run_id,
            "sessionId": self.session_id,
            "turnId": self.turn_id,
            "ts": ts,
            "partial": partial,
            "role": role,
            "author": author,
        }


@dataclass
class _Op:
    spine: _Spine
    tool_call_id: str
    name: str
    args: Any
    operation_id: str
    fate: str  # "t2" | "unbound"
    recovery_mode: str
    call: dict[str, Any] | None = None
    dispatch: dict[str, Any] | None = None
    response: dict[str, Any] | None = None
    response_is_error: bool = False
    bundle: str | None = None
    observation: str | None = None
    reconcile: dict[str, Any] | None = None
    outcome: dict[str, Any] | None = None
    decision: dict[str, Any] | None = None


class _Builder:
    """Mutable state while one run is drawn: id counters, clock, events, operations."""

    def __init__(self, draw: Callable[[Any], Any], call_id_reuse: bool) -> None:
        self.draw = draw
        self.n_event = 0
        self.n_op = 0
        self.n_call = 0
        self.id_style = draw(_pick(("seq", "run", "uuid", "unicode")))
        self.seed = draw(_ints(0, 2**32 - 1))
        self.session_id = draw(_pick(("session-1", "sess_01HZX", "séance-😀")))
        self.run_id = draw(_pick(("run-1", "run_7f3a", "r")))
        self.ts = draw(st.one_of(st.just(1), _ints(1_600_000_000_000, 1_900_000_000_000)))
        self.events: list[dict[str, Any]] = []
        self.ops: list[_Op] = []
        self.call_id_reuse = call_id_reuse
        self.call_ids_by_invocation: dict[str, set[str]] = {}

    def tick(self) -> float:
        step = self.draw(_pick((0, 1, 1, 7, 250, 0.5)))
        self.ts = self.ts + step
        return self.ts

    def event_id(self) -> str:
        self.n_event += 1
        return styled_event_id(self.id_style, self.n_event, self.run_id, self.seed)

    def operation_id(self) -> str:
        self.n_op += 1
        n = self.n_op
        if self.id_style == "uuid":
            return f"op_{self.seed:08x}{n:04x}"
        return f"operation-{n}"

    def call_id(self, invocation_id: str) -> str:
        used = self.call_ids_by_invocation.setdefault(invocation_id, set())
        if self.call_id_reuse:
            k = self.draw(_ints(1, 4))
            while f"call_{k}" in used:
                k += 1
            cid = f"call_{k}"
        else:
            self.n_call += 1
            style = self.draw(_pick(("toolu", "call", "plain")))
            cid = {"toolu": f"toolu_01{self.n_call:04d}Xy", "call": f"call_{self.n_call}", "plain": f"provider-call-{self.n_call}"}[style]
        used.add(cid)
        return cid

    def add(self, event: dict[str, Any]) -> dict[str, Any]:
        self.events.append(event)
        return event


def _spine_of(event: dict[str, Any]) -> _Spine:
    return _Spine(event["sessionId"], event["runId"], event["turnId"], event["invocationId"])


def styled_event_id(style: str, n: int, run_id: str, seed: int) -> str:
    """The n-th event id in one of the id styles (``seq``, ``run``, ``uuid``, else non-ASCII)."""
    if style == "seq":
        return f"evt-{n:06d}"
    if style == "run":
        return f"{run_id}/{n}"
    if style == "uuid":
        return f"{seed:08x}-{n:04x}-4{n % 4096:03x}-8000-{(seed * 31 + n) % 16**12:012x}"
    return f"événement-{n}"
