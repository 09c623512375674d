"""Phase 4 workspace-checkpoint mutants (spec-phase4 §3.1, §3.4, §3.6, §3.9, §4.2, §6.2, §10.4).

The carrier's two (capture through the user's index, restore into the current directory) sit
in layer ``runtime`` (the workspace side of a live run); the gate's two (approve resume on the
carrier's word, accept a fact whose artifact is missing) in layer ``continuation`` (they change
what a resume decides).
"""

from __future__ import annotations

import dataclasses
import importlib
import os
from typing import Any

from maka_ref.adapter._mutants._patch import wrap, wrap_method
from maka_ref.adapter._mutants._registry import mutant


def _load_boundary() -> None:
    # the adapter imports these lazily; ``wrap`` rebinds only in modules already loaded
    for name in ("maka_ref._boundary.gate", "maka_ref._boundary.commands", "maka_ref._boundary.transition"):
        importlib.import_module(name)


@mutant("runtime-checkpoint-capture-user-index", layer="runtime", spec="spec-phase4 §3.4; §3.9",
        family="CHECKPOINT-CAPTURE-001", keyword="CHECKPOINT-CAPTURE-001 or CHECKPOINT-COLLECT-001")
def apply_capture_user_index() -> None:
    """Capture stages the workspace through the user's own index (``<git dir>/index``) instead
    of the private ``GIT_INDEX_FILE``.

    spec-phase4 §3.4 / §3.9: the user's index is byte-identical after every carrier operation.
    Killed by CHECKPOINT-CAPTURE-001 (the index hash changes: the untracked and unstaged files
    are staged in it).
    """
    importlib.import_module("maka_ref._checkpoint.capture")

    def factory(original: Any) -> Any:
        def survey(repository: Any, git: Any, policy: Any) -> Any:
            seen = original(repository, git, policy)
            git.scratch.index = os.path.join(repository.git_dir, "index")  # the mutation
            return seen
        return survey

    wrap("maka_ref._checkpoint.capture", "survey", factory)


@mutant("runtime-checkpoint-restore-into-workspace", layer="runtime", spec="spec-phase4 §3.6; §3.9",
        family="CHECKPOINT-RESTORE-001", keyword="CHECKPOINT-RESTORE-001")
def apply_restore_into_workspace() -> None:
    """Restore also checks the checkpoint's tree out over the current directory (the user's
    worktree), as a "restore in place" would.

    spec-phase4 §3.6: the user's directory is never a target; the result is a new directory.
    Killed by CHECKPOINT-RESTORE-001 (a file edited after the capture is reverted and a deleted
    one comes back).
    """
    importlib.import_module("maka_ref._checkpoint.restore")

    def factory(original: Any) -> Any:
        def materialize(repository: Any, git: Any, verified: Any, destination: str, **kwargs: Any) -> Any:
            result = original(repository, git, verified, destination, **kwargs)
            git.run(["read-tree", verified.tree_oid], index=git.scratch.index)
            git.run(["checkout-index", "--all", "--force"], index=git.scratch.index,
                    work_tree=repository.workspace)  # the mutation
            return result
        return materialize

    wrap("maka_ref._checkpoint.restore", "materialize", factory)


@mutant("continuation-checkpoint-gate-approves-on-carrier-word", layer="continuation", spec="spec-phase4 §3.1; §6.2 (h)",
        family="CHECKPOINT-RESUME-001, CHECKPOINT-AUTHORITY-001",
        keyword="CHECKPOINT-RESUME-001 or CHECKPOINT-AUTHORITY-001")
def apply_gate_approves_on_carrier_word() -> None:
    """The resume gate takes the carrier's successful ``verify`` as approval: a drifted
    workspace (check (h), ``workspace_content_drift``) resumes.

    spec-phase4 §3.1: a carrier may not approve resume; the planner decides from the facts and
    all of its own checks. Killed by CHECKPOINT-RESUME-001 and CHECKPOINT-AUTHORITY-001.
    """
    _load_boundary()

    def factory(original: Any) -> Any:
        def check_workspace_boundary(*args: Any, **kwargs: Any) -> Any:
            result = original(*args, **kwargs)
            if result.reason == "workspace_content_drift":  # the carrier said "verified": approve
                return dataclasses.replace(result, reason=None, message="", detail={}, check=None)
            return result
        return check_workspace_boundary

    wrap("maka_ref._boundary.gate", "check_workspace_boundary", factory)
    _skip_revalidation()


