"""The RuntimeEvent: closed schema, normalisation, lossless encoding, predicates (spec 10 §1–§2, §5.1).

What: ``decode_runtime_event`` validates any value against the closed RuntimeEvent schema and
returns it normalised and deep-frozen; ``encode_runtime_event`` produces the one canonical,
lossless JSON text; ``decode_tool_recovery`` validates recovery-fact envelopes on their own;
the predicates (terminal / partial / model-visible / run status) are total functions usable
on un-decoded events; ``constants`` holds every enum and protocol string; ``boundary`` is the
Phase 4 ``WorkspaceBoundary`` codec and its ``actions.workspaceBoundary`` envelope
(docs/spec-phase4.md §1).

Why: a RuntimeEvent is the only canonical source of recovery truth. Everything above this
package (lanes, scanner, bundles, resolver, plans, stores) trusts that a decoded event has
exactly the documented shape and that equal facts have equal canonical bytes.

Depends on: ``maka_ref._errors`` and ``maka_ref._codec`` (frozen containers, ``stable_json``,
``parse_json``). Pure: no I/O, no clock, no randomness, no global mutable state.
Choices where the spec is silent are listed in ``docs/choices/events.md``.

May import: ``maka_ref._codec``, ``maka_ref._errors``.
"""

from maka_ref._events.encode import EncodedRuntimeEvent, canonical_event_json, encode_runtime_event
from maka_ref._events.predicates import (
    has_model_visible_content,
    is_partial_event,
    is_terminal_event,
    terminal_run_status,
)
from maka_ref._events.recovery_facts import decode_tool_recovery, is_sha256_digest
from maka_ref._events.schema import decode_runtime_event

__all__ = [
    "EncodedRuntimeEvent",
    "canonical_event_json",
    "decode_runtime_event",
    "decode_tool_recovery",
    "encode_runtime_event",
    "has_model_visible_content",
    "is_partial_event",
    "is_sha256_digest",
    "is_terminal_event",
    "terminal_run_status",
]
