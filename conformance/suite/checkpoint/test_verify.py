"""One clause per way an artifact can be bad (spec-phase4 §3.5, §11.2): ``CHECKPOINT-VERIFY-<what>``.

The harness makes each defect in a real repository with the ``git`` program — it deletes or
re-points the ref, rewrites or deletes a loose object, or writes a commit or tree a correct
carrier never writes (``git mktree``, ``git hash-object -t commit``) — then asks
``checkpoint.verify`` and requires the code and ``details.reason`` (codes, never messages).
Around every request the whole directory (``.git`` and its object database included) must stay
byte-identical: "verify writes nothing anywhere" (§3.5), and the user's state never changes
(§3.9). A failed verify also refuses ``checkpoint.restore`` with the same code and creates no
destination (§3.6 step 2), and ``checkpoint.compare`` answers it too (§3.7).

The policy: every request passes the harness's own §2.1 document (§10.2 ``policy``), so the
expected violation never depends on an implementation's defaults; ``CHECKPOINT-VERIFY-artifact``
first proves that an artifact the harness writes in the §3.4 step 8 layout under that policy
verifies, so each defect below is the only thing wrong.
"""

from __future__ import annotations

import os
import shutil
import zlib
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pytest

from conformance.clauses import ClauseMismatch, clause, expect_equal, expect_ok
from conformance.suite.checkpoint._support import (
    RUN_TIMEOUT,
    expect_error,
    expect_same_tree,
    git_bytes,
    policy_hash_of,
    policy_with,
    tree_snapshot,
    write_artifact,
)
from conformance.suite.test_checkpoint import (
    CAP,
    DEFAULT_POLICY,
    git,
    identity,
    new_repo,
)
from conformance.suite.test_runtime_crash import call_on

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="the checkpoint clauses need the git program")

#: A tree every §2.1 rule accepts: a file, an executable, a link, a nested file.
GOOD_ENTRIES: tuple[tuple[bytes, bytes, bytes], ...] = (
    (b"100644", b"README.md", b"hello\n"),
    (b"100755", b"run.sh", b"#!/bin/sh\n"),
    (b"120000", b"link", b"README.md"),
    (b"100644", b"src/app.py", b"print('v1')\n"),
)


class Bench:
    """A repository, an identity, a policy the harness holds and the requests' common params."""

    def __init__(self, maka: Any, root: Path, policy: Mapping[str, Any] = DEFAULT_POLICY) -> None:
        self.maka, self.root = maka, root
        self.ws = new_repo(root)
        self.identity = identity()
        self.policy = dict(policy)
        self.policy_hash = policy_hash_of(maka, self.policy)

    def params(self, ref: str, policy_hash: str | None = None) -> dict[str, Any]:
        return {"workspace": self.ws, "checkpointRef": ref, "policyHash": policy_hash or self.policy_hash,
                "policy": self.policy}

    def artifact(self, entries: Any = GOOD_ENTRIES, **kwargs: Any) -> tuple[str, str]:
        return write_artifact(self.ws, self.identity, self.policy_hash, list(entries), **kwargs)

    def refused(self, ref: str, code: str, what: str, *, policy_hash: str | None = None, **details: str) -> None:
        """verify, compare and restore each answer ``code``; nothing anywhere changes."""
        before = tree_snapshot(self.root)
        params = self.params(ref, policy_hash)
        expect_error(call_on(self.maka, "checkpoint.verify", params, timeout=RUN_TIMEOUT), code,
                     f"checkpoint.verify of {what}", **details)
        expect_error(call_on(self.maka, "checkpoint.compare", params, timeout=RUN_TIMEOUT), code,
                     f"checkpoint.compare of {what} (§3.7 verifies first)", **details)
        destination = os.path.join(os.path.realpath(self.root), "restored")
        expect_error(call_on(self.maka, "checkpoint.restore", {**params, "destination": destination},
                             timeout=RUN_TIMEOUT), code, f"checkpoint.restore of {what} (§3.6 step 2)", **details)
        expect_same_tree(before, self.root, f"verify/compare/restore of {what}")


