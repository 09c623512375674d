"""Worker process of the concurrency harness (spec 30 §7.1), one mode per process.

Run as ``python -m maka_ref.testing.race_worker`` by :mod:`maka_ref.testing.process_race`;
it is shipped (not a test file) so the crash lab and third-party suites can reuse it.

Protocol (spec 30 §7.1, §10 items 34–36):

1. write ``READY\\n`` to stdout (unbuffered ``os.write``);
2. poll every 5 ms until the start file exists (a file-existence barrier that works on every
   OS and lets the parent release all workers at the same moment);
3. open the store on the directory holding the database file, write ``OPENED\\n``;
4. perform the mode. Open-only modes then poll (5 ms) for the stop file before closing;
5. success: ``RESULT ok <json>\\n`` on stdout, exit 0. Failure: ``RESULT error <code>
   <message>\\n`` on stderr, exit 2. ``<code>`` is the :class:`~maka_ref._store.errors.StoreError`
   ``code`` (``duplicate_event_id``, ``already_settled``…), or ``SQLITE_<NAME>`` for a raw
   ``sqlite3`` error, or the exception class name otherwise, so a parent matches outcomes by
   **code, never by message text**. A second stderr line ``ERROR_CLASS <name>`` names the
   exception class (``ToolLedgerRejectionError`` vs ``ToolLedgerCorruptionError`` is a
   behavioural contract, spec 30 §2.9). Unexpected (non-store) exceptions also get a
   traceback after those lines.

Environment (names of spec 30 §7.1; the last two are this harness's additions):

* ``MAKA_SQLITE_RECOVERY_CONCURRENCY_MODE``  — one of :data:`MODES`;
* ``MAKA_SQLITE_RECOVERY_CONCURRENCY_DB``    — path of ``runtime.sqlite`` (its directory is the
  store root; a path that is itself a directory is a failing open, scenario C12);
* ``MAKA_SQLITE_RECOVERY_CONCURRENCY_START`` — start-barrier file;
* ``MAKA_SQLITE_RECOVERY_CONCURRENCY_STOP``  — stop file for open-only modes (default
  ``<start>.stop``);
* ``MAKA_SQLITE_RECOVERY_CONCURRENCY_WORKER`` — worker index (distinct ids for ``append``);
* ``MAKA_SQLITE_RECOVERY_CONCURRENCY_COUNT``  — events per ``append`` worker (default 1).

The fixture builders (:func:`prepare_database`, :func:`completed_bundle_events`, …) are the
spec's §7.2 prepared database and worker payloads; tests import them to assert post-states.
"""

from __future__ import annotations

import json
import os
import sqlite3
import sys
import time
import traceback
from pathlib import Path
from typing import Any, Callable

from maka_ref._codec.argshash import canonical_args_hash
from maka_ref._store.errors import StoreError
from maka_ref.testing import families as fam

__all__ = [
    "APPEND_INVOCATION",
    "APPEND_RUN",
    "APPEND_SESSION",
    "ENV_COUNT",
    "ENV_DB",
    "ENV_MODE",
    "ENV_START",
    "ENV_STOP",
    "ENV_WORKER",
    "MODES",
    "OPEN_ONLY_MODES",
    "OTHER_ARGS",
    "append_event",
    "completed_bundle_events",
    "continuation_claim",
    "continuation_source_events",
    "error_code",
    "main",
    "parked_bundle_events",
    "prepare_database",
    "run",
    "t1_input",
    "t2_input",
]

ENV_MODE = "MAKA_SQLITE_RECOVERY_CONCURRENCY_MODE"
ENV_DB = "MAKA_SQLITE_RECOVERY_CONCURRENCY_DB"
ENV_START = "MAKA_SQLITE_RECOVERY_CONCURRENCY_START"
ENV_STOP = "MAKA_SQLITE_RECOVERY_CONCURRENCY_STOP"
ENV_WORKER = "MAKA_SQLITE_RECOVERY_CONCURRENCY_WORKER"
ENV_COUNT = "MAKA_SQLITE_RECOVERY_CONCURRENCY_COUNT"

