"""The incomplete-prefix classifier of the legacy JSONL profile (spec 30 §5, last paragraphs).

Why it exists: a crash in the middle of an append leaves the last line of a
``runtime-events.jsonl`` file *torn* — the bytes of a valid record with only the end missing.
Spec 30 §5.2 rule 6 (and the historical legacy writer) must tell such a torn tail apart from
garbage. In this project a torn tail is still refused (see ``docs/choices/legacy-jsonl.md``),
but the classifier lets the refusal say precisely *which* of the two it is.

``classify_json_text(text)`` runs a small, non-recursive JSON scanner over ``text`` and returns

* ``"complete"`` — exactly one JSON document (surrounding JSON whitespace allowed);
* ``"incomplete_prefix"`` — the input ended *inside* a value, so appending characters could
  still make it valid: an open object/array/string, a partial literal (``t``, ``tr``, ``fal``,
  ``nu`` …), a number ending in ``-``, ``.``, ``e``, ``e+``/``e-``, a ``\\`` or a partial
  ``\\u`` escape with only hex digits so far, a dangling ``,`` or ``:``, an object key without
  its ``:``; also the empty (or all-whitespace) text, a prefix of every document;
* ``"invalid"`` — no continuation can make it valid: any wrong character, a raw control
  character (U+0000–U+001F) inside a string, trailing garbage after a complete document,
  nesting deeper than :data:`MAX_PREFIX_DEPTH` (512) containers, a ``,`` followed (after
  optional whitespace) by a closing bracket.

The property the tests check with Hypothesis: every prefix of a valid JSON text classifies as
``incomplete_prefix`` or ``complete``, never ``invalid``; ``invalid`` is monotone (no
extension of an invalid text is valid); and every ``incomplete_prefix`` has a completion
(:func:`completion_suffix`).

``classify_json_bytes(data)`` does the same for raw file bytes: the bytes must be UTF-8, except
that a multi-byte sequence cut at the very end (the crash tore the record inside a character)
counts as missing bytes, not as an encoding error.

Pure: no I/O, no global mutable state. Depends on nothing inside ``maka_ref``.
"""

from __future__ import annotations

import codecs
import re
from typing import Literal

__all__ = [
    "MAX_PREFIX_DEPTH",
    "PrefixClass",
    "classify_json_bytes",
    "classify_json_text",
    "completion_suffix",
]

PrefixClass = Literal["complete", "incomplete_prefix", "invalid"]

#: Spec 30 §5: "depth > 512" is invalid. (``parse_json`` caps at 500; a document nested
#: 501–512 deep is therefore "complete" here yet refused by the parser — the legacy reader
#: treats it as an invalid line, never as a torn tail.)
MAX_PREFIX_DEPTH = 512

_WS = re.compile(r"[ \t\n\r]*")
# The body of a string: runs of ordinary characters and complete escapes.
_STRING_BODY = re.compile(r'(?:[^"\\\x00-\x1f]+|\\["\\/bfnrt]|\\u[0-9a-fA-F]{4})*')
# A string escape that is cut by the end of the input: "\" or "\u" with 0–3 hex digits.
_PARTIAL_ESCAPE = re.compile(r"\\(?:u[0-9a-fA-F]{0,3})?")
# The greedy run of characters that can belong to a number token.
_NUMBERISH = re.compile(r"[-+0-9.eE]*")
_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?")
# Every proper prefix of a number (including "", "-", "1.", "1e", "1e+", "1.5E-").
_NUMBER_PREFIX = re.compile(r"-?(?:(?:0|[1-9][0-9]*)(?:\.[0-9]*|(?:\.[0-9]+)?[eE][+-]?[0-9]*)?)?")
_LITERALS = {"t": "true", "f": "false", "n": "null"}

# Scanner states: what the next significant character must be.
_VALUE = 0  # a value (after ":" or "," in an array, or at the top)
_VALUE_OR_CLOSE = 1  # right after "["
_KEY = 2  # an object key (after "," in an object)
_KEY_OR_CLOSE = 3  # right after "{"
_COLON = 4  # after an object key
_COMMA_OR_CLOSE = 5  # after a value inside a container
_END = 6  # after the top-level value: only whitespace may follow

_CLOSER = {"[": "]", "{": "}"}


class _Incomplete(Exception):
    """Internal: the input ended inside a token; ``suffix`` completes that token."""

    def __init__(self, suffix: str) -> None:
        self.suffix = suffix


class _Invalid(Exception):
    """Internal: no continuation can make the input valid."""


def _scan_string(text: str, pos: int) -> int:
    """``text[pos]`` is ``"``; return the index after the closing quote."""
    end = _STRING_BODY.match(text, pos + 1).end()
    if end == len(text):
        raise _Incomplete('"')
    c = text[end]
    if c == '"':
        return end + 1
    if c == "\\":
        tail = text[end:]
        if _PARTIAL_ESCAPE.fullmatch(tail):
            # "\" -> "\\" + quote; "\u12" -> "\u1200" + quote.
            escape_suffix = "\\" if tail == "\\" else "0" * (6 - len(tail))
            raise _Incomplete(escape_suffix + '"')
        raise _Invalid  # a bad escape character or bad hex digit
    raise _Invalid  # a raw control character inside a string