@mutant("continuation-checkpoint-accept-missing-artifact", layer="continuation", spec="spec-phase4 §4.2; §6.2 (g)",
        family="CHECKPOINT-RESUME-002", keyword="CHECKPOINT-RESUME-002")
def apply_accept_missing_artifact() -> None:
    """A committed boundary whose checkpoint ref is gone is accepted: resume continues instead
    of parking with ``workspace_checkpoint_missing``.

    spec-phase4 §4.2: fact committed, artifact missing → fail closed. Killed by
    CHECKPOINT-RESUME-002.
    """
    _load_boundary()

    def factory(original: Any) -> Any:
        def check_workspace_boundary(*args: Any, **kwargs: Any) -> Any:
            result = original(*args, **kwargs)
            if result.reason == "workspace_checkpoint_missing":
                return dataclasses.replace(result, reason=None, message="", detail={}, check=None)
            return result
        return check_workspace_boundary

    wrap("maka_ref._boundary.gate", "check_workspace_boundary", factory)
    _skip_revalidation()


def _skip_revalidation() -> None:
    """Both gate mutants trust the gate's answer at execution time too (else revalidation,
    which re-runs (g) and (h), would refuse the start and hide the mutation behind an error)."""
    def factory(original: Any) -> Any:
        def make_revalidation(gate: Any, carrier: Any = None) -> Any:
            return lambda _conn, _start: None
        return make_revalidation

    wrap("maka_ref._boundary.commands", "make_revalidation", factory)


# ------------------------------------------------ one-rule clause families (spec-phase4 §10.4)


@mutant("runtime-checkpoint-eligibility-accepts-bare", layer="runtime", spec="spec-phase4 §3.3 check 6",
        family="CHECKPOINT-ELIGIBILITY-*", keyword="CHECKPOINT-ELIGIBILITY-bare-repository")
def apply_eligibility_accepts_bare() -> None:
    """Eligibility answers a bare repository (or a Git directory) eligible.

    spec-phase4 §3.3 check 6: a bare repository has no worktree to capture, so it is
    ``bare_repository``. Killed by CHECKPOINT-ELIGIBILITY-bare-repository.
    """
    from maka_ref._checkpoint.carrier import Eligibility, GitCheckpointCarrier

    def factory(original: Any) -> Any:
        def eligibility(self: Any, workspace: str) -> Any:
            answer = original(self, workspace)
            if answer.failure is not None and answer.failure.code == "bare_repository":  # the mutation
                return Eligibility(None)
            return answer
        return eligibility

    wrap_method(GitCheckpointCarrier, "eligibility", factory)


class _EqualToAnything(str):
    """A digest that no comparison tells apart from the expected object id."""

    __hash__ = str.__hash__

    def __ne__(self, other: object) -> bool:
        return False

    def __eq__(self, other: object) -> bool:
        return True


@mutant("runtime-checkpoint-verify-trusts-object-ids", layer="runtime", spec="spec-phase4 §3.5 step 4",
        family="CHECKPOINT-VERIFY-*", keyword="CHECKPOINT-VERIFY-object-hash-mismatch")
def apply_verify_trusts_object_ids() -> None:
    """Verify reads every object of the checkpoint but never compares its recomputed id with
    the object's name (a loose object rewritten with other bytes passes).

    spec-phase4 §3.5 step 4 and §13 pitfall 9: Git's readers do not check ids, so the carrier
    must. Killed by CHECKPOINT-VERIFY-object-hash-mismatch.
    """
    import hashlib
    import types

    module = importlib.import_module("maka_ref._checkpoint.verify")

    class _Hasher:
        def __init__(self, name: str, data: bytes = b"") -> None:
            self._inner = hashlib.new(name, data)

        def update(self, data: bytes) -> None:
            self._inner.update(data)

        def hexdigest(self) -> str:
            return _EqualToAnything(self._inner.hexdigest())  # the mutation

    module.hashlib = types.SimpleNamespace(new=_Hasher)  # type: ignore[attr-defined]


