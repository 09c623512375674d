"""Shared fixtures and helpers of the store clauses (``test_store_*.py``,
``test_phase0_crash_prefixes.py``).

Why one module: every store clause builds the same standard events (spec 30 Appendix A), sends
the same T1/T2/bundle requests and checks rejections the same way. Keeping them here keeps
the clauses short and means every clause uses the *spec's* fixture literally (ids, ts,
``canonicalArgsHash`` golden values of spec 30 §0.3), never a value computed by the
implementation under test.

Expected error codes: where the spec defines a code (scanner / transition codes of spec 10
§4.3–§4.6, bundle validation codes of spec 10 §5.3) that code is required. Where the spec
gives only a message (spec 30 "plain errors"), the code is the one ``docs/protocol-codes.md``
assigns to that failure. :func:`expect_rejected` accepts a *set* only where two normative
documents disagree (see ``LANE_CONFLICT_CODES``).
"""

from __future__ import annotations

import copy
import json
import os
from pathlib import Path
from typing import Any, Iterable, Mapping

from conformance.clauses import ClauseMismatch, expect_equal, expect_ok
from maka_ref.testing.contract import plan_form

# ---------------------------------------------------------------------------------------------
# Spec literals
# ---------------------------------------------------------------------------------------------

#: spec 30 §0.3 golden: ``Write``, ``{path:"notes.txt",content:"after"}``.
WRITE_HASH = "sha256:763712445cbfb7feebe3bd4ba14e29425f05e40b8cd14aef0896853dca24b4d9"
WRITE_ARGS = {"path": "notes.txt", "content": "after"}
#: spec 30 §0.3 golden: ``Read``, ``{path:"/workspace/README.md"}``.
READ_HASH = "sha256:ca1c32b2363423dbe2d9b7d7a8e2afdd335bb7e7cbb7c95975e8dbbf32e4d134"
READ_ARGS = {"path": "/workspace/README.md"}
#: spec 30 §0.3 golden: ``Read``, ``{path:"/workspace/repo/README.md"}``.
READ_REPO_HASH = "sha256:1b4cb19cef75d202dd6a879afe97efe24a38baab70a1a8a889daec398af0aa1c"
READ_REPO_ARGS = {"path": "/workspace/repo/README.md"}
DIGEST_A = "sha256:" + "a" * 64

#: A lane conflict on the generic path: spec 10 §4.2 step 1 (and the golden vectors
#: ``lanes/generic-lane-conflict``) name it ``semantic_lane_conflict``.
LANE_CONFLICT_CODES = frozenset({"semantic_lane_conflict"})
#: Codes that are never a domain rejection (protocol §5).
PROTOCOL_CODES = frozenset({"unknown_op", "not_claimed", "invalid_params", "internal_error",
                            "protocol_version_unsupported", "unknown_failpoint"})

IDENT = {"sessionId": "session-1", "invocationId": "invocation-1", "runId": "run-1", "turnId": "turn-1"}


def ident(n: int | str = 1, **over: str) -> dict[str, str]:
    """Execution identity ``session-n``/``invocation-n``/``run-n``/``turn-n`` (n=1: Appendix A)."""
    out = {"sessionId": f"session-{n}", "invocationId": f"invocation-{n}", "runId": f"run-{n}", "turnId": f"turn-{n}"}
    out.update(over)
    return out


def user_event(eid: str = "user-event-1", ts: int = 1, text: str = "write it", identity: Mapping[str, str] = IDENT,
               **extra: Any) -> dict[str, Any]:
    return {"id": eid, **identity, "ts": ts, "partial": False, "role": "user", "author": "user",
            "content": {"kind": "text", "text": text}, **extra}


def terminal_event(eid: str = "terminal-event-1", ts: int = 9, identity: Mapping[str, str] = IDENT) -> dict[str, Any]:
    return {"id": eid, **identity, "ts": ts, "partial": False, "role": "system", "author": "system",
            "status": "aborted", "actions": {"endInvocation": True}}


