"""The ``store_write_plans`` strategy: runs, operations, interleaving, then ground truth.

Draws the runs and operations, queues each operation's steps, interleaves them, turns each
step into a write (:mod:`~maka_ref.testing._store_plan.writes`), inserts retries and
reopens (:mod:`~maka_ref.testing._store_plan.retries`) and assembles the
:class:`StoreWritePlan`. The order of draws is the strategy's contract with Hypothesis'
shrinker and seeds: keep it.
"""

from __future__ import annotations

from typing import Any, Callable

from hypothesis import strategies as st

from maka_ref.testing._store_plan.draft import _Draft, _Op, _Run, _Spine
from maka_ref.testing._strategies.constants import _PARK_REASON
from maka_ref.testing._store_plan.model import (
    PATHS,
    RunTruth,
    StoreOperationTruth,
    StoreWrite,
    StoreWritePlan,
    derive_operation_id,
)
from maka_ref.testing._store_plan.retries import _insert_write, _retry_of
from maka_ref.testing._store_plan.writes import _materialise
from maka_ref.testing.strategies import RECOVERY_MODES, OperationTruth, tool_calls

def _interleave(draw: Callable[[Any], Any], queues: list[list[Any]]) -> list[Any]:
    """A random merge of the queues that keeps each queue's own order."""
    queues = [list(q) for q in queues if q]
    out: list[Any] = []
    while queues:
        i = draw(st.integers(0, len(queues) - 1)) if len(queues) > 1 else 0
        out.append(queues[i].pop(0))
        if not queues[i]:
            queues.pop(i)
    return out


@st.composite
def store_write_plans(
    draw: Callable[[Any], Any],
    *,
    max_runs: int = 3,
    max_operations: int = 6,
    paths: tuple[str, ...] = PATHS,
    max_retries: int = 4,
    max_reopens: int = 2,
    max_texts: int = 2,
    terminal: bool = True,
) -> StoreWritePlan:
    """Sequences of store writes with ground truth (see :mod:`maka_ref.testing.store_strategies`).

    * ``max_runs``: runs (each its own invocation; 1..max_runs, sharing sessions at random).
    * ``max_operations``: tool operations over all runs (at least one).
    * ``paths``: the operation paths to draw from (:data:`PATHS`).
    * ``max_retries``: exact retries of earlier writes inserted after their original.
    * ``max_reopens``: store close + reopen steps inserted anywhere.
    * ``max_texts``: ordinary assistant texts per run.
    * ``terminal``: allow a terminal event at the end of a run.
    """
    for p in paths:
        if p not in PATHS:
            raise ValueError(f"unknown path {p!r}; expected one of {PATHS}")
    d = _Draft(draw)
    n_runs = draw(st.integers(1, max(1, max_runs)))
    sessions = draw(st.sampled_from((
        ("session-1", "session-2", "session-3"), ("sess_01HZX",) * 3, ("séance-😀", "session-2", "séance-😀")
    )))
    run_ids = draw(st.sampled_from((("run-1", "run-2", "run-3"), ("run_7f3a", "r", "run-😀"))))
    reuse_call_ids = draw(st.booleans())
    runs: list[_Run] = []
    for i in range(n_runs):
        session_id = sessions[i % 3]
        run_id = run_ids[i] if i < 3 else f"{run_ids[i % 3]}-{i + 1}"
        spine = _Spine(session_id, run_id, f"turn-{i + 1}", f"invocation-{i + 1}")
        opening = draw(st.sampled_from(("marker", "marker", "plain", "none")))
        end = draw(st.sampled_from((None, "append", "barrier"))) if terminal else None
        runs.append(_Run(i, spine, opening, end))

    n_ops = draw(st.integers(1, max(1, max_operations)))
    ops: list[_Op] = []
    call_counter: dict[int, int] = {}
    n_call = 0
    for _ in range(n_ops):
        run = runs[draw(st.integers(0, n_runs - 1))]
        path = draw(st.sampled_from(paths))
        name, args = draw(tool_calls())
        if reuse_call_ids:  # unique within an invocation, repeated across invocations
            call_counter[run.index] = call_counter.get(run.index, 0) + 1
            call_id = f"call_{call_counter[run.index]}"
        else:
            n_call += 1
            call_id = draw(st.sampled_from((f"toolu_01{n_call:04d}Xy", f"call_{n_call}", f"provider-call-{n_call}")))
        operation_id = derive_operation_id(run.spine.invocation_id, call_id)
        mode = "reconcile" if path in ("t1_completed", "t1_parked") else draw(st.sampled_from(RECOVERY_MODES))
        op = _Op(run.index, run.spine, path, call_id, name, args, operation_id, mode)
        if path.startswith("t1"):
            op.call_first = draw(st.integers(0, 3)) == 0
        if path == "t1_t2":
            op.is_error = draw(st.integers(0, 3)) == 0
        if path == "pre_t1_synthetic":
            op.is_error = draw(st.integers(0, 3)) > 0
            op.batch = draw(st.booleans())
        if path == "t1_completed":
            op.observation = "matches_expected_state"
        if path == "t1_parked":
            op.observation = draw(st.sampled_from(tuple(_PARK_REASON)))
        ops.append(op)

    # Per-operation step queues, interleaved within the run, then runs interleaved.
    run_queues: list[list[tuple[str, int, _Op | None]]] = []
    for run in runs:
        queues: list[list[tuple[str, int, _Op | None]]] = []
        for op in ops:
            if op.run_index != run.index:
                continue
            q: list[tuple[str, int, _Op | None]] = []
            if op.path == "legacy_call_only":
                q.append(("call", run.index, op))
            elif op.path == "pre_t1_synthetic":
                pair = [("call", run.index, op), ("response", run.index, op)]
                q.extend([("batch", run.index, op)] if op.batch else pair)
            else:
                if op.call_first:
                    q.append(("call", run.index, op))
                q.append(("t1", run.index, op))
                if op.path == "t1_t2":
                    q.append(("t2", run.index, op))
                elif op.path in ("t1_completed", "t1_parked"):
                    q.append(("bundle", run.index, op))
            queues.append(q)
        for _ in range(draw(st.integers(0, max(0, max_texts)))):
            queues.append([("text", run.index, None)])
        body = _interleave(draw, queues)
        head = [("open", run.index, None)] if run.opening != "none" else []
        tail = [("terminal", run.index, None)] if run.terminal is not None else []
        run_queues.append(head + body + tail)
    for step in _interleave(draw, run_queues):
        _materialise(d, runs, step)

    # Exact retries (anywhere after their original) and store reopen steps.
    for _ in range(draw(st.integers(0, max(0, max_retries)))):
        candidates = [i for i, w in enumerate(d.writes) if w.kind != "reopen" and not w.is_retry]
        original = draw(st.sampled_from(candidates))
        retry = _retry_of(draw, d, original)
        position = draw(st.integers(original + 1, len(d.writes)))
        _insert_write(d, position, retry)
    for _ in range(draw(st.integers(0, max(0, max_reopens)))):
        position = draw(st.integers(1, len(d.writes)))
        _insert_write(d, position, StoreWrite("reopen", "reopen the store (close + open)"))

    return _finish(d, runs, ops)


