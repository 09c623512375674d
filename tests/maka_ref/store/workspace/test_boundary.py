"""The workspace boundary writer (spec-phase4 §1.3 rules 1–5, §4.1–§4.3, §7.3).

Each refusal is checked to leave the store exactly as it was (no row, same row count), and the
digest the writer must recompute is computed here with the planner's own prefix function over
rows read back with plain SQL — never with the writer.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from maka_ref._events.boundary import BOUNDARY_CAPTURED_KIND, REBASELINED_KIND
from maka_ref._plan.prefix.digests import length_prefixed, prefix_event_json, sj, u64be
from maka_ref._store.errors import StoreError
from maka_ref._store.workspace.boundary import commit_workspace_boundary, current_epoch
from maka_ref.testing import families as fam
from tests.maka_ref.store.support import open_store, raw, user_event

UUID = "123e4567-e89b-42d3-a456-426614174000"
IDENTITY = f"workspace:v1:{UUID}"
REF = f"refs/maka/checkpoints/{UUID}/1767225600000-0123456789abcdef0123456789abcdef"
REF2 = f"refs/maka/checkpoints/{UUID}/1767225600001-0123456789abcdef0123456789abcdef"
POLICY = "sha256:ab23d8c63ab28bcb66cec95a5d51d191a3b21ab579c6058ba3b6eb96386c5eca"


def expected_digest(root: Path, high_water: int) -> str:
    """spec 20 §1.9 by hand: LP(domain) ‖ LP(SJ(identity)) ‖ (u64be(seq) ‖ LP(event))*."""
    conn = raw(root)
    try:
        rows = conn.execute(
            "SELECT event_seq, payload_json FROM runtime_events WHERE session_id='session-1' AND run_id='run-1' "
            "AND event_seq <= ? ORDER BY event_seq", (high_water,)).fetchall()
    finally:
        conn.close()
    hasher = hashlib.sha256()
    hasher.update(length_prefixed(b"maka.runtime-prefix.v1"))
    identity = {"sessionId": "session-1", "invocationId": "invocation-1", "runId": "run-1", "turnId": "turn-1"}
    hasher.update(length_prefixed(sj(identity).encode()))
    for seq, payload in rows:
        hasher.update(u64be(seq))
        hasher.update(length_prefixed(prefix_event_json(json.loads(payload)).encode()))
    return "sha256:" + hasher.hexdigest()


def boundary_event(root: Path, high_water: int, *, event_id: str = "boundary-1", epoch: int = 1,
                   ref: str = REF, digest: str | None = None, kind: str = BOUNDARY_CAPTURED_KIND) -> dict[str, Any]:
    b = {"workspaceIdentity": IDENTITY, "workspaceEpoch": epoch, "immutableRuntimeHighWater": high_water,
         "immutableRuntimeDigest": digest or expected_digest(root, high_water), "checkpointRef": ref,
         "checkpointPolicyHash": POLICY}
    if kind == BOUNDARY_CAPTURED_KIND:
        payload: dict[str, Any] = {"protocol": "workspace_boundary_captured_v1", "boundary": b}
    else:
        payload = {"protocol": "workspace_rebaselined_v1", "boundary": b, "affectedPaths": [],
                   "affectedPathCount": 0, "affectedPathsComplete": False}
    return fam.event(event_id, ts=2, actions={"workspaceBoundary": {"kind": kind, "version": 1, "payload": payload}})


def row_count(root: Path) -> int:
    conn = raw(root)
    try:
        return conn.execute("SELECT COUNT(*) FROM runtime_events").fetchone()[0]
    finally:
        conn.close()


def present(_ref: str) -> bool:
    return True


@pytest.fixture
def root(tmp_path: Path) -> Path:
    with open_store(tmp_path) as store:
        store.append(user_event())
    return tmp_path


def test_commit_puts_the_fact_at_high_water_plus_one(root: Path) -> None:
    """Also proves the store's recomputed digest equals the hand-computed one (rule 2)."""
    with open_store(root) as store:
        result = commit_workspace_boundary(store, boundary_event(root, 1), present)
        assert (result.event_seq, result.created) == (2, True)
        events = store.read_run_events("session-1", "run-1")
        assert events[-1]["actions"]["workspaceBoundary"]["payload"]["boundary"]["checkpointRef"] == REF
        with store.read() as conn:
            assert current_epoch(conn, "session-1") == 1


