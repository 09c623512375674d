"""One clause per eligibility code of spec-phase4 §11.1 (``CHECKPOINT-ELIGIBILITY-<code>``), and
one for what §3.3 says is eligible.

Each clause builds the condition on a real repository with the ``git`` program (§12 items
6–17), asks ``checkpoint.eligibility`` and then ``checkpoint.capture`` (which re-checks every
rule, §3.4 step 1), and requires the code (and the ``details`` key §3.3 fixes: the operation,
the submodule or index reason, the path) — never a message. A refusal writes nothing: the
whole directory, ``.git`` and its object database included, is byte-identical afterwards (§3.1,
§3.9; §12 item 13: a file over ``maxFileBytes`` is refused before it is hashed).

The three limit codes use the §10.2 ``policy`` parameter: the §2.5 document with small limits.

Codes the harness cannot provoke portably are reported *not run* with the reason, never passed:

* ``git_version_unsupported`` — it needs a ``git`` older than 2.25 on the implementation's
  ``PATH``; the harness runs the ``git`` it finds and will not substitute a fake program;
* ``object_format_unsupported`` — the ``git`` program creates and opens only ``sha1`` and
  ``sha256`` repositories, so no repository Git accepts has another format;
* ``repository_ownership_unsafe`` — needs a repository owned by another user, which only a
  harness running as root can create (it then ``chown``\\ s the workspace to ``nobody``);
* ``git_unavailable`` runs in a dedicated process whose ``PATH`` lacks every directory holding
  ``git``; it is not run when the implementation cannot start without one of them;
* ``path_not_utf8`` is not run where the file system refuses a non-UTF-8 name.
"""

from __future__ import annotations

import os
import shutil
import stat
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from conformance.clauses import ClauseMismatch, clause, expect_equal, expect_ok
from conformance.suite.checkpoint._support import (
    RUN_TIMEOUT,
    expect_error,
    expect_same_tree,
    policy_with,
    tree_snapshot,
)
from conformance.suite.test_checkpoint import CAP, _write, git, identity, new_repo
from conformance.suite.test_runtime_crash import call_on, failure

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="the checkpoint clauses need the git program")

#: spec-phase4 §11.1, in §3.3's order.
CODES: tuple[str, ...] = (
    "workspace_not_found", "workspace_not_a_directory", "git_unavailable", "git_version_unsupported",
    "repository_ownership_unsafe", "not_a_git_repository", "bare_repository", "workspace_not_worktree_root",
    "object_format_unsupported", "repository_operation_in_progress", "submodules_unsupported",
    "index_unsupported", "sparse_checkout_unsupported", "path_not_utf8", "conversion_attributes_unsupported",
    "too_many_files", "file_too_large", "workspace_too_large",
)

#: Why a code is not provoked here (reported "not run: <reason>").
NOT_PORTABLE: Mapping[str, str] = {
    "git_version_unsupported": "needs a git older than 2.25 on the implementation's PATH; the harness uses the "
                               "real git it finds and never substitutes a fake program",
    "object_format_unsupported": "the git program creates and opens only sha1 and sha256 repositories, so no "
                                 "repository Git accepts has another object format",
}


class Case:
    """One provoked condition: the workspace, the ``details`` §3.3 fixes, an optional policy."""

    def __init__(self, workspace: str, details: Mapping[str, str] | None = None,
                 policy: Mapping[str, Any] | None = None, what: str = "") -> None:
        self.workspace, self.details, self.policy, self.what = workspace, dict(details or {}), policy, what


def _repo(root: Path, name: str = "ws") -> str:
    """A committed repository with two tracked files."""
    path = root / name
    path.mkdir()
    ws = os.path.realpath(path)
    git(ws, "init", "-q", "-b", "main")
    _write(Path(ws) / "README.md", "hello\n")
    _write(Path(ws) / "src" / "app.py", "print('v1')\n")
    git(ws, "add", "-A")
    git(ws, "commit", "-q", "-m", "initial")
    return ws


