"""The workspace baseline fixture of spec 30 §6.2 / §7.2 (storage crash suite, concurrency C9/C10).

The spec fixes root ``a``×64, epoch ``epoch_``+``3``×32, workspace ``workspace_``+``2``×32,
version ``version_``+``5``×32, event ids ``workspace-epoch-event-1`` /
``workspace-version-event-1`` and committedAt 1 700 000 000 000. The remaining descriptor
values (repository, instance, oids, digests, changed file count) are not in the spec; they are
the upstream fixture's (read, not copied): repository ``1``×32, instance ``4``×32, source commit
``1``×40, source tree = baseline tree ``2``×40, baseline commit ``5``×40, digests ``3``/``4``/``6``
×64, 7 changed files, object format ``sha1``.
"""

from __future__ import annotations

from maka_ref._store.workspace.facts import (
    WorkspaceBaselineDescriptor,
    WorkspaceBaselineInput,
    WorkspaceEpochDescriptor,
)

__all__ = [
    "FIXTURE_COMMITTED_AT",
    "FIXTURE_EPOCH_ID",
    "FIXTURE_ROOT_ID",
    "FIXTURE_VERSION_ID",
    "FIXTURE_WORKSPACE_ID",
    "baseline_fixture_input",
]

FIXTURE_ROOT_ID = "a" * 64
FIXTURE_WORKSPACE_ID = "workspace_" + "2" * 32
FIXTURE_EPOCH_ID = "epoch_" + "3" * 32
FIXTURE_VERSION_ID = "version_" + "5" * 32
FIXTURE_COMMITTED_AT = 1_700_000_000_000


def baseline_fixture_input(version_digit: str = "5") -> WorkspaceBaselineInput:
    """The §6.2 baseline; ``version_digit="9"`` is the concurrency worker ``workspace_baseline_b``
    (same epoch and event ids, version ``version_``+``9``×32: a conflicting baseline)."""
    return WorkspaceBaselineInput(
        epoch_opened_event_id="workspace-epoch-event-1",
        baseline_accepted_event_id="workspace-version-event-1",
        committed_at=FIXTURE_COMMITTED_AT,
        epoch=WorkspaceEpochDescriptor(
            repository_id="repository_" + "1" * 32,
            workspace_id=FIXTURE_WORKSPACE_ID,
            workspace_epoch_id=FIXTURE_EPOCH_ID,
            workspace_instance_id="instance_" + "4" * 32,
            object_format="sha1",
            source_commit_oid="1" * 40,
            source_tree_oid="2" * 40,
            materialization_profile_digest="sha256:" + "3" * 64,
            policy_hash="sha256:" + "4" * 64,
        ),
        baseline=WorkspaceBaselineDescriptor(
            workspace_version_id="version_" + version_digit * 32,
            commit_oid="5" * 40,
            tree_oid="2" * 40,
            tree_delta_digest="sha256:" + "6" * 64,
            changed_file_count=7,
        ),
    )
