"""Binding a record to its T1 call and dispatch events (docs/spec-phase3.md §2.3, §1.4).

Each rule is broken by hand on valid, decoded RuntimeEvents (spec 10 §1.6 producer shapes);
expected results are written out per spec-phase3 §1.4.
"""

from __future__ import annotations

from typing import Any

import pytest

from maka_ref._codec import freeze, thaw
from maka_ref._reconcile.binding import BINDING_CODES, check_binding, expected_result
from maka_ref._reconcile.evidence import FileEvidence, Invalid, decode_evidence
from tests.maka_ref.reconcile.support import args_for, evidence, regular, t1_events


def _record(value: dict[str, Any]) -> FileEvidence:
    decoded = decode_evidence(value)
    assert isinstance(decoded, FileEvidence), decoded
    return decoded


def _code(record: dict[str, Any], args: dict[str, Any], *, recovery_mode: str = "reconcile",
          call_patch: dict[str, Any] | None = None, dispatch_patch: dict[str, Any] | None = None) -> str | None:
    call, dispatch = t1_events(record["toolName"], args, recovery_mode=recovery_mode)
    call, dispatch = thaw(call), thaw(dispatch)
    call.update(call_patch or {})
    dispatch.update(dispatch_patch or {})
    found = check_binding(_record(record), freeze(call), freeze(dispatch))
    return found.code if isinstance(found, Invalid) else None


@pytest.mark.parametrize("tool", ["Write", "Edit", "Append"])
def test_a_consistent_record_binds(tool: str) -> None:
    """spec-phase3 §2.3: the support records are consistent with their T1 events."""
    assert _code(evidence(tool), args_for(tool)) is None


@pytest.mark.parametrize(
    ("what", "change"),
    [
        ("operationId", lambda r: r.update(operationId="op-2")),
        ("callEventId", lambda r: r.update(callEventId="other_call")),
        ("dispatchEventId", lambda r: r.update(dispatchEventId="other_dispatch")),
        ("runId", lambda r: r.update(runId="run-2")),
        ("sessionId", lambda r: r.update(sessionId="sess-2")),
        ("providerToolCallId", lambda r: r.update(providerToolCallId="call-2")),
        ("canonicalArgsHash", lambda r: r.update(canonicalArgsHash="sha256:" + "b" * 64)),
    ],
)
def test_operation_conflict(what: str, change: Any) -> None:
    """spec-phase3 §2.3 rule 1: a record of another operation does not bind."""
    record = evidence("Write")
    change(record)
    assert _code(record, args_for("Write")) == "evidence_operation_conflict"


def test_operation_conflict_on_the_events_side() -> None:
    """spec-phase3 §2.3 rule 1: the events' identities are checked too, and non-objects."""
    record = evidence("Write")
    assert _code(record, args_for("Write"), dispatch_patch={"turnId": "turn-2"}) == "evidence_operation_conflict"
    content = {"kind": "function_call", "id": "call-1", "name": "Append", "args": args_for("Write")}
    assert _code(record, args_for("Write"), call_patch={"content": content}) == "evidence_operation_conflict"
    assert _code(record, args_for("Write"), dispatch_patch={"actions": {}}) == "evidence_operation_conflict"
    found = check_binding(_record(record), None, [])
    assert isinstance(found, Invalid) and found.code == "evidence_operation_conflict"


@pytest.mark.parametrize("mode", ["never_auto_retry", "replay_safe", "idempotent", "outcome_unknown"])
def test_recovery_mode_conflict(mode: str) -> None:
    """spec-phase3 §2.3 rule 2 / spec 10 §5.2: only ``reconcile`` dispatches are recoverable."""
    assert _code(evidence("Edit"), args_for("Edit"), recovery_mode=mode) == "evidence_recovery_mode_conflict"


def test_args_conflict_write() -> None:
    """spec-phase3 §2.3 rule 3: Write's expected-after is exactly the bytes of args.content."""
    args = args_for("Write", content="hellO")
    record = evidence("Write", args=args)  # expectedAfter still says "hello"
    assert _code(record, args) == "evidence_args_conflict"
    record = evidence("Write", args=args, after=regular(b"hello!", 0o644), result={"path": "dir/f.txt", "bytesWritten": 6})
    assert _code(record, args) == "evidence_args_conflict"


