"""Phase 1 code tables (spec 20 §3.16, §3.9, §1.10) as data.

Why this exists: the reason and diagnostic codes of safe-boundary continuation are wire
names that tests compare verbatim. They live in one place so every planner module (and the
test that checks them against the spec text) reads the same tuples.

Orders are the spec's listing orders; nothing here depends on them except the tests.
Pure data: no I/O.
"""

from __future__ import annotations

from typing import Final

__all__ = [
    "CONTINUATION_FAILPOINTS",
    "DIAGNOSTIC_CODES",
    "DIAGNOSTIC_ONLY_CODES",
    "EMITTED_REJECTION_REASONS",
    "REJECTION_REASONS",
    "REVALIDATION_CODES",
    "SEGMENT_BLOCK_REASONS",
    "SEGMENT_BLOCK_TO_PLANNER_REASON",
]

#: §3.16 "Rejection reasons (exact)", in the spec's order.
REJECTION_REASONS: Final[tuple[str, ...]] = (
    "runtime_offset_mismatch",
    "dangling_tool_state",
    "pending_permission",
    "workspace_identity_mismatch",
    "background_operation_pending",
    "tool_catalog_mismatch",
    "runtime_ledger_unreadable",
    "terminal_repair_failed",
    "workspace_cwd_mismatch",
    "runtime_ledger_empty",
    "runtime_identity_mismatch",
    "continuation_identity_reused",
    "provider_resume_head_unsupported",
    "provider_resume_boundary_unsupported",
    "provider_replay_non_suffix_gap",
    "provider_replay_unsupported",
    "runtime_lineage_cycle",
    "runtime_lineage_depth_exceeded",
    "runtime_lineage_missing",
    "runtime_lineage_start_mismatch",
    "runtime_lineage_replay_mismatch",
    "runtime_lineage_claim_mismatch",
    "source_prefix_digest_mismatch",
    "workspace_ref_missing",
    "checkpoint_restore_failed",
    "source_run_unreadable",
    "continuation_already_exists",
    "continuation_authority_unavailable",
    "continuation_claim_repair_required",
    "continuation_started_indeterminate",
    "workspace_identity_missing",
    "safety_observation_unavailable",
    "resume_feature_disabled",
    "resume_candidate_missing",
)

#: ``workspace_cwd_mismatch`` is declared but never emitted (§3.16 "*", §10 item 6).
EMITTED_REJECTION_REASONS: Final[tuple[str, ...]] = tuple(
    code for code in REJECTION_REASONS if code != "workspace_cwd_mismatch"
)

#: §3.16: the diagnostic-only codes added to the reasons.
DIAGNOSTIC_ONLY_CODES: Final[tuple[str, ...]] = (
    "pending_tool_result",
    "unmatched_tool_result",
    "tool_name_mismatch",
    "workspace_location_changed",
    "tool_not_dispatched",
    "tool_recovery_parked",
    "tool_recovery_corruption",
    "tool_ledger_corruption",
    "duplicate_event_id",
    "semantic_lane_conflict",
    "protocol_marker_invalid",
)

#: §3.16: diagnostic codes = all reasons plus the diagnostic-only codes, except
#: ``dangling_tool_state`` (a reason only, never a diagnostic code).
DIAGNOSTIC_CODES: Final[tuple[str, ...]] = tuple(
    code for code in REJECTION_REASONS if code != "dangling_tool_state"
) + DIAGNOSTIC_ONLY_CODES

#: §3.16 / §1.10 segment block reasons.
SEGMENT_BLOCK_REASONS: Final[tuple[str, ...]] = (
    "tool_recovery_unsettled",
    "tool_recovery_corruption",
    "provider_replay_non_suffix_gap",
    "provider_replay_unsupported",
)

#: §3.3 step 4 (and §9 item 9): the planner reason of a blocked composite replay. The two
#: fail-closed extension reasons of ``segment_replay`` (``prefix_unverifiable``,
#: ``boundary_invalid``) follow the §10 item 9 recommendation.
SEGMENT_BLOCK_TO_PLANNER_REASON: Final[dict[str, str]] = {
    "tool_recovery_unsettled": "runtime_ledger_unreadable",
    "tool_recovery_corruption": "runtime_ledger_unreadable",
    "provider_replay_non_suffix_gap": "provider_replay_non_suffix_gap",
    "provider_replay_unsupported": "provider_replay_unsupported",
    "prefix_unverifiable": "runtime_ledger_unreadable",
    "boundary_invalid": "runtime_ledger_unreadable",
}

#: §3.16 continuation failpoints, in order.
CONTINUATION_FAILPOINTS: Final[tuple[str, ...]] = (
    "after_continuation_claim_committed",
    "after_run_created",
    "after_continuation_start_committed",
    "after_terminal_event_committed",
    "after_terminal_header_committed",
)

#: §3.9 ``RuntimeContinuationRevalidationError`` codes (execution; listed here so the code
#: tables live together — nothing in this pure package raises them).
REVALIDATION_CODES: Final[tuple[str, ...]] = (
    "continuation_claim_conflict",
    "target_run_conflict",
    "source_identity_changed",
    "source_terminal_changed",
    "source_cwd_changed",
    "source_high_water_changed",
    "source_ledger_identity_changed",
    "source_replay_changed",
    "workspace_identity_changed",
    "background_operation_started",
    "tool_catalog_changed",
    "workspace_checkpoint_changed",
)
