"""Shared helpers for the live-runtime tests (``tests/test_runtime_*.py``); not a test module.

Expected values here are written from the specs, not computed by the code under test: the
operation id follows spec 30 §0.3 with its own ``hashlib`` implementation, and events are
labelled by their shape (spec 10 §1.6), not by the runtime's builders.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
from pathlib import Path
from typing import Any, Mapping

T1 = "t1_after_preflight_v1"
LEGACY = "legacy"
PROTOCOLS = (T1, LEGACY)

#: The crash scripts' one Write call (the spec 30 §0.3 golden arguments).
WRITE_ARGS = {"path": "notes.txt", "content": "after"}
WRITE_HASH = "sha256:763712445cbfb7feebe3bd4ba14e29425f05e40b8cd14aef0896853dca24b4d9"
ONE_WRITE_STEPS: list[dict[str, Any]] = [
    {"toolCalls": [{"id": "call-1", "name": "Write", "args": dict(WRITE_ARGS)}]},
    {"text": "done"},
]


def script(protocol: str = T1, steps: list[dict[str, Any]] | None = None, user: str = "write the notes") -> dict[str, Any]:
    return {"userMessage": user, "protocol": protocol, "steps": steps if steps is not None else ONE_WRITE_STEPS}


def write_script(directory: Path, value: Mapping[str, Any], name: str = "script.json") -> Path:
    path = Path(directory) / name
    path.write_text(json.dumps(value), encoding="utf-8")
    return path


def spec_operation_id(invocation_id: str, call_id: str) -> str:
    """Spec 30 §0.3, independently: sha256 of the JSON array text, first 32 hex."""
    text = json.dumps([invocation_id, call_id], ensure_ascii=False, separators=(",", ":"))
    return "toolop_" + hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]


def label(event: Mapping[str, Any]) -> str:
    """user | call | dispatch | response | text | terminal | other, from the event's shape."""
    content = event.get("content") or {}
    actions = event.get("actions") or {}
    if event.get("status") in ("completed", "failed", "aborted", "cancelled") or actions.get("endInvocation") is True:
        return "terminal"
    if "toolDispatch" in actions:
        return "dispatch"
    kind = content.get("kind")
    if kind == "function_call":
        return "call"
    if kind == "function_response":
        return "response"
    if event.get("role") == "user" and kind == "text":
        return "user"
    if event.get("role") == "model" and kind == "text":
        return "text"
    return "other"


def labels(events: list[Mapping[str, Any]]) -> list[str]:
    return [label(event) for event in events]


def only_run(root: Path) -> tuple[str, str, dict[str, Any]]:
    """(sessionId, runId, header) of the single run stored in ``root`` (raw read-only SQL)."""
    conn = sqlite3.connect(f"file:{Path(root) / 'runtime.sqlite'}?mode=ro", uri=True)
    try:
        rows = conn.execute("SELECT session_id, run_id, header_json FROM agent_runs").fetchall()
    finally:
        conn.close()
    assert len(rows) == 1, rows
    session_id, run_id, header_json = rows[0]
    return session_id, run_id, json.loads(header_json)


def effect_lines(root: Path) -> list[dict[str, Any]]:
    path = Path(root) / ".maka-effects.jsonl"
    if not path.exists():
        return []
    text = path.read_text(encoding="ascii")
    assert text == "" or text.endswith("\n"), "torn effect log"
    return [json.loads(line) for line in text.splitlines()]
