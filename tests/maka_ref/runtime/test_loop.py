"""The live tool loop (issue 4 item 3, spec 00 "Normal tool execution", spec 30 §6.5 and §9
items 119–123, 128–130, 135–137, spec 20 §4.1): both protocols, preflight refusals, T1 and
T2 failures, terminal event before terminal header, the ``run`` command."""

from __future__ import annotations

import io
import json
import os
from pathlib import Path
from typing import Any

import pytest

from maka_ref._cli.main import run as cli_run
from maka_ref._ledger.resolver import resolve_recovery
from maka_ref._runtime import ScriptedProvider, load_script, run_turn
from maka_ref._runtime.tools import TOOLS, Tool, ToolContext
from maka_ref._store.agent_runs.store import AgentRunStore
from maka_ref._store.engine.failpoints import arm, disarm
from maka_ref._store.records import CommitResult
from maka_ref._store.runtime_store import RuntimeStore

from tests.maka_ref.runtime.support import (
    LEGACY,
    ONE_WRITE_STEPS,
    T1,
    WRITE_HASH,
    effect_lines,
    labels,
    script,
    spec_operation_id,
    write_script,
)

SEED = "0123456789abcdef0123456789abcdef"


@pytest.fixture(autouse=True)
def _disarmed() -> Any:
    disarm()
    yield
    disarm()


@pytest.fixture()
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    return Path(os.path.realpath(root))


class _Clock:
    """A fixed, strictly increasing clock so that ids *and* payloads are reproducible."""

    def __init__(self) -> None:
        self.now = 1_700_000_000_000

    def __call__(self) -> int:
        self.now += 1
        return self.now


def _events(ws: Path, session_id: str, run_id: str) -> list[Any]:
    with RuntimeStore.open_read_only(ws) as store:
        return store.read_run_events(session_id, run_id)


def _header(ws: Path, session_id: str, run_id: str) -> Any:
    with AgentRunStore.open_read_only(ws) as runs:
        return runs.read_run(session_id, run_id), runs.read_events(session_id, run_id)


# --------------------------------------------------------------------------- happy paths


def test_happy_path_t1(ws: Path) -> None:
    """§9 items 123, 135: [call, dispatch, response], shared operation id, dispatch protocol,
    no content on the dispatch, marker on the user event only, journal [prepared, outcome]."""
    summary = run_turn(ws, script(T1), seed=SEED)
    assert (summary.status, summary.header_status, summary.final_text) == ("completed", "completed", "done")
    invocation = f"invocation_{SEED}"
    op = spec_operation_id(invocation, "call-1")
    events = _events(ws, f"session_{SEED}", f"run_{SEED}")
    assert labels(events) == ["user", "call", "dispatch", "response", "text", "terminal"]
    assert [e["id"] for e in events] == [
        f"run_{SEED}_user", f"{op}_call", f"{op}_dispatch", f"{op}_response", f"run_{SEED}_step1_text",
        f"run_{SEED}_terminal",
    ]
    user, call, dispatch, response, text, terminal = events
    assert user["actions"] == {"runtimeProtocol": {"toolBoundary": T1}}
    assert all("runtimeProtocol" not in (e.get("actions") or {}) for e in events[1:])
    assert call["refs"] == {"operationId": op, "toolCallId": "call-1", "stepId": f"run_{SEED}_step0"}
    assert (call["role"], call["author"], call["origin"]) == ("model", "agent", "provider")
    assert dispatch["actions"] == {"toolDispatch": {
        "protocol": T1, "operationId": op, "providerToolCallId": "call-1", "toolName": "Write",
        "canonicalArgsHash": WRITE_HASH, "recoveryMode": "reconcile"}}
    assert "content" not in dispatch and dispatch["refs"] == {"operationId": op, "toolCallId": "call-1"}
    assert dispatch["ts"] == call["ts"]
    assert response["refs"] == {"operationId": op, "toolCallId": "call-1"}
    assert response["content"] == {"kind": "function_response", "id": "call-1", "name": "Write",
                                   "result": {"path": "notes.txt", "bytesWritten": 5}}
    assert text["refs"] == {"stepId": f"run_{SEED}_step1"}
    assert terminal["status"] == "completed" and terminal["actions"] == {"endInvocation": True, "stateDelta": {}}
    resolution = resolve_recovery(events)
    assert resolution.tool_boundary_protocol == T1 and not resolution.has_corruption
    assert [(d.status, d.settlement_origin, d.operation_id) for d in resolution.decisions] == [("completed", "normal_t2", op)]
    with RuntimeStore.open_read_only(ws) as store:
        assert [r.state for r in store.read_tool_journal(op)] == ["prepared", "outcome_committed"]
        assert store.read_tool_operation(op).current_state == "outcome_committed"
    header, op_events = _header(ws, f"session_{SEED}", f"run_{SEED}")
    assert header["status"] == "completed" and header["completedAt"] == terminal["ts"]
    assert header["invocationId"] == invocation and header["workspaceIdentity"].startswith("workspace:v1:")
    assert [e["type"] for e in op_events] == ["run_completed"]
    assert (ws / "notes.txt").read_text() == "after"
    assert effect_lines(ws) == [{"operationId": op, "tool": "Write", "argsHash": WRITE_HASH, "pid": os.getpid()}]
    as_json = summary.to_json()
    assert as_json["toolCalls"][0]["operationId"] == op and as_json["eventCount"] == 6
    assert as_json["toolCalls"][0]["boundary"] == "t1_t2"


