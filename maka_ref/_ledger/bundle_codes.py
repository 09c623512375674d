"""Recovery-bundle result codes (spec 10 §5.3, §5.4).

What: the ``code`` strings a failing §5.3 check or a corrupt §5.4 interpretation carries,
plus the one reconcile observation the checks compare against.
Why separate: a flat vocabulary with no logic; ``bundle`` reads it, nothing here runs.
"""

from __future__ import annotations

CALL_IDENTITY_CONFLICT = "call_identity_conflict"
CANONICAL_ARGS_HASH_CONFLICT = "canonical_args_hash_conflict"
DISPATCH_IDENTITY_CONFLICT = "dispatch_identity_conflict"
RECOVERY_MODE_UNSUPPORTED = "recovery_mode_unsupported"
RECONCILE_FACT_INVALID = "reconcile_fact_invalid"
DECISION_FACT_INVALID = "decision_fact_invalid"
RECOVERY_FACT_IDENTITY_CONFLICT = "recovery_fact_identity_conflict"
OPERATION_IDENTITY_CONFLICT = "operation_identity_conflict"
OUTCOME_REQUIRED = "outcome_required"
OUTCOME_IDENTITY_CONFLICT = "outcome_identity_conflict"
OUTCOME_NOT_SUCCESSFUL = "outcome_not_successful"
OUTCOME_REFERENCE_CONFLICT = "outcome_reference_conflict"
OUTCOME_FOR_PARKED = "outcome_for_parked"
RECONCILE_DECISION_CONFLICT = "reconcile_decision_conflict"
EVIDENCE_ORDER_CONFLICT = "evidence_order_conflict"
RECOVERY_FACT_SHAPE_CONFLICT = "recovery_fact_shape_conflict"
EVENT_ORDER_CONFLICT = "event_order_conflict"

MATCHES_EXPECTED_STATE = "matches_expected_state"

__all__ = [
    "CALL_IDENTITY_CONFLICT",
    "CANONICAL_ARGS_HASH_CONFLICT",
    "DECISION_FACT_INVALID",
    "DISPATCH_IDENTITY_CONFLICT",
    "EVENT_ORDER_CONFLICT",
    "EVIDENCE_ORDER_CONFLICT",
    "MATCHES_EXPECTED_STATE",
    "OPERATION_IDENTITY_CONFLICT",
    "OUTCOME_FOR_PARKED",
    "OUTCOME_IDENTITY_CONFLICT",
    "OUTCOME_NOT_SUCCESSFUL",
    "OUTCOME_REFERENCE_CONFLICT",
    "OUTCOME_REQUIRED",
    "RECONCILE_DECISION_CONFLICT",
    "RECONCILE_FACT_INVALID",
    "RECOVERY_FACT_IDENTITY_CONFLICT",
    "RECOVERY_FACT_SHAPE_CONFLICT",
    "RECOVERY_MODE_UNSUPPORTED",
]
