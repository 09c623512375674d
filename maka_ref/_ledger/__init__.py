"""The tool ledger: lanes, scanner, transition validation, recovery bundles, resolver.

What: the pure interpretation of a RuntimeEvent ledger's tool facts (spec 10 §3–§6):

* ``lanes``      — which semantic lane an event is on (§4.1) and what a generic append may
                   carry (§4.2);
* ``scanner``    — the one-pass tool-ledger scanner (§4.3–§4.5), the single interpreter of
                   duplicate / order / identity rules;
* ``transition`` — write-side validation of a candidate append (§4.6);
* ``bundle``     — recovery-bundle validation and interpretation of a scanned operation
                   (§5.3, §5.4): its codes, value types and checks in one module;
* ``resolver``   — the RecoveryResolver (§6.1–§6.4);
* ``code_mode``  — interrupted Code Mode outcome commits (§6.5);
* ``results``    — the result dataclasses.

Why one package: the resolver, the store's writers and projection rebuild must agree on the
same immutable ledger, so they all go through these functions and never rebuild the maps.

Pure: no I/O, no clock, no randomness. The scanner, resolver, ``interpret_operation`` and the
Code Mode helper accept any input, never raise and never mutate it (our handling of entries
the spec cannot interpret is listed in ``docs/choices/ledger.md``).

Depends on: ``maka_ref._codec`` (args hash), ``maka_ref._events`` (constants, recovery-fact
decoding, canonical event JSON).

May import: ``maka_ref._codec``, ``maka_ref._events``.
"""

from maka_ref._ledger.bundle import (
    BundleValidation,
    Interpretation,
    OperationIdentity,
    identity_from_scanned_operation,
    interpret_operation,
    validate_recovery_bundle,
)
from maka_ref._ledger.code_mode import build_interrupted_code_mode_outcome_commits
from maka_ref._ledger.lanes import (
    candidate_lanes,
    classify_lane,
    validate_generic_append,
)
from maka_ref._ledger.resolver import resolve_recovery
from maka_ref._ledger.results import (
    Decision,
    Resolution,
    ResolverIssue,
    ScannedOperation,
    ToolLedgerIssue,
    ToolLedgerScan,
)
from maka_ref._ledger.scanner import scan_tool_ledger
from maka_ref._ledger.transition import (
    TRANSITION_KINDS,
    TransitionResult,
    validate_transition,
)

__all__ = [
    "BundleValidation",
    "Decision",
    "Interpretation",
    "OperationIdentity",
    "Resolution",
    "ResolverIssue",
    "ScannedOperation",
    "TRANSITION_KINDS",
    "ToolLedgerIssue",
    "ToolLedgerScan",
    "TransitionResult",
    "build_interrupted_code_mode_outcome_commits",
    "candidate_lanes",
    "classify_lane",
    "identity_from_scanned_operation",
    "interpret_operation",
    "resolve_recovery",
    "scan_tool_ledger",
    "validate_generic_append",
    "validate_recovery_bundle",
    "validate_transition",
]
