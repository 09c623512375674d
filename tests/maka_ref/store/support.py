"""Shared helpers for the SQLite store tests (spec 30 Appendix A fixtures, raw SQL access).

Not a test module: the ``tests/test_store_*.py`` files import it. The fixture events come
from ``maka_ref.testing.families`` (family W is Appendix A's recovery-persistence fixture).
"""

from __future__ import annotations

import hashlib
import sqlite3
from pathlib import Path
from typing import Any, Callable

from maka_ref._codec.argshash import canonical_args_hash
from maka_ref._events.encode import encode_runtime_event
from maka_ref._store import RuntimeStore, T1Input, T2Input
from maka_ref._store.engine.rows import event_kind
from maka_ref.testing import families as fam

WRITE_HASH = fam.WRITE_NOTES_HASH
REFS = dict(fam.W_REFS)


def open_store(root: Path) -> RuntimeStore:
    return RuntimeStore.open(root)


def db_file(root: Path) -> Path:
    return Path(root) / "runtime.sqlite"


def raw(root: Path) -> sqlite3.Connection:
    """A plain connection used to inject corruption exactly as the scenarios say."""
    conn = sqlite3.connect(str(db_file(root)), isolation_level=None)
    conn.execute("PRAGMA busy_timeout = 5000")
    return conn


def file_sha256(path: Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def user_event(event_id: str = "user-event-1", text: str = "write it", **fields: Any) -> dict[str, Any]:
    """Appendix A ``user-event-1``: user/user text ``write it`` at ts 1."""
    base = {"ts": 1, "role": "user", "author": "user", "content": {"kind": "text", "text": text}}
    base.update(fields)
    return fam.event(event_id, **base)


def t1_input(call: Any = None, dispatch: Any = None, **overrides: Any) -> T1Input:
    """Appendix A T1 input (operation-1, Write, mode reconcile, committedAt 10)."""
    values: dict[str, Any] = dict(
        operation_id="operation-1",
        journal_event_id="operation-1_prepared",
        runtime_event=call if call is not None else fam.w_call(),
        dispatch_runtime_event=dispatch if dispatch is not None else fam.w_dispatch(),
        provider_tool_call_id="provider-call-1",
        tool_name="Write",
        canonical_args_hash=WRITE_HASH,
        recovery_mode="reconcile",
        committed_at=10,
    )
    values.update(overrides)
    return T1Input(**values)


def t2_input(response: Any = None, **overrides: Any) -> T2Input:
    """Appendix A T2 input (operation-1_outcome, committedAt 20)."""
    values: dict[str, Any] = dict(
        operation_id="operation-1",
        journal_event_id="operation-1_outcome",
        runtime_event=response if response is not None else fam.w_outcome(),
        committed_at=20,
    )
    values.update(overrides)
    return T2Input(**values)


def completed_bundle(store: RuntimeStore) -> None:
    store.commit_tool_recovery_bundle(
        "operation-1", fam.w_reconcile(), fam.w_decision_completed(), outcome=fam.w_outcome()
    )


def parked_bundle(store: RuntimeStore, observation: str = "diverged", reason: str = "reconcile_diverged") -> None:
    store.commit_tool_recovery_bundle("operation-1", fam.w_reconcile(observation), fam.w_decision_parked(reason))


def raw_insert(conn: sqlite3.Connection, event: Any, event_seq: int, committed_at: int | None = None) -> None:
    """Insert a canonical event row directly (no checks, no ordinal), like a foreign writer."""
    encoded = encode_runtime_event(event)
    e = encoded.event
    conn.execute(
        "INSERT INTO runtime_events (event_id, session_id, invocation_id, run_id, turn_id, event_seq, event_kind, "
        "payload_json, committed_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (e["id"], e["sessionId"], e["invocationId"], e["runId"], e["turnId"], event_seq, event_kind(e),
         encoded.canonical_json, committed_at if committed_at is not None else e["ts"]),
    )


def ids(events: list[Any]) -> list[str]:
    return [event["id"] for event in events]