def test_happy_path_legacy(ws: Path) -> None:
    summary = run_turn(ws, script(LEGACY), seed=SEED)
    assert summary.status == "completed"
    events = _events(ws, f"session_{SEED}", f"run_{SEED}")
    assert labels(events) == ["user", "call", "response", "text", "terminal"]
    assert "actions" not in events[0]  # no marker
    assert all("toolDispatch" not in (e.get("actions") or {}) for e in events)
    op = spec_operation_id(f"invocation_{SEED}", "call-1")
    assert events[1]["refs"] == {"toolCallId": "call-1", "stepId": f"run_{SEED}_step0"}  # unbound
    assert events[2]["refs"] == {"toolCallId": "call-1"}
    resolution = resolve_recovery(events)
    assert resolution.tool_boundary_protocol is None and not resolution.has_corruption
    assert [(d.status, d.reason) for d in resolution.decisions] == [("completed", "matching_response")]
    with RuntimeStore.open_read_only(ws) as store:
        assert store.read_tool_operation(op) is None  # no durable operation in legacy
    assert (ws / "notes.txt").read_text() == "after"
    assert [line["operationId"] for line in effect_lines(ws)] == [op]


def test_ids_and_payloads_are_deterministic_per_seed(tmp_path: Path) -> None:
    """Same seed + same clock → byte-identical ledgers in two workspaces (§9 item 137)."""
    ledgers = []
    for name in ("a", "b"):
        root = tmp_path / name
        root.mkdir()
        run_turn(root, script(T1), seed=SEED, clock=_Clock())
        ledgers.append([dict(e) for e in _events(root, f"session_{SEED}", f"run_{SEED}")])
    assert ledgers[0] == ledgers[1]


