"""Closed enums, protocol strings and key sets of the RuntimeEvent contract.

Why a module of its own: the decoder, the scanner, the resolver, the bundle validator and the
planners must agree on every enum member and protocol string byte for byte (spec 10 §1, §3,
§5.1; spec 20 §0.1, §3.12). Keeping them in one place means a typo cannot make two layers
disagree silently.

Enums are *tuples* (in the anchor's documented order), not frozensets, on purpose: callers
that read un-decoded events may test membership of arbitrary values, and ``[] in a_tuple`` is
simply ``False`` whereas ``[] in a_frozenset`` raises ``TypeError``. Modules that have
already checked ``type(x) is str`` use private frozenset copies for speed.

Pure data: no imports from other layers, no behaviour.
"""

from __future__ import annotations

from types import MappingProxyType
from typing import Final

# ---------------------------------------------------------------------------------------
# Envelope enums (spec 10 §1.1; spec 20 §0.1)
# ---------------------------------------------------------------------------------------

ROLES: Final = ("user", "model", "tool", "system")
AUTHORS: Final = ("user", "host", "agent", "tool", "system")
ORIGINS: Final = ("provider", "code_mode")
MODEL_VISIBILITIES: Final = ("visible", "hidden")
MODEL_VISIBILITY_HIDDEN: Final = "hidden"
STATUSES: Final = ("streaming", "completed", "failed", "aborted", "cancelled")
#: A terminal ``status`` seals the run (spec 10 §1.5).
TERMINAL_STATUSES: Final = ("completed", "failed", "aborted", "cancelled")

#: Terminal RuntimeEvent status → AgentRun status (spec 20 §0.1); anything else → none.
RUN_STATUS_BY_TERMINAL_STATUS: Final = MappingProxyType(
    {
        "completed": "completed",
        "failed": "failed",
        "aborted": "cancelled",
        "cancelled": "cancelled",
    }
)

# ---------------------------------------------------------------------------------------
# Content (spec 10 §1.2)
# ---------------------------------------------------------------------------------------

CONTENT_KIND_TEXT: Final = "text"
CONTENT_KIND_THINKING: Final = "thinking"
CONTENT_KIND_FUNCTION_CALL: Final = "function_call"
CONTENT_KIND_FUNCTION_RESPONSE: Final = "function_response"
CONTENT_KIND_ERROR: Final = "error"
CONTENT_KINDS: Final = (
    CONTENT_KIND_TEXT,
    CONTENT_KIND_THINKING,
    CONTENT_KIND_FUNCTION_CALL,
    CONTENT_KIND_FUNCTION_RESPONSE,
    CONTENT_KIND_ERROR,
)
#: Content kinds that are model-visible whenever present and not hidden (spec 10 §1.5).
ALWAYS_VISIBLE_CONTENT_KINDS: Final = (
    CONTENT_KIND_THINKING,
    CONTENT_KIND_FUNCTION_CALL,
    CONTENT_KIND_FUNCTION_RESPONSE,
)

#: §2.1 step 2: a legacy TurnOrigin kind and the kind the decoder rewrites it to.
LEGACY_AUTOMATION_ORIGIN_KIND: Final = "automation"
REWRITTEN_AUTOMATION_ORIGIN_KIND: Final = "legacy_automation"

# ---------------------------------------------------------------------------------------
# T1 dispatch and the protocol marker (spec 10 §1.3.1, §3)
# ---------------------------------------------------------------------------------------

T1_PROTOCOL: Final = "t1_after_preflight_v1"
RECOVERY_MODES: Final = (
    "replay_safe",
    "idempotent",
    "reconcile",
    "reattach",
    "outcome_unknown",
    "never_auto_retry",
)
#: Producer default when a tool declares no recovery mode (spec 10 §1.3.1).
DEFAULT_RECOVERY_MODE: Final = "never_auto_retry"

# ---------------------------------------------------------------------------------------
# Recovery facts (spec 10 §5.1)
# ---------------------------------------------------------------------------------------

TOOL_RECOVERY_VERSION: Final = 1
RECONCILE_RESULT_KIND: Final = "maka.tool.reconcile_result"
RECOVERY_DECISION_KIND: Final = "maka.tool.recovery_decision"
TOOL_RECOVERY_KINDS: Final = (RECONCILE_RESULT_KIND, RECOVERY_DECISION_KIND)
TOOL_RECONCILE_PROTOCOL: Final = "tool_reconcile_v1"
TOOL_RECOVERY_PROTOCOL: Final = "tool_recovery_v1"
STATE_IDENTITY_SCHEMA: Final = "state_identity_v1"
OBSERVATIONS: Final = ("matches_expected_state", "matches_prior_state", "diverged", "unreadable")
DISPOSITION_COMPLETED: Final = "completed"
DISPOSITION_PARKED: Final = "parked"
DISPOSITIONS: Final = (DISPOSITION_COMPLETED, DISPOSITION_PARKED)
COMPLETED_REASON_CODE: Final = "reconcile_matches_expected_state"
PARK_REASON_CODES: Final = ("reconcile_matches_prior_state", "reconcile_diverged", "reconcile_unreadable")
#: Observation → (required disposition, required reasonCode) (spec 10 §5.1 mapping table).
DECISION_FOR_OBSERVATION: Final = MappingProxyType(
    {
        "matches_expected_state": (DISPOSITION_COMPLETED, COMPLETED_REASON_CODE),
        "matches_prior_state": (DISPOSITION_PARKED, "reconcile_matches_prior_state"),
        "diverged": (DISPOSITION_PARKED, "reconcile_diverged"),
        "unreadable": (DISPOSITION_PARKED, "reconcile_unreadable"),
    }
)

