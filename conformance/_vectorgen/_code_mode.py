"""Vectors of ``code-mode.json``: the interrupted Code Mode outcome helper (spec 10 §6.5, §7.8).

Separate because it has its own ledger builder and the full commit transcribed from §6.5.
"""

from __future__ import annotations

import copy
from typing import Any, Iterable

from maka_ref.testing import families as F

from ._common import CODE_MODE_MESSAGE, EXEC_HASH, READ_PREPARED_HASH, T1, vec
from ._events import E


# ---------------------------------------------------------------------------------------
# code-mode.json — 10 §6.5, §7.8
# ---------------------------------------------------------------------------------------


def code_mode_ledger(*, marker: bool = True, call_overrides: dict[str, Any] | None = None,
                     drop_call_keys: Iterable[str] = (), extra: Iterable[dict[str, Any]] = ()) -> list[dict[str, Any]]:
    outer_call = E("exec-call-1", role="model", author="agent", origin="provider", modelVisibility="visible",
                   content={"kind": "function_call", "id": "exec-1", "name": "exec", "args": {"code": "work()"}},
                   refs={"operationId": "outer-op", "toolCallId": "exec-1"})
    outer_call.update(copy.deepcopy(call_overrides or {}))
    for key in drop_call_keys:
        outer_call.pop(key, None)
    outer_dispatch = E("outer-op_dispatch", modelVisibility="visible", actions={"toolDispatch": {
        "protocol": T1, "operationId": "outer-op", "providerToolCallId": "exec-1", "toolName": "exec",
        "canonicalArgsHash": EXEC_HASH, "recoveryMode": "never_auto_retry"}},
        refs={"operationId": "outer-op", "toolCallId": "exec-1"})
    parent = {"parentToolCallId": "exec-1", "parentOperationId": "outer-op"}
    nested_call = E("nested-call-1", role="model", author="agent", origin="code_mode", modelVisibility="hidden",
                    content={"kind": "function_call", "id": "nested-1", "name": "Read", "args": {"path": "prepared.txt"}},
                    refs={"operationId": "nested-op", "toolCallId": "nested-1", **parent})
    nested_dispatch = E("nested-op_dispatch", origin="code_mode", modelVisibility="hidden", actions={"toolDispatch": {
        "protocol": T1, "operationId": "nested-op", "providerToolCallId": "nested-1", "toolName": "Read",
        "canonicalArgsHash": READ_PREPARED_HASH, "recoveryMode": "never_auto_retry"}},
        refs={"operationId": "nested-op", "toolCallId": "nested-1", **parent})
    first = F.r_initial(T1 if marker else None)
    return [first, outer_call, outer_dispatch, nested_call, nested_dispatch, *copy.deepcopy(list(extra))]


#: The full commit of 10 §7.8 #96, transcribed from the template of 10 §6.5.
CODE_MODE_COMMIT = {
    "operationId": "outer-op",
    "journalEventId": "outer-op_outcome",
    "committedAt": 50,
    "runtimeEvent": {
        "id": "outer-op_response",
        "invocationId": "invocation-1",
        "runId": "run-1",
        "sessionId": "session-1",
        "turnId": "turn-1",
        "ts": 50,
        "partial": False,
        "role": "tool",
        "author": "tool",
        "origin": "provider",
        "modelVisibility": "visible",
        "content": {
            "kind": "function_response",
            "id": "exec-1",
            "name": "exec",
            "result": {"kind": "json", "value": {"kind": "code_mode", "status": "interrupted", "message": CODE_MODE_MESSAGE}},
            "isError": True,
        },
        "refs": {"operationId": "outer-op", "toolCallId": "exec-1"},
    },
}


def group_code_mode() -> tuple[str, str, list[dict[str, Any]]]:
    g = "code-mode"
    vs: list[dict[str, Any]] = []

    def cm(slug: str, spec: str, description: str, events: list[dict[str, Any]], tool_mode: str, commits: list) -> None:
        vs.append(vec(f"{g}/{slug}", spec, description, "code_mode_commits",
                      {"events": events, "now": 50, "toolMode": tool_mode}, {"commits": commits}))

    cm("interrupted-exec", "10 §7.8 #94, #96; 10 §6.5",
       "An interrupted provider exec call gets exactly one interrupted-outcome commit; the hidden nested call gets none.",
       code_mode_ledger(), "code_mode", [CODE_MODE_COMMIT])
    cm("direct-tool-mode", "10 §7.8 #95", "Outside code_mode tool mode the helper returns nothing.",
       code_mode_ledger(), "direct", [])
    cm("without-marker", "10 §7.8 #96", "The helper does not require the marker.",
       code_mode_ledger(marker=False), "code_mode", [CODE_MODE_COMMIT])
    cm("with-global-corruption", "10 §7.8 #96; 10 §8 item 17",
       "The helper ignores corruption: a duplicate event id elsewhere does not stop the commit.",
       code_mode_ledger(extra=[F.r_initial(T1)]), "code_mode", [CODE_MODE_COMMIT])
    cm("call-without-origin-or-visibility", "10 §7.8 #96", "A call lacking origin and modelVisibility still qualifies.",
       code_mode_ledger(drop_call_keys=("origin", "modelVisibility")), "code_mode", [CODE_MODE_COMMIT])
    cm("call-origin-code-mode", "10 §7.8 #96", "An exec call with origin code_mode does not qualify.",
       code_mode_ledger(call_overrides={"origin": "code_mode"}), "code_mode", [])
    cm("call-hidden", "10 §7.8 #96", "An exec call with modelVisibility hidden does not qualify.",
       code_mode_ledger(call_overrides={"modelVisibility": "hidden"}), "code_mode", [])
    return "code-mode", (
        "The interrupted Code Mode outcome helper (spec 10 §6.5): which decisions get a T2 commit, and its exact shape."
    ), vs