@mutant("runtime-checkpoint-restore-lexical-target", layer="runtime", spec="spec-phase4 §3.6 step 1",
        family="CHECKPOINT-RESTORE-TARGET-*", keyword="CHECKPOINT-RESTORE-TARGET-inside")
def apply_restore_lexical_target() -> None:
    """Restore judges "inside the workspace" on the destination as written, not after
    ``realpath`` of its parent: a path through a symbolic link into the workspace is accepted
    and the restore writes into the user's directory.

    spec-phase4 §3.6 step 1. Killed by CHECKPOINT-RESTORE-TARGET-inside (the alias case).
    """
    importlib.import_module("maka_ref._checkpoint.restore")

    def factory(original: Any) -> Any:
        def check_destination(repository: Any, destination: str) -> str:
            try:
                return original(repository, destination)
            except Exception as error:
                code = getattr(error, "code", None)
                lexical = os.path.normpath(destination)
                inside = any(lexical == root or lexical.startswith(root.rstrip(os.sep) + os.sep)
                             for root in (repository.workspace, repository.git_dir, repository.common_dir))
                if code == "restore_target_inside_workspace" and not inside:  # the mutation
                    return destination
                raise
        return check_destination

    wrap("maka_ref._checkpoint.restore", "check_destination", factory)


@mutant("runtime-checkpoint-collect-every-namespace", layer="runtime", spec="spec-phase4 §3.8; §13 pitfall 13",
        family="CHECKPOINT-COLLECT-002", keyword="CHECKPOINT-COLLECT-002")
def apply_collect_every_namespace() -> None:
    """Collect deletes old orphans of every identity's namespace, not only the one it was given
    (a linked worktree's collect deletes another worktree's live checkpoints).

    spec-phase4 §3.8, §13 pitfall 13. Killed by CHECKPOINT-COLLECT-002 (another identity's
    old ref is collected).
    """
    importlib.import_module("maka_ref._checkpoint.refs")

    def factory(original: Any) -> Any:
        def collect_orphans(git: Any, uuid: str, live_refs: Any, **kwargs: Any) -> Any:
            return original(git, None, live_refs, **kwargs)  # the mutation: no namespace
        return collect_orphans

    wrap("maka_ref._checkpoint.refs", "collect_orphans", factory)


@mutant("crash-checkpoint-restore-in-place", layer="crash", spec="spec-phase4 §3.6 steps 3–5; §8",
        family="CHECKPOINT-CRASH-after-restore-materialized, CHECKPOINT-RESTORE-VERIFIED-001",
        keyword="CHECKPOINT-CRASH-after-restore-materialized or CHECKPOINT-RESTORE-VERIFIED-001")
def apply_restore_in_place() -> None:
    """Restore checks the tree out straight into the destination — no staging directory, no
    check of the written files — so a kill before "publish" leaves a half-written destination.

    spec-phase4 §3.6 steps 3–5 and §8 ``after_restore_materialized`` (the destination must not
    exist after a kill there). Killed by CHECKPOINT-CRASH-after-restore-materialized and
    CHECKPOINT-RESTORE-VERIFIED-001.
    """
    from maka_ref._checkpoint.restore import RestoreResult

    importlib.import_module("maka_ref._checkpoint.restore")

    def factory(original: Any) -> Any:
        def materialize(repository: Any, git: Any, verified: Any, destination: str, *, on_step: Any = None) -> Any:
            os.mkdir(destination)  # the mutation: the destination is the staging directory
            git.run(["read-tree", verified.tree_oid], index=git.scratch.index)
            git.run(["checkout-index", "--all", "--force"], index=git.scratch.index, work_tree=destination)
            for step in ("after_restore_materialized", "after_restore_published"):
                if on_step is not None:
                    on_step(step)
            return RestoreResult(destination, verified.commit_oid, verified.tree_oid, verified.file_count)
        return materialize

    wrap("maka_ref._checkpoint.restore", "materialize", factory)