def _loose_path(ws: str, oid: str) -> Path:
    return Path(ws) / ".git" / "objects" / oid[:2] / oid[2:]


def _captured_blob(bench: Bench, name: str, content: str) -> tuple[str, str, str]:
    """Capture a workspace holding one untracked file of unique content: that blob is loose and
    only the checkpoint names it. Returns (ref, policy hash, blob oid)."""
    (Path(bench.ws) / name).write_text(content, encoding="utf-8")
    result = expect_ok(call_on(bench.maka, "checkpoint.capture", {"workspace": bench.ws, "workspaceIdentity": bench.identity,
                                                                 "policy": bench.policy}, timeout=RUN_TIMEOUT),
                       "checkpoint.capture")
    ref = str(result["checkpointRef"])
    oid = git(bench.ws, "rev-parse", f"{ref}:{name}").strip()
    if not _loose_path(bench.ws, oid).is_file():
        raise ClauseMismatch(f"the blob of {name} is not a loose object after capture (the harness corrupts loose "
                             "objects)", evidence={"oid": oid})
    return ref, str(result["policyHash"]), oid


def _clause(what: str, spec: str, title: str) -> Callable[[Any], Any]:
    return clause(f"CHECKPOINT-VERIFY-{what}", spec=f"spec-phase4 {spec}", capability=CAP, title=title)


@_clause("artifact", "§3.4 step 8, §3.5", "an artifact in the exact §3.4 layout, written by the harness with git, "
         "verifies with the tree's counts, and verify writes nothing")
def test_harness_artifact_verifies(maka: Any, tmp_path: Path) -> None:
    bench = Bench(maka, tmp_path)
    ref, commit = bench.artifact()
    before = tree_snapshot(tmp_path)
    verified = expect_ok(call_on(maka, "checkpoint.verify", bench.params(ref), timeout=RUN_TIMEOUT),
                         "checkpoint.verify")
    expect_equal(commit, verified["commitOid"], what="the verified commit")
    expect_equal(len(GOOD_ENTRIES), verified["fileCount"], what="fileCount")
    expect_equal(sum(len(content) for _, _, content in GOOD_ENTRIES), verified["totalBytes"], what="totalBytes")
    expect_same_tree(before, tmp_path, "checkpoint.verify")


@_clause("artifact-missing", "§3.5 step 2, §3.6 step 2, §4.2, §12 item 22",
         "a checkpoint ref deleted after capture is checkpoint_artifact_missing for verify, compare and restore")
def test_artifact_missing(maka: Any, tmp_path: Path) -> None:
    bench = Bench(maka, tmp_path)
    ref, _ = bench.artifact()
    git(bench.ws, "update-ref", "-d", ref)
    bench.refused(ref, "checkpoint_artifact_missing", "a deleted ref")


@_clause("not-a-commit", "§3.5 step 2", "a checkpoint ref naming a tree or a blob is checkpoint_corrupt "
         "(not_a_commit)")
def test_not_a_commit(maka: Any, tmp_path: Path) -> None:
    bench = Bench(maka, tmp_path)
    ref, commit = bench.artifact()
    tree = git(bench.ws, "rev-parse", f"{commit}^{{tree}}").strip()
    git(bench.ws, "update-ref", ref, tree, commit)
    bench.refused(ref, "checkpoint_corrupt", "a ref naming a tree", reason="not_a_commit")
    blob = git(bench.ws, "rev-parse", f"{commit}:README.md").strip()
    git(bench.ws, "update-ref", ref, blob, tree)
    bench.refused(ref, "checkpoint_corrupt", "a ref naming a blob", reason="not_a_commit")