def call_event(eid: str = "call-event-1", call_id: str = "provider-call-1", name: str = "Write",
               args: Any = None, ts: int = 1, identity: Mapping[str, str] = IDENT,
               refs: Mapping[str, str] | None = None) -> dict[str, Any]:
    event = {"id": eid, **identity, "ts": ts, "partial": False, "role": "model", "author": "agent",
             "content": {"kind": "function_call", "id": call_id, "name": name,
                         "args": copy.deepcopy(WRITE_ARGS if args is None else args)}}
    if refs is not None:
        event["refs"] = dict(refs)
    return event


def dispatch_event(eid: str = "dispatch-event-1", op: str = "operation-1", call_id: str = "provider-call-1",
                   name: str = "Write", args_hash: str = WRITE_HASH, mode: str = "reconcile", ts: int = 1,
                   identity: Mapping[str, str] = IDENT, refs: Mapping[str, str] | None = None) -> dict[str, Any]:
    return {"id": eid, **identity, "ts": ts, "partial": False, "role": "system", "author": "system",
            "actions": {"toolDispatch": {"protocol": "t1_after_preflight_v1", "operationId": op,
                                         "providerToolCallId": call_id, "toolName": name,
                                         "canonicalArgsHash": args_hash, "recoveryMode": mode}},
            "refs": dict(refs) if refs is not None else {"operationId": op, "toolCallId": call_id}}


def response_event(eid: str = "outcome-event-1", op: str | None = "operation-1", call_id: str = "provider-call-1",
                   name: str = "Write", result: Any = "ok", is_error: bool = False, ts: int = 3,
                   identity: Mapping[str, str] = IDENT, **extra: Any) -> dict[str, Any]:
    refs = {"toolCallId": call_id} if op is None else {"operationId": op, "toolCallId": call_id}
    return {"id": eid, **identity, "ts": ts, "partial": False, "role": "tool", "author": "tool",
            "content": {"kind": "function_response", "id": call_id, "name": name, "result": result,
                        "isError": is_error},
            "refs": refs, **extra}


def reconcile_event(eid: str = "reconcile-event-1", op: str = "operation-1", call_id: str = "provider-call-1",
                    observation: str = "matches_expected_state", ts: int = 2,
                    identity: Mapping[str, str] = IDENT) -> dict[str, Any]:
    return {"id": eid, **identity, "ts": ts, "partial": False, "role": "system", "author": "system",
            "actions": {"toolRecovery": {"kind": "maka.tool.reconcile_result", "version": 1, "payload": {
                "protocol": "tool_reconcile_v1", "operationId": op, "observation": observation,
                "observationSchema": "state_identity_v1", "observationDigest": DIGEST_A}}},
            "refs": {"operationId": op, "toolCallId": call_id}}


def decision_event(eid: str = "decision-event-1", op: str = "operation-1", call_id: str = "provider-call-1",
                   disposition: str = "completed", reason: str | None = None, outcome_id: str | None = "outcome-event-1",
                   evidence: list[str] | None = None, ts: int = 4, identity: Mapping[str, str] = IDENT,
                   call_eid: str = "call-event-1", dispatch_eid: str = "dispatch-event-1",
                   reconcile_eid: str = "reconcile-event-1") -> dict[str, Any]:
    payload: dict[str, Any] = {"protocol": "tool_recovery_v1", "operationId": op, "disposition": disposition}
    if disposition == "completed":
        payload["reasonCode"] = reason or "reconcile_matches_expected_state"
        payload["outcomeEventId"] = outcome_id
        payload["evidenceEventIds"] = evidence if evidence is not None else [call_eid, dispatch_eid, reconcile_eid, outcome_id]
    else:
        payload["reasonCode"] = reason or "reconcile_diverged"
        payload["evidenceEventIds"] = evidence if evidence is not None else [call_eid, dispatch_eid, reconcile_eid]
    return {"id": eid, **identity, "ts": ts, "partial": False, "role": "system", "author": "system",
            "actions": {"toolRecovery": {"kind": "maka.tool.recovery_decision", "version": 1, "payload": payload}},
            "refs": {"operationId": op, "toolCallId": call_id}}


