"""The text-plus-attachment-refs rendering of a replayed ``text`` item.

Split out of :mod:`maka_ref._plan.provider_items` because it reproduces JavaScript
``String(value)`` exactly (the anchor's byte parity for the provider replay digest), a
concern separate from the projection rules. Pure: no I/O, clock, randomness or state.
"""

from __future__ import annotations

from typing import Mapping

from maka_ref._codec.numbers import format_number

__all__: list[str] = []  # private helpers of the provider-item projector, imported by name


_MISSING = object()


def _js_string(value: object) -> str:
    """JavaScript ``String(value)`` for the values an attachment field can hold."""
    if value is _MISSING:
        return "undefined"
    if isinstance(value, str):
        return value
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        try:
            return format_number(value)
        except Exception:  # noqa: BLE001 - NaN/Infinity and friends
            return str(value)
    if isinstance(value, (list, tuple)):
        return ",".join("" if v is None else _js_string(v) for v in value)
    return "[object Object]"


def _text_with_attachments(text: str, attachments: object) -> str:
    """The text plus one ``[attachment: name (mimeType)]`` ref per attachment."""
    if not isinstance(attachments, (list, tuple)) or not attachments:
        return text
    refs = []
    for attachment in attachments:
        fields = attachment if isinstance(attachment, Mapping) else {}
        refs.append(
            f"[attachment: {_js_string(fields.get('name', _MISSING))} "
            f"({_js_string(fields.get('mimeType', _MISSING))})]"
        )
    return f"{text}\n\n{' '.join(refs)}"
