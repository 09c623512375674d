"""Workspace checkpoint clauses (``workspace.checkpoint``, docs/spec-phase4.md §3–§6, §10).

Every clause runs over the wire on real Git repositories the harness creates with the ``git``
program in temporary directories (never a mock). Around each carrier request the harness
hashes what spec-phase4 §3.9 says belongs to the user — the index file (bytes, inode, mtime),
every ref outside ``refs/maka/``, ``HEAD``, the stash and its reflog, the configuration, every
worktree file (content, mode, link target) and the user's lock files — and fails the clause on
any difference.

Spec choices: the harness names the workspace identity of carrier operations (``workspace:v1:<uuid>``,
spec 20 §6.2); the resume clauses use ``checkpoint.run_turn`` with a script that runs out after
its ``Write`` (the run ends ``failed`` at a safe boundary, a resume candidate without repair)
and compare park **codes** only (spec-phase4 §6.2, §11.3), never messages.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import uuid
from pathlib import Path
from typing import Any, Mapping

import pytest

from conformance.clauses import ClauseMismatch, clause, expect_equal, expect_ok
from conformance.suite.test_runtime_crash import call_on, release, workspace_dir

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="the checkpoint clauses need the git program")

CAP = "workspace.checkpoint"
RUN_TIMEOUT = 120.0
#: The harness's own git runs hermetic too: no user or system configuration, a fixed identity.
_GIT_ENV = {
    "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull, "GIT_TERMINAL_PROMPT": "0",
    "GIT_AUTHOR_NAME": "Harness", "GIT_AUTHOR_EMAIL": "harness@example.invalid",
    "GIT_COMMITTER_NAME": "Harness", "GIT_COMMITTER_EMAIL": "harness@example.invalid",
    "LANG": "C", "LC_ALL": "C",
}
WRITE = {"toolCalls": [{"id": "call-1", "name": "Write", "args": {"path": "notes.txt", "content": "after"}}]}
FIRST_ONLY = {"userMessage": "write the notes", "protocol": "t1_after_preflight_v1", "steps": [WRITE]}


def git(ws: str | Path, *args: str) -> str:
    env = {key: value for key, value in os.environ.items() if not key.startswith("GIT_")}
    env.update(_GIT_ENV)
    done = subprocess.run(["git", "-C", str(ws), *args], env=env, capture_output=True, text=True, timeout=60,
                          stdin=subprocess.DEVNULL, check=False)
    if done.returncode != 0:
        raise ClauseMismatch(f"harness git {' '.join(args)} failed: {done.stderr.strip()}")
    return done.stdout


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def new_repo(tmp_path: Path, name: str = "ws") -> str:
    """A repository with one commit, a staged change, an unstaged edit, an untracked file, an
    ignored file, an executable and a stash: every kind of user state §3.9 protects."""
    ws = workspace_dir(tmp_path, name)
    git(ws, "init", "-q", "-b", "main")
    root = Path(ws)
    _write(root / "README.md", "hello\n")
    _write(root / ".gitignore", "*.log\n")
    _write(root / "src" / "app.py", "print('v1')\n")
    (root / "run.sh").write_text("#!/bin/sh\n", encoding="utf-8")
    os.chmod(root / "run.sh", 0o755)
    git(ws, "add", "-A")
    git(ws, "commit", "-q", "-m", "initial")
    _write(root / "README.md", "stashed edit\n")
    git(ws, "stash", "-q")
    _write(root / "src" / "app.py", "print('v2 staged')\n")
    git(ws, "add", "src/app.py")
    _write(root / "README.md", "hello, unstaged\n")
    _write(root / "untracked.txt", "new file\n")
    _write(root / "debug.log", "ignored\n")
    return ws


def _worktree(ws: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for base, dirs, files in os.walk(ws):
        dirs[:] = sorted(d for d in dirs if not (base == ws and d == ".git"))
        for name in sorted(files + [d for d in dirs if os.path.islink(os.path.join(base, d))]):
            path = os.path.join(base, name)
            info = os.lstat(path)
            rel = os.path.relpath(path, ws)
            if os.path.islink(path):
                out[rel] = ("link", os.readlink(path))
            else:
                out[rel] = (oct(info.st_mode & 0o777), hashlib.sha256(Path(path).read_bytes()).hexdigest())
    return out


def user_state(ws: str) -> dict[str, Any]:
    """spec-phase4 §3.9: what must be byte-identical around every carrier operation."""
    gdir = Path(ws) / ".git"
    index = gdir / "index"
    info = os.stat(index)
    stash_log = gdir / "logs" / "refs" / "stash"
    return {
        "index": (hashlib.sha256(index.read_bytes()).hexdigest(), info.st_ino, info.st_mtime_ns),
        "refs": [line for line in git(ws, "for-each-ref", "--format=%(refname) %(objectname)").splitlines()
                 if not line.startswith("refs/maka/")],
        "HEAD": (gdir / "HEAD").read_bytes().decode(),
        "stash": stash_log.read_bytes().decode() if stash_log.exists() else None,
        "config": (gdir / "config").read_bytes().decode(),
        "worktree": _worktree(ws),
        "locks": sorted(p.name for p in gdir.glob("*.lock")),
    }


def expect_untouched(before: Mapping[str, Any], ws: str, what: str) -> None:
    after = user_state(ws)
    changed = sorted(key for key in before if before[key] != after[key])
    if changed:
        raise ClauseMismatch(f"{what} changed the user's {', '.join(changed)} (spec-phase4 §3.9)",
                             evidence={"changed": changed, "before": {k: before[k] for k in changed},
                                       "after": {k: after[k] for k in changed}})


def identity() -> str:
    return f"workspace:v1:{uuid.uuid4()}"


def capture(maka: Any, ws: str, ident: str) -> Mapping[str, Any]:
    return expect_ok(call_on(maka, "checkpoint.capture", {"workspace": ws, "workspaceIdentity": ident},
                             timeout=RUN_TIMEOUT), "checkpoint.capture")


def expect_code(reply: Any, codes: tuple[str, ...], what: str) -> None:
    if reply.ok:
        raise ClauseMismatch(f"{what}: answered ok, expected one of {list(codes)}", evidence={"result": reply.result})
    code = (reply.error or {}).get("code")
    if code not in codes:
        raise ClauseMismatch(f"{what}: answered {code}, expected one of {list(codes)}", evidence={"error": reply.error})


def maka_refs(ws: str) -> list[str]:
    return git(ws, "for-each-ref", "--format=%(refname)", "refs/maka/").split()


@clause("CHECKPOINT-CAPTURE-001", spec="spec-phase4 §3.4, §3.4.6, §3.9", capability=CAP,
        title="capture leaves the user's branch, index, stash, config and worktree byte-identical and "
              "publishes one ref under refs/maka/checkpoints/ holding the worktree as it is")
def test_capture_leaves_user_state_identical(maka: Any, tmp_path: Path) -> None:
    ws = new_repo(tmp_path)
    ident = identity()
    before = user_state(ws)
    result = capture(maka, ws, ident)
    expect_untouched(before, ws, "checkpoint.capture")
    ref = str(result["checkpointRef"])
    if not ref.startswith(f"refs/maka/checkpoints/{ident.rsplit(':', 1)[1]}/"):
        raise ClauseMismatch(f"the checkpoint ref {ref!r} is outside refs/maka/checkpoints/<uuid>/ (spec-phase4 §3.4.6)")
    expect_equal([ref], maka_refs(ws), what="refs under refs/maka/ after one capture")
    expect_equal(str(result["commitOid"]), git(ws, "rev-parse", "--verify", ref + "^{commit}").strip(),
                 what="the commit the ref names")
    # What was captured is the worktree (unstaged and untracked included, ignored excluded), not the index.
    show = git(ws, "show", f"{ref}:README.md")
    expect_equal("hello, unstaged\n", show, what="README.md in the checkpoint (the worktree's bytes, §2.2)")
    files = set(git(ws, "ls-tree", "-r", "--name-only", ref).split())
    for path in ("untracked.txt", "src/app.py", "run.sh", ".gitignore"):
        if path not in files:
            raise ClauseMismatch(f"{path} is missing from the checkpoint tree (spec-phase4 §2.2)", evidence={"tree": sorted(files)})
    if "debug.log" in files:
        raise ClauseMismatch("the ignored debug.log was captured (spec-phase4 §2.2)", evidence={"tree": sorted(files)})
    before = user_state(ws)
    verified = expect_ok(call_on(maka, "checkpoint.verify", {"workspace": ws, "checkpointRef": ref,
                                                             "policyHash": result["policyHash"]}), "checkpoint.verify")
    expect_equal(result["treeOid"], verified["treeOid"], what="verify's tree = capture's tree")
    listed = expect_ok(call_on(maka, "checkpoint.list", {"workspace": ws, "workspaceIdentity": ident}), "checkpoint.list")
    expect_equal([ref], [item["checkpointRef"] for item in listed["checkpoints"]], what="checkpoint.list")
    expect_untouched(before, ws, "checkpoint.verify / checkpoint.list")


@clause("CHECKPOINT-RESTORE-001", spec="spec-phase4 §3.6, §3.9, §7.2", capability=CAP,
        title="restore materializes the checkpoint into a new directory only; the workspace, or a directory "
              "inside it or one that exists, is refused and the current directory never changes")
def test_restore_goes_to_a_new_directory(maka: Any, tmp_path: Path) -> None:
    ws = new_repo(tmp_path)
    result = capture(maka, ws, identity())
    ref, policy = result["checkpointRef"], result["policyHash"]
    _write(Path(ws) / "README.md", "edited after the capture\n")
    (Path(ws) / "untracked.txt").unlink()
    before = user_state(ws)
    params = {"workspace": ws, "checkpointRef": ref, "policyHash": policy}
    for destination, codes in ((ws, ("restore_target_exists", "restore_target_inside_workspace")),
                               (os.path.join(ws, "restored"), ("restore_target_inside_workspace",)),
                               (os.path.join(ws, ".git", "restored"), ("restore_target_inside_workspace",)),
                               (str(tmp_path), ("restore_target_exists",))):
        reply = call_on(maka, "checkpoint.restore", {**params, "destination": destination}, timeout=RUN_TIMEOUT)
        expect_code(reply, codes, f"restore into {destination}")
        expect_untouched(before, ws, f"a refused restore into {destination}")
    destination = os.path.join(os.path.realpath(tmp_path), "restored")
    restored = expect_ok(call_on(maka, "checkpoint.restore", {**params, "destination": destination},
                                 timeout=RUN_TIMEOUT), "checkpoint.restore")
    expect_untouched(before, ws, "checkpoint.restore")
    expect_equal(result["treeOid"], restored["treeOid"], what="the restored tree")
    root = Path(destination)
    expect_equal("hello, unstaged\n", (root / "README.md").read_text(encoding="utf-8"), what="restored README.md")
    expect_equal("new file\n", (root / "untracked.txt").read_text(encoding="utf-8"), what="restored untracked.txt")
    expect_equal(True, os.access(root / "run.sh", os.X_OK), what="restored run.sh keeps its executable bit")
    expect_equal(False, (root / ".git").exists(), what="a .git in the restored directory (§3.6: a plain directory)")


def _checkpoint_run(maka: Any, tmp_path: Path) -> str:
    """A committed repository and a checkpoint-mode turn that stops after its Write (failed at
    a safe boundary): the resume candidate of the resume clauses."""
    ws = workspace_dir(tmp_path)
    git(ws, "init", "-q", "-b", "main")
    _write(Path(ws) / "README.md", "hello\n")
    git(ws, "add", "README.md")
    git(ws, "commit", "-q", "-m", "initial")
    try:
        summary = expect_ok(call_on(maka, "checkpoint.run_turn", {"workspace": ws, "script": FIRST_ONLY},
                                    timeout=RUN_TIMEOUT), "checkpoint.run_turn")
    finally:
        release(maka, ws)
    report = summary.get("workspaceCheckpoints") or {}
    if report.get("captureFailures") or not report.get("boundaries"):
        raise ClauseMismatch("checkpoint.run_turn committed no boundary on an eligible repository (spec-phase4 §5.1)",
                             evidence={"workspaceCheckpoints": report})
    expect_equal("failed", summary.get("status"), what="the source turn's status (its script runs out)")
    return ws


def _resume(maka: Any, ws: str, intent: str = "none") -> Mapping[str, Any]:
    try:
        return expect_ok(call_on(maka, "checkpoint.resume", {"workspace": ws, "workspaceIntent": intent},
                                 timeout=RUN_TIMEOUT), "checkpoint.resume")
    finally:
        release(maka, ws)


def _expect_parked(outcome: Mapping[str, Any], reason: str, what: str) -> None:
    if outcome.get("parked") is not True or list(outcome.get("rejectionReasons") or []) != [reason]:
        raise ClauseMismatch(f"{what}: expected a park with {reason} (spec-phase4 §6.2)",
                             evidence={"outcome": dict(outcome)})


@clause("CHECKPOINT-RESUME-001", spec="spec-phase4 §6.2 (h), §6.3, §7.1", capability=CAP,
        title="a workspace edited since its boundary parks resume with workspace_content_drift and is not "
              "changed; only the user's rebaseline continues")
def test_drift_parks_resume(maka: Any, tmp_path: Path) -> None:
    ws = _checkpoint_run(maka, tmp_path)
    _write(Path(ws) / "README.md", "edited by the user\n")
    _expect_parked(_resume(maka, ws), "workspace_content_drift", "resume of a drifted workspace")
    expect_equal("edited by the user\n", (Path(ws) / "README.md").read_text(encoding="utf-8"),
                 what="README.md after the parked resume (parking changes nothing)")
    outcome = _resume(maka, ws, "rebaseline")
    if outcome.get("parked"):
        raise ClauseMismatch("the user's rebaseline of a drifted workspace parked (spec-phase4 §6.3, §7.1)",
                             evidence={"outcome": dict(outcome)})
    expect_equal("edited by the user\n", (Path(ws) / "README.md").read_text(encoding="utf-8"),
                 what="README.md after the rebaseline (it continues from the current files)")


@clause("CHECKPOINT-RESUME-002", spec="spec-phase4 §4.2, §6.2 (g)", capability=CAP,
        title="a committed boundary whose artifact is missing fails closed: resume parks with "
              "workspace_checkpoint_missing")
def test_missing_artifact_fails_closed(maka: Any, tmp_path: Path) -> None:
    ws = _checkpoint_run(maka, tmp_path)
    for ref in maka_refs(ws):
        git(ws, "update-ref", "-d", ref)
    _expect_parked(_resume(maka, ws), "workspace_checkpoint_missing", "resume with the boundary's ref deleted")


@clause("CHECKPOINT-AUTHORITY-001", spec="spec-phase4 §3.1, §3.7, §6.2", capability=CAP,
        title="the carrier never approves resume: its verify answers ok and compare reports the drift, "
              "and resume still parks; an untouched workspace resumes")
def test_carrier_never_approves(maka: Any, tmp_path: Path) -> None:
    (tmp_path / "clean").mkdir()
    clean = _checkpoint_run(maka, tmp_path / "clean")
    outcome = _resume(maka, clean)
    if outcome.get("parked"):
        raise ClauseMismatch("an untouched checkpoint-mode workspace parked on resume (spec-phase4 §6.2)",
                             evidence={"outcome": dict(outcome)})
    (tmp_path / "drift").mkdir()
    ws = _checkpoint_run(maka, tmp_path / "drift")
    os.chmod(Path(ws) / "notes.txt", 0o755)  # only the executable bit changes
    ref = maka_refs(ws)[-1]
    # §3.4 step 8: the commit names its policy in a trailer; the harness asks the carrier with it.
    policy = git(ws, "log", "-1", "--format=%(trailers:key=Maka-Checkpoint-Policy,valueonly)", ref).strip()
    params = {"workspace": ws, "checkpointRef": ref, "policyHash": policy}
    expect_ok(call_on(maka, "checkpoint.verify", params, timeout=RUN_TIMEOUT), "checkpoint.verify")
    drift = expect_ok(call_on(maka, "checkpoint.compare", params, timeout=RUN_TIMEOUT), "checkpoint.compare")
    if drift.get("clean") is not False:
        raise ClauseMismatch("checkpoint.compare saw no drift after a mode change (spec-phase4 §3.7)",
                             evidence={"compare": dict(drift)})
    _expect_parked(_resume(maka, ws), "workspace_content_drift", "resume after a mode change the carrier verified")


@clause("CHECKPOINT-COLLECT-001", spec="spec-phase4 §3.8, §4.1, §3.9", capability=CAP,
        title="an orphan artifact (no fact names it) older than the grace period is collected; a live ref "
              "and a young orphan are kept; the user's state is untouched")
def test_orphans_are_collected(maka: Any, tmp_path: Path) -> None:
    ws = new_repo(tmp_path)
    ident = identity()
    live = capture(maka, ws, ident)["checkpointRef"]
    orphan = capture(maka, ws, ident)["checkpointRef"]
    listed = expect_ok(call_on(maka, "checkpoint.list", {"workspace": ws, "workspaceIdentity": ident}), "checkpoint.list")
    created = max(int(item["createdAtMs"]) for item in listed["checkpoints"])
    before = user_state(ws)
    params = {"workspace": ws, "workspaceIdentity": ident, "liveRefs": [live], "graceSeconds": 600}
    young = expect_ok(call_on(maka, "checkpoint.collect", {**params, "nowMs": created}), "checkpoint.collect")
    expect_equal([], list(young["collected"]), what="collected within the grace period")
    old = expect_ok(call_on(maka, "checkpoint.collect", {**params, "nowMs": created + 601_000}), "checkpoint.collect")
    expect_equal([orphan], list(old["collected"]), what="collected after the grace period")
    expect_equal([live], maka_refs(ws), what="refs under refs/maka/ after collection")
    expect_untouched(before, ws, "checkpoint.collect")


#: spec-phase4 §1.2's worked example: the exact canonical bytes of a boundary.
EXAMPLE = ('{"checkpointPolicyHash":"sha256:1111111111111111111111111111111111111111111111111111111111111111",'
           '"checkpointRef":"refs/maka/checkpoints/123e4567-e89b-42d3-a456-426614174000/1767225600000-'
           '0123456789abcdef0123456789abcdef","immutableRuntimeDigest":"sha256:22222222222222222222222222222222'
           '22222222222222222222222222222222","immutableRuntimeHighWater":7,"workspaceEpoch":1,'
           '"workspaceIdentity":"workspace:v1:123e4567-e89b-42d3-a456-426614174000"}')
#: spec-phase4 §2.5: the reference's default policy document and its pinned hash (a policy any
#: implementation can hash: §2.4 fixes the function, not the implementation's own defaults).
DEFAULT_POLICY = {
    "attributes": "reject_conversion", "emptyDirectories": "not_recorded",
    "excludedPaths": [".maka-effects.jsonl", ".maka-workspace.json", ".maka/", "runtime.sqlite",
                      "runtime.sqlite-journal", "runtime.sqlite-shm", "runtime.sqlite-wal"],
    "executableBit": "recorded", "ignoreRules": "gitignore_files_and_info_exclude", "ignoredFiles": "excluded",
    "maxFileBytes": 104857600, "maxFiles": 100000, "maxTotalBytes": 2147483648, "pathEncoding": "utf8_required",
    "protocol": "maka_checkpoint_policy_v1", "specialFiles": "not_recorded", "submodules": "reject",
    "symlinks": "recorded_as_links", "trackedFiles": "worktree_content", "untrackedFiles": "included_unless_ignored",
}
DEFAULT_POLICY_HASH = "sha256:ab23d8c63ab28bcb66cec95a5d51d191a3b21ab579c6058ba3b6eb96386c5eca"


def _pure(maka: Any, op: str, params: Mapping[str, Any]) -> Any:
    return call_on(maka, op, params)


@clause("CHECKPOINT-CODEC-001", spec="spec-phase4 §1.1, §1.2, §2.4, §2.5, §12 items 1–5", capability=CAP,
        title="the boundary codec round-trips the canonical bytes and rejects bad boundaries at the offending key; "
              "the policy hash is the pinned value and changes with any limit; a bad policy is refused")
def test_codec_and_policy_hash_vectors(maka: Any) -> None:
    import json

    decoded = expect_ok(_pure(maka, "checkpoint.boundary_decode", {"text": EXAMPLE}), "checkpoint.boundary_decode")
    boundary = dict(decoded["boundary"])
    expect_equal(json.loads(EXAMPLE), boundary, what="the §1.2 example decoded")
    encoded = expect_ok(_pure(maka, "checkpoint.boundary_encode", {"boundary": boundary}), "checkpoint.boundary_encode")
    expect_equal(EXAMPLE, encoded["canonical"], what="the §1.2 example re-encoded (byte-identical)")
    bad: list[tuple[str, Any, str]] = [
        ("an extra key", {**boundary, "extra": 1}, "/extra"),
        ("workspaceEpoch 0", {**boundary, "workspaceEpoch": 0}, "/workspaceEpoch"),
        ("workspaceEpoch true", {**boundary, "workspaceEpoch": True}, "/workspaceEpoch"),
        ("workspaceEpoch 1.5", {**boundary, "workspaceEpoch": 1.5}, "/workspaceEpoch"),
        ('workspaceEpoch "1"', {**boundary, "workspaceEpoch": "1"}, "/workspaceEpoch"),
        ("workspaceEpoch 2^53", {**boundary, "workspaceEpoch": 2 ** 53}, "/workspaceEpoch"),
        ("checkpointRef refs/heads/main", {**boundary, "checkpointRef": "refs/heads/main"}, "/checkpointRef"),
        ("a ref with 12 digits", {**boundary, "checkpointRef": boundary["checkpointRef"].replace("/1767225600000-", "/176722560000-")},
         "/checkpointRef"),
        ("not an object", [], ""),
    ]
    for what, value, pointer in bad:
        for op, params in (("checkpoint.boundary_encode", {"boundary": value}),
                           ("checkpoint.boundary_decode", {"text": json.dumps(value)})):
            reply = _pure(maka, op, params)
            expect_code(reply, ("invalid_workspace_boundary",), f"{op} of a boundary with {what} (§12 items 4–5)")
            found = ((reply.error or {}).get("details") or {}).get("detail")
            expect_equal(pointer, found, what=f"{op}: the JSON pointer of {what} (§1.2)")
    hashed = expect_ok(_pure(maka, "checkpoint.policy_hash", {"policy": DEFAULT_POLICY}), "checkpoint.policy_hash")
    expect_equal(DEFAULT_POLICY_HASH, hashed["policyHash"], what="the hash of the §2.5 policy (§12 item 1)")
    other = expect_ok(_pure(maka, "checkpoint.policy_hash", {"policy": {**DEFAULT_POLICY, "maxFiles": 100001}}),
                      "checkpoint.policy_hash")
    if other["policyHash"] == DEFAULT_POLICY_HASH:
        raise ClauseMismatch("maxFiles one higher gives the same policy hash (spec-phase4 §2.4, §12 item 1)")
    paths = DEFAULT_POLICY["excludedPaths"]
    for what, excluded in (("unsorted", list(reversed(paths))), ("duplicated", paths + paths[-1:]),
                           ("absolute", ["/etc"] + paths), ("with ..", paths + ["x/../y"])):
        reply = _pure(maka, "checkpoint.policy_hash", {"policy": {**DEFAULT_POLICY, "excludedPaths": excluded}})
        expect_code(reply, ("invalid_checkpoint_policy",), f"a policy with excludedPaths {what} (§12 item 2)")


# ---------------------------------------------------------------- the isolated restore transition (§7.2)


@clause("CHECKPOINT-ISOLATED-RESTORE-001", spec="spec-phase4 §3.6 step 1, §6.3, §7.2, §10.3", capability=CAP,
        title="resume with workspaceIntent {isolatedRestore: DEST} continues a drifted session in DEST: a "
              "maka.workspace.restored fact with a new identity, epoch + 1 and the same ref; the user's "
              "directory, index and refs are not written; an existing DEST is refused before anything runs")
def test_isolated_restore_transition(maka: Any, tmp_path: Path) -> None:
    ws = _checkpoint_run(maka, tmp_path)
    _write(Path(ws) / "README.md", "edited by the user\n")
    ref = maka_refs(ws)[-1]
    captured = set(git(ws, "ls-tree", "-r", "--name-only", ref).split()) | {"README.md"}
    before = user_state(ws)
    before["worktree"] = {path: value for path, value in before["worktree"].items() if path in captured}
    taken = workspace_dir(tmp_path, "taken")

    def ask(destination: str) -> Any:
        try:
            return call_on(maka, "checkpoint.resume", {"workspace": ws, "workspaceIntent": {"isolatedRestore": destination}},
                           timeout=RUN_TIMEOUT)
        finally:
            release(maka, ws)

    expect_code(ask(taken), ("restore_target_exists",), "an isolated restore into an existing directory (§3.6 step 1)")
    destination = os.path.join(os.path.realpath(tmp_path), "restored")
    outcome = expect_ok(ask(destination), "checkpoint.resume (isolatedRestore)")
    if outcome.get("parked"):
        raise ClauseMismatch("the user's isolated restore of a drifted workspace parked (spec-phase4 §6.3, §7.2)",
                             evidence={"outcome": dict(outcome)})
    fact = outcome.get("isolatedRestore")
    if not isinstance(fact, Mapping) or not isinstance(fact.get("boundary"), Mapping) or not isinstance(fact.get("from"), Mapping):
        raise ClauseMismatch("no restored fact payload under isolatedRestore (protocol §4.6)", evidence={"outcome": dict(outcome)})
    new, old = fact["boundary"], fact["from"]
    expect_equal(ref, new.get("checkpointRef"), what="the restored boundary's checkpointRef (the same artifact, §7.2 step 4)")
    expect_equal(ref, old.get("checkpointRef"), what="the `from` boundary's checkpointRef (the current boundary)")
    expect_equal(int(old["workspaceEpoch"]) + 1, new.get("workspaceEpoch"), what="the restored boundary's epoch (§7.3)")
    expect_equal(1, new.get("immutableRuntimeHighWater"), what="the restored boundary's high-water (§7.2 step 4)")
    if new.get("workspaceIdentity") == old.get("workspaceIdentity"):
        raise ClauseMismatch("the restored directory kept the old workspace identity (spec-phase4 §2.2, §7.2 step 3)",
                             evidence={"fact": dict(fact)})
    root = Path(destination)
    expect_equal("hello\n", (root / "README.md").read_text(encoding="utf-8"), what="README.md in DEST (the boundary's tree)")
    expect_equal("after", (root / "notes.txt").read_text(encoding="utf-8"), what="notes.txt in DEST (the boundary's tree)")
    after = user_state(ws)
    after["worktree"] = {path: value for path, value in after["worktree"].items() if path in captured}
    changed = sorted(key for key in before if before[key] != after[key])
    if changed:
        raise ClauseMismatch(f"the isolated restore changed the user's {', '.join(changed)} (spec-phase4 §3.9, §7.2 step 5)",
                             evidence={"changed": changed})
