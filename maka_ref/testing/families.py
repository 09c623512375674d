"""The spec's fixture families as builders (spec 10 §7 "Fixture families").

Why this module ships in the package: the golden vectors, our own tests, the crash lab and
third-party adapters all speak about the same events (`C`, `D`, `RC`, `O`, `DC`, `DP`, `M`
of family W; `I`, `FC`, `DI`, `FR` of family R). Writing them once, exactly as the spec
defines them, keeps every consumer honest.

Every builder returns a *new plain dict* (never shared), so callers may modify it to build
corrupt variants. ``override`` arguments replace top-level keys; pass ``None`` as a value in
``drop`` to remove keys.
"""

from __future__ import annotations

import copy
from typing import Any, Iterable

T1 = "t1_after_preflight_v1"

#: Defaults shared by all family events (spec 10 §7).
BASE: dict[str, Any] = {
    "invocationId": "invocation-1",
    "runId": "run-1",
    "sessionId": "session-1",
    "turnId": "turn-1",
    "partial": False,
    "role": "system",
    "author": "system",
    "ts": 1,
}

#: hash(Bash, {command: do-it}) — spec 10 §2.6.
BASH_DO_IT_HASH = "sha256:83f3a7d12c96b30b1e7b8e8afc4e13829dc19a0fa0f893647a0e31375b0a0669"
#: hash(Write, {path: notes.txt, content: after}) — spec 10 §2.6.
WRITE_NOTES_HASH = "sha256:763712445cbfb7feebe3bd4ba14e29425f05e40b8cd14aef0896853dca24b4d9"
OBSERVATION_DIGEST = "sha256:" + "a" * 64


def event(id: str, *, drop: Iterable[str] = (), **fields: Any) -> dict[str, Any]:
    """A family event: BASE defaults, then ``fields``, minus the keys in ``drop``."""
    out: dict[str, Any] = {"id": id, **copy.deepcopy(BASE)}
    out.update(copy.deepcopy(fields))
    for key in drop:
        out.pop(key, None)
    return out


def with_fields(base: dict[str, Any], **fields: Any) -> dict[str, Any]:
    """A deep copy of ``base`` with top-level ``fields`` replaced."""
    out = copy.deepcopy(base)
    out.update(copy.deepcopy(fields))
    return out


# ---------------------------------------------------------------------------------------
# Family R (resolver tests)
# ---------------------------------------------------------------------------------------


def r_initial(tool_boundary: str | None = None, *, id: str = "initial-1") -> dict[str, Any]:
    """``I(tb?)``: user text "run it", with the marker when ``tool_boundary`` is given."""
    e = event(id, role="user", author="user", content={"kind": "text", "text": "run it"})
    if tool_boundary is not None:
        e["actions"] = {"runtimeProtocol": {"toolBoundary": tool_boundary}}
    return e


def r_call(*, id: str = "function-call-1") -> dict[str, Any]:
    """``FC``: Bash call-1 {command: do-it}."""
    return event(
        id,
        role="model",
        author="agent",
        content={"kind": "function_call", "id": "call-1", "name": "Bash", "args": {"command": "do-it"}},
    )


def r_dispatch(name: str = "Bash", *, id: str = "dispatch-1") -> dict[str, Any]:
    """``DI(name=Bash)``: T1 dispatch of call-1 as operation-1, never_auto_retry."""
    return event(
        id,
        actions={
            "toolDispatch": {
                "protocol": T1,
                "operationId": "operation-1",
                "providerToolCallId": "call-1",
                "toolName": name,
                "canonicalArgsHash": BASH_DO_IT_HASH,
                "recoveryMode": "never_auto_retry",
            }
        },
        refs={"operationId": "operation-1", "toolCallId": "call-1"},
    )


def r_response(err: bool = False, op: str | None = None, *, id: str = "function-response-1") -> dict[str, Any]:
    """``FR(err=false, op?)``: Bash response to call-1; refs only when ``op`` is given."""
    content: dict[str, Any] = {
        "kind": "function_response",
        "id": "call-1",
        "name": "Bash",
        "result": "permission denied" if err else "ok",
    }
    if err:
        content["isError"] = True
    e = event(id, role="tool", author="tool", content=content)
    if op is not None:
        e["refs"] = {"operationId": op, "toolCallId": "call-1"}
    return e


# ---------------------------------------------------------------------------------------
# Family W (authority / equivalence / storage tests; recovery fixtures)
# ---------------------------------------------------------------------------------------

W_REFS = {"operationId": "operation-1", "toolCallId": "provider-call-1"}