POLL_S = 0.005
#: Safety net: a worker never waits for a barrier longer than this (the parent kills sooner).
BARRIER_LIMIT_S = 120.0

OTHER_ARGS = {"path": "notes.txt", "content": "other"}
APPEND_SESSION = "session-1"
APPEND_INVOCATION = "append-invocation"
APPEND_RUN = "append-run"
APPEND_TURN = "append-turn"


# ------------------------------------------------------------------ fixtures (spec 30 §7.2)


def _call(event_id: str = "call-event-1", args: dict[str, Any] | None = None) -> dict[str, Any]:
    call = fam.with_fields(fam.w_call(id=event_id), ts=1)
    if args is not None:
        call["content"]["args"] = dict(args)
    return call


def _dispatch(event_id: str = "dispatch-event-1", args_hash: str = fam.WRITE_NOTES_HASH) -> dict[str, Any]:
    dispatch = fam.with_fields(fam.w_dispatch(id=event_id), ts=2)
    dispatch["actions"]["toolDispatch"]["canonicalArgsHash"] = args_hash
    return dispatch


def t1_input(variant: str = "exact") -> Any:
    """§7.2 T1 for ``operation-1`` (call ts 1, dispatch ts 2, committedAt 2).

    ``variant``: ``exact`` (the prepared database's T1), ``other_args`` (same event ids, args
    ``content: "other"`` and their hash: a conflicting retry, §2.8 → ``duplicate_event_id``),
    ``fresh_ids`` (``call-event-2``/``dispatch-event-2`` for the same provider call, §2.8 →
    ``duplicate_call``).
    """
    from maka_ref._store import T1Input

    call_id, dispatch_id, args = "call-event-1", "dispatch-event-1", None
    if variant == "other_args":
        args = OTHER_ARGS
    elif variant == "fresh_ids":
        call_id, dispatch_id = "call-event-2", "dispatch-event-2"
    elif variant != "exact":
        raise ValueError(f"unknown T1 variant {variant!r}")
    args_hash = canonical_args_hash("Write", args) if args is not None else fam.WRITE_NOTES_HASH
    return T1Input(
        operation_id="operation-1",
        journal_event_id="operation-1_prepared",
        runtime_event=_call(call_id, args),
        dispatch_runtime_event=_dispatch(dispatch_id, args_hash),
        provider_tool_call_id="provider-call-1",
        tool_name="Write",
        canonical_args_hash=args_hash,
        recovery_mode="reconcile",
        committed_at=2,
    )


def t2_input(response_id: str = "outcome-event-1") -> Any:
    """T2 for ``operation-1`` (Appendix A outcome, ts 3, committedAt 20)."""
    from maka_ref._store import T2Input

    return T2Input(
        operation_id="operation-1",
        journal_event_id="operation-1_outcome",
        runtime_event=fam.w_outcome(id=response_id),
        committed_at=20,
    )


def completed_bundle_events() -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    """§7.2 ``completed``: (reconcile ts 3, outcome ts 4, decision ts 5)."""
    reconcile = fam.with_fields(fam.w_reconcile(id="completed-reconcile"), ts=3)
    outcome = fam.with_fields(fam.w_outcome(id="completed-outcome"), ts=4)
    decision = fam.with_fields(fam.w_decision_completed(id="completed-decision"), ts=5)
    payload = decision["actions"]["toolRecovery"]["payload"]
    payload["outcomeEventId"] = "completed-outcome"
    payload["evidenceEventIds"] = ["call-event-1", "dispatch-event-1", "completed-reconcile", "completed-outcome"]
    return reconcile, outcome, decision


