"""Healthy ledgers of one run with ground truth: turns, steps, parallel tool calls, the
crash cut and the recovery epilogue (the ``ledgers`` strategy), and ``runtime_events``.

This is where the shape of a run is decided; the events themselves come from
:mod:`maka_ref.testing._strategies.events`.
"""

from __future__ import annotations

from typing import Any, Callable, Iterator, Literal, Sequence

from hypothesis import strategies as st

from maka_ref.testing._strategies.builder import _Builder, _Op, _Spine, _spine_of
from maka_ref.testing._strategies.constants import RECOVERY_MODES, Protocol
from maka_ref.testing._strategies.events import (
    _bundle,
    _call_event,
    _dispatch_event,
    _error_event,
    _model_text,
    _response_event,
    _terminal_event,
    _thinking,
    _token_usage,
    _user_text,
)
from maka_ref.testing._strategies.ledger_model import Ledger, OperationTruth
from maka_ref.testing._strategies.values import _BOOL, _ints, _pick, texts, tool_calls

_MODES = st.one_of(st.just("reconcile"), st.sampled_from(RECOVERY_MODES))


def _interleave(draw: Callable[[Any], Any], queues: list[list[Any]]) -> list[Any]:
    """A random merge of the queues that keeps each queue's own order."""
    queues = [list(q) for q in queues if q]
    out: list[Any] = []
    while queues:
        i = draw(_ints(0, len(queues) - 1)) if len(queues) > 1 else 0
        out.append(queues[i].pop(0))
        if not queues[i]:
            queues.pop(i)
    return out


def _run_step(
    draw: Callable[[Any], Any], b: _Builder, spine: _Spine, max_calls: int, dispatch_weight: int, min_calls: int = 0
) -> None:
    if draw(_ints(0, 3)) == 0:
        b.add(_thinking(b, spine))
    if draw(_ints(0, 3)) == 0:  # a streaming chunk later superseded
        b.add(_model_text(b, spine, draw(texts(max_size=10)), partial=True))
    if draw(_BOOL):
        b.add(_model_text(b, spine, draw(texts())))
    n_calls = draw(_ints(min_calls, max(min_calls, max_calls)))
    ops: list[_Op] = []
    for _ in range(n_calls):
        name, args = draw(tool_calls())
        fate = "t2" if draw(_ints(0, 9)) < dispatch_weight else "unbound"
        mode = draw(_MODES)
        op = _Op(spine, b.call_id(spine.invocation_id), name, args, b.operation_id(), fate, mode)
        b.ops.append(op)
        ops.append(op)
    calls_upfront = draw(_BOOL)
    if calls_upfront:
        for op in ops:
            op.call = b.add(_call_event(b, op))
    # Execution: per operation [call?] → dispatch → response (T2), or [call?] → synthetic
    # response (pre-T1 refusal / legacy). Operations interleave (parallel tool calls).
    queues: list[list[tuple[str, _Op]]] = []
    for op in ops:
        q: list[tuple[str, _Op]] = [] if calls_upfront else [("call", op)]
        if op.fate == "t2":
            q.append(("dispatch", op))
        q.append(("response", op))
        queues.append(q)
    for what, op in _interleave(draw, queues):
        if what == "call":
            op.call = b.add(_call_event(b, op))
        elif what == "dispatch":
            op.dispatch = b.add(_dispatch_event(b, op))
        else:
            bound = op.fate == "t2"
            is_error = draw(_ints(0, 4)) == 0 if bound else draw(_ints(0, 3)) > 0
            eid = f"{op.operation_id}_response" if bound else b.event_id()
            op.response = b.add(_response_event(b, op, event_id=eid, bound=bound, is_error=is_error, error_key=draw(_BOOL)))
            op.response_is_error = is_error
    if draw(_ints(0, 5)) == 0:
        b.add(_token_usage(b, spine))
    if draw(_ints(0, 9)) == 0:
        b.add(_error_event(b, spine))