def test_exact_retry_is_a_no_op_and_a_different_event_is_a_conflict(root: Path) -> None:
    event = boundary_event(root, 1)
    with open_store(root) as store:
        commit_workspace_boundary(store, event, present)
        again = commit_workspace_boundary(store, event, present)
        assert (again.event_seq, again.created) == (2, False)
        changed = dict(event, ts=3)
        with pytest.raises(StoreError) as caught:
            commit_workspace_boundary(store, changed, present)
        assert caught.value.code == "event_identity_conflict"
    assert row_count(root) == 2


def refused(root: Path, event: dict[str, Any], code: str, check: Any = present) -> None:
    before = row_count(root)
    with open_store(root) as store, pytest.raises(StoreError) as caught:
        commit_workspace_boundary(store, event, check)
    assert caught.value.code == code
    assert row_count(root) == before


def test_rule_1_high_water_must_be_the_last_event(root: Path) -> None:
    with open_store(root) as store:
        store.append(user_event("user-event-2", ts=2))
    # Digest of 1..1 is right, but the run has moved on to 2.
    refused(root, boundary_event(root, 1), "workspace_boundary_high_water_changed")


def test_rule_2_digest_is_recomputed_by_the_store(root: Path) -> None:
    refused(root, boundary_event(root, 1, digest="sha256:" + "0" * 64), "workspace_boundary_digest_mismatch")


def test_rule_3_first_capture_has_epoch_one_and_captures_keep_the_epoch(root: Path) -> None:
    refused(root, boundary_event(root, 1, epoch=2), "workspace_epoch_conflict")
    with open_store(root) as store:
        commit_workspace_boundary(store, boundary_event(root, 1), present)
    refused(root, boundary_event(root, 2, event_id="boundary-2", epoch=2, ref=REF2), "workspace_epoch_conflict")
    with open_store(root) as store:
        result = commit_workspace_boundary(store, boundary_event(root, 2, event_id="boundary-2", ref=REF2), present)
    assert result.event_seq == 3


def test_rule_4_ref_namespace_must_be_the_identity(root: Path) -> None:
    other = "refs/maka/checkpoints/99999999-e89b-42d3-a456-426614174000/1767225600000-0123456789abcdef0123456789abcdef"
    refused(root, boundary_event(root, 1, ref=other), "invalid_workspace_fact")


def test_fact_committed_only_if_the_artifact_still_resolves(root: Path) -> None:
    """§4.2: the pre-commit check; a refused commit leaves the artifact an orphan, no fact."""
    seen: list[str] = []

    def gone(ref: str) -> bool:
        seen.append(ref)
        return False

    refused(root, boundary_event(root, 1), "workspace_checkpoint_missing", gone)
    assert seen == [REF]


def test_transition_kinds_are_not_accepted_alone(root: Path) -> None:
    refused(root, boundary_event(root, 1, kind=REBASELINED_KIND, epoch=2), "invalid_workspace_fact")


def test_bad_envelope_is_invalid_workspace_boundary(root: Path) -> None:
    event = boundary_event(root, 1)
    event["actions"]["workspaceBoundary"]["payload"]["boundary"]["workspaceEpoch"] = 0
    before = row_count(root)
    with open_store(root) as store, pytest.raises(StoreError) as caught:
        commit_workspace_boundary(store, event, present)
    assert caught.value.code == "invalid_workspace_boundary"
    assert caught.value.detail == "/payload/boundary/workspaceEpoch"
    assert row_count(root) == before


@pytest.mark.parametrize(
    "change",
    [{"role": "model"}, {"author": "agent"}, {"content": {"kind": "text", "text": "x"}}, {"status": "completed"},
     {"sessionId": "maka_workspace_authority"}],
)
def test_lane_is_enforced(root: Path, change: dict[str, Any]) -> None:
    refused(root, {**boundary_event(root, 1), **change}, "invalid_workspace_fact")


def test_sealed_run_takes_no_boundary(root: Path) -> None:
    with open_store(root) as store:
        store.append(fam.event("terminal", ts=2, role="model", author="agent", status="completed",
                               content={"kind": "text", "text": "done"}))
    before = row_count(root)
    with open_store(root) as store, pytest.raises(StoreError):
        commit_workspace_boundary(store, boundary_event(root, 2), present)
    assert row_count(root) == before


def test_generic_append_refuses_boundary_facts(root: Path) -> None:
    refused_event = boundary_event(root, 1)
    with open_store(root) as store, pytest.raises(StoreError) as caught:
        store.append(refused_event)
    assert caught.value.code == "reserved_workspace_boundary"
    assert row_count(root) == 1
