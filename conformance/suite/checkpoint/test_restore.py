"""Restore refusals and collection of orphans only (spec-phase4 §3.6, §3.8, §3.9, §12 items 25,
26, 28): ``CHECKPOINT-RESTORE-TARGET-*``, ``CHECKPOINT-RESTORE-VERIFIED-001`` and
``CHECKPOINT-COLLECT-002``.

Every refusal is checked by code only, creates nothing (the whole directory tree around the
workspace, object database included, is byte-identical afterwards) and leaves the user's state
as it was (§3.9).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from conformance.clauses import ClauseMismatch, clause, expect_equal, expect_ok
from conformance.suite.checkpoint._support import (
    RUN_TIMEOUT,
    checkpoint_ref,
    expect_error,
    expect_same_tree,
    tree_snapshot,
)
from conformance.suite.test_checkpoint import (
    CAP,
    capture,
    expect_untouched,
    git,
    identity,
    maka_refs,
    new_repo,
    user_state,
)
from conformance.suite.test_runtime_crash import call_on

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="the checkpoint clauses need the git program")


def _captured(maka: Any, root: Path) -> tuple[str, dict[str, Any]]:
    ws = new_repo(root)
    result = capture(maka, ws, identity())
    return ws, {"workspace": ws, "checkpointRef": result["checkpointRef"], "policyHash": result["policyHash"]}


def _refused(maka: Any, root: Path, ws: str, params: dict[str, Any], cases: Sequence[tuple[str, str]], code: str) -> None:
    for destination, what in cases:
        before, user = tree_snapshot(root), user_state(ws)
        reply = call_on(maka, "checkpoint.restore", {**params, "destination": destination}, timeout=RUN_TIMEOUT)
        expect_error(reply, code, f"restore into {what}")
        expect_same_tree(before, root, f"a restore refused for {what}")
        expect_untouched(user, ws, f"a restore refused for {what}")


@clause("CHECKPOINT-RESTORE-TARGET-invalid", spec="spec-phase4 §3.6 step 1, §11.2, §12 item 25", capability=CAP,
        title="a relative destination, one with . or .., one whose parent is missing or is a file is "
              "restore_target_invalid, and nothing is created")
def test_restore_target_invalid(maka: Any, tmp_path: Path) -> None:
    root = tmp_path / "case"
    root.mkdir()
    ws, params = _captured(maka, root)
    real = os.path.realpath(root)
    (root / "plain.txt").write_text("a file\n", encoding="utf-8")
    _refused(maka, root, ws, params, [
        ("restored", "a relative path"),
        (os.path.join(real, "sub", "..", "restored"), "a path with .."),
        (os.path.join(real, ".", "restored"), "a path with ."),
        (os.path.join(real, "missing", "restored"), "a directory whose parent does not exist"),
        (os.path.join(real, "plain.txt", "restored"), "a directory whose parent is a file"),
    ], "restore_target_invalid")


@clause("CHECKPOINT-RESTORE-TARGET-exists", spec="spec-phase4 §3.6 steps 1 and 5, §11.2, §12 item 25", capability=CAP,
        title="an existing empty directory, non-empty directory, file or symbolic link as destination is "
              "restore_target_exists and is left as it was")
def test_restore_target_exists(maka: Any, tmp_path: Path) -> None:
    root = tmp_path / "case"
    root.mkdir()
    ws, params = _captured(maka, root)
    real = os.path.realpath(root)
    (root / "empty").mkdir()
    (root / "full").mkdir()
    (root / "full" / "keep.txt").write_text("keep\n", encoding="utf-8")
    (root / "file.txt").write_text("a file\n", encoding="utf-8")
    os.symlink(os.path.join(real, "nowhere"), root / "dangling")
    _refused(maka, root, ws, params, [
        (os.path.join(real, "empty"), "an existing empty directory"),
        (os.path.join(real, "full"), "an existing directory with a file"),
        (os.path.join(real, "file.txt"), "an existing file"),
        (os.path.join(real, "dangling"), "a dangling symbolic link"),
    ], "restore_target_exists")


@clause("CHECKPOINT-RESTORE-TARGET-inside", spec="spec-phase4 §3.6 step 1, §11.2, §12 item 25", capability=CAP,
        title="a destination inside the workspace, inside its Git directory, or reached through a symbolic link "
              "into the workspace is restore_target_inside_workspace")
def test_restore_target_inside(maka: Any, tmp_path: Path) -> None:
    root = tmp_path / "case"
    root.mkdir()
    ws, params = _captured(maka, root)
    real = os.path.realpath(root)
    os.symlink(ws, root / "alias")
    _refused(maka, root, ws, params, [
        (os.path.join(ws, "restored"), "a new directory of the workspace"),
        (os.path.join(ws, "src", "restored"), "a new directory in a subdirectory of the workspace"),
        (os.path.join(ws, ".git", "restored"), "a new directory of the Git directory"),
        (os.path.join(real, "alias", "restored"), "a path whose parent is a symbolic link to the workspace"),
    ], "restore_target_inside_workspace")


@clause("CHECKPOINT-RESTORE-VERIFIED-001", spec="spec-phase4 §3.6 step 4, §13 pitfall 12, §12 item 26", capability=CAP,
        title="a checkout that converts bytes (info/attributes eol=crlf added after the capture) is "
              "restore_verification_failed and leaves no destination and no staging directory")
def test_restore_verifies_materialization(maka: Any, tmp_path: Path) -> None:
    root = tmp_path / "case"
    root.mkdir()
    ws, params = _captured(maka, root)
    info = Path(ws) / ".git" / "info"
    info.mkdir(exist_ok=True)
    (info / "attributes").write_text("* text eol=crlf\n", encoding="utf-8")
    before, user = tree_snapshot(root), user_state(ws)
    destination = os.path.join(os.path.realpath(root), "restored")
    reply = call_on(maka, "checkpoint.restore", {**params, "destination": destination}, timeout=RUN_TIMEOUT)
    expect_error(reply, "restore_verification_failed", "restore under a converting attribute")
    expect_same_tree(before, root, "a restore whose materialization failed verification")
    expect_untouched(user, ws, "a restore whose materialization failed verification")


@clause("CHECKPOINT-COLLECT-002", spec="spec-phase4 §3.8, §4.1, §13 pitfall 13, §12 item 28", capability=CAP,
        title="collect deletes only the old orphan of its identity: a live ref, a young orphan, another identity's "
              "ref and a malformed name in the namespace are kept and still resolve")
def test_collect_only_orphans(maka: Any, tmp_path: Path) -> None:
    ws = new_repo(tmp_path)
    ident, other = identity(), identity()
    live = str(capture(maka, ws, ident)["checkpointRef"])
    commit = git(ws, "rev-parse", live).strip()
    now = 2_000_000_000_000
    old = checkpoint_ref(ident, now - 601_000)
    young = checkpoint_ref(ident, now - 1_000)
    foreign = checkpoint_ref(other, now - 601_000)
    malformed = f"refs/maka/checkpoints/{ident.rsplit(':', 1)[1]}/not-a-checkpoint-id"
    for ref in (old, young, foreign, malformed):
        git(ws, "update-ref", ref, commit)
    before = user_state(ws)
    result = expect_ok(call_on(maka, "checkpoint.collect", {"workspace": ws, "workspaceIdentity": ident, "liveRefs": [live],
                                                           "graceSeconds": 600, "nowMs": now}, timeout=RUN_TIMEOUT),
                       "checkpoint.collect")
    expect_equal([old], list(result["collected"]), what="collected refs (only the old orphan, §3.8)")
    expect_equal(sorted([foreign, live, malformed, young]), maka_refs(ws), what="refs under refs/maka/ after collect")
    for ref in (live, young, foreign, malformed):
        if git(ws, "rev-parse", "--verify", ref).strip() != commit:
            raise ClauseMismatch(f"{ref} no longer names its commit after collect (§3.8)")
    expect_untouched(before, ws, "checkpoint.collect")
