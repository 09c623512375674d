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


def test_the_first_provider_request_after_a_rebaseline_carries_the_notice(tmp_path: Path) -> None:
    """§7.1 step 5: the notice is a committed ``role: system`` text event (seq 3, the fact's
    transaction), derived from the fact, in the history of the first provider call; the
    scripted provider asserts it (``expectSystemText``), and a script expecting a notice the
    history lacks fails ``script_expectation_unmet``."""
    from tests.maka_ref.runtime.support import T1, script

    ws = repo(tmp_path)
    summary, _ = crashed(ws)
    write(ws / "README.md", "edited by the user\n")
    write(ws / "new.txt", "added\n")
    expecting = script(T1, [{"toolCalls": [{"id": "call-1", "name": "Write",
                                            "args": {"path": "notes.txt", "content": "after"}}]},
                            {"text": "done", "expectSystemText": ["Affected paths (2): README.md, new.txt.",
                                                                  "Reread"]}])
    outcome, fact = resume_with_intent(str(ws), intent="rebaseline", flag=True, script=expecting,
                                       lifecycle_log=LifecycleLog(tmp_path / "life.jsonl"))
    assert not outcome.parked and outcome.summary.status == "completed", outcome.to_json()
    with RuntimeStore.open_read_only(ws) as store:
        events = store.read_run_events(summary.session_id, outcome.summary.run_id)
    notice = events[2]
    assert (notice["role"], notice["author"], notice["content"]["kind"]) == ("system", "system", "text")
    assert "README.md, new.txt" in notice["content"]["text"] and "actions" not in notice
    from maka_ref._boundary.transition import rebaseline_notice

    assert notice["content"]["text"] == rebaseline_notice(fact)  # derived from the fact alone


def test_a_script_expecting_a_notice_fails_without_one(tmp_path: Path) -> None:
    """The assertion is real: a plain resume (no rebaseline, so no notice) of a script that
    expects one ends ``failed`` with ``script_expectation_unmet`` before the step is answered."""
    from tests.maka_ref.runtime.support import T1, script

    ws = repo(tmp_path)
    crashed(ws)
    expecting = script(T1, [{"toolCalls": [{"id": "call-1", "name": "Write",
                                            "args": {"path": "notes.txt", "content": "after"}}]},
                            {"text": "done", "expectSystemText": ["Workspace notice"]}])
    outcome, _ = resume_with_intent(str(ws), intent="none", flag=True, script=expecting,
                                    lifecycle_log=LifecycleLog(tmp_path / "life.jsonl"))
    assert outcome.summary.status == "failed"
    assert outcome.summary.error["code"] == "script_expectation_unmet"


def test_an_incomplete_rebaseline_notice_says_all_files(tmp_path: Path) -> None:
    from maka_ref._boundary.transition import rebaseline_notice

    ws = repo(tmp_path)
    crashed(ws)
    for ref in maka_refs(ws):
        git(ws, "update-ref", "-d", ref)
    outcome, fact = resume(ws, tmp_path, "rebaseline")
    assert not outcome.parked and fact["affectedPathsComplete"] is False
    assert "all files" in rebaseline_notice(fact)


def test_a_rebaseline_replays_the_sources_script_sidecar(tmp_path: Path) -> None:
    """Without a script, the continuation's provider reads the source's sidecar, found through
    the run's start — which is no longer the newest history item once the notice follows it."""
    import io

    from maka_ref._cli.main import run as cli_run
    from tests.maka_ref.boundary.test_resume import FIRST_ONLY
    from tests.maka_ref.runtime.support import write_script

    ws = repo(tmp_path)
    assert cli_run(["run", "--workspace", str(ws), "--script", str(write_script(tmp_path, FIRST_ONLY)),
                    "--checkpoints"], stdout=io.StringIO(), stderr=io.StringIO()) == 1
    write(ws / "README.md", "edited by the user\n")
    outcome, fact = resume_with_intent(str(ws), intent="rebaseline", flag=True,
                                       lifecycle_log=LifecycleLog(tmp_path / "life.jsonl"))
    assert not outcome.parked and fact is not None
    # the sidecar's script has no step 2: the provider was reached and answered from it
    assert outcome.summary.status == "failed" and outcome.summary.error["code"] == "script_exhausted"
