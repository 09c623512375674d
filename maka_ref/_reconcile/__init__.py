"""Phase 3's pure core: durable file evidence, the observer and the observation table
(contract: docs/spec-phase3.md).

Holds the evidence record for ``Write``/``Edit``/``Append`` and its codec (``evidence``), its
binding to the T1 events (``binding``), observed file states and the classifier that maps
evidence × observed state to one of the four observations of spec 10 §5.1 (``observation``),
and the bounded, no-follow, never-writing file observer (``observer``, the one module with I/O:
it only reads). Committing evidence with T1 and running the reconciler belong to the store and
the runtime, which import this package — never the other way round.

May import: the standard library, ``maka_ref._codec``, ``maka_ref._durable``, ``maka_ref._events``,
``maka_ref._errors``.
Must not import ``maka_ref._store``, ``_plan``, ``_ledger``, ``_runtime`` or anything above them.
"""

from maka_ref._reconcile.binding import BINDING_CODES, check_binding, expected_result
from maka_ref._reconcile.evidence import (
    EVIDENCE_CODES,
    FILE_EVIDENCE_PROTOCOL,
    MAX_FILE_BYTES,
    TRANSFORM_FOR_TOOL,
    EvidenceError,
    FileEvidence,
    FileState,
    Invalid,
    content_digest,
    decode_evidence,
    decode_evidence_text,
    encode_evidence,
    evidence_digest,
    target_path_problem,
)
from maka_ref._reconcile.observation import (
    TRANSIENT_REASONS,
    UNREADABLE_REASONS,
    Classification,
    ObservedState,
    classify,
    decode_observed_state,
    observation_digest,
    state_matches,
)
from maka_ref._reconcile.observer import OBSERVER_SUPPORTED, observe, observe_evidence

__all__ = [
    "BINDING_CODES",
    "EVIDENCE_CODES",
    "FILE_EVIDENCE_PROTOCOL",
    "MAX_FILE_BYTES",
    "OBSERVER_SUPPORTED",
    "TRANSFORM_FOR_TOOL",
    "TRANSIENT_REASONS",
    "UNREADABLE_REASONS",
    "Classification",
    "EvidenceError",
    "FileEvidence",
    "FileState",
    "Invalid",
    "ObservedState",
    "check_binding",
    "classify",
    "content_digest",
    "decode_evidence",
    "decode_evidence_text",
    "decode_observed_state",
    "encode_evidence",
    "evidence_digest",
    "expected_result",
    "observation_digest",
    "observe",
    "observe_evidence",
    "state_matches",
    "target_path_problem",
]