def parked_bundle_events() -> tuple[dict[str, Any], dict[str, Any]]:
    """§7.2 ``parked``: (reconcile ts 3 ``diverged`` digest ``b``×64, decision ts 4)."""
    reconcile = fam.with_fields(fam.w_reconcile("diverged", id="parked-reconcile"), ts=3)
    reconcile["actions"]["toolRecovery"]["payload"]["observationDigest"] = "sha256:" + "b" * 64
    decision = fam.with_fields(fam.w_decision_parked("reconcile_diverged", id="parked-decision"), ts=4)
    decision["actions"]["toolRecovery"]["payload"]["evidenceEventIds"] = [
        "call-event-1", "dispatch-event-1", "parked-reconcile"
    ]
    return reconcile, decision


def append_event(worker: int, index: int) -> dict[str, Any]:
    """An ordinary (non-tool) model text event of its own invocation, distinct per worker."""
    return fam.event(
        f"append-w{worker}-e{index}",
        ts=100 + index,
        role="model",
        author="agent",
        content={"kind": "text", "text": f"worker {worker} event {index}"},
        sessionId=APPEND_SESSION,
        invocationId=APPEND_INVOCATION,
        runId=APPEND_RUN,
        turnId=APPEND_TURN,
    )


def prepare_database(root: str | Path, *, with_t1: bool = True, with_continuation_source: bool = False) -> Path:
    """§7.2 (adapted): ``<root>/runtime.sqlite`` created by a store, T1 committed for
    ``operation-1`` when ``with_t1``, the continuation source run (user ts 10, failed terminal
    ts 11 through the barrier) when ``with_continuation_source``; the store is closed before
    workers start. Returns the database path. (The root binding is not used here.)"""
    from maka_ref._store import DB_FILE_NAME, RuntimeStore

    with RuntimeStore.open(root) as store:
        if with_t1:
            store.commit_tool_prepared(t1_input())
        if with_continuation_source:
            user, terminal = continuation_source_events()
            store.append(user)
            store.ensure_terminal_durable(terminal)
    return Path(root) / DB_FILE_NAME


SOURCE_IDENTITY = {
    "sessionId": "session-1",
    "invocationId": "continuation-source-invocation",
    "runId": "continuation-source-run",
    "turnId": "continuation-source-turn",
}


def continuation_source_events() -> tuple[dict[str, Any], dict[str, Any]]:
    """§7.2 source run: user event ts 10 + failed terminal ts 11 (``runtime_interrupted``);
    the spec 30 §2.6 golden prefix/manifest digests are computed over exactly these."""
    base = {**SOURCE_IDENTITY, "partial": False}
    user = {**base, "id": "continuation-source-user", "ts": 10, "role": "user", "author": "user",
            "content": {"kind": "text", "text": "continue after this completed boundary"}}
    terminal = {**base, "id": "continuation-source-terminal", "ts": 11, "role": "system", "author": "system",
                "status": "failed",
                "actions": {"endInvocation": True, "stateDelta": {"failureClass": "runtime_interrupted"}}}
    return user, terminal


def continuation_claim(
    store: Any, claim_id: str, target: tuple[str, str, str], *, source_run: str = "continuation-source-run",
    up_to: int | None = None, claimed_at: int = 20, ancestors: tuple[Any, ...] = (),
) -> dict[str, Any]:
    """A ``continuation_claim_v1`` over the store's current prefix of ``source_run`` (session-1),
    target ``(invocation, run, turn)``; ``ancestors`` are older segments (JSON or objects)."""
    from maka_ref._plan.digests import provider_replay_digest
    from maka_ref._plan.prefix import build_boundary_cursor, segment_of

    source = segment_of(store.read_immutable_prefix("session-1", source_run, up_to))
    boundary = build_boundary_cursor([*ancestors, source])
    invocation, run_id, turn = target
    header = {
        "runId": run_id, "sessionId": "session-1", "turnId": turn, "invocationId": invocation,
        "status": "created", "backendKind": "fake", "llmConnectionSlug": "fake", "modelId": "fake-model",
        "cwd": "/workspace", "permissionMode": "ask", "createdAt": claimed_at, "updatedAt": claimed_at,
        "parentRunId": source.identity.run_id, "parentTurnId": source.identity.turn_id,
        "continuationSource": {
            "protocol": "continuation_source_v2", "claimId": claim_id,
            "boundaryDigest": boundary.manifest_digest,
            "sourceInvocationId": source.identity.invocation_id, "sourceRunId": source.identity.run_id,
            "sourceTurnId": source.identity.turn_id,
            "sourceRuntimeEventHighWater": source.position.last_event_seq,
            "sourcePrefixDigest": source.prefix_digest, "replayManifestDigest": boundary.manifest_digest,
        },
    }
    return {
        "protocol": "continuation_claim_v1", "claimId": claim_id, "boundaryDigest": boundary.manifest_digest,
        "boundary": boundary.to_json(), "providerProjectionVersion": 1,
        "providerReplayDigest": provider_replay_digest([]),
        "target": {"sessionId": "session-1", "invocationId": invocation, "runId": run_id, "turnId": turn},
        "targetRunHeader": header, "claimedAt": claimed_at,
    }


