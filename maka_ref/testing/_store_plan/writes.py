"""One queued step of a plan turned into a :class:`StoreWrite`, with what it must leave.

Each writer (generic append, batch import, terminal barrier, T1, T2, recovery bundle) gets
its payload here, together with the operation record and journal the store must hold right
after it (``to_json()`` shapes, spec 30 §2.3–§2.5, §3.1). Kept apart from the event
builders: this is where the ground truth of the projection is written down.
"""

from __future__ import annotations

import copy
from typing import Any

from hypothesis import strategies as st

from maka_ref._codec.argshash import canonical_args_hash
from maka_ref.testing._store_plan.draft import _Draft, _Op, _Run
from maka_ref.testing._store_plan.events import (
    _call_event,
    _dispatch_event,
    _model_text,
    _recovery_fact,
    _response_event,
    _terminal_event,
    _user_event,
)
from maka_ref.testing._store_plan.model import BundleInput, StoreWrite, WriteKind
from maka_ref.testing._strategies.constants import _PARK_REASON

def _operation_json(op: _Op, state: str, result_event_id: str | None, version: int) -> dict[str, Any]:
    assert op.call is not None and op.dispatch is not None
    out: dict[str, Any] = {
        "operationId": op.operation_id,
        "invocationId": op.spine.invocation_id,
        "runId": op.spine.run_id,
        "turnId": op.spine.turn_id,
        "providerToolCallId": op.call_id,
        "toolName": op.name,
        "canonicalArgsHash": canonical_args_hash(op.name, op.args),
        "recoveryMode": op.recovery_mode,
        "currentState": state,
        "callEventId": op.call["id"],
        "dispatchEventId": op.dispatch["id"],
    }
    if result_event_id is not None:
        out["resultEventId"] = result_event_id
    out["version"] = version
    return out


def _journal_json(
    op: _Op, journal_id: str, state: str, event_id: str, committed_at: Any, metadata: Any = None
) -> dict[str, Any]:
    out: dict[str, Any] = {
        "journalEventId": journal_id,
        "operationId": op.operation_id,
        "invocationId": op.spine.invocation_id,
        "runId": op.spine.run_id,
        "turnId": op.spine.turn_id,
        "state": state,
        "runtimeEventId": event_id,
        "canonicalArgsHash": canonical_args_hash(op.name, op.args),
        "recoveryMode": op.recovery_mode,
    }
    if metadata is not None:
        out["metadata"] = copy.deepcopy(metadata)
    out["committedAt"] = committed_at
    return out


def _add(d: _Draft, run: _Run, write: StoreWrite) -> None:
    d.writes.append(write)
    for event_id in write.new_event_ids:
        assert event_id not in d.stored
        d.stored.add(event_id)
        run.event_ids.append(event_id)


def _t1_write(d: _Draft, run: _Run, op: _Op) -> StoreWrite:
    from maka_ref._store.writers.tool import T1Input

    pre_stored = op.call is not None
    if op.call is None:
        op.call = _call_event(d, op)
    op.dispatch = _dispatch_event(d, op)
    committed_at = d.committed_at()
    data = T1Input(
        operation_id=op.operation_id,
        journal_event_id=f"{op.operation_id}_prepared",
        runtime_event=copy.deepcopy(op.call),
        dispatch_runtime_event=copy.deepcopy(op.dispatch),
        provider_tool_call_id=op.call_id,
        tool_name=op.name,
        canonical_args_hash=canonical_args_hash(op.name, op.args),
        recovery_mode=op.recovery_mode,
        committed_at=committed_at,
    )
    op.record = _operation_json(op, "prepared", None, 1)
    op.journal = [_journal_json(op, f"{op.operation_id}_prepared", "prepared", op.dispatch["id"], committed_at)]
    new = (op.dispatch["id"],) if pre_stored else (op.call["id"], op.dispatch["id"])
    pre = " (call pre-stored)" if pre_stored else ""
    label = f"t1 {op.operation_id} run{run.index} call={op.call['id']}{pre} at={committed_at}"
    return StoreWrite("t1", label, data, op.operation_id, None, True, new, dict(op.record), tuple(op.journal))


def _t2_write(d: _Draft, run: _Run, op: _Op) -> StoreWrite:
    from maka_ref._store.writers.tool import T2Input

    event_id = d.draw(st.sampled_from((f"{op.operation_id}_response", d.event_id(op.spine))))
    op.response = _response_event(d, op, event_id, bound=True, is_error=op.is_error)
    committed_at = d.committed_at()
    data = T2Input(
        operation_id=op.operation_id,
        journal_event_id=f"{op.operation_id}_outcome",
        runtime_event=copy.deepcopy(op.response),
        committed_at=committed_at,
    )
    op.record = _operation_json(op, "outcome_committed", event_id, 2)
    op.journal.append(_journal_json(op, f"{op.operation_id}_outcome", "outcome_committed", event_id, committed_at))
    label = f"t2 {op.operation_id} run{run.index} response={event_id} isError={op.is_error} at={committed_at}"
    return StoreWrite("t2", label, data, op.operation_id, None, True, (event_id,), dict(op.record), tuple(op.journal))


