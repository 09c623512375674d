"""Phase 0 diagnostic codes and the tables that map them (spec 20 §1.3, §1.4).

Why a module of its own: the codes, the status -> diagnostic table and the diagnostic ->
reason table are the spec's vocabulary, shared by the message texts, the diagnostics step
and the plan builder (a mutant also reads the reason table through ``resume_plan``).
"""

from __future__ import annotations

from collections.abc import Mapping

__all__ = [
    "DANGLING_TOOL_STATE",
    "PENDING_TOOL_RESULT",
    "RUNTIME_OFFSET_MISMATCH",
    "TOOL_LEDGER_CORRUPTION",
    "TOOL_NAME_MISMATCH",
    "TOOL_NOT_DISPATCHED",
    "TOOL_RECOVERY_CORRUPTION",
    "TOOL_RECOVERY_PARKED",
    "UNMATCHED_TOOL_RESULT",
]

# Diagnostic codes (spec 20 §1.3) and rejection reasons (§1.4).
RUNTIME_OFFSET_MISMATCH = "runtime_offset_mismatch"
PENDING_TOOL_RESULT = "pending_tool_result"
TOOL_NOT_DISPATCHED = "tool_not_dispatched"
TOOL_RECOVERY_CORRUPTION = "tool_recovery_corruption"
TOOL_RECOVERY_PARKED = "tool_recovery_parked"
TOOL_LEDGER_CORRUPTION = "tool_ledger_corruption"
UNMATCHED_TOOL_RESULT = "unmatched_tool_result"
TOOL_NAME_MISMATCH = "tool_name_mismatch"
DANGLING_TOOL_STATE = "dangling_tool_state"

#: Resolver issue codes reported under their own name; every other one becomes
#: ``tool_ledger_corruption`` with ``detail = {issueCode}`` (§1.3 item 3).
_OWN_CODE_ISSUES = frozenset({"protocol_marker_invalid", "duplicate_event_id", "semantic_lane_conflict"})

#: §1.4: the only diagnostics that produce a reason in Phase 0, and the reason each produces.
_REASON_OF_DIAGNOSTIC: Mapping[str, str] = {
    RUNTIME_OFFSET_MISMATCH: RUNTIME_OFFSET_MISMATCH,
    PENDING_TOOL_RESULT: DANGLING_TOOL_STATE,
    TOOL_NOT_DISPATCHED: DANGLING_TOOL_STATE,
    TOOL_RECOVERY_PARKED: DANGLING_TOOL_STATE,
    TOOL_RECOVERY_CORRUPTION: DANGLING_TOOL_STATE,
    TOOL_LEDGER_CORRUPTION: DANGLING_TOOL_STATE,
    "duplicate_event_id": DANGLING_TOOL_STATE,
    "semantic_lane_conflict": DANGLING_TOOL_STATE,
    "protocol_marker_invalid": DANGLING_TOOL_STATE,
    UNMATCHED_TOOL_RESULT: DANGLING_TOOL_STATE,
    TOOL_NAME_MISMATCH: DANGLING_TOOL_STATE,
}

#: §1.3 item 2: the diagnostic of an operation status (succeeded/failed produce none).
_DIAGNOSTIC_OF_STATUS: Mapping[str, str] = {
    "indeterminate": PENDING_TOOL_RESULT,
    "not_dispatched": TOOL_NOT_DISPATCHED,
    "corruption": TOOL_RECOVERY_CORRUPTION,
    "parked": TOOL_RECOVERY_PARKED,
}
