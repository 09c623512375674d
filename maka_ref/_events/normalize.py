"""Decode-time normalisation of ``text`` content (spec 10 §2.1 step 2, §2.5).

Why it exists: two raw events that differ only by removable presentation (``displayText``
equal to ``text``, empty ``attachments``/``quotes``, a legacy origin spelling, ``-0`` byte
counts) must decode to the *same* value, so that a raw retry is an exact retry (§2.5) and
the canonical bytes are unique. Normalisation therefore runs inside decode, before anything
is compared or encoded.

Rules (and nothing else — every other content kind and field is returned unchanged):

* keep ``text``; keep ``displayText`` only when it differs from ``text``;
* keep ``attachments`` / ``quotes`` only when non-empty; an attachment ``bytes`` of ``-0``
  becomes ``0``; quotes carry only ``text``, ``label?``, ``sourceTurnId?`` (the decoder's
  closed quote schema already guarantees that, so they are reused, not copied);
* keep ``inlineReferences`` whenever present, **including an empty array** (meaningful);
* keep ``origin``, rewriting the legacy ``{kind: "automation", …}`` to
  ``{kind: "legacy_automation", …}``; keep ``steering`` (always ``true`` after validation);
* drop ``providerOptions``: spec 10 §2.1's keep-list for text content does not name it, and
  spec 30 §0.2 states (golden vector) that decoding drops a text ``providerOptions``.

Pure; depends on ``_events.checkers`` (frozen builders) and ``_events.constants``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from maka_ref._codec.frozen import FrozenDict, FrozenList
from maka_ref._events.checkers import frozen_dict, frozen_list
from maka_ref._events.constants import (
    CONTENT_KIND_TEXT,
    LEGACY_AUTOMATION_ORIGIN_KIND,
    REWRITTEN_AUTOMATION_ORIGIN_KIND,
)

__all__ = ["normalize_attachment", "normalize_text_content", "normalize_turn_origin"]

_MISSING: Any = object()


def _is_negative_zero(value: Any) -> bool:
    return type(value) is float and value == 0.0 and math.copysign(1.0, value) < 0


def normalize_attachment(attachment: Mapping[str, Any]) -> Mapping[str, Any]:
    """Return ``attachment`` with a ``-0`` byte count replaced by ``0`` (same object if unchanged)."""
    if not _is_negative_zero(attachment.get("bytes")):
        return attachment
    rebuilt = dict(attachment)
    rebuilt["bytes"] = 0
    return frozen_dict(rebuilt)


def normalize_turn_origin(origin: Mapping[str, Any]) -> Mapping[str, Any]:
    """Rewrite the legacy ``automation`` TurnOrigin kind to ``legacy_automation``."""
    kind = origin.get("kind")
    if type(kind) is not str or kind != LEGACY_AUTOMATION_ORIGIN_KIND:
        return origin
    rebuilt = dict(origin)
    rebuilt["kind"] = REWRITTEN_AUTOMATION_ORIGIN_KIND
    return frozen_dict(rebuilt)


def normalize_text_content(content: Mapping[str, Any]) -> FrozenDict:
    """Normalise one *validated* ``text`` content object (values already frozen).

    The input is what the decoder's closed text-content schema produced; the result is the
    canonical frozen content. Key order is irrelevant (canonical JSON sorts keys).
    """
    text = content["text"]
    out: dict[str, Any] = {"kind": CONTENT_KIND_TEXT, "text": text}
    display_text = content.get("displayText", _MISSING)
    if display_text is not _MISSING and display_text != text:
        out["displayText"] = display_text
    attachments = content.get("attachments", _MISSING)
    if attachments is not _MISSING and len(attachments) > 0:
        normalized = [normalize_attachment(item) for item in attachments]
        changed = any(new is not old for new, old in zip(normalized, attachments))
        out["attachments"] = frozen_list(normalized) if changed else _as_frozen_list(attachments)
    quotes = content.get("quotes", _MISSING)
    if quotes is not _MISSING and len(quotes) > 0:
        out["quotes"] = _as_frozen_list(quotes)
    inline_references = content.get("inlineReferences", _MISSING)
    if inline_references is not _MISSING:
        out["inlineReferences"] = _as_frozen_list(inline_references)
    origin = content.get("origin", _MISSING)
    if origin is not _MISSING:
        out["origin"] = normalize_turn_origin(origin)
    if content.get("steering", _MISSING) is True:
        out["steering"] = True
    return frozen_dict(out)


def _as_frozen_list(items: Any) -> FrozenList:
    return items if type(items) is FrozenList else frozen_list(list(items))