def _repeat(draw: Callable[[Any], Any], lo: int, hi: int) -> Iterator[int]:
    """Indexes 0, 1, … of between ``lo`` and ``hi`` repetitions, each followed by a "one
    more?" draw instead of a count drawn up front. Why: the shrinker can then delete any one
    repetition (its draws and its "more" answer) as a single contiguous span; with a count
    up front it must lower the count and delete the right span in the same step, and it
    often stopped with earlier turns of noise left in front of the event that matters."""
    index = 0
    while True:
        yield index
        index += 1
        if index >= hi or (index >= lo and not draw(_BOOL)):
            return


def _protocol_choice(protocol: Protocol | Sequence[Protocol]) -> tuple[Protocol, ...]:
    if isinstance(protocol, str):
        protocol = (protocol,)
    choices = tuple(protocol)
    for p in choices:
        if p not in ("t1", "legacy"):
            raise ValueError(f"unknown protocol {p!r}; expected 't1' or 'legacy'")
    if not choices:
        raise ValueError("protocol must name at least one of 't1', 'legacy'")
    return choices


@st.composite
def ledgers(
    draw: Callable[[Any], Any],
    protocol: Protocol | Sequence[Protocol] = ("t1", "legacy"),
    *,
    max_turns: int = 3,
    max_steps: int = 2,
    max_calls: int = 3,
    dispatch_weight: int = 7,
    crash: bool = True,
    recovery: bool | Literal["always"] = True,
    terminal: bool = True,
    call_id_reuse: bool | None = False,
    min_events: int = 0,
) -> Ledger:
    """Healthy ledgers of one run, with ground truth (see :class:`Ledger`).

    * ``protocol``: ``"t1"`` (marker on the first event), ``"legacy"`` (no marker), or a
      sequence to choose from.
    * ``max_turns``: turns (each a user text and its own invocation); ``max_steps`` model
      steps per turn; ``max_calls`` tool calls per step.
    * ``dispatch_weight``: out of 10, how many calls take the T1/T2 path (the rest are
      unbound call + synthetic response pairs, i.e. pre-T1 refusals / legacy pairs).
    * ``crash``: allow a crash cut (two runs in three are cut; the ledger is then a prefix of
      the run, cut anywhere or, more often, right after a call or a T1 dispatch).
    * ``recovery``: after a crash, allow recovery bundles and a repair terminal event;
      ``"always"`` forces a crash right after some T1 dispatch (its mode set to
      ``reconcile``) and a recovery bundle for that operation.
    * ``terminal``: allow a terminal event at the end of an uncut run.
    * ``call_id_reuse``: ``True`` reuses provider call ids across invocations (never within
      one, spec 10 §7.4 #37), ``None`` lets Hypothesis choose, ``False`` keeps them unique.
    * ``min_events``: the crash cut keeps at least this many events.
    """
    protocols = _protocol_choice(protocol)
    proto: Protocol = draw(_pick(protocols))
    reuse = draw(_BOOL) if call_id_reuse is None else call_id_reuse
    b = _Builder(draw, reuse)

    shared_turn = draw(_BOOL)
    spines: list[_Spine] = []
    for t in _repeat(draw, 1, max(1, max_turns)):
        turn_id = "turn-1" if shared_turn else f"turn-{t + 1}"
        spine = _Spine(b.session_id, b.run_id, turn_id, f"invocation-{t + 1}")
        spines.append(spine)
        b.add(_user_text(b, spine, draw(texts()), marker=(t == 0 and proto == "t1")))
        for _ in _repeat(draw, 1, max(1, max_steps)):
            _run_step(draw, b, spine, max_calls, dispatch_weight)
    if recovery == "always" and not any(op.fate == "t2" for op in b.ops):
        _run_step(draw, b, spines[-1], max_calls, 10, min_calls=1)
    full_length = len(b.events)
    if terminal and draw(_BOOL):
        b.add(_terminal_event(b, spines[-1], "completed", recovered=False))
        full_length += 1

    # Crash cut: any prefix (every single event is its own durable commit here).
    cut = full_length
    lo = min(max(min_events, 0), full_length)
    forced: _Op | None = None
    if recovery == "always":
        position = {id(e): i for i, e in enumerate(b.events)}
        t2_ops = [op for op in b.ops if op.fate == "t2"]
        forced = draw(st.sampled_from([op for op in t2_ops if position[id(op.dispatch)] + 1 >= lo] or t2_ops))
        assert forced.dispatch is not None
        forced.recovery_mode = "reconcile"
        forced.dispatch["actions"]["toolDispatch"]["recoveryMode"] = "reconcile"
        cut = position[id(forced.dispatch)] + 1
    elif crash and draw(_ints(0, 2)) > 0:
        # Crashes cluster at tool boundaries: right after a T1 dispatch (killed while the
        # tool runs) or right after a call (killed before T1); otherwise anywhere.
        where = draw(_pick(("anywhere", "after_dispatch", "after_call")))
        lane = "toolDispatch" if where == "after_dispatch" else "function_call"
        boundaries = [
            i + 1
            for i, e in enumerate(b.events[:full_length])
            if i + 1 >= lo
            and (lane in e.get("actions", {}) or e.get("content", {}).get("kind") == lane)
        ]
        if where != "anywhere" and boundaries:
            cut = draw(st.sampled_from(boundaries))
        else:
            cut = draw(_ints(lo, full_length))
    kept = b.events[:cut]
    kept_ids = {id(e) for e in kept}

    # Recovery epilogue (only after a real crash): atomic bundles, then a repair terminal.
    epilogue: list[dict[str, Any]] = []
    if recovery and cut < full_length and kept:
        for op in b.ops:
            if (
                op.dispatch is not None
                and id(op.dispatch) in kept_ids
                and (op.response is None or id(op.response) not in kept_ids)
                and op.recovery_mode == "reconcile"
            ):
                choices = ("none", "completed", "matches_prior_state", "diverged", "unreadable")
                choice = draw(_pick(choices[1:] if op is forced else choices))
                if choice == "none":
                    continue
                epilogue.extend(_bundle(draw, b, op, choice))
        last_spine = _spine_of(kept[-1])
        if draw(_BOOL):
            epilogue.append(_terminal_event(b, last_spine, draw(_pick(("failed", "aborted"))), recovered=True))

    events = kept + epilogue
    present = {id(e) for e in events}
    operations: list[tuple[int, OperationTruth]] = []
    index = {id(e): i for i, e in enumerate(events)}
    for op in b.ops:
        if op.call is None or id(op.call) not in present:
            continue
        has_dispatch = op.dispatch is not None and id(op.dispatch) in present
        has_response = op.response is not None and id(op.response) in present
        truth = OperationTruth(
            invocation_id=op.spine.invocation_id,
            tool_call_id=op.tool_call_id,
            tool_name=op.name,
            args=op.args,
            call_event_id=op.call["id"],
            operation_id=op.operation_id if has_dispatch else None,
            dispatch_event_id=op.dispatch["id"] if has_dispatch else None,
            recovery_mode=op.recovery_mode if has_dispatch else None,
            response_event_id=op.response["id"] if has_response else None,
            response_is_error=op.response_is_error if has_response else False,
            response_bound=has_response and op.fate == "t2",
            bundle=op.bundle,  # type: ignore[arg-type]
            observation=op.observation,
            reconcile_event_id=op.reconcile["id"] if op.reconcile else None,
            outcome_event_id=op.outcome["id"] if op.outcome else None,
            decision_event_id=op.decision["id"] if op.decision else None,
        )
        operations.append((index[id(op.call)], truth))
    operations.sort(key=lambda pair: pair[0])
    terminal_id = None
    if events and ("status" in events[-1] or events[-1].get("actions", {}).get("endInvocation") is True):
        terminal_id = events[-1]["id"]
    return Ledger(
        events=tuple(events),
        protocol=proto,
        operations=tuple(t for _, t in operations),
        full_run_length=full_length,
        cut=cut,
        epilogue_event_ids=tuple(e["id"] for e in epilogue),
        terminal_event_id=terminal_id,
        call_ids_reused=reuse,
    )


def runtime_events(**ledger_kwargs: Any) -> st.SearchStrategy[dict[str, Any]]:
    """Single healthy RuntimeEvents of every lane, drawn from realistic ledgers."""
    ledger_kwargs.setdefault("min_events", 1)
    return ledgers(**ledger_kwargs).filter(lambda l: len(l.events) > 0).flatmap(lambda l: st.sampled_from(l.events))