def test_sequence_t1_impl_t2_published(ws: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """§6.5 / §9 item 123: observed order t1, impl, t2, published-result."""
    order: list[str] = []
    real_t1, real_t2 = RuntimeStore.commit_tool_prepared, RuntimeStore.commit_tool_outcome

    def t1(self: RuntimeStore, data: Any) -> Any:
        order.append("t1")
        return real_t1(self, data)

    def t2(self: RuntimeStore, data: Any) -> Any:
        order.append("t2")
        return real_t2(self, data)

    class Recording(Tool):
        name = "Write"
        recovery_mode = "reconcile"
        args_schema = TOOLS["Write"].args_schema

        def run(self, ctx: ToolContext, args: Any) -> Any:
            order.append("impl")
            return TOOLS["Write"].run(ctx, args)

    class Provider(ScriptedProvider):
        def next_step(self, history: Any) -> Any:
            if any(e.get("content", {}).get("kind") == "function_response" for e in history):
                order.append("published-result")
            return super().next_step(history)

    monkeypatch.setattr(RuntimeStore, "commit_tool_prepared", t1)
    monkeypatch.setattr(RuntimeStore, "commit_tool_outcome", t2)
    loaded = load_script(script(T1))
    run_turn(ws, loaded, provider=Provider(loaded), tools={"Write": Recording()})
    assert order == ["t1", "impl", "t2", "published-result"]


# --------------------------------------------------------------------------- preflight refusals


@pytest.mark.parametrize("protocol", [T1, LEGACY])
@pytest.mark.parametrize(
    ("name", "args", "code"),
    [
        ("Shell", {"command": "rm -rf /"}, "tool_not_available"),
        ("Write", ["notes.txt", "x"], "invalid_tool_arguments"),
        ("Write", {"path": "notes.txt"}, "invalid_tool_arguments"),
        ("Write", {"path": "../escape.txt", "content": "x"}, "path_parent_reference"),
        ("Write", {"path": "/tmp/abs.txt", "content": "x"}, "path_absolute"),
        ("Write", {"path": "link/x.txt", "content": "x"}, "path_symlink_escape"),
        ("Append", {"path": "runtime.sqlite", "content": "x"}, "path_reserved"),
    ],
)
def test_preflight_refusal_is_a_pre_t1_synthetic_error_result(
    ws: Path, tmp_path: Path, protocol: str, name: str, args: Any, code: str
) -> None:
    """§6.5, §9 items 132–134: unbound call + synthetic isError response on the generic lane,
    no dispatch, the implementation never starts; the provider sees the committed error."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (ws / "link").symlink_to(outside)
    loaded = load_script(script(protocol, [{"toolCalls": [{"id": "c1", "name": name, "args": args}]}, {"text": "ok"}]))
    provider = ScriptedProvider(loaded, record=True)
    summary = run_turn(ws, loaded, seed=SEED, provider=provider)
    assert summary.status == "completed"
    events = _events(ws, f"session_{SEED}", f"run_{SEED}")
    assert labels(events) == ["user", "call", "response", "text", "terminal"]
    call, response = events[1], events[2]
    assert "operationId" not in call["refs"] and "operationId" not in response["refs"]
    assert response["content"]["isError"] is True and response["content"]["result"]["code"] == code
    assert "did not run" in response["content"]["result"]["message"]
    resolution = resolve_recovery(events)
    assert not resolution.has_corruption
    assert [(d.status, d.settlement_origin, d.response_is_error) for d in resolution.decisions] == [
        ("completed", "pre_t1_synthetic", True)
    ]
    assert effect_lines(ws) == [] and list(outside.iterdir()) == []
    assert summary.tool_calls[0].boundary == "pre_t1_synthetic" and not summary.tool_calls[0].implementation_started
    handed = provider.calls[1]
    assert [e["id"] for e in handed] == [events[0]["id"], call["id"], response["id"]]


def test_tool_error_goes_through_t2(ws: Path) -> None:
    """§9 item 129: an implementation failure is committed as an isError T2 outcome."""
    (ws / "f.txt").write_text("a a")
    steps = [{"toolCalls": [{"id": "c1", "name": "Edit", "args": {"path": "f.txt", "old": "a", "new": "b"}}]},
             {"text": "ok"}]
    summary = run_turn(ws, script(T1, steps), seed=SEED)
    events = _events(ws, f"session_{SEED}", f"run_{SEED}")
    assert labels(events) == ["user", "call", "dispatch", "response", "text", "terminal"]
    assert events[3]["content"]["isError"] is True
    assert events[3]["content"]["result"]["code"] == "edit_target_ambiguous"
    assert [(d.settlement_origin, d.response_is_error) for d in resolve_recovery(events).decisions] == [("normal_t2", True)]
    assert len(effect_lines(ws)) == 1 and summary.tool_calls[0].is_error


# --------------------------------------------------------------------------- T1 / T2 failures


def test_t1_failure_runs_the_implementation_zero_times(ws: Path) -> None:
    """§9 item 119: T1 throws (store failpoint inside T1, ``raise``) → implementation 0 calls,
    no result event; the run ends failed with a terminal event first."""
    loaded = load_script(script(T1))
    provider = ScriptedProvider(loaded, record=True)
    with arm("after_runtime_event_insert", "raise"):
        summary = run_turn(ws, loaded, seed=SEED, provider=provider)
    assert summary.status == "failed" and summary.error["code"] == "t1_failed"
    assert effect_lines(ws) == [] and not (ws / "notes.txt").exists()
    events = _events(ws, f"session_{SEED}", f"run_{SEED}")
    assert labels(events) == ["user", "terminal"]
    assert events[1]["status"] == "failed" and events[1]["actions"]["stateDelta"] == {"failureClass": "t1_failed"}
    assert len(provider.calls) == 1
    header, op_events = _header(ws, f"session_{SEED}", f"run_{SEED}")
    assert (header["status"], header["failureClass"]) == ("failed", "t1_failed")
    assert [e["type"] for e in op_events] == ["run_failed"]


def test_t1_already_claimed_runs_the_implementation_zero_times(ws: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """§9 item 120: T1 returning created:false → "already claimed"; implementation 0 calls."""
    monkeypatch.setattr(RuntimeStore, "commit_tool_prepared", lambda self, data: CommitResult(False, 1))
    summary = run_turn(ws, script(T1), seed=SEED)
    assert summary.error["code"] == "t1_already_claimed" and "already claimed" in summary.error["message"]
    assert effect_lines(ws) == [] and not (ws / "notes.txt").exists()


def test_t2_failure_never_hands_the_result_on(ws: Path) -> None:
    """§9 item 128: T2 throws (2nd hit of the store hook, inside T2) → the implementation ran
    once, but no response exists and the provider never sees one."""
    loaded = load_script(script(T1))
    provider = ScriptedProvider(loaded, record=True)
    with arm("after_runtime_event_insert", "raise", hit=2):
        summary = run_turn(ws, loaded, seed=SEED, provider=provider)
    assert summary.status == "failed" and summary.error["code"] == "t2_failed"
    assert summary.error["operationId"] == spec_operation_id(f"invocation_{SEED}", "call-1")
    assert len(effect_lines(ws)) == 1 and (ws / "notes.txt").read_text() == "after"
    events = _events(ws, f"session_{SEED}", f"run_{SEED}")
    assert labels(events) == ["user", "call", "dispatch", "terminal"]
    assert len(provider.calls) == 1
    assert all(e.get("content", {}).get("kind") != "function_response" for h in provider.calls for e in h)
    assert [(d.status, d.reason) for d in resolve_recovery(events).decisions] == [
        ("indeterminate", "dispatch_without_response")
    ]
    assert summary.tool_calls == ()


def test_script_exhausted_fails_the_run(ws: Path) -> None:
    steps = [{"toolCalls": [{"id": "c1", "name": "Read", "args": {"path": "nope"}}]}]
    summary = run_turn(ws, script(LEGACY, steps), seed=SEED)
    assert summary.status == "failed" and summary.error["code"] == "script_exhausted"
    events = _events(ws, f"session_{SEED}", f"run_{SEED}")
    assert labels(events) == ["user", "call", "response", "terminal"]


# --------------------------------------------------------------------------- terminal order


def test_terminal_event_is_durable_before_the_terminal_header(ws: Path) -> None:
    """Spec 20 §4.1: a failure right after the terminal event (P9) leaves the fact durable
    and the header running; a failure before it (P8) leaves neither."""
    with arm("P9", "raise"):
        summary = run_turn(ws, script(T1), seed=SEED)
    assert summary.status == "completed" and summary.header_status == "running"
    assert summary.finalize_error["code"] == "internal_error"
    assert labels(_events(ws, f"session_{SEED}", f"run_{SEED}"))[-1] == "terminal"

    other = ws.parent / "ws2"
    other.mkdir()
    with arm("P8", "raise"):
        summary = run_turn(other, script(T1), seed=SEED)
    assert summary.status == "failed" and summary.header_status == "running"
    assert labels(_events(other, f"session_{SEED}", f"run_{SEED}"))[-1] == "text"


# --------------------------------------------------------------------------- CLI


def test_cli_run(ws: Path, tmp_path: Path) -> None:
    out, err = io.StringIO(), io.StringIO()
    assert cli_run(["run", "--workspace", str(ws), "--script", str(write_script(tmp_path, script(T1)))],
                   stdout=out, stderr=err) == 0
    document = json.loads(out.getvalue())
    assert document["status"] == "completed" and document["eventCount"] == 6
    assert document["toolCalls"][0]["operationId"].startswith("toolop_")
    assert document["toolCalls"][0]["result"] == {"path": "notes.txt", "bytesWritten": 5}


def test_cli_run_errors(ws: Path, tmp_path: Path) -> None:
    out, err = io.StringIO(), io.StringIO()
    bad = tmp_path / "bad.json"
    bad.write_text('{"userMessage": "u"}')
    assert cli_run(["run", "--workspace", str(ws), "--script", str(bad)], stdout=out, stderr=err) == 2
    assert json.loads(out.getvalue())["error"]["code"] == "invalid_script"
    assert not (ws / "runtime.sqlite").exists()  # nothing written for an invalid script
    out = io.StringIO()
    good = write_script(tmp_path, script(T1))
    assert cli_run(["run", "--workspace", str(tmp_path / "missing"), "--script", str(good)], stdout=out, stderr=err) == 2
    assert json.loads(out.getvalue())["error"]["code"] == "workspace_not_found"
    out = io.StringIO()
    exhausted = write_script(tmp_path, script(T1, ONE_WRITE_STEPS[:1]), "short.json")
    assert cli_run(["run", "--workspace", str(ws), "--script", str(exhausted)], stdout=out, stderr=err) == 1
    assert json.loads(out.getvalue())["error"]["code"] == "script_exhausted"
