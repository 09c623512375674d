"""The carrier's closed failure vocabulary (spec-phase4 §11.1, §11.2).

Why one module: every carrier operation — eligibility, capture, verify, compare, restore, list,
collect — refuses with the *same* exception type and a code from one closed set, so a caller
(the store, the planner, the adapter, the CLI) can map a refusal to a park reason or an exit
status without knowing which step failed, and can never receive a traceback. Ineligibility is
not a separate type: ``code in ELIGIBILITY_CODES`` says "fall back to single-operation
recovery" (spec-phase4 §3.1), every other code says "this operation failed".

``details`` is a small JSON-safe mapping (strings, integers, booleans) that names the
offending path, limit or git subcommand; ``message`` is for people and may change.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

__all__ = [
    "CORRUPTION_REASONS",
    "ELIGIBILITY_CODES",
    "OPERATION_CODES",
    "POLICY_VIOLATION_REASONS",
    "CheckpointError",
    "Detail",
]

#: spec-phase4 §11.1: the workspace may not be checkpointed at all (→ single-operation recovery).
ELIGIBILITY_CODES: Final = frozenset(
    {
        "workspace_not_found",
        "workspace_not_a_directory",
        "git_unavailable",
        "git_version_unsupported",
        "repository_ownership_unsafe",
        "not_a_git_repository",
        "bare_repository",
        "workspace_not_worktree_root",
        "object_format_unsupported",
        "repository_operation_in_progress",
        "submodules_unsupported",
        "index_unsupported",
        "sparse_checkout_unsupported",
        "path_not_utf8",
        "conversion_attributes_unsupported",
        "too_many_files",
        "file_too_large",
        "workspace_too_large",
    }
)

#: spec-phase4 §11.2: an operation on an eligible workspace failed.
OPERATION_CODES: Final = frozenset(
    {
        "invalid_checkpoint_policy",
        "invalid_workspace_identity",
        "invalid_checkpoint_ref",
        "checkpoint_ref_exists",
        "checkpoint_artifact_missing",
        "checkpoint_corrupt",
        "checkpoint_policy_mismatch",
        "checkpoint_policy_violation",
        "restore_target_invalid",
        "restore_target_exists",
        "restore_target_inside_workspace",
        "restore_verification_failed",
        "restore_failed",
        "git_timeout",
        "git_failed",
    }
)

#: ``details["reason"]`` of ``checkpoint_corrupt`` (§3.5 steps 2–4).
CORRUPTION_REASONS: Final = frozenset({"not_a_commit", "commit_malformed", "object_missing", "object_hash_mismatch"})

#: ``details["reason"]`` of ``checkpoint_policy_violation`` (§3.5 step 5).
POLICY_VIOLATION_REASONS: Final = frozenset(
    {"mode", "excluded_path", "path_not_utf8", "too_many_files", "file_too_large", "workspace_too_large"}
)

Detail = str | int | bool


class CheckpointError(Exception):
    """A refusal with a stable ``code`` (one of the two closed sets above)."""

    def __init__(self, code: str, message: str, details: Mapping[str, Detail] | None = None) -> None:
        if code not in ELIGIBILITY_CODES and code not in OPERATION_CODES:
            raise ValueError(f"unknown checkpoint code {code!r}")  # a bug of ours, never user input
        super().__init__(message)
        self.code = code
        self.message = message
        self.details: dict[str, Detail] = dict(details or {})

    @property
    def ineligible(self) -> bool:
        """True when the workspace cannot be checkpointed at all (spec-phase4 §3.1)."""
        return self.code in ELIGIBILITY_CODES

    def as_json(self) -> dict[str, object]:
        """The wire form of spec-phase4 §10: ``{code, message, details}``."""
        return {"code": self.code, "message": self.message, "details": dict(self.details)}

    def __str__(self) -> str:
        return f"{self.code}: {self.message}"