def _operations(root: Path) -> Iterator[Case]:
    """§3.3 check 9 and §12 item 9: each in-progress operation Git itself leaves behind."""
    def diverged(name: str) -> str:
        ws = _repo(root, name)
        git(ws, "checkout", "-q", "-b", "other")
        _write(Path(ws) / "README.md", "other side\n")
        git(ws, "commit", "-q", "-am", "other")
        git(ws, "checkout", "-q", "main")
        _write(Path(ws) / "README.md", "main side\n")
        git(ws, "commit", "-q", "-am", "main")
        return ws

    ws = diverged("merge")
    _git_may_fail(ws, "merge", "-q", "other")
    yield Case(ws, {"operation": "merge"}, what="a merge with conflicts")
    ws = diverged("rebase")
    _git_may_fail(ws, "-c", "sequence.editor=sed -i -e s/^pick/edit/", "rebase", "-q", "-i", "other")
    yield Case(ws, {"operation": "rebase"}, what="an interactive rebase stopped on edit")
    ws = diverged("cherry")
    _git_may_fail(ws, "cherry-pick", "other")
    yield Case(ws, {"operation": "cherry_pick"}, what="a cherry-pick with conflicts")
    ws = diverged("revert")
    _write(Path(ws) / "README.md", "third\n")
    git(ws, "commit", "-q", "-am", "third")
    _git_may_fail(ws, "revert", "--no-edit", "HEAD~1")
    yield Case(ws, {"operation": "revert"}, what="a revert with conflicts")
    ws = diverged("am")
    patch = git(ws, "format-patch", "-1", "--stdout", "other")
    (root / "other.patch").write_text(patch, encoding="utf-8")
    _git_may_fail(ws, "am", str(root / "other.patch"))
    yield Case(ws, {"operation": "am"}, what="git am stopped on a conflict")
    ws = diverged("sequencer")
    _write(Path(ws) / "extra.txt", "x\n")  # a second commit on other, so the pick is a sequence
    git(ws, "checkout", "-q", "other")
    git(ws, "add", "extra.txt")
    git(ws, "commit", "-q", "-m", "extra")
    git(ws, "checkout", "-q", "main")
    _git_may_fail(ws, "cherry-pick", "other~1", "other")
    _write(Path(ws) / "README.md", "resolved\n")
    git(ws, "add", "README.md")
    git(ws, "commit", "-q", "-m", "resolved")  # clears CHERRY_PICK_HEAD; .git/sequencer/ stays
    yield Case(ws, {"operation": "sequencer"}, what="a multi-commit cherry-pick committed by hand, not continued")


def _git_may_fail(ws: str, *args: str) -> None:
    """A Git command expected to stop half-way (a conflict): its exit status is not checked."""
    try:
        git(ws, *args)
    except ClauseMismatch:
        pass