def test_args_conflict_append_and_edit_sizes() -> None:
    """spec-phase3 §2.3 rule 3: Append adds len(content) bytes; Edit adds len(new) - len(old)."""
    args = args_for("Append", content="hello!")
    assert _code(evidence("Append", args=args, result={"path": "dir/f.txt", "bytesAppended": 6}), args) == "evidence_args_conflict"
    args = args_for("Edit", old="3000", new="40000")
    assert _code(evidence("Edit", args=args), args) == "evidence_args_conflict"
    args = args_for("Edit", old="port=3000\n--", new="x")  # longer than before: cannot occur in it
    record = evidence("Edit", args=args, after=regular(b"\n\n\n\n\n\n\n\n\n", 0o600) | {"size": 0})
    assert _code(record, args) == "evidence_args_conflict"


@pytest.mark.parametrize(
    ("tool", "args"),
    [
        ("Write", {"path": "dir/f.txt"}),
        ("Write", {"path": "dir/f.txt", "content": 5}),
        ("Write", {"path": "dir/f.txt", "content": "a\ud800"}),
        ("Edit", {"path": "dir/f.txt", "old": "", "new": "x"}),
        ("Append", ["dir/f.txt", "hello"]),
    ],
)
def test_args_conflict_unusable_arguments(tool: str, args: Any) -> None:
    """spec-phase3 §2.3 rule 3: arguments that are not the tool's UTF-8 strings never bind."""
    record = evidence(tool)
    call, dispatch = t1_events(tool, args_for(tool))
    call = thaw(call)
    call["content"]["args"] = args
    found = check_binding(_record(record), freeze(call), dispatch)
    assert isinstance(found, Invalid) and found.code == "evidence_args_conflict"


@pytest.mark.parametrize(
    ("tool", "bad_result"),
    [
        ("Write", {"path": "dir/f.txt", "bytesWritten": 4}),
        ("Write", {"path": "dir/./f.txt", "bytesWritten": 5}),
        ("Edit", {"path": "dir/f.txt", "replacements": True}),
        ("Edit", {"path": "dir/f.txt", "replacements": 1, "diff": ""}),
        ("Append", {"path": "dir/f.txt", "bytesWritten": 5}),
    ],
)
def test_result_conflict(tool: str, bad_result: dict[str, Any]) -> None:
    """spec-phase3 §2.3 rule 4: the result is exactly §1.4's row (``true`` is not ``1``)."""
    assert _code(evidence(tool, result=bad_result), args_for(tool)) == "evidence_result_conflict"


def test_expected_result_uses_the_shown_path() -> None:
    """spec-phase3 §1.4: ``shown`` drops empty and ``.`` components; sizes are UTF-8 bytes."""
    assert expected_result("Write", {"path": "./a//b.txt", "content": "é"}) == {"path": "a/b.txt", "bytesWritten": 2}
    assert expected_result("Append", {"path": "a", "content": "😀"}) == {"path": "a", "bytesAppended": 4}
    assert expected_result("Edit", {"path": "a/./b", "old": "x", "new": "y"}) == {"path": "a/b", "replacements": 1}


def test_rules_are_ordered() -> None:
    """spec-phase3 §2.3: first failing rule wins (identity before mode before args before result)."""
    record = evidence("Write", result={"path": "x", "bytesWritten": 0})
    record["operationId"] = "op-9"
    args = args_for("Write", content="other")
    assert _code(record, args, recovery_mode="never_auto_retry") == "evidence_operation_conflict"
    record["operationId"] = "op-1"
    record["canonicalArgsHash"] = evidence("Write", args=args)["canonicalArgsHash"]
    assert _code(record, args, recovery_mode="never_auto_retry") == "evidence_recovery_mode_conflict"
    assert _code(record, args) == "evidence_args_conflict"
    assert set(BINDING_CODES) == {"evidence_operation_conflict", "evidence_recovery_mode_conflict",
                                  "evidence_args_conflict", "evidence_result_conflict"}