#: §3.4 step 8 layouts a carrier never writes; ``{P}``, ``{I}``, ``{B}`` are filled in.
MALFORMED: Mapping[str, bytes] = {
    "a parent line": b"tree {tree}\nparent {B}\nauthor Maka Checkpoint <checkpoint@maka.invalid> 946684800 +0000\n"
                     b"committer Maka Checkpoint <checkpoint@maka.invalid> 946684800 +0000\n\nmaka checkpoint v1\n\n"
                     b"Maka-Checkpoint-Policy: {P}\nMaka-Workspace-Identity: {I}\nMaka-Base-Commit: {B}\n",
    "another author": b"tree {tree}\nauthor Someone Else <else@example.invalid> 946684800 +0000\n"
                      b"committer Maka Checkpoint <checkpoint@maka.invalid> 946684800 +0000\n\nmaka checkpoint v1\n\n"
                      b"Maka-Checkpoint-Policy: {P}\nMaka-Workspace-Identity: {I}\nMaka-Base-Commit: {B}\n",
    "another date": b"tree {tree}\nauthor Maka Checkpoint <checkpoint@maka.invalid> 946684801 +0000\n"
                    b"committer Maka Checkpoint <checkpoint@maka.invalid> 946684800 +0000\n\nmaka checkpoint v1\n\n"
                    b"Maka-Checkpoint-Policy: {P}\nMaka-Workspace-Identity: {I}\nMaka-Base-Commit: {B}\n",
    "another message": b"tree {tree}\nauthor Maka Checkpoint <checkpoint@maka.invalid> 946684800 +0000\n"
                       b"committer Maka Checkpoint <checkpoint@maka.invalid> 946684800 +0000\n\nmy checkpoint\n\n"
                       b"Maka-Checkpoint-Policy: {P}\nMaka-Workspace-Identity: {I}\nMaka-Base-Commit: {B}\n",
    "no base-commit trailer": b"tree {tree}\nauthor Maka Checkpoint <checkpoint@maka.invalid> 946684800 +0000\n"
                              b"committer Maka Checkpoint <checkpoint@maka.invalid> 946684800 +0000\n\n"
                              b"maka checkpoint v1\n\nMaka-Checkpoint-Policy: {P}\nMaka-Workspace-Identity: {I}\n",
    "an identity of another namespace": b"tree {tree}\nauthor Maka Checkpoint <checkpoint@maka.invalid> 946684800 +0000\n"
                                        b"committer Maka Checkpoint <checkpoint@maka.invalid> 946684800 +0000\n\n"
                                        b"maka checkpoint v1\n\nMaka-Checkpoint-Policy: {P}\n"
                                        b"Maka-Workspace-Identity: {J}\nMaka-Base-Commit: {B}\n",
}


@_clause("commit-malformed", "§3.4 step 8, §3.5 step 3", "a checkpoint commit with a parent, another author, "
         "date or message, a missing trailer or another identity's UUID is checkpoint_corrupt (commit_malformed)")
def test_commit_malformed(maka: Any, tmp_path: Path) -> None:
    bench = Bench(maka, tmp_path)
    base = git(bench.ws, "rev-parse", "HEAD").strip().encode()
    for what, layout in MALFORMED.items():
        text = (layout.replace(b"{P}", bench.policy_hash.encode()).replace(b"{I}", bench.identity.encode())
                .replace(b"{B}", base).replace(b"{J}", identity().encode()))
        ref, _ = bench.artifact(commit_text=text)
        bench.refused(ref, "checkpoint_corrupt", f"a commit with {what}", reason="commit_malformed")


@_clause("object-missing", "§3.5 step 4, §12 item 23", "a checkpoint whose blob file was deleted is "
         "checkpoint_corrupt (object_missing)")
def test_object_missing(maka: Any, tmp_path: Path) -> None:
    bench = Bench(maka, tmp_path)
    ref, policy, oid = _captured_blob(bench, "unique.txt", f"only the checkpoint holds this {bench.identity}\n")
    path = _loose_path(bench.ws, oid)
    path.unlink()
    bench.refused(ref, "checkpoint_corrupt", "a deleted blob", policy_hash=policy, reason="object_missing")


@_clause("object-hash-mismatch", "§3.5 step 4, §12 item 23", "a checkpoint whose loose blob was rewritten with "
         "other bytes under its name is checkpoint_corrupt (object_hash_mismatch): verify recomputes every id")
