"""The rebaseline transition on real repositories (spec-phase4 §6.3, §7.1, §7.3; §12 items 33,
34, 36)."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from maka_ref._boundary.commands import resume_with_intent
from maka_ref._continuation.lifecycle import LifecycleLog
from maka_ref._store.runtime_store import RuntimeStore
from tests.maka_ref.boundary.test_resume import FULL, crashed, repo
from tests.maka_ref.checkpoint.support import git, maka_refs, write

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="the carrier needs the git program")


def resume(ws: Path, tmp_path: Path, intent: str) -> tuple[Any, Any]:
    return resume_with_intent(str(ws), intent=intent, flag=True, script=FULL,
                              lifecycle_log=LifecycleLog(tmp_path / f"life-{intent}.jsonl"))


def facts(ws: Path) -> list[tuple[str, int, Any]]:
    import json

    store = RuntimeStore.open_read_only(ws)
    try:
        with store.read() as conn:
            rows = conn.execute(
                "SELECT run_id, event_seq, json_extract(payload_json, '$.actions.workspaceBoundary') FROM runtime_events "
                "WHERE json_extract(payload_json, '$.actions.workspaceBoundary') IS NOT NULL ORDER BY committed_at, "
                "run_id, event_seq").fetchall()
    finally:
        store.close()
    return [(run, seq, json.loads(text)) for run, seq, text in rows]


def test_drift_then_rebaseline_then_the_lineage_resumes(tmp_path: Path) -> None:
    ws = repo(tmp_path)
    summary, _ = crashed(ws)
    write(ws / "README.md", "edited by the user\n")
    parked, _ = resume(ws, tmp_path, "none")
    assert parked.rejection_reasons == ("workspace_content_drift",)
    outcome, fact = resume(ws, tmp_path, "rebaseline")
    assert not outcome.parked, outcome.to_json()
    assert outcome.summary.status == "completed"
    assert fact is not None
    assert fact["affectedPaths"] == ["README.md"] and fact["affectedPathCount"] == 1
    assert fact["affectedPathsComplete"] is True
    assert fact["boundary"]["workspaceEpoch"] == 2 and fact["previous"]["workspaceEpoch"] == 1
    rows = facts(ws)
    target = [row for row in rows if row[0] != summary.run_id]
    assert [(seq, f["kind"]) for _, seq, f in target] == [(2, "maka.workspace.rebaselined")]
    assert target[0][2]["payload"]["boundary"]["immutableRuntimeHighWater"] == 1
    assert len(maka_refs(ws)) == 3  # B0, B1 and the rebaseline's capture
    assert (ws / "README.md").read_text() == "edited by the user\n"  # the user's files are the new baseline


def test_rebaseline_after_a_missing_artifact_is_incomplete(tmp_path: Path) -> None:
    ws = repo(tmp_path)
    crashed(ws)
    for ref in maka_refs(ws):
        git(ws, "update-ref", "-d", ref)
    outcome, fact = resume(ws, tmp_path, "rebaseline")
    assert not outcome.parked, outcome.to_json()
    assert fact["previous"] is not None and fact["affectedPathsComplete"] is False
    assert fact["affectedPaths"] == []


def test_rebaseline_refused_for_another_directory(tmp_path: Path) -> None:
    ws = repo(tmp_path)
    crashed(ws)
    (ws / ".maka-workspace.json").unlink()
    before = facts(ws)
    outcome, fact = resume(ws, tmp_path, "rebaseline")
    assert outcome.parked and outcome.rejection_reasons == ("workspace_rebaseline_identity_mismatch",)
    assert fact is None and facts(ws) == before


def test_rebaseline_needs_a_checkpoint_session(tmp_path: Path) -> None:
    ws = tmp_path / "plain"
    ws.mkdir()
    crashed(ws)
    outcome, fact = resume(ws, tmp_path, "rebaseline")
    assert outcome.parked and outcome.rejection_reasons == ("workspace_checkpoint_unavailable",)
    assert fact is None
