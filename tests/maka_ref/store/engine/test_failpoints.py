"""Failpoint hooks: in-process ``raise`` (full rollback) and a real-process ``block`` killed by
SIGKILL (spec 30 §6.1–§6.2, §9 items 31, 35, 42, 87, 89, §10 items 9, 36, 37)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest

from maka_ref._store.engine import failpoints
from maka_ref._store.engine.failpoints import FailpointTriggered, arm, armed, disarm, failpoint

from tests.maka_ref.runtime.support import wait_for_stderr
from tests.maka_ref.store.support import completed_bundle, ids, journal_states, open_store, t1_input, t2_input

REPO = Path(__file__).resolve().parents[4]


@pytest.fixture(autouse=True)
def _disarmed() -> Any:
    disarm()
    yield
    disarm()


def _events(store: Any) -> list[str]:
    return ids(store.read_run_events("session-1", "run-1"))


def test_names_are_the_spec_catalogue() -> None:
    """§10 item 37: stable names."""
    assert failpoints.FAILPOINT_NAMES >= {
        "after_runtime_event_insert", "after_journal_event_insert", "after_recovery_reconcile",
        "after_recovery_outcome", "after_recovery_decision", "after_continuation_claim_insert",
        "after_continuation_start_insert", "after_workspace_epoch_event_insert",
        "after_workspace_version_event_insert", "after_workspace_epoch_projection_insert",
        "after_workspace_version_projection_insert", "after_workspace_head_projection_insert",
        "after_workspace_canonical_scan",
    }
    with pytest.raises(ValueError):
        arm("no_such_failpoint")


def test_hit_counting_and_context_manager() -> None:
    with arm("after_journal_event_insert", "raise", hit=2) as point:
        failpoint("after_runtime_event_insert")  # other names never count
        failpoint("after_journal_event_insert")
        with pytest.raises(FailpointTriggered) as info:
            failpoint("after_journal_event_insert")
        assert info.value.name == "after_journal_event_insert"
        failpoint("after_journal_event_insert")  # fires once only
        assert (point.count, point.fired) == (2, True)
    assert armed() is None
    failpoint("after_journal_event_insert")


def test_environment_parsing(monkeypatch: pytest.MonkeyPatch) -> None:
    failpoints._arm_from_environment("after_runtime_event_insert#2")
    point = armed()
    assert point is not None and (point.name, point.action, point.hit) == ("after_runtime_event_insert", "block", 2)
    failpoints._arm_from_environment("after_recovery_outcome:raise")
    assert (armed().name, armed().action, armed().hit) == ("after_recovery_outcome", "raise", 1)
    with pytest.raises(ValueError):
        failpoints._arm_from_environment("after_recovery_outcome#x")
    with pytest.raises(ValueError):
        failpoints._arm_from_environment("bogus")


def test_callable_action() -> None:
    seen: list[str] = []
    arm("after_recovery_decision", seen.append)
    failpoint("after_recovery_decision")
    assert seen == ["after_recovery_decision"]


@pytest.mark.parametrize("name", ["after_runtime_event_insert", "after_journal_event_insert"])
def test_item31_failpoint_inside_t1_rolls_back(tmp_path: Path, name: str) -> None:
    """§9 item 31: no events, no operation, no journal; the retry then succeeds."""
    store = open_store(tmp_path)
    with arm(name, "raise"):
        with pytest.raises(FailpointTriggered):
            store.commit_tool_prepared(t1_input())
    assert _events(store) == []
    assert store.read_tool_operation("operation-1") is None
    assert store.read_tool_journal("operation-1") == []
    assert store.session_ordinals("session-1") == {}
    assert not store.connection.in_transaction
    assert store.commit_tool_prepared(t1_input()).created is True
    store.close()


@pytest.mark.parametrize("name", ["after_runtime_event_insert", "after_journal_event_insert"])
def test_item35_failpoint_inside_t2_rolls_back(tmp_path: Path, name: str) -> None:
    """§9 item 35."""
    store = open_store(tmp_path)
    store.commit_tool_prepared(t1_input())
    with arm(name, "raise"):
        with pytest.raises(FailpointTriggered):
            store.commit_tool_outcome(t2_input())
    assert _events(store) == ["call-event-1", "dispatch-event-1"]
    assert store.read_tool_operation("operation-1").current_state == "prepared"
    assert journal_states(store) == ["prepared"]
    store.close()


@pytest.mark.parametrize(
    ("name", "hit"),
    [
        ("after_recovery_reconcile", 1),
        ("after_recovery_outcome", 1),
        ("after_recovery_decision", 1),
        ("after_runtime_event_insert", 3),  # the decision's insert inside the bundle
        ("after_journal_event_insert", 2),  # the outcome's journal row inside the bundle
    ],
)
def test_item42_failpoints_inside_recovery_bundle(tmp_path: Path, name: str, hit: int) -> None:
    """§9 item 42: events [call, dispatch]; state prepared; journal [prepared]; retry succeeds."""
    store = open_store(tmp_path)
    store.commit_tool_prepared(t1_input())
    with arm(name, "raise", hit=hit) as point:
        with pytest.raises(FailpointTriggered):
            completed_bundle(store)
        assert point.fired
    assert _events(store) == ["call-event-1", "dispatch-event-1"]
    operation = store.read_tool_operation("operation-1")
    assert (operation.current_state, operation.version) == ("prepared", 1)
    assert journal_states(store) == ["prepared"]
    completed_bundle(store)
    assert store.read_tool_operation("operation-1").current_state == "recovery_completed"
    store.close()


_CHILD = textwrap.dedent(
    """
    import sys
    sys.path[:0] = [{repo!r}]
    from tests.maka_ref.store.support import open_store, t1_input, t2_input
    store = open_store({root!r})
    store.commit_tool_prepared(t1_input())
    if {mode!r} == "inside_t2":
        store.commit_tool_outcome(t2_input())
    raise SystemExit("failpoint missed")
    """
)


def _run_until_blocked(root: Path, mode: str, env_value: str) -> subprocess.Popen[bytes]:
    env = dict(os.environ, MAKA_REF_FAILPOINT=env_value)
    script = _CHILD.format(repo=str(REPO), root=str(root), mode=mode)
    child = subprocess.Popen([sys.executable, "-c", script], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    # substring over the accumulated stream (§10 item 35)
    return wait_for_stderr(child, b"MAKA_FAILPOINT after_runtime_event_insert\n", "the failpoint", seconds=30)


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX SIGKILL semantics")
@pytest.mark.parametrize(
    ("mode", "env_value", "expected_events", "expected_state"),
    [
        ("inside_t1", "after_runtime_event_insert", [], None),  # §9 item 87
        ("inside_t2", "after_runtime_event_insert#2", ["call-event-1", "dispatch-event-1"], "prepared"),  # item 89
    ],
)
def test_items87_89_block_then_sigkill(
    tmp_path: Path, mode: str, env_value: str, expected_events: list[str], expected_state: str | None
) -> None:
    """The child blocks inside the open write transaction; SIGKILL; a new store sees the
    committed prefix only (spec 30 §6.2 inside_t1 / inside_t2)."""
    child = _run_until_blocked(tmp_path, mode, env_value)
    time.sleep(0.05)
    assert child.poll() is None  # still blocked, transaction open
    child.send_signal(signal.SIGKILL)
    assert child.wait(timeout=30) == -signal.SIGKILL  # died by SIGKILL (§10 item 36)
    for stream in (child.stdout, child.stderr):
        assert stream is not None
        stream.close()
    store = open_store(tmp_path)
    assert _events(store) == expected_events
    operation = store.read_tool_operation("operation-1")
    assert (operation.current_state if operation else None) == expected_state
    assert store.list_unsettled_operations() == (["operation-1"] if expected_state == "prepared" else [])
    store.close()
