"""Torn JSON lines: a ledger's JSON-lines bytes with the last line cut strictly inside.

For storage and CLI layers, where a torn row is corruption, never a shorter prefix
(spec 20 §1.8).
"""

from __future__ import annotations

from typing import Any, Callable

from hypothesis import strategies as st

from maka_ref.testing._strategies.ledger_model import TornJsonl, _jsonl_line
from maka_ref.testing._strategies.ledgers import ledgers


@st.composite
def torn_jsonl(draw: Callable[[Any], Any], **ledger_kwargs: Any) -> TornJsonl:
    """The JSON-lines bytes of a non-empty ledger whose last line is cut at a byte offset
    strictly inside it (possibly inside a multi-byte UTF-8 sequence). Lines are compact JSON
    with raw UTF-8 (not necessarily canonical)."""
    ledger_kwargs.setdefault("min_events", 1)
    ledger = draw(ledgers(**ledger_kwargs).filter(lambda l: len(l.events) > 0))
    lines = [_jsonl_line(e).encode("utf-8") for e in ledger.events]
    last = lines[-1]
    kept = draw(st.integers(1, len(last) - 1))
    data = b"".join(line + b"\n" for line in lines[:-1]) + last[:kept]
    return TornJsonl(data=data, ledger=ledger, intact_lines=len(lines) - 1, kept_bytes=kept)
