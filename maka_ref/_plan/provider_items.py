"""The model-history projector used by v2 continuation replay (spec 20 §1.10 step 3).

Why this exists: a continuation must hand the provider exactly the committed history —
never a streaming snapshot, never a hidden nested Code Mode event, never a terminal or
error fact dressed up as a message, never a ``tool_use`` without its ``tool_result``.
This module turns immutable RuntimeEvents into neutral *provider items* plus diagnostics;
the segment planner (:mod:`maka_ref._plan.segment_replay`) decides from the diagnostics
whether the segment is replayable, and hashes the items into the provider replay digest.

Provider items (JSON objects, every one with ``eventId`` and ``ts`` of its source event;
optional keys are absent, never ``null``)::

    {"kind": "text", "role": "user"|"assistant"|"system", "content": str,
     "attachments"?: [...], "stepId"?: str, "eventId", "ts"}
    {"kind": "thinking", "text": str, "signature": str, "stepId"?: str, "eventId", "ts"}
    {"kind": "tool_call", "toolCallId": str, "toolName": str, "input": <args>,
     "stepId"?: str, "eventId", "ts"}
    {"kind": "tool_result", "toolCallId": str, "toolName": str, "output": <result>,
     "isError": bool, "eventId", "ts"}

(``role: "system"`` is part of the item vocabulary but never produced: system replay is
disabled.) Field names follow the anchor's replay items so the digest has a chance of
byte parity; see ``docs/choices/v2-replay.md`` for every choice made where the spec only
sketches the projector.

Per event, in ledger order (first matching rule wins; "→ code" names the diagnostic,
**bold** codes are *blocking*):

1. not an object, or ``id`` not a non-empty string, or ``ts`` not a finite number →
   **unsupported_content**;
2. ``partial === true`` → **partial_skipped**;
3. ``modelVisibility === "hidden"`` → ``hidden_skipped`` (skipped, not blocking);
4. terminal event → ``terminal_fact_diagnostic_only`` (then continue with rule 5);
5. no ``content`` → ``system_runtime_fact_diagnostic_only`` if it has ``actions`` and is
   not terminal; skipped;
6. ``content`` not an object, unknown ``kind``, or a ``text``/``thinking`` whose text is
   not a string → **unsupported_content**;
7. ``error`` content → ``error_content_diagnostic_only``; empty ``text`` with role
   ``model`` → ``empty_text_skipped``; empty ``text`` with any other role →
   **unsupported_content**;
8. role ``system`` → ``system_runtime_fact_diagnostic_only`` (system replay disabled);
9. ``text``: role ``user`` → user item, ``model`` → assistant item, else
   **unsupported_role**;
10. ``thinking``: role must be ``model`` (**unsupported_role**); no signature →
    ``unsigned_thinking_skipped``; signed but its turn has a visible ``function_call``
    without ``refs.stepId`` → ``signed_thinking_in_tool_turn_skipped``; else an item;
11. ``function_call``: role must be ``model`` (**unsupported_role**); ``id``/``name`` must
    be strings (**unsupported_content**); becomes a *pending* ``tool_call`` item;
12. ``function_response``: role must be ``tool`` (**unsupported_role**); ``id``/``name``
    must be strings (**unsupported_content**); no pending call with that id →
    **unmatched_tool_result**; pending call with another name → **tool_id_mismatch**;
    the ``tool_result`` item is emitted either way and the call stops being pending.

Finally every call still pending is removed from the items and reported as
``unmatched_tool_call`` (not blocking here; the segment planner trims it or blocks with
``provider_replay_non_suffix_gap``).

Never raises, never mutates its input. Pure.
"""

from __future__ import annotations

from typing import Any, Iterable

from maka_ref._plan.provider_diagnostics import (
    BLOCKING_DIAGNOSTIC_CODES,
    DIAGNOSTIC_CODES,
    ProviderProjection,
    ReplayDiagnostic,
)
from maka_ref._plan.provider_projector import _Projector

__all__ = [
    "BLOCKING_DIAGNOSTIC_CODES",
    "DIAGNOSTIC_CODES",
    "ProviderProjection",
    "ReplayDiagnostic",
    "project_provider_items",
]


def project_provider_items(events: Iterable[Any]) -> ProviderProjection:
    """Project RuntimeEvents to provider items and diagnostics (spec 20 §1.10 step 3).

    Accepts any iterable of values (garbage included); never raises; never mutates input.
    """
    try:
        event_list = list(events)
    except TypeError:
        return ProviderProjection(
            items=(), diagnostics=(ReplayDiagnostic("unsupported_content", "RuntimeEvent list is not iterable"),)
        )
    return _Projector(event_list).run()