def w_marker(*, id: str = "initial-1") -> dict[str, Any]:
    """``M``: the W-family initial user event carrying the valid T1 marker."""
    return event(
        id,
        role="user",
        author="user",
        content={"kind": "text", "text": "run it"},
        actions={"runtimeProtocol": {"toolBoundary": T1}},
    )


def w_call(*, id: str = "call-event-1") -> dict[str, Any]:
    """``C``: Write provider-call-1 {path: notes.txt, content: after}."""
    return event(
        id,
        role="model",
        author="agent",
        content={
            "kind": "function_call",
            "id": "provider-call-1",
            "name": "Write",
            "args": {"path": "notes.txt", "content": "after"},
        },
    )


def w_dispatch(*, id: str = "dispatch-event-1", recovery_mode: str = "reconcile") -> dict[str, Any]:
    """``D``: T1 dispatch of provider-call-1 as operation-1 (mode reconcile)."""
    return event(
        id,
        actions={
            "toolDispatch": {
                "protocol": T1,
                "operationId": "operation-1",
                "providerToolCallId": "provider-call-1",
                "toolName": "Write",
                "canonicalArgsHash": WRITE_NOTES_HASH,
                "recoveryMode": recovery_mode,
            }
        },
        refs=dict(W_REFS),
    )


def w_reconcile(observation: str = "matches_expected_state", *, id: str = "reconcile-event-1") -> dict[str, Any]:
    """``RC(obs)``: reconcile observation for operation-1, ts 2."""
    return event(
        id,
        ts=2,
        actions={
            "toolRecovery": {
                "kind": "maka.tool.reconcile_result",
                "version": 1,
                "payload": {
                    "protocol": "tool_reconcile_v1",
                    "operationId": "operation-1",
                    "observation": observation,
                    "observationSchema": "state_identity_v1",
                    "observationDigest": OBSERVATION_DIGEST,
                },
            }
        },
        refs=dict(W_REFS),
    )


def w_outcome(err: bool = False, *, id: str = "outcome-event-1", bound: bool = True) -> dict[str, Any]:
    """``O(err)`` (bound) or ``O_unbound`` (``bound=False``: refs only ``toolCallId``), ts 3."""
    return event(
        id,
        ts=3,
        role="tool",
        author="tool",
        content={
            "kind": "function_response",
            "id": "provider-call-1",
            "name": "Write",
            "result": "failed" if err else "ok",
            "isError": err,
        },
        refs=dict(W_REFS) if bound else {"toolCallId": "provider-call-1"},
    )


def w_outcome_unbound(err: bool = False, *, id: str = "outcome-event-1") -> dict[str, Any]:
    """``O_unbound``: the outcome with refs ``{toolCallId}`` only."""
    return w_outcome(err, id=id, bound=False)


def w_decision_completed(*, id: str = "decision-event-1") -> dict[str, Any]:
    """``DC``: completed decision, outcomeEventId outcome-event-1, ts 4."""
    return event(
        id,
        ts=4,
        actions={
            "toolRecovery": {
                "kind": "maka.tool.recovery_decision",
                "version": 1,
                "payload": {
                    "protocol": "tool_recovery_v1",
                    "operationId": "operation-1",
                    "disposition": "completed",
                    "reasonCode": "reconcile_matches_expected_state",
                    "outcomeEventId": "outcome-event-1",
                    "evidenceEventIds": ["call-event-1", "dispatch-event-1", "reconcile-event-1", "outcome-event-1"],
                },
            }
        },
        refs=dict(W_REFS),
    )


def w_decision_parked(reason: str = "reconcile_diverged", *, id: str = "decision-event-1") -> dict[str, Any]:
    """``DP(reason)``: parked decision, ts 4."""
    return event(
        id,
        ts=4,
        actions={
            "toolRecovery": {
                "kind": "maka.tool.recovery_decision",
                "version": 1,
                "payload": {
                    "protocol": "tool_recovery_v1",
                    "operationId": "operation-1",
                    "disposition": "parked",
                    "reasonCode": reason,
                    "evidenceEventIds": ["call-event-1", "dispatch-event-1", "reconcile-event-1"],
                },
            }
        },
        refs=dict(W_REFS),
    )


__all__ = [
    "BASE",
    "BASH_DO_IT_HASH",
    "OBSERVATION_DIGEST",
    "T1",
    "W_REFS",
    "event",
    "r_call",
    "r_dispatch",
    "r_initial",
    "r_response",
    "w_call",
    "w_decision_completed",
    "w_decision_parked",
    "w_dispatch",
    "w_marker",
    "w_outcome",
    "w_outcome_unbound",
    "w_reconcile",
    "with_fields",
    "WRITE_NOTES_HASH",
]
