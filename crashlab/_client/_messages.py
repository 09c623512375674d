"""Parsing and checking protocol messages (protocol §2, §3), separate from any I/O.

Why separate: these rules are what "protocol_violation" and "handshake_failed" mean, and they
are easiest to read (and to change with the protocol version) without threads or processes
around them. The JSON Schemas check the shape of each ``result``; this module checks only the
envelope every message shares, so the client works before any schema exists.
"""

from __future__ import annotations

import json
from typing import Any, Mapping

from crashlab._client._results import Handshake, Reply

__all__ = [
    "PROTOCOL_VERSION",
    "check_response",
    "default_harness_version",
    "describe_schema_errors",
    "describe_unsolicited",
    "encode_request",
    "hello_params",
    "is_announcement",
    "parse_handshake",
    "parse_object",
    "preview",
    "to_reply",
]

PROTOCOL_VERSION = 1

_PREVIEW_CHARS = 200


def preview(data: bytes | str) -> str:
    """The offending line for a message: at most 200 characters, repr-quoted."""
    text = data if isinstance(data, str) else data[: _PREVIEW_CHARS * 4].decode("utf-8", "replace")
    cut = text[:_PREVIEW_CHARS]
    suffix = f"… ({len(data)} bytes)" if len(text) > _PREVIEW_CHARS else ""
    return repr(cut) + suffix


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def parse_object(data: bytes) -> dict[str, Any]:
    """Decode one line as a strict-JSON object; ``ValueError`` saying why not."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ValueError(f"not UTF-8 ({exc.reason})") from None
    try:
        value = json.loads(text, parse_constant=_reject_constant)
    except ValueError as exc:
        raise ValueError(f"not JSON ({exc})") from None
    if not isinstance(value, dict):
        raise ValueError(f"not a JSON object but {type(value).__name__}")
    return value


def encode_request(request_id: int, op: str, params: Mapping[str, Any]) -> bytes:
    """One request line (protocol §2.1), compact, UTF-8, ``\\n``-terminated."""
    message = {"id": request_id, "op": op, "params": dict(params)}
    text = json.dumps(message, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    return text.encode("utf-8") + b"\n"


def is_announcement(message: Mapping[str, Any]) -> bool:
    """A failpoint announcement ``{"failpoint": id}`` (protocol §2.3), not a response."""
    return "failpoint" in message and "id" not in message


def check_response(message: Mapping[str, Any], expected_id: int) -> str | None:
    """What is wrong with the envelope of a response to ``expected_id``, or ``None``."""
    got = message.get("id")
    if not isinstance(got, int) or isinstance(got, bool):
        return f"response without an integer id (expected {expected_id})"
    if got != expected_id:
        if 0 <= got < expected_id:
            return f"a second response to request {got} (expected id {expected_id})"
        return f"wrong id {got} (expected {expected_id})"
    ok = message.get("ok")
    if not isinstance(ok, bool):
        return "response without a boolean 'ok'"
    if ok and not isinstance(message.get("result"), dict):
        return "'ok': true without an object 'result'"
    if not ok:
        error = message.get("error")
        if not isinstance(error, dict) or not isinstance(error.get("code"), str) or not error["code"]:
            return "'ok': false without an 'error' object carrying a non-empty 'code'"
    return None


def describe_unsolicited(data: bytes, request_id: int) -> str:
    """A line that arrived while no request was in flight (e.g. a second response)."""
    what = "unsolicited output"
    try:
        old = parse_object(data).get("id")
    except ValueError:
        old = None
    if isinstance(old, int) and not isinstance(old, bool) and 0 <= old < request_id:
        what = f"a second response to request {old}"
    return f"{what} before request {request_id}: {preview(data)}"


def describe_schema_errors(errors: list[str], shown: int = 5) -> str:
    """The validator's problems, the first few of them, for a ``protocol_violation``."""
    more = f" (+{len(errors) - shown} more)" if len(errors) > shown else ""
    return "response does not match its schema: " + "; ".join(errors[:shown]) + more


def to_reply(message: Mapping[str, Any]) -> Reply:
    """A checked response as a :class:`Reply`."""
    if message["ok"]:
        return Reply(ok=True, result=dict(message["result"]), error=None)
    return Reply(ok=False, result=None, error=dict(message["error"]))


def default_harness_version() -> str:
    """The installed ``maka-conformance`` version, or ``"0"`` when it is not installed.

    Read from the distribution's metadata, not by importing ``conformance``: the crash lab
    never imports the suite (the dependency runs the other way).
    """
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("maka-conformance")
    except PackageNotFoundError:
        return "0"


def hello_params(name: str, version: str) -> dict[str, Any]:
    """The ``params`` of the handshake request (protocol §3)."""
    return {"protocol": PROTOCOL_VERSION, "harness": {"name": name, "version": version}}


def parse_handshake(reply: Reply) -> Handshake:
    """The handshake a ``hello`` reply declares; ``ValueError`` saying what is wrong."""
    if not reply.ok or reply.result is None:
        error = reply.error or {}
        raise ValueError(f"hello refused: {error.get('code')}: {error.get('message', '')}")
    result = reply.result
    if result.get("protocol") != PROTOCOL_VERSION:
        raise ValueError(f"protocol {result.get('protocol')!r}, expected {PROTOCOL_VERSION}")
    impl = result.get("implementation")
    if not isinstance(impl, dict) or not all(isinstance(impl.get(k), str) for k in ("name", "version")):
        raise ValueError("'implementation' must be an object with string 'name' and 'version'")
    capabilities = _strings(result, "capabilities", required=True)
    failpoints = _strings(result, "failpoints", required=False)
    return Handshake(
        protocol=PROTOCOL_VERSION,
        name=impl["name"],
        version=impl["version"],
        capabilities=capabilities,
        failpoints=failpoints,
        raw=dict(result),
    )


def _strings(result: Mapping[str, Any], key: str, *, required: bool) -> tuple[str, ...]:
    value = result.get(key)
    if value is None and not required:
        return ()
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise ValueError(f"{key!r} must be a list of strings")
    return tuple(value)
