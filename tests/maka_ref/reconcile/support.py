"""Shared builders for the Phase 3 core tests (docs/spec-phase3.md).

Records are written by hand as JSON (spec-phase3 §1.2); digests of file contents come from
``hashlib`` here, never from the code under test; T1 events follow spec 10 §1.6's producer
conventions and are decoded by the real RuntimeEvent decoder so they are valid events.
"""

from __future__ import annotations

import copy
import hashlib
from typing import Any

from maka_ref._codec import canonical_args_hash
from maka_ref._events import decode_runtime_event

WORKSPACE_IDENTITY = "workspace:v1:123e4567-e89b-42d3-a456-426614174000"
OPERATION_ID = "op-1"
CALL_ID = "call-1"
IDENTITY = {"sessionId": "sess-1", "invocationId": "inv-1", "runId": "run-1", "turnId": "turn-1"}


def sha(data: bytes) -> str:
    """The content digest of spec-phase3 §1.3, computed independently."""
    return "sha256:" + hashlib.sha256(data).hexdigest()


def regular(data: bytes, mode: int | None = None) -> dict[str, Any]:
    state: dict[str, Any] = {"type": "regular", "size": len(data), "contentDigest": sha(data)}
    if mode is not None:
        state["mode"] = mode
    return state


ABSENT: dict[str, Any] = {"type": "absent"}

TRANSFORMS = {"Write": "write_whole_file_v1", "Edit": "edit_replace_unique_v1", "Append": "append_utf8_v1"}


def args_for(tool: str, path: str = "dir/f.txt", **values: str) -> dict[str, Any]:
    if tool == "Edit":
        return {"path": path, "old": values.get("old", "3000"), "new": values.get("new", "4000")}
    return {"path": path, "content": values.get("content", "hello")}


def evidence(
    tool: str = "Write",
    *,
    before: dict[str, Any] | None = None,
    after: dict[str, Any] | None = None,
    result: Any = None,
    target: str = "dir/f.txt",
    args: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """A valid record (spec-phase3 §1.2) for ``tool``; the defaults are consistent with
    :func:`args_for` (Write "hello" to a new file, Edit 3000→4000 in ``port=3000\\n``, Append
    "hello" to ``abc``)."""
    args = args if args is not None else args_for(tool, target)
    if tool == "Write":
        before = ABSENT if before is None else before
        after = regular(b"hello", 0o644) if after is None else after
        result = {"path": target, "bytesWritten": 5} if result is None else result
    elif tool == "Edit":
        before = regular(b"port=3000\n", 0o600) if before is None else before
        after = regular(b"port=4000\n", 0o600) if after is None else after
        result = {"path": target, "replacements": 1} if result is None else result
    else:
        before = regular(b"abc", 0o640) if before is None else before
        after = regular(b"abchello", 0o640) if after is None else after
        result = {"path": target, "bytesAppended": 5} if result is None else result
    return copy.deepcopy({
        "protocol": "file_evidence_v1",
        "operationId": OPERATION_ID,
        **IDENTITY,
        "providerToolCallId": CALL_ID,
        "callEventId": f"{OPERATION_ID}_call",
        "dispatchEventId": f"{OPERATION_ID}_dispatch",
        "toolName": tool,
        "canonicalArgsHash": canonical_args_hash(tool, args),
        "workspaceIdentity": WORKSPACE_IDENTITY,
        "targetPath": target,
        "transform": TRANSFORMS[tool],
        "before": before,
        "expectedAfter": after,
        "result": result,
    })  # a fresh copy: callers mutate records (and ABSENT is shared)


def t1_events(tool: str, args: dict[str, Any], *, recovery_mode: str = "reconcile") -> tuple[Any, Any]:
    """The call and dispatch events T1 commits for ``tool(args)`` (spec 10 §1.6), decoded."""
    call = {
        "id": f"{OPERATION_ID}_call",
        **IDENTITY,
        "ts": 100,
        "partial": False,
        "role": "model",
        "author": "agent",
        "content": {"kind": "function_call", "id": CALL_ID, "name": tool, "args": copy.deepcopy(args)},
        "refs": {"operationId": OPERATION_ID, "toolCallId": CALL_ID},
    }
    dispatch = {
        "id": f"{OPERATION_ID}_dispatch",
        **IDENTITY,
        "ts": 100,
        "partial": False,
        "role": "system",
        "author": "system",
        "actions": {
            "toolDispatch": {
                "protocol": "t1_after_preflight_v1",
                "operationId": OPERATION_ID,
                "providerToolCallId": CALL_ID,
                "toolName": tool,
                "canonicalArgsHash": canonical_args_hash(tool, args),
                "recoveryMode": recovery_mode,
            }
        },
        "refs": {"operationId": OPERATION_ID, "toolCallId": CALL_ID},
    }
    return decode_runtime_event(call), decode_runtime_event(dispatch)