FIXED_TARGET = ("fixed-target-invocation", "fixed-target-run", "fixed-target-turn")


# ------------------------------------------------------------------ modes


def _mode_completed(store: Any, env: dict[str, str]) -> dict[str, Any]:
    reconcile, outcome, decision = completed_bundle_events()
    store.commit_tool_recovery_bundle("operation-1", reconcile, decision, outcome=outcome)
    return {}


def _mode_parked(store: Any, env: dict[str, str]) -> dict[str, Any]:
    reconcile, decision = parked_bundle_events()
    store.commit_tool_recovery_bundle("operation-1", reconcile, decision)
    return {}


def _mode_rebuild(store: Any, env: dict[str, str]) -> dict[str, Any]:
    return store.rebuild_tool_projections().to_json()


def _t1(variant: str) -> Callable[[Any, dict[str, str]], dict[str, Any]]:
    def run(store: Any, env: dict[str, str]) -> dict[str, Any]:
        return store.commit_tool_prepared(t1_input(variant)).to_json()

    return run


def _t2(response_id: str) -> Callable[[Any, dict[str, str]], dict[str, Any]]:
    def run(store: Any, env: dict[str, str]) -> dict[str, Any]:
        return store.commit_tool_outcome(t2_input(response_id)).to_json()

    return run


def _mode_append(store: Any, env: dict[str, str]) -> dict[str, Any]:
    worker = int(env.get(ENV_WORKER, "0"))
    count = int(env.get(ENV_COUNT, "1"))
    seqs = [store.append(append_event(worker, index)).event_seq for index in range(count)]
    return {"eventSeqs": seqs}


def _claim(fixed: bool = False, nonterminal: bool = False) -> Callable[[Any, dict[str, str]], dict[str, Any]]:
    def run(store: Any, env: dict[str, str]) -> dict[str, Any]:
        pid = os.getpid()
        target = FIXED_TARGET if fixed else (f"invocation-{pid}", f"run-{pid}", f"turn-{pid}")
        source = {"source_run": "run-1", "up_to": 2} if nonterminal else {}
        result = store.claim_continuation(continuation_claim(store, f"claim-{pid}", target, **source))
        _say(1, f"CLAIM {result.kind}\n")
        return {"kind": result.kind, "claimId": result.claim.claim_id}

    return run


def _mode_append_source(store: Any, env: dict[str, str]) -> dict[str, Any]:
    terminal = fam.event("run-1-terminal", ts=12, status="failed", actions={"endInvocation": True})
    seq = store.ensure_terminal_durable(terminal).event_seq
    _say(1, "APPEND committed\n")
    return {"eventSeq": seq}


def _mode_append_target(store: Any, env: dict[str, str]) -> dict[str, Any]:
    invocation, run_id, turn = FIXED_TARGET
    text = fam.event("fixed-target-text", ts=30, role="model", author="agent", invocationId=invocation,
                     runId=run_id, turnId=turn, content={"kind": "text", "text": "target text"})
    seq = store.append(text).event_seq
    _say(1, "TARGET_APPEND committed\n")
    return {"eventSeq": seq}


def _mode_open_only(store: Any, env: dict[str, str]) -> dict[str, Any]:
    return {"userVersion": store.schema_version()}