def test_object_hash_mismatch(maka: Any, tmp_path: Path) -> None:
    bench = Bench(maka, tmp_path)
    ref, _, oid = _captured_blob(bench, "unique.txt", f"only the checkpoint holds this {bench.identity}\n")
    path = _loose_path(bench.ws, oid)
    other = b"other bytes under the same name\n"
    os.chmod(path, 0o644)
    path.write_bytes(zlib.compress(b"blob %d\0" % len(other) + other))
    shown = git_bytes(bench.ws, "cat-file", "blob", oid)
    if shown != other:  # the harness's own precondition: Git reads the rewritten bytes back
        raise ClauseMismatch("the harness could not rewrite the loose object", evidence={"read": shown.decode(errors="replace")})
    bench.refused(ref, "checkpoint_corrupt", "a rewritten blob", reason="object_hash_mismatch")


@_clause("policy-mismatch", "§3.5 step 3, §12 item 24", "verify with a policyHash other than the commit's trailer, "
         "or one whose document the carrier does not hold, is checkpoint_policy_mismatch")
def test_policy_mismatch(maka: Any, tmp_path: Path) -> None:
    bench = Bench(maka, tmp_path)
    ref, _ = bench.artifact()
    other = policy_hash_of(maka, policy_with(maxFiles=int(DEFAULT_POLICY["maxFiles"]) + 1))
    bench.refused(ref, "checkpoint_policy_mismatch", "a policyHash other than the trailer", policy_hash=other)
    foreign = "sha256:" + "ab" * 32  # a well-formed hash of no document anyone passed
    ref, _ = write_artifact(bench.ws, bench.identity, foreign, list(GOOD_ENTRIES))
    bench.refused(ref, "checkpoint_policy_mismatch", "a trailer naming a policy the carrier does not hold",
                  policy_hash=foreign)


#: §3.5 step 5 reasons → (what, tree entries, policy limits).
VIOLATIONS: Mapping[str, tuple[str, Any, Mapping[str, int]]] = {
    "mode": ("a gitlink (mode 160000)", "gitlink", {}),
    "excluded_path": ("runtime.sqlite, an excludedPaths entry", (*GOOD_ENTRIES, (b"100644", b"runtime.sqlite", b"db")),
                      {}),
    "path_not_utf8": ("a path that is not UTF-8", (*GOOD_ENTRIES, (b"100644", b"bad-\xff.txt", b"x")), {}),
    "too_many_files": ("maxFiles + 1 entries", GOOD_ENTRIES, {"maxFiles": len(GOOD_ENTRIES) - 1}),
    "file_too_large": ("an entry of maxFileBytes + 1 bytes", (*GOOD_ENTRIES, (b"100644", b"big.bin", b"x" * 65)),
                       {"maxFileBytes": 64}),
    "workspace_too_large": ("entries whose sizes sum above maxTotalBytes",
                            (*GOOD_ENTRIES, (b"100644", b"a.bin", b"a" * 60), (b"100644", b"b.bin", b"b" * 60)),
                            {"maxFileBytes": 64, "maxTotalBytes": 100}),
}


def _violation_params() -> Any:
    for reason in VIOLATIONS:
        mark = _clause(f"policy-violation-{reason.replace('_', '-')}", "§2.3, §3.5 step 5, §11.2",
                       f"an artifact whose tree breaks the policy is checkpoint_policy_violation ({reason})")
        yield pytest.param(reason, id=reason, marks=mark)


@pytest.mark.parametrize("reason", list(_violation_params()))
def test_policy_violation(maka: Any, tmp_path: Path, reason: str) -> None:
    what, entries, limits = VIOLATIONS[reason]
    bench = Bench(maka, tmp_path, policy_with(**limits))
    if entries == "gitlink":
        head = git(bench.ws, "rev-parse", "HEAD").strip().encode()
        entries = (*GOOD_ENTRIES, (b"160000", b"lib", head))
    ref, _ = bench.artifact(entries)
    bench.refused(ref, "checkpoint_policy_violation", what, reason=reason)
