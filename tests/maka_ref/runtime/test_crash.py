"""Real-process SIGKILL at every live tool-loop failpoint P0–P9, under both protocols
(spec 20 §2, spec 30 §6.1/§6.3, issue 4 items 4 and 8's first half).

For each point: spawn ``python -m maka_ref run`` with ``MAKA_REF_FAILPOINT=<P>``, wait for the
stderr announcement ``MAKA_FAILPOINT <P>`` (deadline), SIGKILL, prove the kill was real
(return code -9, nothing left), reopen the store with a new instance, and check that the
committed prefix is the one the point allows for our atomic store (docs/failpoints.md,
section "Live tool-loop failpoints P0–P11"), the resolver's decision, the operation's
projection state, the file on disk, and that the effect log holds at most one start per
operation. Two extra cases kill *inside* T1 and T2 through the store hooks.

The expected tables are written from the spec's catalogue, adjusted only where our store
commits the call/dispatch/prepared-journal (T1) and the response/outcome-journal (T2)
atomically — see the P1/P5 notes in docs/failpoints.md.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from maka_ref._ledger.resolver import resolve_recovery
from maka_ref._store.runtime_store import RuntimeStore

from tests.maka_ref.runtime.support import (
    LEGACY,
    T1,
    WRITE_ARGS,
    WRITE_HASH,
    effect_lines,
    labels,
    only_run,
    script,
    spec_operation_id,
    kill_and_reap,
    run_until_failpoint,
    write_script,
)

REPO = Path(__file__).resolve().parents[3]

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX SIGKILL semantics")


# Committed event labels after a kill, per point (one Write call, then a text step).
_T1_PREFIX: dict[str, list[str]] = {
    "P0": ["user"],
    "P1": ["user", "call", "dispatch"],
    "P2": ["user", "call", "dispatch"],
    "P3": ["user", "call", "dispatch"],
    "P4": ["user", "call", "dispatch"],
    "P5": ["user", "call", "dispatch", "response"],
    "P6": ["user", "call", "dispatch", "response"],
    "P7": ["user", "call", "dispatch", "response"],
    "P8": ["user", "call", "dispatch", "response", "text"],
    "P9": ["user", "call", "dispatch", "response", "text", "terminal"],
}
_LEGACY_PREFIX = {point: [x for x in prefix if x != "dispatch"] for point, prefix in _T1_PREFIX.items()}

#: Effect starts after the kill (the implementation's first act is the effect-log line).
_EFFECT_STARTS = {"P0": 0, "P1": 0, "P2": 0, "P3": 1, "P4": 1, "P5": 1, "P6": 1, "P7": 1, "P8": 1, "P9": 1}
#: notes.txt on disk: absent before the rename (P0–P3), "after" from P4 on.
_FILE_WRITTEN = {point: point not in ("P0", "P1", "P2", "P3") for point in _EFFECT_STARTS}


def _expected_decision(protocol: str, point: str) -> tuple[str, str] | None:
    prefix = _T1_PREFIX[point]
    if "call" not in prefix:
        return None
    if "response" in prefix:
        return ("completed", "matching_response")
    return ("indeterminate", "dispatch_without_response" if protocol == T1 else "legacy_dispatch_unknown")


@pytest.mark.parametrize("protocol", [T1, LEGACY])
@pytest.mark.parametrize("point", ["P0", "P1", "P2", "P3", "P4", "P5", "P6", "P7", "P8", "P9"])
def test_sigkill_at_live_failpoint(tmp_path: Path, protocol: str, point: str) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    script_path = write_script(tmp_path, script(protocol))
    child = run_until_failpoint(workspace, script_path, point)
    kill_and_reap(child)

    session_id, run_id, header = only_run(workspace)
    seed = run_id.removeprefix("run_")
    invocation_id = f"invocation_{seed}"
    assert (header["status"], header["invocationId"], header["sessionId"]) == ("running", invocation_id, f"session_{seed}")
    operation_id = spec_operation_id(invocation_id, "call-1")

    store = RuntimeStore.open(workspace)  # a new store instance on the reopened file
    try:
        events = store.read_run_events(session_id, run_id)
        expected = (_T1_PREFIX if protocol == T1 else _LEGACY_PREFIX)[point]
        assert labels(events) == expected
        # ids follow the documented derivation (docs/choices/runtime.md)
        by_label = {label: event["id"] for label, event in zip(labels(events), events)}
        assert by_label["user"] == f"run_{seed}_user"
        if "call" in by_label:
            assert by_label["call"] == f"{operation_id}_call"
        if "dispatch" in by_label:
            assert by_label["dispatch"] == f"{operation_id}_dispatch"
            assert events[2]["actions"]["toolDispatch"]["canonicalArgsHash"] == WRITE_HASH
        if "response" in by_label:
            assert by_label["response"] == f"{operation_id}_response"
        # marker only under T1, only on the first event
        assert ("actions" in events[0]) == (protocol == T1)
        # resolver over the committed prefix
        resolution = resolve_recovery(events)
        assert resolution.issues == () and not resolution.has_corruption
        decision = _expected_decision(protocol, point)
        if decision is None:
            assert resolution.decisions == ()
        else:
            assert [(d.status, d.reason) for d in resolution.decisions] == [decision]
        # projections: T1 operations only
        operation = store.read_tool_operation(operation_id)
        if protocol == T1 and "call" in expected:
            assert operation is not None
            assert operation.current_state == ("outcome_committed" if "response" in expected else "prepared")
        else:
            assert operation is None
        assert store.list_unsettled_operations(session_id) == (
            [operation_id] if protocol == T1 and decision and decision[0] == "indeterminate" else []
        )
    finally:
        store.close()

    starts = effect_lines(workspace)
    assert len(starts) == _EFFECT_STARTS[point]
    assert all(line == {"operationId": operation_id, "tool": "Write", "argsHash": WRITE_HASH, "pid": child.pid}
               for line in starts)
    target = workspace / "notes.txt"
    if _FILE_WRITTEN[point]:
        assert target.read_text(encoding="utf-8") == WRITE_ARGS["content"]
    else:
        assert not target.exists()
    leftover = workspace / f".notes.txt.{operation_id}.tmp"
    assert leftover.exists() == (point == "P3")  # the partial effect a kill at P3 leaves behind
    if point == "P3":
        assert leftover.read_text(encoding="utf-8") == WRITE_ARGS["content"]


@pytest.mark.parametrize(
    ("env_value", "expected", "state"),
    [
        ("after_runtime_event_insert", ["user"], None),  # inside T1: nothing of the operation
        ("after_runtime_event_insert#2", ["user", "call", "dispatch"], "prepared"),  # inside T2
    ],
)
def test_sigkill_inside_t1_and_t2_of_the_live_loop(
    tmp_path: Path, env_value: str, expected: list[str], state: str | None
) -> None:
    """The store hooks inside T1/T2 during a live run: a kill loses the whole transaction."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    script_path = write_script(tmp_path, script(T1))
    child = run_until_failpoint(workspace, script_path, env_value, announced="after_runtime_event_insert")
    kill_and_reap(child)
    session_id, run_id, _ = only_run(workspace)
    operation_id = spec_operation_id(run_id.replace("run_", "invocation_", 1), "call-1")
    with RuntimeStore.open(workspace) as store:
        assert labels(store.read_run_events(session_id, run_id)) == expected
        operation = store.read_tool_operation(operation_id)
        assert (operation.current_state if operation else None) == state
    assert len(effect_lines(workspace)) == (0 if state is None else 1)  # inside T1: never started
    assert (workspace / "notes.txt").exists() == (state is not None)