MODES: dict[str, Callable[[Any, dict[str, str]], dict[str, Any]]] = {
    "completed": _mode_completed,
    "parked": _mode_parked,
    "rebuild": _mode_rebuild,
    "t1": _t1("exact"),
    "t1_other_args": _t1("other_args"),
    "t1_fresh_ids": _t1("fresh_ids"),
    "t2": _t2("outcome-event-1"),
    "t2_conflict": _t2("outcome-event-2"),
    "append": _mode_append,
    "open_only": _mode_open_only,
    "claim": _claim(),
    "claim_fixed_target": _claim(fixed=True),
    "claim_nonterminal": _claim(nonterminal=True),
    "append_source": _mode_append_source,
    "append_target": _mode_append_target,
    "operational_open_only": _mode_open_only,
}
#: Modes that hold the store open until the stop file appears (spec 30 §7.1).
OPEN_ONLY_MODES = frozenset({"open_only", "operational_open_only"})


# ------------------------------------------------------------------ process plumbing


def _say(fd: int, text: str) -> None:
    data = text.encode("utf-8", "backslashreplace")
    while data:
        data = data[os.write(fd, data):]


def _wait_for(path: Path) -> None:
    deadline = time.monotonic() + BARRIER_LIMIT_S
    while not path.exists():
        if time.monotonic() >= deadline:
            raise TimeoutError(f"barrier file {path} never appeared")
        time.sleep(POLL_S)


def error_code(error: BaseException) -> str:
    """The stable code a parent matches on: StoreError ``code``, ``SQLITE_<NAME>`` or class."""
    code = getattr(error, "code", None)
    if isinstance(code, str) and code:
        return code
    if isinstance(error, sqlite3.Error):
        name = getattr(error, "sqlite_errorname", None)
        if isinstance(name, str) and name:
            return name
    return type(error).__name__


def _open(mode: str, db: Path) -> list[Any]:
    from maka_ref._store import DB_FILE_NAME, RuntimeStore

    if db.name != DB_FILE_NAME:
        raise StoreError(f"race worker database must be named {DB_FILE_NAME}: {db}", code="race_db_path")
    stores = [RuntimeStore.open(db.parent)]
    if mode == "operational_open_only":
        # The product's operational owner opens both scopes of the same file (spec 30 §1.1).
        from maka_ref._store.agent_runs import AgentRunStore

        try:
            stores.append(AgentRunStore.open(db.parent))
        except BaseException:
            stores[0].close()
            raise
    return stores


def run(env: dict[str, str]) -> int:
    """One worker lifetime (the protocol above); returns the exit code."""
    mode = env.get(ENV_MODE, "")
    stores: list[Any] = []
    try:
        if mode not in MODES:
            raise ValueError(f"unknown race worker mode {mode!r}")
        db = Path(env[ENV_DB])
        start = Path(env[ENV_START])
        stop = Path(env.get(ENV_STOP) or f"{start}.stop")
        _say(1, "READY\n")
        _wait_for(start)
        stores = _open(mode, db)
        _say(1, "OPENED\n")
        detail = MODES[mode](stores[0], env)
        if mode in OPEN_ONLY_MODES:
            _wait_for(stop)
        for store in reversed(stores):
            store.close()
        stores = []
        _say(1, f"RESULT ok {json.dumps(detail, sort_keys=True, separators=(',', ':'))}\n")
        return 0
    except BaseException as error:  # noqa: BLE001 - every failure becomes a RESULT line
        message = " ".join(str(error).split()) or type(error).__name__
        _say(2, f"RESULT error {error_code(error)} {message}\nERROR_CLASS {type(error).__name__}\n")
        if not isinstance(error, StoreError):
            _say(2, traceback.format_exc())
        return 2
    finally:
        for store in reversed(stores):
            try:
                store.close()
            except BaseException:  # noqa: BLE001 - the RESULT line is already written
                pass


def main() -> None:
    sys.exit(run(dict(os.environ)))


if __name__ == "__main__":
    main()
