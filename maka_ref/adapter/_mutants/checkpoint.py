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

from maka_ref.adapter._mutants._patch import wrap
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
