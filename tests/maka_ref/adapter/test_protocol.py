"""``python -m maka_ref.adapter`` as a real child process, driven over the wire (docs/protocol.md).

The helper below is deliberately minimal (spawn, one request / one response line with a
timeout, close); the general protocol client belongs to ``crashlab``. Every response is
validated with :func:`conformance.protocol.validate_response`.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any, Iterator, Mapping

import pytest

from conformance.protocol import CAPABILITIES, OPERATIONS, validate_announcement, validate_response
from conformance.vectors import check_vector, iter_vectors, parse_json_text
from maka_ref.testing import families as fam
from tests.maka_ref.store.support import WRITE_HASH, user_event

ROOT = Path(__file__).resolve().parents[3]
TIMEOUT = 60.0

# --------------------------------------------------------------------------- the helper

_INF, _NEG_INF = "\x00inf\x00", "\x00-inf\x00"


def _encode(value: Any) -> bytes:
    """Request line: ±inf (from vector inputs like 1e400) spelled ±1e400; lone surrogates escaped."""

    def walk(v: Any) -> Any:
        if isinstance(v, float) and math.isinf(v):
            return _INF if v > 0 else _NEG_INF
        if isinstance(v, Mapping):
            return {k: walk(x) for k, x in v.items()}
        if isinstance(v, (list, tuple)):
            return [walk(x) for x in v]
        return v

    text = json.dumps(walk(value), separators=(",", ":"), allow_nan=False)
    text = text.replace(json.dumps(_INF), "1e400").replace(json.dumps(_NEG_INF), "-1e400")
    return (text + "\n").encode("ascii")


class Adapter:
    """One adapter process in its own process group; stdout lines arrive through a queue."""

    def __init__(self, cwd: Path) -> None:
        self.stderr_path = cwd / "adapter.stderr"
        self._stderr = open(self.stderr_path, "wb")
        env = dict(os.environ, MAKA_CONFORMANCE="1")
        env.pop("MAKA_REF_FAILPOINT", None)
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "maka_ref.adapter"], cwd=cwd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=self._stderr, start_new_session=True, env=env,
        )
        self.lines: queue.Queue[bytes] = queue.Queue()
        threading.Thread(target=self._pump, daemon=True).start()
        self.next_id = 0

    def _pump(self) -> None:
        assert self.proc.stdout is not None
        for line in iter(self.proc.stdout.readline, b""):
            self.lines.put(line)
        self.lines.put(b"")

    def send(self, op: str, params: Mapping[str, Any] | None = None) -> int:
        request_id, self.next_id = self.next_id, self.next_id + 1
        assert self.proc.stdin is not None
        self.proc.stdin.write(_encode({"id": request_id, "op": op, "params": dict(params or {})}))
        self.proc.stdin.flush()
        return request_id

    def read(self, timeout: float = TIMEOUT) -> Any:
        line = self.lines.get(timeout=timeout)
        assert line, f"adapter closed stdout; stderr: {self.stderr_path.read_text(errors='replace')[-2000:]}"
        return parse_json_text(line.decode("utf-8"))

    def call(self, op: str, params: Mapping[str, Any] | None = None, *, ok: bool | None = True) -> Any:
        request_id = self.send(op, params)
        response = self.read()
        assert response["id"] == request_id
        errors = validate_response(op, response)
        assert not errors, (op, errors, response)
        if ok is not None:
            assert response["ok"] is ok, response
        return response["result"] if response["ok"] else response["error"]

    def hello(self) -> Any:
        return self.call("hello", {"protocol": 1, "harness": {"name": "tests", "version": "0"}})

    def close(self) -> int:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        code = self.proc.wait(timeout=10)
        self._stderr.close()
        return code

    def kill(self) -> int:
        os.killpg(self.proc.pid, signal.SIGKILL)
        code = self.proc.wait(timeout=10)
        self._stderr.close()
        return code


@pytest.fixture
def adapter(tmp_path: Path) -> Iterator[Adapter]:
    proc = Adapter(tmp_path)
    try:
        yield proc
    finally:
        if proc.proc.poll() is None:
            proc.kill()


def _workspace(tmp_path: Path, name: str = "ws") -> str:
    path = tmp_path / name
    path.mkdir()
    return str(path)


def _digests(workspace: str, files: list[str]) -> dict[str, str]:
    return {name: hashlib.sha256((Path(workspace) / name).read_bytes()).hexdigest() for name in files}


# --------------------------------------------------------------------------- handshake, errors


def test_handshake_claims_every_capability_and_lists_reachable_failpoints(adapter: Adapter) -> None:
    result = adapter.hello()
    assert result["protocol"] == 1
    assert result["implementation"]["name"] == "maka-ref"
    # every capability: those with operations, and faults.powerloss (a promise, no operation)
    assert set(result["capabilities"]) == set(CAPABILITIES) == set(OPERATIONS.values()) | {"faults.powerloss"}
    assert result["durability"]["sync"] == "fsync" and result["durability"]["directorySync"] is True
    assert not validate_response("hello", {"id": 0, "ok": True, "result": result})
    catalogue = json.loads((ROOT / "conformance" / "protocol" / "failpoints.json").read_text())["failpoints"]
    assert set(result["failpoints"]) == {e["id"] for e in catalogue if e["reachableBy"]}
    assert adapter.close() == 0


def test_protocol_version_and_errors_as_values(adapter: Adapter, tmp_path: Path) -> None:
    error = adapter.call("hello", {"protocol": 2}, ok=False)
    assert error["code"] == "protocol_version_unsupported"
    adapter.hello()
    assert adapter.call("ledger.frobnicate", {}, ok=False)["code"] == "unknown_op"
    assert adapter.call("ledger.resolve", {}, ok=False)["code"] == "invalid_params"
    assert adapter.call("store.open", {"workspace": "relative/path"}, ok=False)["code"] == "invalid_params"
    assert adapter.call("faults.arm", {"failpoint": "P99"}, ok=False)["code"] == "unknown_failpoint"
    assert adapter.call("faults.arm", {"failpoint": "P3", "hit": 0}, ok=False)["code"] == "invalid_params"
    empty = _workspace(tmp_path, "empty")
    assert adapter.call("store.open", {"workspace": empty, "readOnly": True}, ok=False)["code"] == "store_not_found"
    assert os.listdir(empty) == []
    bad = adapter.call("runtime.run_turn", {"workspace": empty, "script": {"steps": []}}, ok=False)
    assert bad["code"] == "invalid_params"
    # The spec's exact message comes back for the three failing ledger operations.
    error = adapter.call("ledger.encode", {"eventJson": "{}"}, ok=False)
    assert error == {"code": "invalid_runtime_event", "message": "Invalid RuntimeEvent schema",
                     "details": error.get("details")}
    # Lines that are not requests are answered with id null and never crash the process.
    assert adapter.proc.stdin is not None
    for line in (b"not json\n", b"[1,2]\n", b'{"id": -1, "op": "hello", "params": {}}\n', b"\xff\xfe\n"):
        adapter.proc.stdin.write(line)
        adapter.proc.stdin.flush()
        response = adapter.read()
        assert response["id"] is None and response["error"]["code"] == "invalid_params"
        assert not validate_response("hello", response)
    # An object without any field is an ordinary event to the lane rules (as upstream's
    # validateToolLedgerEventLane answers); a non-object is outside the domain: a conflict.
    assert adapter.call("ledger.lane", {"event": {}})["lane"] == "ordinary"
    assert adapter.call("ledger.lane", {"event": 7})["lane"] == "conflict"
    assert adapter.close() == 0


def test_every_ledger_operation_once(adapter: Adapter) -> None:
    adapter.hello()
    events = [user_event(), fam.w_call(), fam.w_dispatch()]
    assert adapter.call("ledger.args_hash", {"toolName": "Write", "argsJson": '{"path":"notes.txt","content":"after"}'}) == {"hash": WRITE_HASH}
    assert adapter.call("ledger.encode", {"event": events[0]})["canonicalJson"].startswith("{")
    assert adapter.call("ledger.decode", {"eventJson": json.dumps(events[0])})["event"]["id"] == "user-event-1"
    assert adapter.call("ledger.predicates", {"event": events[0]}) == {"terminal": False, "modelVisible": True}
    assert adapter.call("ledger.lane", {"event": events[1]}) == {"lane": "function_call"}
    assert adapter.call("ledger.generic_append", {"event": events[2]})["ok"] is False
    assert adapter.call("ledger.scan", {"events": events})["hasCorruption"] is False
    assert adapter.call("ledger.validate_transition", {"existing": [], "candidates": events[:1], "kind": "generic_append"}) == {"ok": True}
    assert adapter.call("ledger.validate_transition", {"existing": [], "candidates": [], "kind": "nope"}, ok=False)["code"] == "invalid_params"
    assert adapter.call("ledger.interpret", {"events": events})["kind"] in ("valid", "absent", "corruption")
    resolution = adapter.call("ledger.resolve", {"events": events})
    assert resolution["decisions"][0]["status"] == "indeterminate"
    assert adapter.call("ledger.code_mode_commits", {"events": events, "now": 5, "toolMode": "default"}) == {"commits": []}
    assert adapter.call("ledger.plan", {"events": events})["disposition"] == "blocked"
    assert len(adapter.call("ledger.failpoint_catalog", {})["failpoints"]) == 12
    assert adapter.call("ledger.segment_replay", {"events": events[:1]})["blocked"] is False
    assert adapter.call("ledger.composite_replay", {"segments": [{"events": events[:1]}]}) is not None
    digest = adapter.call("ledger.prefix_digest", {"events": events, "highWater": 3})
    assert digest["ok"] is True and digest["eventIds"] == ["user-event-1", "call-event-1", "dispatch-event-1"]
    # highWater cuts the run to event_seq <= H, as upstream's store read does (spec 30 §4)
    cut = adapter.call("ledger.prefix_digest", {"events": events, "highWater": 2})
    assert cut["ok"] is True and cut["highWater"] == 2 and cut["eventIds"] == ["user-event-1", "call-event-1"]
    assert cut["digest"] == adapter.call("ledger.prefix_digest", {"events": events[:2]})["digest"] != digest["digest"]
    assert adapter.call("ledger.prefix_digest", {"events": events, "highWater": 4}) == {"ok": False, "code": "prefix_high_water_unavailable"}
    assert adapter.call("ledger.prefix_digest", {"events": events, "highWater": 0}) == {"ok": False, "code": "prefix_high_water_invalid"}
    assert adapter.call("ledger.prefix_digest", {"events": []}) == {"ok": False, "code": "prefix_empty"}
    bundle = {"identity": {"operationId": "operation-1"}, "callEvent": events[1], "dispatchEvent": events[2],
              "reconcileEvent": fam.w_reconcile(), "decisionEvent": fam.w_decision_parked("reconcile_diverged")}
    assert adapter.call("ledger.validate_bundle", bundle, ok=False)["code"] == "invalid_params"
    assert adapter.close() == 0


def test_every_golden_vector_through_one_adapter(adapter: Adapter) -> None:
    adapter.hello()
    from conformance.vectors import FAILING_OPERATIONS, PROTOCOL_OPERATIONS

    vectors = list(iter_vectors())
    assert len([v for v in vectors if PROTOCOL_OPERATIONS[v.operation].startswith("ledger.")]) == 371
    assert {PROTOCOL_OPERATIONS[v.operation].split(".")[0] for v in vectors} == {"ledger", "reconcile", "checkpoint"}

    def run(operation: str, input_: Mapping[str, Any]) -> Any:
        response = adapter.call(PROTOCOL_OPERATIONS[operation], input_, ok=None)
        if response is None:
            pytest.fail("no response")
        if "code" not in response or "message" not in response or operation not in FAILING_OPERATIONS:
            return response
        failure = {"message": response["message"], "code": response["code"]}
        if "detail" in (response.get("details") or {}):
            failure["detail"] = response["details"]["detail"]
        return {"error": failure}

    failures = {}
    for vector in vectors:
        mismatches = check_vector(vector, run)
        if mismatches:
            failures[vector.id] = mismatches
    assert not failures, json.dumps(failures, indent=1)[:4000]
    assert adapter.close() == 0


# --------------------------------------------------------------------------- store


def _header(run_id: str = "run-1") -> dict[str, Any]:
    return {"runId": run_id, "sessionId": "session-1", "turnId": "turn-1", "status": "running", "backendKind": "fake",
            "llmConnectionSlug": "fake", "modelId": "fake-model", "cwd": "/workspace", "permissionMode": "ask",
            "createdAt": 1, "updatedAt": 2}


def _t1(call: Any = None, dispatch: Any = None) -> dict[str, Any]:
    return {"operationId": "operation-1", "journalEventId": "operation-1_prepared",
            "callEvent": call or fam.w_call(), "dispatchEvent": dispatch or fam.w_dispatch(),
            "providerToolCallId": "provider-call-1", "toolName": "Write", "canonicalArgsHash": WRITE_HASH,
            "recoveryMode": "reconcile", "committedAt": 10}


def test_store_round_trip(adapter: Adapter, tmp_path: Path) -> None:
    adapter.hello()
    ws = _workspace(tmp_path)
    opened = adapter.call("store.open", {"workspace": ws})
    assert "runtime.sqlite" in opened["ledgerFiles"] and opened["schemaVersion"] == 12
    assert adapter.call("store.create_run", {"workspace": ws, "header": _header()})["header"]["runId"] == "run-1"
    assert adapter.call("store.create_run", {"workspace": ws, "header": _header()}, ok=False)["code"] == "run_already_exists"
    patched = adapter.call("store.update_run", {"workspace": ws, "sessionId": "session-1", "runId": "run-1",
                                                "patch": {"updatedAt": 3}})
    assert patched["header"]["updatedAt"] == 3
    assert adapter.call("store.append", {"workspace": ws, "event": user_event()}) == {"created": True, "eventSeq": 1}
    assert adapter.call("store.append", {"workspace": ws, "event": user_event()})["created"] is False
    assert adapter.call("store.append", {"workspace": ws, "event": fam.w_dispatch()}, ok=False)["code"] == "reserved_tool_boundary_fact"
    ws_ = {"workspace": ws}
    assert adapter.call("store.commit_tool_prepared", {**ws_, **_t1()}) == {"created": True, "runtimeEventSeq": 3}
    assert adapter.call("store.commit_tool_prepared", {**ws_, **_t1()}) == {"created": False, "runtimeEventSeq": 3}
    # A conflicting retry (fresh event ids for the same provider call) is the spec's code (spec 30 §2.8).
    call, dispatch = dict(fam.w_call(), id="call-event-2"), dict(fam.w_dispatch(), id="dispatch-event-2")
    assert adapter.call("store.commit_tool_prepared", {**ws_, **_t1(call, dispatch)}, ok=False)["code"] == "duplicate_call"
    assert adapter.call("store.commit_tool_prepared", {**ws_, "operationId": "operation-1"}, ok=False)["code"] == "invalid_params"
    t2 = {**ws_, "operationId": "operation-1", "journalEventId": "operation-1_outcome", "responseEvent": fam.w_outcome(),
          "committedAt": 20}
    assert adapter.call("store.commit_tool_outcome", t2) == {"created": True, "runtimeEventSeq": 4}
    assert adapter.call("store.commit_tool_outcome", t2)["created"] is False
    events = adapter.call("store.read_events", {**ws_, "sessionId": "session-1", "runId": "run-1"})["events"]
    assert [e["id"] for e in events] == ["user-event-1", "call-event-1", "dispatch-event-1", fam.w_outcome()["id"]]

    files = adapter.call("store.open", {"workspace": ws})["ledgerFiles"]
    assert files == ["runtime.sqlite", "runtime.sqlite-wal"]
    before = _digests(ws, files)
    projection = adapter.call("store.project", ws_)
    adapter.call("store.read_events", {**ws_, "sessionId": "session-1", "runId": "run-1"})
    adapter.call("ledger.resolve", {"events": events})
    assert _digests(ws, files) == before
    assert projection["storage"] == "sqlite" and projection["health"] == {"status": "healthy"}
    (run,) = projection["runs"]
    assert run["header"]["updatedAt"] == 3 and [e["id"] for e in run["events"]] == [e["id"] for e in events]
    assert run["toolOperations"][0]["currentState"] == "outcome_committed"
    assert [j["state"] for j in run["toolJournalEvents"]] == ["prepared", "outcome_committed"]
    assert run["resolution"]["decisions"][0]["status"] == "completed"
    assert projection["unsettledOperations"] == []
    assert adapter.call("store.rebuild_projections", ws_) == {"operations": 1, "journalEvents": 2}
    assert adapter.call("store.close", ws_) == {}
    # Read-only open of an existing store works and refuses writes.
    assert adapter.call("store.open", {**ws_, "readOnly": True})["ledgerFiles"][0] == "runtime.sqlite"
    assert adapter.call("store.append", {**ws_, "event": user_event("user-event-2")}, ok=False)["code"] == "read_only"
    assert adapter.close() == 0


def test_store_recovery_bundle(adapter: Adapter, tmp_path: Path) -> None:
    adapter.hello()
    ws = {"workspace": _workspace(tmp_path)}
    adapter.call("store.append", {**ws, "event": user_event()})
    adapter.call("store.commit_tool_prepared", {**ws, **_t1()})
    assert adapter.call("store.project", ws)["unsettledOperations"] == ["operation-1"]
    bundle = {**ws, "operationId": "operation-1", "reconcileEvent": fam.w_reconcile(),
              "decisionEvent": fam.w_decision_completed(), "outcomeEvent": fam.w_outcome()}
    assert adapter.call("store.commit_recovery_bundle", bundle) == {}
    assert adapter.call("store.commit_recovery_bundle", bundle) == {}  # an exact retry is a no-op
    parked = {**ws, "operationId": "operation-1", "reconcileEvent": fam.w_reconcile("diverged"),
              "decisionEvent": fam.w_decision_parked("reconcile_diverged")}
    assert adapter.call("store.commit_recovery_bundle", parked, ok=False)["code"]
    projection = adapter.call("store.project", ws)
    assert projection["unsettledOperations"] == []
    assert projection["runs"][0]["toolOperations"][0]["currentState"] == "recovery_completed"
    assert adapter.close() == 0


# --------------------------------------------------------------------------- runtime and faults

SCRIPT = {"userMessage": "write the notes", "protocol": "t1_after_preflight_v1", "steps": [
    {"toolCalls": [{"id": "call-1", "name": "Write", "args": {"path": "notes.txt", "content": "after"}}]},
    {"text": "done"},
]}


def test_run_turn_repair_resume(adapter: Adapter, tmp_path: Path) -> None:
    adapter.hello()
    ws = {"workspace": _workspace(tmp_path)}
    summary = adapter.call("runtime.run_turn", {**ws, "script": SCRIPT})
    assert summary["status"] == "completed"
    assert [(c["toolName"], c["status"]) for c in summary["toolCalls"]] == [("Write", "ok")]
    assert (Path(ws["workspace"]) / "notes.txt").read_text() == "after"
    assert (Path(ws["workspace"]) / ".maka" / "scripts" / f"{summary['runId']}.json").is_file()
    effects = (Path(ws["workspace"]) / ".maka-effects.jsonl").read_text().splitlines()
    assert len(effects) == 1
    assert adapter.call("runtime.repair", ws)["repairs"] == []
    resumed = adapter.call("runtime.resume", ws)
    assert resumed["parked"] is True and resumed["rejectionReasons"]
    projection = adapter.call("store.project", ws)
    assert projection["runs"][0]["header"]["status"] == "completed"
    assert adapter.close() == 0


def test_kill_at_p7_then_repair_and_resume_in_a_new_process(tmp_path: Path) -> None:
    ws = {"workspace": _workspace(tmp_path)}
    first = Adapter(tmp_path)
    first.hello()
    assert first.call("faults.arm", {"failpoint": "P7"}) == {"armed": "P7"}
    first.send("runtime.run_turn", {**ws, "script": SCRIPT})
    assert first.read() == {"failpoint": "P7"}
    assert first.kill() == -signal.SIGKILL

    second = Adapter(tmp_path)
    try:
        second.hello()
        repairs = second.call("runtime.repair", ws)["repairs"]
        assert len(repairs) == 1 and repairs[0]["action"]
        resumed = second.call("runtime.resume", ws)
        assert resumed["parked"] is False and resumed["status"] == "completed" and resumed["targetRunId"]
        effects = (Path(ws["workspace"]) / ".maka-effects.jsonl").read_text().splitlines()
        assert len(effects) == 1  # the completed Write never runs twice
        assert second.close() == 0
    finally:
        if second.proc.poll() is None:
            second.kill()


def test_armed_failpoint_is_announced_then_blocks(adapter: Adapter, tmp_path: Path) -> None:
    adapter.hello()
    ws = {"workspace": _workspace(tmp_path)}
    assert adapter.call("faults.arm", {"failpoint": "P3", "hit": 1}) == {"armed": "P3"}
    adapter.send("runtime.run_turn", {**ws, "script": SCRIPT})
    announcement = adapter.read()
    assert announcement == {"failpoint": "P3"} and validate_announcement(announcement) == []
    time.sleep(0.5)
    assert adapter.proc.poll() is None  # blocked, not exited
    assert adapter.lines.empty()  # nothing after the announcement
    assert adapter.kill() == -signal.SIGKILL
    assert "MAKA_FAILPOINT P3" in adapter.stderr_path.read_text()


def test_store_hook_inside_t1_is_announced(adapter: Adapter, tmp_path: Path) -> None:
    adapter.hello()
    ws = {"workspace": _workspace(tmp_path)}
    adapter.call("store.append", {**ws, "event": user_event()})
    adapter.call("faults.arm", {"failpoint": "after_runtime_event_insert"})
    adapter.send("store.commit_tool_prepared", {**ws, **_t1()})
    assert adapter.read() == {"failpoint": "after_runtime_event_insert"}
    assert adapter.kill() == -signal.SIGKILL
    reopened = Adapter(tmp_path)
    try:
        reopened.hello()
        projection = reopened.call("store.project", ws)
        assert [e["id"] for e in projection["runs"][0]["events"]] == ["user-event-1"]  # T1 rolled back whole
        assert reopened.close() == 0
    finally:
        if reopened.proc.poll() is None:
            reopened.kill()


def test_claim_option_restricts_capabilities(tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "maka_ref.adapter", "--claim", "ledger.codec"], cwd=tmp_path, timeout=TIMEOUT,
        input=_encode({"id": 0, "op": "hello", "params": {"protocol": 1}})
        + _encode({"id": 1, "op": "ledger.resolve", "params": {"events": []}})
        + _encode({"id": 2, "op": "ledger.lane", "params": {"event": {}}}),
        capture_output=True,
    )
    assert proc.returncode == 0
    hello, resolve, lane = (parse_json_text(line) for line in proc.stdout.decode().splitlines())
    assert hello["result"]["capabilities"] == ["ledger.codec"] and "failpoints" not in hello["result"]
    assert resolve["error"]["code"] == "not_claimed" and not validate_response("ledger.resolve", resolve)
    assert lane["error"]["code"] == "not_claimed"