def _cases(code: str, root: Path) -> Iterator[Case]:
    """The conditions of §12 (items 6–17) that must each answer ``code``."""
    if code == "workspace_not_found":
        yield Case(str(root / "missing"), what="a path that does not exist")
    elif code == "workspace_not_a_directory":
        (root / "file.txt").write_text("not a directory\n", encoding="utf-8")
        yield Case(str(root / "file.txt"), what="a regular file")
    elif code == "not_a_git_repository":
        (root / "plain").mkdir()
        yield Case(str(root / "plain"), what="a plain directory")
    elif code == "bare_repository":
        git(root, "init", "-q", "--bare", "bare.git")
        yield Case(str(root / "bare.git"), what="a bare repository")
        ws = _repo(root)
        yield Case(os.path.join(ws, ".git"), what="the Git directory of a repository")
    elif code == "workspace_not_worktree_root":
        ws = _repo(root)
        yield Case(os.path.join(ws, "src"), what="a subdirectory of a worktree")
    elif code == "repository_operation_in_progress":
        yield from _operations(root)
    elif code == "submodules_unsupported":
        ws = _repo(root, "gitmodules")
        _write(Path(ws) / ".gitmodules", '[submodule "lib"]\n\tpath = lib\n\turl = ../lib\n')
        yield Case(ws, {"reason": "gitmodules"}, what="a .gitmodules file")
        ws = _repo(root, "gitlink")
        head = git(ws, "rev-parse", "HEAD").strip()
        git(ws, "update-index", "--add", "--cacheinfo", f"160000,{head},lib")
        yield Case(ws, {"reason": "gitlink"}, what="a gitlink in the index")
        ws = _repo(root, "nested")
        inner = Path(ws) / "vendor" / "inner"
        inner.mkdir(parents=True)
        git(inner, "init", "-q", "-b", "main")
        _write(inner / "lib.txt", "nested\n")
        yield Case(ws, {"reason": "nested_repository"}, what="an untracked nested repository")
    elif code == "index_unsupported":
        ws = _repo(root)
        git(ws, "config", "core.splitIndex", "true")
        git(ws, "update-index", "--split-index")
        yield Case(ws, {"reason": "link"}, what="a split index (core.splitIndex, §12 item 12)")
    elif code == "sparse_checkout_unsupported":
        ws = _repo(root)
        _write(Path(ws) / "docs" / "guide.md", "guide\n")
        git(ws, "add", "-A")
        git(ws, "commit", "-q", "-m", "docs")
        git(ws, "sparse-checkout", "set", "src")
        yield Case(ws, what="sparse-checkout set")
    elif code == "path_not_utf8":
        ws = _repo(root)
        try:
            with open(os.path.join(os.fsencode(ws), b"bad-\xff.txt"), "wb") as handle:
                handle.write(b"x\n")
        except OSError as exc:
            pytest.skip(f"not run: this file system refuses a non-UTF-8 file name ({exc.strerror})")
        yield Case(ws, what="an untracked file whose name is not UTF-8")
    elif code == "conversion_attributes_unsupported":
        ws = _repo(root)
        _write(Path(ws) / ".gitattributes", "*.txt text eol=crlf\n")
        _write(Path(ws) / "notes.txt", "line\n")
        yield Case(ws, {"path": "notes.txt"}, what=".gitattributes *.txt text eol=crlf")
    elif code == "too_many_files":
        ws = _repo(root)  # README.md, src/app.py
        _write(Path(ws) / "third.txt", "3\n")
        yield Case(ws, policy=policy_with(maxFiles=2), what="maxFiles + 1 files (§12 item 14)")
    elif code == "file_too_large":
        ws = _repo(root)
        _write(Path(ws) / "data.bin", "x" * 101)
        yield Case(ws, {"path": "data.bin"}, policy=policy_with(maxFileBytes=100),
                   what="an untracked file of maxFileBytes + 1 bytes (§12 item 13)")
    elif code == "workspace_too_large":
        # §3.3 check 17 measures untracked files before anything is hashed (tracked sizes only
        # after staging), so the untracked files alone exceed the limit.
        ws = _repo(root)
        for name in ("a.txt", "b.txt", "c.txt"):
            _write(Path(ws) / name, name[0] * 40)
        yield Case(ws, policy=policy_with(maxFileBytes=50, maxTotalBytes=90), what="untracked files within "
                   "maxFileBytes whose sum exceeds maxTotalBytes")
    else:  # pragma: no cover - every code is dispatched above or in the clause
        raise AssertionError(code)


def _ask(client: Any, op: str, case: Case, extra: Mapping[str, Any] | None = None) -> Any:
    params: dict[str, Any] = {"workspace": case.workspace, **(extra or {})}
    if case.policy is not None:
        params["policy"] = dict(case.policy)
    return call_on(client, op, params, timeout=RUN_TIMEOUT)


def check_case(client: Any, code: str, case: Case, root: Path) -> None:
    """§3.3: eligibility answers ``code`` (with §3.3's details); capture refuses with the same
    code; neither writes anything under ``root``."""
    before = tree_snapshot(root)
    reply = _ask(client, "checkpoint.eligibility", case)
    result = expect_ok(reply, "checkpoint.eligibility")
    if result.get("eligible") is not False or result.get("code") != code:
        raise ClauseMismatch(f"checkpoint.eligibility of {case.what}: expected eligible false with {code}",
                             evidence={"result": dict(result)})
    details = result.get("details") or {}
    for key, value in case.details.items():
        expect_equal(value, details.get(key), what=f"details.{key} of {code} for {case.what} (spec-phase4 §3.3)")
    expect_same_tree(before, root, f"checkpoint.eligibility of {case.what}")
    captured = _ask(client, "checkpoint.capture", case, {"workspaceIdentity": identity()})
    expect_error(captured, code, f"checkpoint.capture of {case.what} (§3.4 step 1 re-checks eligibility)",
                 **case.details)
    expect_same_tree(before, root, f"a refused checkpoint.capture of {case.what}")


def _git_free_path() -> str:
    """The harness's ``PATH`` without every directory that holds a ``git`` program."""
    keep = [d for d in os.environ.get("PATH", "").split(os.pathsep)
            if d and not os.access(os.path.join(d, "git"), os.X_OK)]
    return os.pathsep.join(keep)


