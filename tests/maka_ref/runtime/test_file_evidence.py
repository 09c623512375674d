"""The reference tools record Phase 3 evidence with T1 and keep its promise (spec-phase3 §1.1,
§1.4, §1.5, §1.7). Expected digests are computed here with ``hashlib``; nothing expected is
taken from the code under test."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Any

import pytest

from maka_ref._reconcile import FileEvidence
from maka_ref._runtime import run_turn
from maka_ref._runtime.file_evidence import build_evidence
from maka_ref._runtime.tools import TOOLS, ToolContext, ToolError
from maka_ref._store.runtime_store import RuntimeStore
from tests.maka_ref.runtime.support import LEGACY, T1, script

SEED = "phase3evidence"
IDENTITY = {
    "operationId": "op-1", "sessionId": "s", "invocationId": "i", "runId": "r", "turnId": "t",
    "providerToolCallId": "c", "callEventId": "op-1_call", "dispatchEventId": "op-1_dispatch",
    "canonicalArgsHash": "sha256:" + "0" * 64,
}
WS_ID = "workspace:v1:123e4567-e89b-42d3-a456-426614174000"


def sha(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


def call(n: int, name: str, **args: str) -> dict[str, Any]:
    return {"toolCalls": [{"id": f"call-{n}", "name": name, "args": dict(args)}]}


def run(ws: Path, steps: list[dict[str, Any]], protocol: str = T1) -> Any:
    return run_turn(ws, script(protocol, [*steps, {"text": "done"}]), seed=SEED)


def evidence_and_modes(ws: Path, summary: Any) -> list[tuple[str, str, Any]]:
    """(tool, dispatch recoveryMode, evidence or None) per tool call, in order."""
    out = []
    with RuntimeStore.open_read_only(ws) as store:
        for outcome in summary.tool_calls:
            operation = store.read_tool_operation(outcome.operation_id)
            mode = None if operation is None else operation.recovery_mode
            out.append((outcome.name, mode, store.read_tool_evidence(outcome.operation_id)))
    return out


def test_write_edit_append_record_before_and_expected_after(tmp_path: Path) -> None:
    ws = tmp_path
    (ws / "config.json").write_bytes(b'{"port": 8080}\n')
    os.chmod(ws / "config.json", 0o640)
    summary = run(ws, [
        call(1, "Edit", path="config.json", old="8080", new="9090"),
        call(2, "Write", path="./notes.txt", content="héllo"),
        call(3, "Append", path="notes.txt", content="!"),
        call(4, "Read", path="notes.txt"),
    ])
    assert summary.status == "completed"
    got = evidence_and_modes(ws, summary)
    assert [(name, mode) for name, mode, _ in got] == [
        ("Edit", "reconcile"), ("Write", "reconcile"), ("Append", "reconcile"), ("Read", "replay_safe")
    ]
    edit, write, append = (record for _, _, record in got[:3])
    assert got[3][2] is None
    assert isinstance(edit, FileEvidence)
    assert edit.target_path == "config.json" and edit.transform == "edit_replace_unique_v1"
    assert edit.before.to_json() == {"type": "regular", "size": 15, "contentDigest": sha(b'{"port": 8080}\n'), "mode": 0o640}
    assert edit.expected_after.to_json() == {"type": "regular", "size": 15, "contentDigest": sha(b'{"port": 9090}\n')}
    assert edit.to_json()["result"] == {"path": "config.json", "replacements": 1}
    assert edit.workspace_identity == summary.workspace_identity
    assert write.before.to_json() == {"type": "absent"}
    assert write.expected_after.to_json() == {"type": "regular", "size": 6, "contentDigest": sha("héllo".encode())}
    assert write.to_json()["result"] == {"path": "notes.txt", "bytesWritten": 6}
    assert append.expected_after.to_json() == {"type": "regular", "size": 7, "contentDigest": sha("héllo!".encode())}
    assert (ws / "notes.txt").read_bytes() == "héllo!".encode()  # the effects kept the promise
    for outcome, (_, _, record) in zip(summary.tool_calls, got):
        if record is not None:  # the production result equals the promised one
            assert outcome.to_json()["result"] == record.to_json()["result"]


def test_calls_that_would_fail_get_no_evidence_and_keep_their_mode(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("x x\n")
    summary = run(tmp_path, [
        call(1, "Edit", path="a.txt", old="x", new="y"),  # ambiguous: the tool fails
        call(2, "Edit", path="missing.txt", old="x", new="y"),
        call(3, "Write", path="new/dir/f.txt", content="z"),  # a directory to create: no evidence (choice)
    ])
    got = evidence_and_modes(tmp_path, summary)
    assert got == [("Edit", "never_auto_retry", None), ("Edit", "never_auto_retry", None), ("Write", "reconcile", None)]
    assert (tmp_path / "new/dir/f.txt").read_text() == "z"


def test_a_symlinked_target_is_recorded_resolved(tmp_path: Path) -> None:
    (tmp_path / "real").mkdir()
    (tmp_path / "real" / "f.txt").write_text("old")
    (tmp_path / "link").symlink_to("real")
    summary = run(tmp_path, [call(1, "Write", path="link/f.txt", content="new")])
    [(_, _, record)] = evidence_and_modes(tmp_path, summary)
    assert record.target_path == "real/f.txt"  # spec-phase3 §1.5: no symlink in the canonical target


def test_legacy_runs_record_nothing(tmp_path: Path) -> None:
    summary = run(tmp_path, [call(1, "Write", path="n.txt", content="a")], protocol=LEGACY)
    with RuntimeStore.open_read_only(tmp_path) as store:
        assert store.read_tool_evidence(summary.tool_calls[0].operation_id) is None


@pytest.mark.parametrize("tool", ["Write", "Edit", "Append"])
def test_the_effect_refuses_a_target_changed_since_the_evidence(tmp_path: Path, tool: str) -> None:
    (tmp_path / "f.txt").write_bytes(b"port=1\n")
    args = {"path": "f.txt", "content": "z"} if tool != "Edit" else {"path": "f.txt", "old": "1", "new": "2"}
    evidence = build_evidence(str(tmp_path), tool, args, identity=IDENTITY, workspace_identity=WS_ID)
    assert evidence is not None
    (tmp_path / "f.txt").write_bytes(b"port=1\nouter\n")  # an outside write between T1 and the effect
    with pytest.raises(ToolError) as caught:
        TOOLS[tool].run(ToolContext(tmp_path, "op-1", evidence), args)
    assert caught.value.code == "evidence_target_changed"
    assert (tmp_path / "f.txt").read_bytes() == b"port=1\nouter\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["f.txt"]  # no temporary file either


def test_the_effect_refuses_a_path_that_resolves_elsewhere_now(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    (tmp_path / "a" / "f.txt").write_bytes(b"same")
    (tmp_path / "b" / "f.txt").write_bytes(b"same")
    (tmp_path / "d").symlink_to("a")
    args = {"path": "d/f.txt", "content": "z"}
    evidence = build_evidence(str(tmp_path), "Write", args, identity=IDENTITY, workspace_identity=WS_ID)
    assert evidence is not None and evidence.target_path == "a/f.txt"
    (tmp_path / "d").unlink()
    (tmp_path / "d").symlink_to("b")  # same bytes, other file
    with pytest.raises(ToolError) as caught:
        TOOLS["Write"].run(ToolContext(tmp_path, "op-1", evidence), args)
    assert caught.value.code == "evidence_target_changed"
    assert (tmp_path / "a" / "f.txt").read_bytes() == b"same" == (tmp_path / "b" / "f.txt").read_bytes()


def test_building_evidence_never_writes(tmp_path: Path) -> None:
    (tmp_path / "f.txt").write_bytes(b"abc")
    before = {p.name: (p.stat().st_mtime_ns, p.read_bytes()) for p in tmp_path.iterdir()}
    for tool, args in (("Write", {"path": "x/y.txt", "content": "1"}), ("Append", {"path": "f.txt", "content": "d"})):
        build_evidence(str(tmp_path), tool, args, identity=IDENTITY, workspace_identity=WS_ID)
    assert {p.name: (p.stat().st_mtime_ns, p.read_bytes()) for p in tmp_path.iterdir()} == before