def _scan_number(text: str, pos: int) -> int:
    end = _NUMBERISH.match(text, pos).end()
    token = text[pos:end]
    if _NUMBER.fullmatch(token):
        return end
    if end == len(text) and _NUMBER_PREFIX.fullmatch(token):
        # A proper prefix ends in "-", ".", "e"/"E" or a sign: one digit completes it.
        raise _Incomplete("0")
    raise _Invalid


def _scan_literal(text: str, pos: int) -> int:
    word = _LITERALS[text[pos]]
    if text.startswith(word, pos):
        return pos + len(word)
    rest = text[pos:]
    if word.startswith(rest):
        raise _Incomplete(word[len(rest) :])
    raise _Invalid


def _scan(text: str) -> tuple[PrefixClass, str]:
    """Classify ``text`` and, for an incomplete prefix, return a suffix that completes it."""
    stack: list[str] = []
    state = _VALUE
    pos = 0
    n = len(text)
    try:
        while True:
            pos = _WS.match(text, pos).end()
            if pos == n:
                if state == _END:
                    return "complete", ""
                return "incomplete_prefix", _closing_suffix(state, stack, "")
            c = text[pos]
            if state in (_VALUE, _VALUE_OR_CLOSE):
                if c == "]" and state == _VALUE_OR_CLOSE:
                    stack.pop()
                    pos += 1
                elif c == "[" or c == "{":
                    if len(stack) >= MAX_PREFIX_DEPTH:
                        return "invalid", ""
                    stack.append(c)
                    pos += 1
                    state = _VALUE_OR_CLOSE if c == "[" else _KEY_OR_CLOSE
                    continue
                elif c == '"':
                    pos = _scan_string(text, pos)
                elif c == "-" or "0" <= c <= "9":
                    pos = _scan_number(text, pos)
                elif c in _LITERALS:
                    pos = _scan_literal(text, pos)
                else:
                    return "invalid", ""
                state = _COMMA_OR_CLOSE if stack else _END
            elif state in (_KEY, _KEY_OR_CLOSE):
                if c == "}" and state == _KEY_OR_CLOSE:
                    stack.pop()
                    pos += 1
                    state = _COMMA_OR_CLOSE if stack else _END
                elif c == '"':
                    try:
                        pos = _scan_string(text, pos)
                    except _Incomplete as exc:
                        raise _Incomplete(exc.suffix + ":0") from None
                    state = _COLON
                else:
                    return "invalid", ""
            elif state == _COLON:
                if c != ":":
                    return "invalid", ""
                pos += 1
                state = _VALUE
            elif state == _COMMA_OR_CLOSE:
                top = stack[-1]
                if c == ",":
                    pos += 1
                    state = _VALUE if top == "[" else _KEY
                elif c == _CLOSER[top]:
                    stack.pop()
                    pos += 1
                    state = _COMMA_OR_CLOSE if stack else _END
                else:
                    return "invalid", ""
            else:  # _END: trailing garbage
                return "invalid", ""
    except _Incomplete as exc:
        return "incomplete_prefix", _closing_suffix(_COMMA_OR_CLOSE if stack else _END, stack, exc.suffix)
    except _Invalid:
        return "invalid", ""


def _closing_suffix(state: int, stack: list[str], token_suffix: str) -> str:
    """A suffix that completes the current token, the pending value/key, and every container."""
    pending = {
        _VALUE: "0",
        _VALUE_OR_CLOSE: "",
        _KEY: '"":0',
        _KEY_OR_CLOSE: "",
        _COLON: ":0",
        _COMMA_OR_CLOSE: "",
        _END: "",
    }[state]
    return token_suffix + pending + "".join(_CLOSER[c] for c in reversed(stack))


def classify_json_text(text: str) -> PrefixClass:
    """Classify ``text`` as ``complete``, ``incomplete_prefix`` or ``invalid`` (spec 30 §5)."""
    if not isinstance(text, str):
        raise TypeError(f"classify_json_text expects str, got {type(text).__name__}")
    return _scan(text)[0]


def completion_suffix(text: str) -> str | None:
    """For an incomplete prefix, a suffix ``s`` such that ``text + s`` is one JSON document.

    Returns ``""`` for complete text and ``None`` for invalid text. It is the witness that
    ``incomplete_prefix`` is sound ("bytes missing only at the end could make it valid").
    """
    kind, suffix = _scan(text)
    if kind == "invalid":
        return None
    return suffix


def classify_json_bytes(data: bytes) -> PrefixClass:
    """Classify raw bytes: strict UTF-8, but a multi-byte character cut at the end is missing
    bytes (``incomplete_prefix`` when the cut is inside a string, ``invalid`` elsewhere)."""
    decoder = codecs.getincrementaldecoder("utf-8")("strict")
    try:
        text = decoder.decode(bytes(data), final=False)
    except UnicodeDecodeError:
        return "invalid"
    pending, _ = decoder.getstate()
    if not pending:
        return classify_json_text(text)
    # The missing bytes complete one non-ASCII character. Outside a string no non-ASCII
    # character is valid JSON; inside one, any is. "\u00e9" stands in for the lost character.
    kind = classify_json_text(text + "\u00e9")
    return "invalid" if kind == "invalid" else "incomplete_prefix"