def journal_states(store: RuntimeStore, operation_id: str = "operation-1") -> list[str]:
    return [record.state for record in store.read_tool_journal(operation_id)]


def projection_snapshot(store: RuntimeStore, operation_id: str = "operation-1") -> tuple[Any, Any]:
    """(operation JSON, journal JSON list) — the §3.3 equivalence view (no journal_seq)."""
    operation = store.read_tool_operation(operation_id)
    journal = [record.to_json() for record in store.read_tool_journal(operation_id)]
    return (operation.to_json() if operation is not None else None, journal)


def outcome_of(action: Callable[[], Any]) -> Any:
    """What a store call did, as a comparable value: ``("ok", result)`` or ``("error", class,
    code, message)`` (for runs of one scenario that must agree, e.g. with and without a cache)."""
    try:
        result = action()
    except BaseException as error:  # noqa: BLE001 - the error *is* the observable result
        return ("error", type(error).__name__, getattr(error, "code", None), str(error))
    return ("ok", result.to_json() if hasattr(result, "to_json") else result)


# ---------------------------------------------------------------------------------------
# A numbered tool loop: call ``n`` of run ``r`` as (function_call, dispatch, response) and
# its T1/T2 inputs (the cached-vs-uncached store scenarios and the GC-pause tests share it).
# ---------------------------------------------------------------------------------------

#: Session of the numbered tool-loop calls below.
LOOP_SESSION = "cache-session"


def loop_envelope(event_id: str, ts: int, role: str, author: str, run: int = 1) -> dict[str, Any]:
    return {
        "id": event_id, "invocationId": f"inv-{run}", "runId": f"run-{run}", "sessionId": LOOP_SESSION,
        "turnId": f"turn-{run}", "ts": ts, "partial": False, "role": role, "author": author,
    }


def loop_tool_events(call: int, *, variant: str = "", run: int = 1, arg: str = "x") -> tuple[dict, dict, dict]:
    """(function_call, tool dispatch, bound function_response) of call ``call``; ``variant``
    changes the event ids only (a second copy of the same facts → duplicates)."""
    call_id = f"toolu_{call}"
    op = f"op-{run}-{call}"
    args = {"path": f"notes/{call}.txt", "content": arg}
    c = loop_envelope(f"c-{run}-{call}{variant}", 1000 + call * 10, "model", "agent", run)
    c["content"] = {"kind": "function_call", "id": call_id, "name": "Write", "args": args}
    c["refs"] = {"toolCallId": call_id}
    d = loop_envelope(f"{op}_dispatch{variant}", 1000 + call * 10, "system", "system", run)
    d["actions"] = {"toolDispatch": {
        "protocol": "t1_after_preflight_v1", "operationId": op, "providerToolCallId": call_id, "toolName": "Write",
        "canonicalArgsHash": canonical_args_hash("Write", args), "recoveryMode": "reconcile",
    }}
    d["refs"] = {"operationId": op, "toolCallId": call_id}
    r = loop_envelope(f"{op}_response{variant}", 1001 + call * 10, "tool", "tool", run)
    r["content"] = {"kind": "function_response", "id": call_id, "name": "Write", "result": {"ok": True}}
    r["refs"] = {"operationId": op, "toolCallId": call_id}
    return c, d, r


def loop_t1(call: int, run: int = 1, arg: str = "x") -> T1Input:
    c, d, _ = loop_tool_events(call, run=run, arg=arg)
    fact = d["actions"]["toolDispatch"]
    op = fact["operationId"]
    return T1Input(op, f"{op}_prepared", c, d, fact["providerToolCallId"], "Write", fact["canonicalArgsHash"],
                   "reconcile", 10 + call)


def loop_t2(call: int, run: int = 1) -> T2Input:
    _, d, r = loop_tool_events(call, run=run)
    op = d["actions"]["toolDispatch"]["operationId"]
    return T2Input(op, f"{op}_outcome", r, 20 + call)