# ---------------------------------------------------------------------------------------------
# Requests
# ---------------------------------------------------------------------------------------------


def t1_params(ws: str, *, op: str = "operation-1", call: Mapping[str, Any] | None = None,
              dispatch: Mapping[str, Any] | None = None, call_id: str = "provider-call-1", name: str = "Write",
              args_hash: str = WRITE_HASH, mode: str = "reconcile", committed_at: int = 10,
              journal: str | None = None) -> dict[str, Any]:
    return {"workspace": ws, "operationId": op, "journalEventId": journal if journal is not None else f"{op}_prepared",
            "callEvent": dict(call) if call is not None else call_event(),
            "dispatchEvent": dict(dispatch) if dispatch is not None else dispatch_event(),
            "providerToolCallId": call_id, "toolName": name, "canonicalArgsHash": args_hash,
            "recoveryMode": mode, "committedAt": committed_at}


def t2_params(ws: str, *, op: str = "operation-1", response: Mapping[str, Any] | None = None,
              committed_at: int = 20, journal: str | None = None) -> dict[str, Any]:
    return {"workspace": ws, "operationId": op, "journalEventId": journal if journal is not None else f"{op}_outcome",
            "responseEvent": dict(response) if response is not None else response_event(), "committedAt": committed_at}


def bundle_params(ws: str, *, op: str = "operation-1", reconcile: Mapping[str, Any] | None = None,
                  decision: Mapping[str, Any] | None = None, outcome: Mapping[str, Any] | None = None,
                  parked: bool = False) -> dict[str, Any]:
    params: dict[str, Any] = {"workspace": ws, "operationId": op}
    if parked:
        params["reconcileEvent"] = dict(reconcile) if reconcile is not None else reconcile_event(observation="diverged")
        params["decisionEvent"] = dict(decision) if decision is not None else decision_event(disposition="parked", ts=3)
        if outcome is not None:
            params["outcomeEvent"] = dict(outcome)
    else:
        params["reconcileEvent"] = dict(reconcile) if reconcile is not None else reconcile_event()
        params["decisionEvent"] = dict(decision) if decision is not None else decision_event()
        params["outcomeEvent"] = dict(outcome) if outcome is not None else response_event()
    return params


# ---------------------------------------------------------------------------------------------
# A workspace seen through one protocol caller
# ---------------------------------------------------------------------------------------------


def new_workspace(tmp_path: Path, name: str = "ws") -> str:
    path = tmp_path / name
    path.mkdir(parents=True, exist_ok=True)
    return str(path.resolve())


