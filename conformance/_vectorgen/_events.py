"""Event builders beyond the fixture families (spec 10 §7 "Fixture families", spec 20 ledgers).

Thin wrappers over :mod:`maka_ref.testing.families` (the W family shorthands ``C``, ``D``,
``RC``, ``O``, ...) plus builders of spec 20 ledger events (``ev20``, ``call20``, ...). They
only build *inputs*; no expectation is computed here. Separate because several spec areas
(encoding, resolver, phase 0, segment replay) share them.
"""

from __future__ import annotations

import copy
from typing import Any

from maka_ref.testing import families as F

from ._common import T1


# ---------------------------------------------------------------------------------------
# Event builders beyond the fixture families
# ---------------------------------------------------------------------------------------

E = F.event
W = F.with_fields


def drop(event: dict[str, Any], *keys: str) -> dict[str, Any]:
    out = copy.deepcopy(event)
    for key in keys:
        out.pop(key, None)
    return out


def set_in(event: dict[str, Any], path: str, value: Any) -> dict[str, Any]:
    """A copy of ``event`` with the dotted ``path`` set to ``value``."""
    out = copy.deepcopy(event)
    node = out
    parts = path.split(".")
    for part in parts[:-1]:
        node = node[part]
    node[parts[-1]] = copy.deepcopy(value)
    return out


def del_in(event: dict[str, Any], path: str) -> dict[str, Any]:
    out = copy.deepcopy(event)
    node = out
    parts = path.split(".")
    for part in parts[:-1]:
        node = node[part]
    del node[parts[-1]]
    return out


# W family shorthands (10 §7 "Fixture families").
def C(**kw: Any) -> dict[str, Any]:
    return W(F.w_call(), **kw) if kw else F.w_call()


def D(**kw: Any) -> dict[str, Any]:
    return W(F.w_dispatch(), **kw) if kw else F.w_dispatch()


def RC(obs: str = "matches_expected_state", **kw: Any) -> dict[str, Any]:
    return W(F.w_reconcile(obs), **kw) if kw else F.w_reconcile(obs)


def O(err: bool = False, **kw: Any) -> dict[str, Any]:  # noqa: E741 - the spec's name
    return W(F.w_outcome(err), **kw) if kw else F.w_outcome(err)


def OU(err: bool = False, **kw: Any) -> dict[str, Any]:
    return W(F.w_outcome_unbound(err), **kw) if kw else F.w_outcome_unbound(err)


def DC(**kw: Any) -> dict[str, Any]:
    return W(F.w_decision_completed(), **kw) if kw else F.w_decision_completed()


def DP(reason: str = "reconcile_diverged", **kw: Any) -> dict[str, Any]:
    return W(F.w_decision_parked(reason), **kw) if kw else F.w_decision_parked(reason)


def M() -> dict[str, Any]:
    return F.w_marker()


def USER(id: str = "initial-1", **kw: Any) -> dict[str, Any]:
    """A legacy user event (the W family's ``M`` without the marker)."""
    return E(id, role="user", author="user", content={"kind": "text", "text": "run it"}, **kw)


def D_with_tool_dispatch(**changes: Any) -> dict[str, Any]:
    """``D`` with fields of ``actions.toolDispatch`` replaced."""
    d = F.w_dispatch()
    d["actions"]["toolDispatch"].update(copy.deepcopy(changes))
    return d


def payload_set(event: dict[str, Any], **changes: Any) -> dict[str, Any]:
    """A recovery fact with fields of ``actions.toolRecovery.payload`` replaced."""
    out = copy.deepcopy(event)
    out["actions"]["toolRecovery"]["payload"].update(copy.deepcopy(changes))
    return out


# Spec 20 ledgers: identity session-1/invocation-1/run-1/turn-1 unless overridden.
ID20 = {"sessionId": "session-1", "invocationId": "invocation-1", "runId": "run-1", "turnId": "turn-1"}
ID20_RUN2 = {"sessionId": "session-1", "invocationId": "invocation-2", "runId": "run-2", "turnId": "turn-2"}


def ev20(id: str, ts: int, identity: dict[str, str] | None = None, **fields: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"id": id, **(identity or ID20), "ts": ts, "partial": False}
    out.update(copy.deepcopy(fields))
    return out


def user20(id: str = "user-1", ts: int = 1, *, text: str = "hello", marker: bool = False, identity: dict[str, str] | None = None) -> dict[str, Any]:
    e = ev20(id, ts, identity, role="user", author="user", content={"kind": "text", "text": text})
    if marker:
        e["actions"] = {"runtimeProtocol": {"toolBoundary": T1}}
    return e


def call20(id: str, ts: int, call_id: str, name: str, args: Any, *, identity: dict[str, str] | None = None, **fields: Any) -> dict[str, Any]:
    return ev20(
        id, ts, identity, role="model", author="agent",
        content={"kind": "function_call", "id": call_id, "name": name, "args": args}, **fields,
    )


def response20(id: str, ts: int, call_id: str, name: str, result: Any, *, is_error: bool = False,
               identity: dict[str, str] | None = None, **fields: Any) -> dict[str, Any]:
    content: dict[str, Any] = {"kind": "function_response", "id": call_id, "name": name, "result": result}
    if is_error:
        content["isError"] = True
    return ev20(id, ts, identity, role="tool", author="tool", content=content, **fields)


def dispatch20(id: str, ts: int, op: str, call_id: str, name: str, args_hash: str, *, mode: str = "never_auto_retry",
               refs: dict[str, str] | None = None, identity: dict[str, str] | None = None, **fields: Any) -> dict[str, Any]:
    return ev20(
        id, ts, identity, role="system", author="system",
        actions={"toolDispatch": {"protocol": T1, "operationId": op, "providerToolCallId": call_id, "toolName": name,
                                  "canonicalArgsHash": args_hash, "recoveryMode": mode}},
        refs=refs if refs is not None else {"operationId": op, "toolCallId": call_id}, **fields,
    )


def text20(id: str, ts: int, role: str, author: str, text: str, *, identity: dict[str, str] | None = None, **fields: Any) -> dict[str, Any]:
    return ev20(id, ts, identity, role=role, author=author, content={"kind": "text", "text": text}, **fields)


def terminal20(id: str, ts: int, *, status: str = "failed", identity: dict[str, str] | None = None) -> dict[str, Any]:
    return ev20(id, ts, identity, role="system", author="system", status=status, actions={"endInvocation": True})


def continuation_start20(id: str, ts: int, *, marker: bool, identity: dict[str, str] | None = None,
                         provenance: str = "runtime_admission", version: int = 1) -> dict[str, Any]:
    """A ``continuation_start_v2`` event (10 §1.3.2, 20 §3.12) with well-formed placeholder digests."""
    actions: dict[str, Any] = {
        "continuationStart": {
            "protocol": "continuation_start_v2",
            "provenance": provenance,
            "claimId": "claim-2",
            "boundaryDigest": "sha256:" + "b" * 64,
            "immediateSource": {
                "sessionId": "session-1",
                "invocationId": "invocation-1",
                "runId": "run-1",
                "turnId": "turn-1",
                "highWater": 3,
                "prefixDigest": "sha256:" + "c" * 64,
            },
            "replayManifestDigest": "sha256:" + "d" * 64,
            "providerProjectionVersion": version,
            "providerReplayDigest": "sha256:" + "e" * 64,
        }
    }
    if marker:
        actions["runtimeProtocol"] = {"toolBoundary": T1}
    return ev20(id, ts, identity or ID20_RUN2, role="system", author="system", actions=actions)