def _finish(d: _Draft, runs: list[_Run], ops: list[_Op]) -> StoreWritePlan:
    truths: list[StoreOperationTruth] = []
    per_run: dict[int, list[tuple[int, OperationTruth]]] = {run.index: [] for run in runs}
    for op in ops:
        run = runs[op.run_index]
        assert op.call is not None
        dispatched = op.dispatch is not None
        response = op.response
        truth = OperationTruth(
            invocation_id=op.spine.invocation_id,
            tool_call_id=op.call_id,
            tool_name=op.name,
            args=op.args,
            call_event_id=op.call["id"],
            operation_id=op.operation_id if dispatched else None,
            dispatch_event_id=op.dispatch["id"] if op.dispatch is not None else None,
            recovery_mode=op.recovery_mode if dispatched else None,
            response_event_id=response["id"] if response is not None else None,
            response_is_error=op.is_error if response is not None else False,
            response_bound=response is not None and dispatched,
            bundle=("completed" if op.outcome is not None else "parked") if op.decision is not None else None,
            observation=op.observation if op.decision is not None else None,
            reconcile_event_id=op.reconcile["id"] if op.reconcile is not None else None,
            outcome_event_id=op.outcome["id"] if op.outcome is not None else None,
            decision_event_id=op.decision["id"] if op.decision is not None else None,
        )
        truths.append(
            StoreOperationTruth(op.path, op.run_index, op.operation_id, truth, op.record, tuple(op.journal))
        )
        per_run[op.run_index].append((run.event_ids.index(op.call["id"]), truth))
    run_truths = []
    for run in runs:
        first_is_marker = run.opening == "marker"  # the opening is the run's first event
        run_truths.append(
            RunTruth(
                run.spine.session_id,
                run.spine.run_id,
                run.spine.invocation_id,
                run.spine.turn_id,
                first_is_marker,
                tuple(run.event_ids),
                run.terminal_event_id,
                tuple(t for _, t in sorted(per_run[run.index], key=lambda pair: pair[0])),
            )
        )
    return StoreWritePlan(tuple(d.writes), tuple(run_truths), tuple(truths))
