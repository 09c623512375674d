"""Interrupted Code Mode outcome helper — spec 10 §6.5, §8.17, scenarios §7.8 (94–96)."""

from __future__ import annotations

import copy

import pytest

from maka_ref._ledger.code_mode import build_interrupted_code_mode_outcome_commits
from maka_ref.testing.families import T1, event, r_initial, w_call, w_dispatch, with_fields

#: hash(exec, {code: "work()"}) and hash(Read, {path: prepared.txt}) — spec 10 §2.6 vectors.
EXEC_HASH = "sha256:5d33ee1b4806339e8bb1a78a077da0c023ab0dbfc6caa45a47aaf06440c3d761"
READ_PREPARED_HASH = "sha256:5949a5bf23e5928b160ea0444cd16391f47365c3cd8b6d33a7381d585baf1db2"


def outer_call(**fields):
    base = dict(
        role="model",
        author="agent",
        origin="provider",
        modelVisibility="visible",
        content={"kind": "function_call", "id": "exec-1", "name": "exec", "args": {"code": "work()"}},
        refs={"operationId": "outer-op", "toolCallId": "exec-1"},
    )
    base.update(fields)
    return event("outer-call", **base)


def outer_dispatch():
    return event(
        "outer-op_dispatch",
        actions={
            "toolDispatch": {
                "protocol": T1,
                "operationId": "outer-op",
                "providerToolCallId": "exec-1",
                "toolName": "exec",
                "canonicalArgsHash": EXEC_HASH,
                "recoveryMode": "never_auto_retry",
            }
        },
        refs={"operationId": "outer-op", "toolCallId": "exec-1"},
    )


NESTED_REFS = {
    "operationId": "nested-op",
    "toolCallId": "read-1",
    "parentToolCallId": "exec-1",
    "parentOperationId": "outer-op",
}


def nested_call():
    return event(
        "nested-call",
        role="model",
        author="agent",
        origin="code_mode",
        modelVisibility="hidden",
        content={"kind": "function_call", "id": "read-1", "name": "Read", "args": {"path": "prepared.txt"}},
        refs=dict(NESTED_REFS),
    )


def nested_dispatch():
    return event(
        "nested-op_dispatch",
        modelVisibility="hidden",
        actions={
            "toolDispatch": {
                "protocol": T1,
                "operationId": "nested-op",
                "providerToolCallId": "read-1",
                "toolName": "Read",
                "canonicalArgsHash": READ_PREPARED_HASH,
                "recoveryMode": "never_auto_retry",
            }
        },
        refs=dict(NESTED_REFS),
    )


def scenario_94(first=None, call=None):
    return [
        r_initial(T1) if first is None else first,
        outer_call() if call is None else call,
        outer_dispatch(),
        nested_call(),
        nested_dispatch(),
    ]


#: §7.8 #96 [X]: the full commit object for scenario 94.
EXPECTED_COMMIT = {
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
            "result": {
                "kind": "json",
                "value": {
                    "kind": "code_mode",
                    "status": "interrupted",
                    "message": "Code Mode execution was interrupted by runtime recovery.",
                },
            },
            "isError": True,
        },
        "refs": {"operationId": "outer-op", "toolCallId": "exec-1"},
    },
}


def build(events, now=50, mode="code_mode"):
    before = copy.deepcopy(events)
    commits = build_interrupted_code_mode_outcome_commits(events, now, mode)
    assert events == before, "the helper must not mutate its input"
    return commits


def test_94_one_commit_for_the_outer_exec():
    """§7.8 #94 [T:res]: exactly one commit, operationId outer-op, isError true, the interrupted result."""
    commits = build(scenario_94())
    assert len(commits) == 1
    (commit,) = commits
    assert commit["operationId"] == "outer-op"
    assert commit["runtimeEvent"]["content"]["isError"] is True
    assert commit["runtimeEvent"]["content"]["result"] == {
        "kind": "json",
        "value": {
            "kind": "code_mode",
            "status": "interrupted",
            "message": "Code Mode execution was interrupted by runtime recovery.",
        },
    }


def test_95_direct_tool_mode_produces_nothing():
    """§7.8 #95 [T:res]."""
    assert build(scenario_94(), mode="direct") == []


def test_96_full_commit_object():
    """§7.8 #96 [X]."""
    assert build(scenario_94()) == [EXPECTED_COMMIT]


def test_96_without_marker():
    """§7.8 #96: also produced without a marker."""
    assert build(scenario_94(first=r_initial())) == [EXPECTED_COMMIT]


def test_96_with_a_global_corruption_issue():
    """§7.8 #96 / §8.17: the helper ignores hasCorruption (anchor behaviour)."""
    events = scenario_94() + [event("late", actions={"runtimeProtocol": {"toolBoundary": T1}})]
    assert build(events) == [EXPECTED_COMMIT]


def test_96_call_without_origin_or_visibility():
    """§7.8 #96: absent origin/modelVisibility pass."""
    call = outer_call()
    del call["origin"]
    del call["modelVisibility"]
    assert build(scenario_94(call=call)) == [EXPECTED_COMMIT]


@pytest.mark.parametrize("override", [{"origin": "code_mode"}, {"modelVisibility": "hidden"}])
def test_96_not_for_code_mode_or_hidden_calls(override):
    """§7.8 #96: not produced for origin code_mode or modelVisibility hidden calls."""
    assert build(scenario_94(call=outer_call(**override))) == []


def test_only_dispatch_without_response_decisions_qualify():
    """§6.5: a legacy call-only exec (indeterminate/legacy_dispatch_unknown) does not qualify."""
    assert build([r_initial(), outer_call()]) == []
    response = event(
        "outer-op_response",
        role="tool",
        author="tool",
        content={"kind": "function_response", "id": "exec-1", "name": "exec", "result": "ok"},
        refs={"operationId": "outer-op", "toolCallId": "exec-1"},
    )
    assert build([r_initial(T1), outer_call(), outer_dispatch(), response]) == []


def test_non_exec_calls_do_not_qualify():
    """§6.5: only a function_call named exactly exec."""
    assert build([r_initial(T1), w_call(), w_dispatch()]) == []


def test_commits_share_nothing_with_the_input():
    events = scenario_94()
    commit = build(events)[0]
    commit["runtimeEvent"]["refs"]["operationId"] = "mutated"
    assert build(events) == [EXPECTED_COMMIT]


@pytest.mark.parametrize("value", [None, 5, "x", [None, 1, {"id": []}], [with_fields(outer_call(), id=None)]])
def test_never_raises(value):
    assert build_interrupted_code_mode_outcome_commits(value, 50, "code_mode") == []