class Store:
    """One workspace driven through ``caller`` (the ``maka`` session or a fresh client)."""

    def __init__(self, caller: Any, ws: str) -> None:
        self.caller = caller
        self.ws = ws
        self.ledger_files: list[str] = []

    def call(self, op: str, params: Mapping[str, Any]) -> Any:
        return self.caller.call(op, dict(params))

    def ok(self, op: str, params: Mapping[str, Any]) -> Mapping[str, Any]:
        return expect_ok(self.call(op, params), op)

    def open(self, read_only: bool = False) -> Mapping[str, Any]:
        params: dict[str, Any] = {"workspace": self.ws}
        if read_only:
            params["readOnly"] = True
        result = self.ok("store.open", params)
        files = result.get("ledgerFiles")
        if not isinstance(files, list) or not all(isinstance(f, str) for f in files):
            raise ClauseMismatch("store.open: ledgerFiles is not a list of paths", evidence={"result": dict(result)})
        self.ledger_files = list(files)
        return result

    def close(self) -> None:
        self.call("store.close", {"workspace": self.ws})

    def append(self, event: Mapping[str, Any]) -> Mapping[str, Any]:
        return self.ok("store.append", {"workspace": self.ws, "event": dict(event)})

    def t1(self, **kw: Any) -> Mapping[str, Any]:
        return self.ok("store.commit_tool_prepared", t1_params(self.ws, **kw))

    def t2(self, **kw: Any) -> Mapping[str, Any]:
        return self.ok("store.commit_tool_outcome", t2_params(self.ws, **kw))

    def bundle(self, **kw: Any) -> Mapping[str, Any]:
        return self.ok("store.commit_recovery_bundle", bundle_params(self.ws, **kw))

    def events(self, identity: Mapping[str, str] = IDENT) -> list[Any]:
        result = self.ok("store.read_events", {"workspace": self.ws, "sessionId": identity["sessionId"],
                                               "runId": identity["runId"]})
        events = result.get("events")
        if not isinstance(events, list):
            raise ClauseMismatch("store.read_events: events is not a list", evidence={"result": dict(result)})
        return events

    def event_ids(self, identity: Mapping[str, str] = IDENT) -> list[str]:
        return [e.get("id") for e in self.events(identity)]

    def project(self) -> Mapping[str, Any]:
        return self.ok("store.project", {"workspace": self.ws})

    def run(self, identity: Mapping[str, str] = IDENT, projection: Mapping[str, Any] | None = None) -> Mapping[str, Any]:
        projection = projection if projection is not None else self.project()
        for run in projection.get("runs") or []:
            if run.get("sessionId") == identity["sessionId"] and run.get("runId") == identity["runId"]:
                return run
        raise ClauseMismatch(f"store.project has no run {identity['sessionId']}/{identity['runId']}",
                             evidence={"runs": [(r.get("sessionId"), r.get("runId")) for r in projection.get("runs") or []]})

    def operation(self, op: str, projection: Mapping[str, Any] | None = None) -> Mapping[str, Any] | None:
        projection = projection if projection is not None else self.project()
        for run in projection.get("runs") or []:
            for record in run.get("toolOperations") or []:
                if record.get("operationId") == op:
                    return record
        return None

    def journal(self, op: str, projection: Mapping[str, Any] | None = None) -> list[Mapping[str, Any]]:
        projection = projection if projection is not None else self.project()
        return [row for run in projection.get("runs") or [] for row in run.get("toolJournalEvents") or []
                if row.get("operationId") == op]

    def tool_projection(self, projection: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """Every run's toolOperations and toolJournalEvents (the §3.3 equivalence surface)."""
        projection = projection if projection is not None else self.project()
        return {f"{r.get('sessionId')}/{r.get('runId')}": {"toolOperations": r.get("toolOperations"),
                                                          "toolJournalEvents": r.get("toolJournalEvents")}
                for r in projection.get("runs") or []}

    def file_bytes(self) -> dict[str, bytes | None]:
        return ledger_bytes(self.ws, self.ledger_files)


def open_store(maka: Any, tmp_path: Path) -> Store:
    """A new workspace under ``tmp_path``, opened for writing through ``maka``."""
    store = Store(maka, new_workspace(tmp_path))
    store.open()
    return store


def ledger_bytes(ws: str, files: Iterable[str]) -> dict[str, bytes | None]:
    out: dict[str, bytes | None] = {}
    for name in files:
        path = os.path.join(ws, name)
        try:
            with open(path, "rb") as handle:
                out[name] = handle.read()
        except FileNotFoundError:
            out[name] = None
    return out


#: How a snapshot records a ``-shm`` file: its presence only. SQLite's shared-memory index is not
#: durable data and readers legitimately write their read marks into an existing one; but a
#: read-only open that *creates* it creates a file (spec 30 §10 #33).
SHM_PRESENT = b"<present>"


def workspace_snapshot(ws: str) -> dict[str, bytes | None]:
    """Every file of the workspace directory: its bytes (a ``-shm`` file: :data:`SHM_PRESENT`).

    Why the whole directory: a read must neither change a ledger file nor *create* one, and a
    file an open creates is not among the ``ledgerFiles`` the implementation reported before it
    existed, so the snapshot must be taken before the open, over everything there is.
    """
    names = sorted(n for n in os.listdir(ws) if os.path.isfile(os.path.join(ws, n)))
    out = ledger_bytes(ws, [n for n in names if not n.endswith("-shm")])
    out.update({n: SHM_PRESENT for n in names if n.endswith("-shm")})
    return out


def expect_same_bytes(before: Mapping[str, bytes | None], after: Mapping[str, bytes | None], what: str) -> None:
    changed = sorted(name for name in set(before) | set(after) if before.get(name) != after.get(name))
    if changed:
        created = [name for name in changed if before.get(name) is None]
        note = f" (created {created}: spec 30 §10 #33, protocol §4.2: a read-only open creates no file)" if created else ""
        raise ClauseMismatch(f"{what} changed ledger files {changed}{note}",
                             evidence={name: {"before": _size(before.get(name)), "after": _size(after.get(name))}
                                       for name in changed})


def _size(data: bytes | None) -> Any:
    return None if data is None else {"bytes": len(data)}


def expect_rejected(reply: Any, op: str, codes: str | Iterable[str], what: str) -> str:
    """``reply`` must be ``ok: false`` with one of ``codes``; returns the code."""
    wanted = {codes} if isinstance(codes, str) else set(codes)
    if reply.ok:
        raise ClauseMismatch(f"{what}: {op} was accepted, expected a rejection {sorted(wanted)}",
                             diff={"path": "$.ok", "expected": False, "actual": True},
                             evidence={"result": reply.result})
    code = reply.code
    if code not in wanted:
        raise ClauseMismatch(f"{what}: {op} was rejected with {code!r}, expected {' or '.join(sorted(wanted))}",
                             diff={"path": "$.error.code", "expected": sorted(wanted)[0] if len(wanted) == 1 else sorted(wanted),
                                   "actual": code},
                             evidence={"error": dict(reply.error or {})})
    return code


def expect_created(result: Mapping[str, Any], created: bool, what: str, **seqs: int) -> None:
    expect_equal(created, result.get("created"), what=f"{what}: created")
    for key, value in seqs.items():
        expect_equal(value, result.get(key), what=f"{what}: {key}")


# ---------------------------------------------------------------------------------------------
# The reference oracle (maka_ref in this process, on the events read back)
# ---------------------------------------------------------------------------------------------


def wire(value: Any) -> Any:
    """``value`` as JSON text parsed with double semantics (what both sides see)."""
    from maka_ref import parse_json, thaw

    return thaw(parse_json(json.dumps(value, ensure_ascii=True)))


def plain(value: Any) -> Any:
    from maka_ref import thaw

    return json.loads(json.dumps(thaw(value)))


def reference_resolution(events: Any) -> Any:
    from maka_ref import resolve_recovery

    return plain(resolve_recovery(wire(events)).to_json())


def reference_plan(events: Any) -> Any:
    from maka_ref import build_resume_plan

    return plain(build_resume_plan(wire(events)).to_json())


def canonical(event: Mapping[str, Any]) -> Any:
    """The spec's canonical form of ``event`` (spec 30 §0.2), computed by the reference codec."""
    from maka_ref._events.encode import encode_runtime_event

    return json.loads(encode_runtime_event(wire(event)).canonical_json)


def expect_resolution_and_plan(run: Mapping[str, Any], events: Any, what: str) -> None:
    """The projection's resolution and plan equal the reference's on the events read back."""
    expect_equal(reference_resolution(events), run.get("resolution"), what=f"{what}: resolution",
                 evidence={"events": events})
    expect_equal(plan_form(reference_plan(events)), plan_form(run.get("plan")), what=f"{what}: plan (wording aside)",
                 evidence={"events": events})


def tool_states(store: Store, ops: Iterable[str], projection: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for op in ops:
        record = store.operation(op, projection)
        out[op] = None if record is None else {"currentState": record.get("currentState"),
                                               "version": record.get("version")}
    return out


def nothing_written(store: Store, before_ids: list[str], what: str, identity: Mapping[str, str] = IDENT,
                    op: str | None = "operation-1", state: str | None = None) -> None:
    """After a rejection: the run's events are unchanged and the operation's state is ``state``
    (``None``: no operation row)."""
    expect_equal(before_ids, store.event_ids(identity), what=f"{what}: events after the rejection")
    if op is not None:
        record = store.operation(op)
        expect_equal(state, None if record is None else record.get("currentState"),
                     what=f"{what}: state of {op} after the rejection")

