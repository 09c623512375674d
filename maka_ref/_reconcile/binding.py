"""Binding an evidence record to the T1 events it was committed with (spec-phase3 §2.3).

Why: a decoded record is only well-formed; it becomes evidence *of an operation* when every
identity it repeats equals what T1 committed, when the dispatch is recoverable at all
(``recoveryMode: reconcile``, spec 10 §5.2), and when its states and result agree with the
call's own arguments. The store runs this check before T1 commits the record (spec-phase3
§3.3), and the reconciler runs it again before it observes anything (spec-phase3 §5.1 step 3),
so a record attached to the wrong operation, or describing an effect the arguments cannot
produce, never settles anything.

What is checked without the file: everything the arguments determine. ``Write``'s
expected-after bytes *are* ``args.content``, so its size and digest are checked exactly;
``Edit`` and ``Append`` depend on the before bytes, so only their size arithmetic is checked.
The canonical args hash is not recomputed here: T1 authenticates it against the call (spec 30
§2.3 step 6) and rule 1 binds the record to it.

Pure: no I/O. ``check_binding`` never raises; it takes decoded RuntimeEvents but tolerates any
value (a non-mapping is an identity conflict).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from maka_ref._codec import stable_json, thaw
from maka_ref._reconcile.evidence import (
    FileEvidence,
    Invalid,
    content_digest,
    shown_path,
)

__all__ = ["BINDING_CODES", "check_binding", "expected_result"]

#: The binding codes of spec-phase3 §2.3, in check order.
BINDING_CODES: Final = (
    "evidence_operation_conflict",
    "evidence_recovery_mode_conflict",
    "evidence_args_conflict",
    "evidence_result_conflict",
)

_EXECUTION_KEYS: Final = (("sessionId", "session_id"), ("invocationId", "invocation_id"), ("runId", "run_id"), ("turnId", "turn_id"))
_ARGUMENTS: Final = {"Write": ("path", "content"), "Append": ("path", "content"), "Edit": ("path", "old", "new")}


def check_binding(evidence: FileEvidence, call_event: Any, dispatch_event: Any) -> Invalid | None:
    """The first failing rule of spec-phase3 §2.3, or None when the record binds."""
    problem = _operation_conflict(evidence, call_event, dispatch_event)
    if problem is not None:
        return Invalid("evidence_operation_conflict", problem)
    dispatch = dispatch_event["actions"]["toolDispatch"]
    if dispatch.get("recoveryMode") != "reconcile":
        return Invalid("evidence_recovery_mode_conflict", f"recoveryMode {dispatch.get('recoveryMode')!r}")
    args = call_event["content"].get("args")
    encoded = _encoded_arguments(evidence.tool_name, args)
    if isinstance(encoded, str):
        return Invalid("evidence_args_conflict", encoded)
    problem = _args_conflict(evidence, encoded)
    if problem is not None:
        return Invalid("evidence_args_conflict", problem)
    expected = expected_result(evidence.tool_name, args)
    if stable_json(thaw(evidence.result)) != stable_json(expected):
        return Invalid("evidence_result_conflict", f"result is not {stable_json(expected)}")
    return None


def expected_result(tool_name: str, args: Mapping[str, Any]) -> dict[str, Any]:
    """The success result of spec-phase3 §1.4 for these (already checked) arguments."""
    path = shown_path(args["path"])
    if tool_name == "Edit":
        return {"path": path, "replacements": 1}
    size = len(args["content"].encode("utf-8"))
    if tool_name == "Write":
        return {"path": path, "bytesWritten": size}
    return {"path": path, "bytesAppended": size}


def _operation_conflict(evidence: FileEvidence, call: Any, dispatch: Any) -> str | None:
    """Rule 1: every identity the record repeats equals the T1 events'."""
    if not isinstance(call, Mapping) or not isinstance(dispatch, Mapping):
        return "the call or dispatch event is not an object"
    if call.get("id") != evidence.call_event_id:
        return f"call event id {call.get('id')!r} is not {evidence.call_event_id!r}"
    if dispatch.get("id") != evidence.dispatch_event_id:
        return f"dispatch event id {dispatch.get('id')!r} is not {evidence.dispatch_event_id!r}"
    for key, attribute in _EXECUTION_KEYS:
        expected = getattr(evidence, attribute)
        if call.get(key) != expected or dispatch.get(key) != expected:
            return f"{key} of the T1 events is not {expected!r}"
    content = call.get("content")
    if not isinstance(content, Mapping) or content.get("kind") != "function_call":
        return "the call event is not a function_call"
    if content.get("id") != evidence.provider_tool_call_id or content.get("name") != evidence.tool_name:
        return "the call's id or name differs from the record"
    actions = dispatch.get("actions")
    fact = actions.get("toolDispatch") if isinstance(actions, Mapping) else None
    if not isinstance(fact, Mapping):
        return "the dispatch event has no toolDispatch"
    for key, value in (
        ("operationId", evidence.operation_id),
        ("providerToolCallId", evidence.provider_tool_call_id),
        ("toolName", evidence.tool_name),
        ("canonicalArgsHash", evidence.canonical_args_hash),
    ):
        if fact.get(key) != value:
            return f"toolDispatch.{key} is not {value!r}"
    return None


def _encoded_arguments(tool_name: str, args: Any) -> dict[str, bytes] | str:
    """The tool's string arguments as UTF-8 bytes, or why they are not usable."""
    if not isinstance(args, Mapping):
        return "the call's args are not an object"
    out: dict[str, bytes] = {}
    for name in _ARGUMENTS[tool_name]:
        value = args.get(name)
        if not isinstance(value, str):
            return f"args.{name} is not a string"
        try:
            out[name] = value.encode("utf-8")
        except UnicodeEncodeError:
            return f"args.{name} is not encodable as UTF-8"
    if tool_name == "Edit" and not out["old"]:
        return "args.old is empty"
    return out


def _args_conflict(evidence: FileEvidence, encoded: dict[str, bytes]) -> str | None:
    """Rule 3: the states agree with what the arguments determine (spec-phase3 §1.4)."""
    after, before = evidence.expected_after, evidence.before
    before_size = before.size if before.size is not None else 0
    if evidence.tool_name == "Write":
        content = encoded["content"]
        if after.size != len(content) or after.content_digest != content_digest(content):
            return "expectedAfter is not the bytes of args.content"
        return None
    if evidence.tool_name == "Append":
        if after.size != before_size + len(encoded["content"]):
            return "expectedAfter.size is not before.size + len(args.content)"
        return None
    if before_size < len(encoded["old"]):
        return "before is shorter than args.old, which must occur in it"
    if after.size != before_size - len(encoded["old"]) + len(encoded["new"]):
        return "expectedAfter.size is not before.size - len(args.old) + len(args.new)"
    return None