def _git_unavailable(maka: Any, root: Path) -> None:
    from crashlab import ProtocolFailure

    ws = _repo(root)
    env = {**os.environ, "PATH": _git_free_path()}
    try:
        spawned = maka.fresh(env=env)
        client = spawned.__enter__()
    except Exception as exc:  # the session's private ImplementationUnavailable, matched by name
        if type(exc).__name__ != "ImplementationUnavailable":
            raise
        # the implementation needs a program of those directories to start
        pytest.skip(f"not run: the implementation does not start with a PATH that lacks git ({exc})")
    try:
        try:
            check_case(client, "git_unavailable", Case(ws, what="a repository, with no git on PATH"), root)
        except ProtocolFailure as exc:
            raise failure(exc, "checkpoint.eligibility without git") from None
    except BaseException:
        spawned.__exit__(None, None, None)
        raise
    spawned.__exit__(None, None, None)


def _ownership_unsafe(maka: Any, root: Path) -> None:
    if not hasattr(os, "geteuid") or os.geteuid() != 0:
        pytest.skip("not run: a repository owned by another user needs a harness running as root (chown)")
    ws = _repo(root)
    for folder, dirs, files in os.walk(ws):
        for name in dirs + files + [""]:
            os.lchown(os.path.join(folder, name) if name else folder, 65534, 65534)
    os.chmod(root, os.stat(root).st_mode | stat.S_IXOTH | stat.S_IROTH)
    check_case(maka, "repository_ownership_unsafe", Case(ws, what="a repository owned by nobody"), root)


def _params() -> Iterator[Any]:
    for code in CODES:
        mark = clause(f"CHECKPOINT-ELIGIBILITY-{code.replace('_', '-')}", spec="spec-phase4 §3.3, §3.4 step 1, "
                      "§3.9, §11.1, §12 items 6–16", capability=CAP,
                      title=f"an ineligible workspace is refused with {code} by eligibility and by capture, "
                            "and nothing is written")
        yield pytest.param(code, id=code, marks=mark)


@pytest.mark.parametrize("code", list(_params()))
def test_eligibility_code(maka: Any, tmp_path: Path, code: str) -> None:
    if code in NOT_PORTABLE:
        pytest.skip(f"not run: {NOT_PORTABLE[code]}")
    root = tmp_path / "case"
    root.mkdir()
    if code == "git_unavailable":
        _git_unavailable(maka, root)
        return
    if code == "repository_ownership_unsafe":
        _ownership_unsafe(maka, root)
        return
    for case in _cases(code, root):
        check_case(maka, code, case, root)


def _eligible_cases(root: Path) -> Iterator[tuple[str, str]]:
    """§3.3's last paragraph and §12 items 15 and 17: each of these is eligible."""
    ws = _repo(root, "linked-main")
    git(ws, "worktree", "add", "-q", str(root / "linked"), "-b", "side")
    yield os.path.realpath(root / "linked"), "a linked worktree"
    unborn = root / "unborn"
    unborn.mkdir()
    git(unborn, "init", "-q", "-b", "main")
    _write(unborn / "first.txt", "no commit yet\n")
    yield os.path.realpath(unborn), "an unborn HEAD"
    ws = _repo(root, "assume")
    git(ws, "update-index", "--assume-unchanged", "README.md")
    _write(Path(ws) / "README.md", "edited under assume-unchanged\n")
    yield ws, "an assume-unchanged file edited in the worktree"
    ws = _repo(root, "binary")
    _write(Path(ws) / ".gitattributes", "*.png binary\n")
    (Path(ws) / "image.png").write_bytes(b"\x89PNG\r\n")
    yield ws, ".gitattributes *.png binary"
    yield new_repo(root, "busy"), "staged, unstaged, untracked, ignored and stashed changes"


@clause("CHECKPOINT-ELIGIBILITY-eligible", spec="spec-phase4 §3.3, §12 items 15, 17", capability=CAP,
        title="a linked worktree, an unborn HEAD, an assume-unchanged file, a binary attribute and a busy "
              "worktree are eligible, and eligibility writes nothing")
def test_eligible_workspaces(maka: Any, tmp_path: Path) -> None:
    root = tmp_path / "case"
    root.mkdir()
    for ws, what in list(_eligible_cases(root)):
        before = tree_snapshot(root)
        result = expect_ok(call_on(maka, "checkpoint.eligibility", {"workspace": ws}, timeout=RUN_TIMEOUT),
                           "checkpoint.eligibility")
        if result.get("eligible") is not True:
            raise ClauseMismatch(f"{what} was found ineligible (spec-phase4 §3.3)", evidence={"result": dict(result)})
        expect_same_tree(before, root, f"checkpoint.eligibility of {what}")