RECOVERY_ENVELOPE_KEYS: Final = ("kind", "version", "payload")
RECONCILE_PAYLOAD_KEYS: Final = (
    "protocol",
    "operationId",
    "observation",
    "observationSchema",
    "observationDigest",
)
COMPLETED_DECISION_KEYS: Final = (
    "protocol",
    "operationId",
    "disposition",
    "reasonCode",
    "outcomeEventId",
    "evidenceEventIds",
)
PARKED_DECISION_KEYS: Final = ("protocol", "operationId", "disposition", "reasonCode", "evidenceEventIds")

# ---------------------------------------------------------------------------------------
# Continuation start (spec 10 §1.3.2; spec 20 §3.12)
# ---------------------------------------------------------------------------------------

CONTINUATION_START_PROTOCOL: Final = "continuation_start_v2"
PROVENANCE_RUNTIME_ADMISSION: Final = "runtime_admission"
PROVENANCE_CLAIM_REPAIR: Final = "claim_repair"
CONTINUATION_PROVENANCES: Final = (PROVENANCE_RUNTIME_ADMISSION, PROVENANCE_CLAIM_REPAIR)
PROVIDER_PROJECTION_VERSION: Final = 1
CONTINUATION_START_KEYS: Final = (
    "protocol",
    "provenance",
    "claimId",
    "boundaryDigest",
    "immediateSource",
    "replayManifestDigest",
    "providerProjectionVersion",
    "providerReplayDigest",
)
IMMEDIATE_SOURCE_KEYS: Final = ("sessionId", "invocationId", "runId", "turnId", "highWater", "prefixDigest")
#: The only ``actions`` keys a continuation-start event may carry.
CONTINUATION_START_ACTION_KEYS: Final = ("continuationStart", "runtimeProtocol")

# ---------------------------------------------------------------------------------------
# Interactions (spec 10 §1.3; byte bound from §7.2 item 13: a 257-byte id is rejected)
# ---------------------------------------------------------------------------------------

PERMISSION_CLOSURE_REASON: Final = "timed_out"
PERMISSION_DECISIONS: Final = ("allow", "deny")
PERMISSION_REVIEWERS: Final = ("user", "auto_review")
PERMISSION_RISK_LEVELS: Final = ("low", "medium", "high", "critical")
INTERACTION_ID_MAX_BYTES: Final = 256
INTERACTION_TOOL_NAME_MAX_BYTES: Final = 256

# ---------------------------------------------------------------------------------------
# Numbers and digests (spec 10 §1.3.2, §1.4, §2.4)
# ---------------------------------------------------------------------------------------

MAX_SAFE_INTEGER: Final = 2**53 - 1
SHA256_DIGEST_PREFIX: Final = "sha256:"
SHA256_DIGEST_LENGTH: Final = len(SHA256_DIGEST_PREFIX) + 64

# ---------------------------------------------------------------------------------------
# Key sets of the closed objects (spec 10 §1.1–§1.4)
# ---------------------------------------------------------------------------------------

ENVELOPE_REQUIRED_KEYS: Final = (
    "id",
    "invocationId",
    "runId",
    "sessionId",
    "turnId",
    "ts",
    "partial",
    "role",
    "author",
)
ENVELOPE_OPTIONAL_KEYS: Final = (
    "branch",
    "origin",
    "modelVisibility",
    "status",
    "content",
    "actions",
    "refs",
)
ACTION_KEYS: Final = (
    "stateDelta",
    "artifactDelta",
    "permissionRequest",
    "permissionDecision",
    "permissionAnswerAccepted",
    "permissionClosureAccepted",
    "userQuestionRequest",
    "userQuestionAnswerAccepted",
    "transferToAgent",
    "endInvocation",
    "tokenUsage",
    "toolDispatch",
    "toolRecovery",
    "runtimeProtocol",
    "continuationStart",
    "workspaceFact",
)
TOOL_DISPATCH_KEYS: Final = (
    "protocol",
    "operationId",
    "providerToolCallId",
    "toolName",
    "canonicalArgsHash",
    "recoveryMode",
)
RUNTIME_PROTOCOL_KEYS: Final = ("toolBoundary",)
REF_STRING_KEYS: Final = (
    "toolCallId",
    "operationId",
    "parentToolCallId",
    "parentOperationId",
    "stepId",
    "storedMessageId",
    "traceEventId",
    "providerEventId",
    "providerRequestTraceId",
    "artifactId",
    "sourceInvocationId",
    "sourceRunId",
    "sourceTurnId",
)
REF_KEYS: Final = REF_STRING_KEYS + ("sourceMessageDigest", "sourceRuntimeEventHighWater")
