"""maka_ref: the reference runtime for crash-safe resume of agent runtimes.

This package is the oracle the conformance suite compares implementations against, and an
implementation under test itself. Everything public is re-exported here; the modules behind
it are private (``_codec``, ``_events``, ...) and may be reorganised without notice.

Layering (each layer imports only the layers above it in this list):

1. ``_errors``  exceptions with stable codes.
2. ``_codec``   canonical JSON (UTF-16 key order, ECMAScript numbers and escaping), JSON text
   with double semantics, frozen values, ``canonicalArgsHash`` with ICU-root collation.
3. ``_events``  the RuntimeEvent closed schema, text normalisation, lossless encoding and
   the terminal / partial / model-visible predicates.
4. ``_ledger``  semantic lanes, the tool-ledger scanner, transition validation, recovery
   bundles, the RecoveryResolver and the Code Mode interrupted-outcome helper.
5. ``_plan``    the Phase 0 ResumePlan, provider replay, the P0–P11 failpoint catalogue, v2
   immutable prefixes with SHA-256 digests and continuation segment replay.
6. ``_cli``     the ``maka-ref`` command line (the only I/O).

Layers 1–5 are the *pure core*: no I/O, no clock, no randomness. The resolver and planners
never raise on any input: malformed ledgers come back as ``corruption`` / ``blocked``.
Helpers for tests (the spec's fixture families and Hypothesis strategies) live in
:mod:`maka_ref.testing`.

May import: nothing of ours.
"""

from maka_ref._codec.argshash import canonical_args_hash
from maka_ref._codec.frozen import FrozenDict, FrozenList, freeze, thaw
from maka_ref._codec.jsontext import parse_json, stable_json
from maka_ref._codec.numbers import format_number
from maka_ref._errors import (
    ArgsHashError,
    InvalidJSONTextError,
    MakaRefError,
    NotStrictJSONError,
    PrefixError,
    RuntimeEventNotSerializableError,
    RuntimeEventSchemaError,
)
from maka_ref._events.encode import EncodedRuntimeEvent, canonical_event_json, encode_runtime_event
from maka_ref._events.predicates import (
    has_model_visible_content,
    is_partial_event,
    is_terminal_event,
    terminal_run_status,
)
from maka_ref._events.schema import decode_runtime_event
from maka_ref._ledger.bundle import interpret_operation, validate_recovery_bundle
from maka_ref._ledger.code_mode import build_interrupted_code_mode_outcome_commits
from maka_ref._ledger.lanes import classify_lane, validate_generic_append
from maka_ref._ledger.resolver import resolve_recovery
from maka_ref._ledger.results import Decision, Resolution, ResolverIssue, ToolLedgerIssue, ToolLedgerScan
from maka_ref._ledger.scanner import scan_tool_ledger
from maka_ref._ledger.transition import TransitionResult, validate_transition
from maka_ref._plan.phase0.failpoints import FAILPOINTS, reference_crash_ledger
from maka_ref._plan.phase0.plan import ResumePlan, build_resume_plan

__version__ = "0.1.0"

__all__ = [
    "ArgsHashError",
    "Decision",
    "EncodedRuntimeEvent",
    "FAILPOINTS",
    "FrozenDict",
    "FrozenList",
    "InvalidJSONTextError",
    "MakaRefError",
    "NotStrictJSONError",
    "PrefixError",
    "Resolution",
    "ResolverIssue",
    "ResumePlan",
    "RuntimeEventNotSerializableError",
    "RuntimeEventSchemaError",
    "ToolLedgerIssue",
    "ToolLedgerScan",
    "TransitionResult",
    "build_interrupted_code_mode_outcome_commits",
    "build_resume_plan",
    "canonical_args_hash",
    "canonical_event_json",
    "classify_lane",
    "decode_runtime_event",
    "encode_runtime_event",
    "format_number",
    "freeze",
    "has_model_visible_content",
    "interpret_operation",
    "is_partial_event",
    "is_terminal_event",
    "parse_json",
    "reference_crash_ledger",
    "resolve_recovery",
    "scan_tool_ledger",
    "stable_json",
    "terminal_run_status",
    "thaw",
    "validate_generic_append",
    "validate_recovery_bundle",
    "validate_transition",
]
