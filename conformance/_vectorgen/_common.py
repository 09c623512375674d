"""Constants and vector helpers shared by every vector group.

Holds the literal hashes and error messages the spec states (10 §2.1, §2.2, §2.6, §6.5) and
the helpers that spell a vector and its matchers (``vec``, ``decision``, ``resolution``,
``dm``, ...). It is separate so that each group module imports one small, reviewable set
of shared values instead of the whole generator.
"""

from __future__ import annotations

import copy
from typing import Any, Iterable

from maka_ref.testing import families as F


T1 = F.T1
BASH_HASH = F.BASH_DO_IT_HASH  # 10 §2.6: hash(Bash, {"command":"do-it"})
WRITE_HASH = F.WRITE_NOTES_HASH  # 10 §2.6: hash(Write, {"content":"after","path":"notes.txt"})
#: 10 §2.6: hash(Write, {"path":"other.txt","content":"after"}).
WRITE_OTHER_HASH = "sha256:776ff7572abe4410f51c37b0b046025300d9c5e5aebb1412b502276194e7e838"
#: 10 §2.6: hash(exec, {"code":"work()"}).
EXEC_HASH = "sha256:5d33ee1b4806339e8bb1a78a077da0c023ab0dbfc6caa45a47aaf06440c3d761"
#: 10 §2.6: hash(Read, {"path":"prepared.txt"}).
READ_PREPARED_HASH = "sha256:5949a5bf23e5928b160ea0444cd16391f47365c3cd8b6d33a7381d585baf1db2"
STRICT_ARGS_MESSAGE = "Tool arguments must be strict JSON values"  # 10 §2.6 "Errors"
SCHEMA_MESSAGE = "Invalid RuntimeEvent schema"  # 10 §2.1
NOT_SERIALIZABLE_MESSAGE = "RuntimeEvent is not losslessly serializable"  # 10 §2.2
CODE_MODE_MESSAGE = "Code Mode execution was interrupted by runtime recovery."  # 10 §6.5

# ---------------------------------------------------------------------------------------
# Vector helpers
# ---------------------------------------------------------------------------------------


def vec(vid: str, spec: str, description: str, operation: str, input_: dict[str, Any], expect: dict[str, Any]) -> dict[str, Any]:
    """One vector, keys in reading order."""
    return {
        "id": vid,
        "spec": spec,
        "description": description,
        "operation": operation,
        "input": copy.deepcopy(input_),
        "expect": copy.deepcopy(expect),
    }


def err(message: str) -> dict[str, Any]:
    return {"error": {"message": message}}


def dm(absent: Iterable[str] = (), **subset: Any) -> dict[str, Any]:
    """A per-record partial matcher: keys compared exactly, ``absent`` keys must be missing."""
    out: dict[str, Any] = {"subset": subset}
    if absent:
        out["absent"] = list(absent)
    return out


def decision(
    tool_call_id: str,
    status: str,
    reason: str,
    *,
    toolName: str | None = None,
    operationId: str | None = None,
    settlementOrigin: str | None = None,
    call: str | None = None,
    dispatch: str | None = None,
    response: str | None = None,
    isError: bool | None = None,
) -> dict[str, Any]:
    """A full Decision object (10 §6.1) in the spec's key order, absent fields omitted."""
    out: dict[str, Any] = {"toolCallId": tool_call_id}
    if toolName is not None:
        out["toolName"] = toolName
    if operationId is not None:
        out["operationId"] = operationId
    out["status"] = status
    out["reason"] = reason
    if settlementOrigin is not None:
        out["settlementOrigin"] = settlementOrigin
    if call is not None:
        out["callRuntimeEventId"] = call
    if dispatch is not None:
        out["dispatchRuntimeEventId"] = dispatch
    if response is not None:
        out["responseRuntimeEventId"] = response
        out["responseIsError"] = bool(isError)
    return out


def resolution(decisions: list[dict[str, Any]], issues: list[tuple[str, str]], corr: bool, recon: bool, *, t1: bool) -> dict[str, Any]:
    """A full Resolution object (10 §6.1)."""
    out: dict[str, Any] = {}
    if t1:
        out["toolBoundaryProtocol"] = T1
    out["decisions"] = decisions
    out["issues"] = [{"code": c, "eventId": e} for c, e in issues]
    out["hasCorruption"] = corr
    out["requiresReconciliation"] = recon
    return out


def iss(*pairs: tuple[str, str]) -> list[dict[str, str]]:
    return [{"code": c, "eventId": e} for c, e in pairs]
