"""``maka-ref checkpoint list|verify|restore|rebaseline``, ``run --checkpoints`` and ``resume``
behind the Phase 4 gate (docs/spec-phase4.md §3.5, §3.6, §3.8, §6.2, §7.1): exit codes, error
envelopes, and that reading commands write nothing."""

from __future__ import annotations

import hashlib
import io
import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from maka_ref._cli.main import run
from tests.maka_ref.boundary.test_resume import FIRST_ONLY, FULL, repo
from tests.maka_ref.checkpoint.support import git, maka_refs, user_state, write
from tests.maka_ref.runtime.support import write_script

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="the carrier needs the git program")


def cli(*args: str) -> tuple[int, Any, str]:
    out, err = io.StringIO(), io.StringIO()
    code = run(list(args), stdout=out, stderr=err)
    return code, json.loads(out.getvalue()), err.getvalue()


def tree_digest(root: Path) -> dict[str, str]:
    """Every file under ``root`` (the .git directory included) → sha256 of its bytes."""
    out = {}
    for dirpath, _, files in os.walk(root):
        for name in files:
            path = Path(dirpath) / name
            if not path.is_symlink():
                out[str(path.relative_to(root))] = hashlib.sha256(path.read_bytes()).hexdigest()
    return out


@pytest.fixture
def crashed(tmp_path: Path) -> Path:
    ws = repo(tmp_path)
    script = write_script(tmp_path, FIRST_ONLY)
    code, doc, _ = cli("run", "--workspace", str(ws), "--script", str(script), "--checkpoints")
    assert code == 1 and doc["status"] == "failed"
    assert len(doc["workspaceCheckpoints"]["boundaries"]) == 2
    write_script(tmp_path, FULL, "full.json")
    return ws


def test_list_names_the_facts_and_writes_nothing(crashed: Path) -> None:
    before = tree_digest(crashed)
    code, doc, _ = cli("checkpoint", "list", "--workspace", str(crashed))
    assert code == 0
    refs = sorted(item["checkpointRef"] for item in doc["checkpoints"])
    assert refs == sorted(maka_refs(crashed))
    assert all(item["facts"] and not item["orphan"] for item in doc["checkpoints"])
    assert doc["factsWithMissingArtifact"] == []
    assert tree_digest(crashed) == before


def test_list_reports_a_fact_whose_artifact_is_gone_and_an_orphan(crashed: Path) -> None:
    first, second = sorted(maka_refs(crashed))
    git(crashed, "update-ref", "-d", first)
    git(crashed, "update-ref", second.rsplit("/", 1)[0] + "/1767225600000-" + "0" * 32, second)
    code, doc, _ = cli("checkpoint", "list", "--workspace", str(crashed))
    assert code == 0 and doc["factsWithMissingArtifact"] == [first]
    assert [item["orphan"] for item in doc["checkpoints"]] == [True, False]


def test_verify_ok_and_refusals_have_stable_codes(crashed: Path) -> None:
    ref = maka_refs(crashed)[0]
    before = tree_digest(crashed)
    code, doc, _ = cli("checkpoint", "verify", "--workspace", str(crashed), ref)
    assert code == 0 and doc["checkpointRef"] == ref and doc["fileCount"] >= 1
    code, doc, err = cli("checkpoint", "verify", "--workspace", str(crashed), "refs/heads/main")
    assert code == 2 and doc["error"]["code"] == "invalid_checkpoint_ref" and "invalid_checkpoint_ref" in err
    code, doc, _ = cli("checkpoint", "verify", "--workspace", str(crashed), ref, "--policy-hash", "sha256:" + "0" * 64)
    assert code == 2 and doc["error"]["code"] == "checkpoint_policy_mismatch"
    assert tree_digest(crashed) == before


def test_restore_goes_to_a_new_directory_only(crashed: Path, tmp_path: Path) -> None:
    ref = max(maka_refs(crashed))
    state = user_state(crashed)
    code, doc, _ = cli("checkpoint", "restore", "--workspace", str(crashed), ref, str(crashed / "inside"))
    assert code == 2 and doc["error"]["code"] == "restore_target_inside_workspace"
    dest = tmp_path / "restored"
    code, doc, _ = cli("checkpoint", "restore", "--workspace", str(crashed), ref, str(dest))
    assert code == 0 and doc["path"] == str(dest)
    assert (dest / "notes.txt").read_text() == "after" and (dest / "README.md").read_text() == "hello\n"
    assert not (dest / "runtime.sqlite").exists() and not (dest / ".maka-workspace.json").exists()
    assert user_state(crashed) == state
    code, doc, _ = cli("checkpoint", "restore", "--workspace", str(crashed), ref, str(dest))
    assert code == 2 and doc["error"]["code"] == "restore_target_exists"


def test_resume_parks_on_drift_and_rebaseline_continues(crashed: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MAKA_RUNTIME_SAFE_BOUNDARY_RESUME", "1")
    write(crashed / "README.md", "edited\n")
    code, doc, _ = cli("resume", "--workspace", str(crashed))
    assert code == 3 and doc["rejectionReasons"] == ["workspace_content_drift"]
    code, doc, _ = cli("checkpoint", "rebaseline", "--workspace", str(crashed))
    assert code == 0, doc
    assert doc["workspaceTransition"]["affectedPaths"] == ["README.md"]
    assert doc["workspaceTransition"]["boundary"]["workspaceEpoch"] == 2


def test_usage_errors(tmp_path: Path) -> None:
    code, doc, _ = cli("checkpoint", "verify", "--workspace", str(tmp_path))
    assert code == 2 and doc["error"]["code"] == "usage"
    code, doc, _ = cli("checkpoint", "list", "--workspace", str(tmp_path))
    assert code == 2 and doc["error"]["code"] == "not_a_git_repository"
