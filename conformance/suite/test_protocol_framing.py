"""Framing of the wire protocol (protocol §1.3): PROTOCOL-FRAMING-*.

Why a clause of its own: a request is one line terminated by ``\\n``, and JSON strings may hold
U+2028 LINE SEPARATOR and U+2029 PARAGRAPH SEPARATOR raw (they are legal JSON; the harness
writes non-ASCII characters unescaped). Some line splitters also break lines there — Node's
``readline`` does since Node 24 — so an adapter built on one reads such a request as two
fragments of garbage. Nothing in the other clauses sends those characters raw, so the bug
would only show in the field, on the first tool result that contains one. This clause sends
them and, when the answer does not come back as the one response to the one request, says
which character broke the line and how to fix it.
"""

from __future__ import annotations

from typing import Any

from conformance.clauses import ClauseMismatch, clause, expect_equal

SEPARATORS = {"U+2028 LINE SEPARATOR": "\u2028", "U+2029 PARAGRAPH SEPARATOR": "\u2029",
              "U+0085 NEXT LINE": "\u0085"}
FIX = ("split request lines at the byte 0x0A only (docs/protocol.md §1.3); Node's readline also splits at "
       "U+2028/U+2029 since Node 24 — read stdin as bytes and cut at '\\n' (docs/adapter-guide.md §2)")


def _event(text: str) -> dict[str, Any]:
    return {"id": "framing-1", "invocationId": "invocation-1", "runId": "run-1", "sessionId": "session-1",
            "turnId": "turn-1", "ts": 1, "partial": False, "role": "user", "author": "user",
            "content": {"kind": "text", "text": text}}


@clause("PROTOCOL-FRAMING-001", spec="protocol §1.3; 10 §2.3", capability="ledger.codec",
        title="a request holding raw U+2028, U+2029 and U+0085 inside JSON strings is read as one request line")
def test_unicode_line_separators_inside_strings(maka: Any) -> None:
    """protocol §1.3 (one message per ``\\n``-terminated line) with spec 10 §2.3 (the canonical
    JSON keeps U+2028 and U+2029 raw): ``ledger.encode`` of a text holding each separator must
    answer that one request, and its canonical JSON must hold the characters unescaped."""
    for name, char in SEPARATORS.items():
        text = f"before{char}after"
        try:
            reply = maka.call("ledger.encode", {"event": _event(text)})
        except ClauseMismatch as exc:
            raise ClauseMismatch(f"a request whose JSON string holds a raw {name} was not answered as one "
                                 f"request ({exc}); {FIX}", evidence={"character": name, **exc.evidence}) from None
        if not reply.ok:
            raise ClauseMismatch(f"ledger.encode of a text holding a raw {name} answered "
                                 f"{(reply.error or {}).get('code')}; if the request arrived split, {FIX}",
                                 evidence={"character": name, "error": dict(reply.error or {})})
        expect_equal(f'"text":"{text}"' in (reply.result or {}).get("canonicalJson", ""), True,
                     what=f"the canonical JSON keeps the raw {name} (spec 10 §2.3)")