def _bundle_write(d: _Draft, run: _Run, op: _Op) -> StoreWrite:
    assert op.call is not None and op.dispatch is not None and op.observation is not None
    completed = op.observation == "matches_expected_state"
    digest = "sha256:" + d.draw(st.sampled_from(("a" * 64, "0123456789abcdef" * 4, "f" * 64)))
    op.reconcile = _recovery_fact(
        d, op, f"{op.operation_id}_reconcile", "maka.tool.reconcile_result",
        {
            "protocol": "tool_reconcile_v1",
            "operationId": op.operation_id,
            "observation": op.observation,
            "observationSchema": "state_identity_v1",
            "observationDigest": digest,
        },
    )
    evidence = [op.call["id"], op.dispatch["id"], op.reconcile["id"]]
    if completed:
        outcome_id = d.draw(st.sampled_from((f"{op.operation_id}_response", d.event_id(op.spine))))
        op.outcome = _response_event(d, op, outcome_id, bound=True, is_error=False)
        payload: dict[str, Any] = {
            "protocol": "tool_recovery_v1",
            "operationId": op.operation_id,
            "disposition": "completed",
            "reasonCode": "reconcile_matches_expected_state",
            "outcomeEventId": outcome_id,
            "evidenceEventIds": evidence + [outcome_id],
        }
    else:
        payload = {
            "protocol": "tool_recovery_v1",
            "operationId": op.operation_id,
            "disposition": "parked",
            "reasonCode": _PARK_REASON[op.observation],
            "evidenceEventIds": evidence,
        }
    op.decision = _recovery_fact(d, op, f"{op.operation_id}_decision", "maka.tool.recovery_decision", payload)
    # Journal (spec 30 §2.5 steps 6–8, §3.1): committed_at of recovery facts is the event ts.
    rec = op.reconcile
    op.journal.append(
        _journal_json(
            op, f"{rec['id']}_journal", "reconcile_observed", rec["id"], rec["ts"], rec["actions"]["toolRecovery"]
        )
    )
    new = [rec["id"]]
    if op.outcome is not None:
        out = op.outcome
        op.journal.append(_journal_json(op, f"{op.operation_id}_outcome", "outcome_committed", out["id"], out["ts"]))
        new.append(out["id"])
    dec = op.decision
    state = "recovery_completed" if completed else "recovery_parked"
    op.journal.append(
        _journal_json(op, f"{dec['id']}_journal", state, dec["id"], dec["ts"], dec["actions"]["toolRecovery"])
    )
    new.append(dec["id"])
    op.record = _operation_json(op, state, op.outcome["id"] if op.outcome else None, 4 if completed else 3)
    data = BundleInput(
        op.operation_id, copy.deepcopy(op.reconcile), copy.deepcopy(op.decision), copy.deepcopy(op.outcome)
    )
    label = f"bundle {op.operation_id} run{run.index} {'completed' if completed else 'parked/' + op.observation}"
    return StoreWrite(
        "bundle", label, data, op.operation_id, None, None, tuple(new), dict(op.record), tuple(op.journal)
    )


def _generic(kind: WriteKind, label: str, payload: Any, op: _Op | None, created: Any, *ids: str) -> StoreWrite:
    """A generic-path write (no projection change expected: ``expect_operation`` None)."""
    return StoreWrite(kind, label, payload, op.operation_id if op is not None else None, None, created, ids)


def _materialise(d: _Draft, runs: list[_Run], step: tuple[str, int, _Op | None]) -> None:
    what, run_index, op = step
    run = runs[run_index]
    if what == "open":
        e = _user_event(d, run)
        _add(d, run, _generic("append", f"append user {e['id']} run{run.index} ({run.opening})", e, None, True, e["id"]))
    elif what == "text":
        e = _model_text(d, run.spine)
        _add(d, run, _generic("append", f"append text {e['id']} run{run.index}", e, None, True, e["id"]))
    elif what == "terminal":
        e = _terminal_event(d, run)
        run.terminal_event_id = e["id"]
        kind: WriteKind = "terminal" if run.terminal == "barrier" else "append"
        label = f"{kind} terminal {e['id']} {e['status']} run{run.index}"
        _add(d, run, _generic(kind, label, e, None, True, e["id"]))
    else:
        assert op is not None
        if what == "call":  # generic append of an unbound call (pre-T1, legacy, permission wait)
            op.call = _call_event(d, op)
            label = f"append call {op.call['id']} ({op.path}) {op.operation_id} run{run.index}"
            _add(d, run, _generic("append", label, copy.deepcopy(op.call), op, True, op.call["id"]))
        elif what == "response":  # unbound synthetic refusal
            op.response = _response_event(d, op, d.event_id(op.spine), bound=False, is_error=op.is_error)
            label = f"append unbound response {op.response['id']} isError={op.is_error} {op.operation_id}"
            _add(d, run, _generic("append", label, copy.deepcopy(op.response), op, True, op.response["id"]))
        elif what == "batch":  # call + synthetic response in one import
            op.call = _call_event(d, op)
            op.response = _response_event(d, op, d.event_id(op.spine), bound=False, is_error=op.is_error)
            events = (copy.deepcopy(op.call), copy.deepcopy(op.response))
            label = f"import_batch [call {op.call['id']}, unbound response {op.response['id']}] {op.operation_id}"
            payload = (op.spine.session_id, op.spine.run_id, events)
            _add(d, run, _generic("import_batch", label, payload, op, (True, True), op.call["id"], op.response["id"]))
        elif what == "t1":
            _add(d, run, _t1_write(d, run, op))
        elif what == "t2":
            _add(d, run, _t2_write(d, run, op))
        elif what == "bundle":
            _add(d, run, _bundle_write(d, run, op))
        else:  # pragma: no cover
            raise AssertionError(what)
