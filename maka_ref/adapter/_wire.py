"""Framing: one JSON document per line, parsed with double semantics, written losslessly.

Why not plain ``json``: requests carry numbers whose spelling matters (``-0``, integers beyond
2^53, ``1e400``), so they are parsed with :func:`maka_ref.parse_json` (spec 10 §2.4). Results
carry strings with lone surrogates (``"\\ud800"`` in the encoding vectors) and ``-0``: the
writer keeps ``-0`` as ``-0.0``, writes ±infinity as ``±1e400`` (which a double parser reads
back as ±infinity; JSON has no other spelling), escapes lone surrogates as ``\\udXXX`` (raw
surrogates cannot be encoded as UTF-8) and leaves every other character unescaped.
"""

from __future__ import annotations

import json
import re
from typing import Any

from maka_ref import parse_json
from maka_ref._codec.jsontext import write_with_infinities

__all__ = ["decode_line", "encode_message"]

_SURROGATE = re.compile("[\ud800-\udfff]")


def decode_line(line: bytes) -> Any:
    """The JSON value of one request line (``InvalidJSONTextError`` / ``UnicodeDecodeError``)."""
    return parse_json(line.decode("utf-8").rstrip("\r\n"))


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def _escape_lone_surrogates(text: str) -> str:
    if text.isascii() or not _SURROGATE.search(text):
        return text
    # Raw surrogates only occur inside string literals; first join any split pair.
    text = text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "surrogatepass")
    return _SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def encode_message(message: Any) -> bytes:
    """One protocol line (UTF-8, ``\\n``-terminated) for ``message``."""
    text = write_with_infinities(_dumps, message)  # NaN never comes out of a JSON parse
    return (_escape_lone_surrogates(text) + "\n").encode("utf-8")
