"""The durable file evidence record of Phase 3 and its codec (spec-phase3 §1–§2).

Why a record at all: after a crash between T1 and T2 nobody can tell from the ledger whether a
Write happened. The evidence, committed with T1 (spec-phase3 §3), says what the target was
before, what it must be after, and what the tool would have answered, so a reconciler can look
at the file and *finalize* the operation when it holds the promised state — and park it
otherwise (spec-phase3 §4.4).

What this module holds:

* :class:`FileState` — a file state identity (spec-phase3 §1.3): ``absent`` or ``regular``
  with size, content digest and optionally mode;
* :class:`FileEvidence` — the record of spec-phase3 §1.2, immutable;
* :func:`decode_evidence` / :func:`decode_evidence_text` — the ordered checks of
  spec-phase3 §2.2. They **never raise**: any input yields a record or an :class:`Invalid`
  carrying one code of :data:`EVIDENCE_CODES` (a hostile mapping, a cycle, ``NaN``, text that
  is not JSON…);
* :func:`encode_evidence` — the canonical text (``stable_json``, spec 10 §2.3) of a record
  that decodes; :func:`evidence_digest` — its domain-separated digest (spec-phase3 §2.1);
* :func:`target_path_problem` — the canonical target syntax (spec-phase3 §1.5), shared with the
  observer, and :func:`content_digest` — the plain SHA-256 of bytes (spec-phase3 §1.3).

Pure: no I/O, clock or randomness. Depends on ``maka_ref._codec``, ``maka_ref._events`` and
``maka_ref._errors`` only.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final, Literal

from maka_ref._codec import FrozenDict, freeze, parse_json, stable_json, thaw
from maka_ref._errors import MakaRefError
from maka_ref._events import is_sha256_digest

__all__ = [
    "CREATE_MODE",
    "EVIDENCE_CODES",
    "EVIDENCE_DIGEST_DOMAIN",
    "EVIDENCE_KEYS",
    "FILE_EVIDENCE_PROTOCOL",
    "MAX_COMPONENT_BYTES",
    "MAX_FILE_BYTES",
    "MAX_PATH_BYTES",
    "RESERVED_NAMES",
    "TRANSFORM_FOR_TOOL",
    "EvidenceError",
    "FileEvidence",
    "FileState",
    "Invalid",
    "content_digest",
    "decode_evidence",
    "decode_evidence_text",
    "domain_digest",
    "encode_evidence",
    "evidence_digest",
    "shown_path",
    "target_path_problem",
]

#: ``protocol`` of the record (spec-phase3 §1.2).
FILE_EVIDENCE_PROTOCOL: Final = "file_evidence_v1"
#: The size bound of both states (spec-phase3 conventions): the protocol's 16 MiB line cap.
MAX_FILE_BYTES: Final = 16 * 1024 * 1024
#: Bounds of the canonical target's syntax (spec-phase3 §1.5).
MAX_PATH_BYTES: Final = 4096
MAX_COMPONENT_BYTES: Final = 255
#: The mode a created file gets when the transform binds one (spec-phase3 §1.4).
CREATE_MODE: Final = 0o644
#: Transform of each tool (spec-phase3 §1.4); the name is the algorithm's version.
TRANSFORM_FOR_TOOL: Final = FrozenDict(
    {"Write": "write_whole_file_v1", "Edit": "edit_replace_unique_v1", "Append": "append_utf8_v1"}
)
#: Names at the workspace's top level that belong to the runtime (spec-phase3 §1.5). Kept by
#: value here (this package must not import the runtime); a test pins it to
#: ``maka_ref._runtime.paths.RESERVED_NAMES``.
RESERVED_NAMES: Final = frozenset(
    {
        "runtime.sqlite",
        "runtime.sqlite-wal",
        "runtime.sqlite-shm",
        "runtime.sqlite-journal",
        ".maka-workspace.json",
        ".maka-effects.jsonl",
        ".maka",
        ".git",
    }
)
#: Domain separator of :func:`evidence_digest` (spec-phase3 §2.1).
EVIDENCE_DIGEST_DOMAIN: Final = "maka.file-evidence.v1"

#: The closed key set of the record, in the order of spec-phase3 §1.2.
EVIDENCE_KEYS: Final = (
    "protocol",
    "operationId",
    "sessionId",
    "invocationId",
    "runId",
    "turnId",
    "providerToolCallId",
    "callEventId",
    "dispatchEventId",
    "toolName",
    "canonicalArgsHash",
    "workspaceIdentity",
    "targetPath",
    "transform",
    "before",
    "expectedAfter",
    "result",
)
_IDENTITY_KEYS: Final = (
    "operationId",
    "sessionId",
    "invocationId",
    "runId",
    "turnId",
    "providerToolCallId",
    "callEventId",
    "dispatchEventId",
)

#: The decode codes of spec-phase3 §2.2, in check order.
EVIDENCE_CODES: Final = (
    "evidence_not_json",
    "evidence_not_strict_json",
    "evidence_not_object",
    "evidence_protocol_unsupported",
    "evidence_unknown_key",
    "evidence_missing_key",
    "evidence_identity_invalid",
    "evidence_tool_unsupported",
    "evidence_transform_unsupported",
    "evidence_digest_invalid",
    "evidence_workspace_invalid",
    "evidence_target_invalid",
    "evidence_state_invalid",
    "evidence_size_limit",
    "evidence_transform_conflict",
    "evidence_result_invalid",
)

_MAX_SAFE_INTEGER: Final = 2**53 - 1
_WORKSPACE_IDENTITY: Final = re.compile(
    r"workspace:v1:[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[1-8][0-9a-fA-F]{3}-[89abAB][0-9a-fA-F]{3}-[0-9a-fA-F]{12}\Z"
)
_STATE_KEYS: Final = FrozenDict(
    {
        "absent": (frozenset({"type"}), frozenset({"type"})),
        "regular": (frozenset({"type", "size", "contentDigest"}), frozenset({"type", "size", "contentDigest", "mode"})),
    }
)


@dataclass(frozen=True, slots=True)
class Invalid:
    """A refusal: ``code`` is one of the contract's closed codes; ``detail`` is for people
    (where, and what was found) and is not part of the contract."""

    code: str
    detail: str


class EvidenceError(MakaRefError, ValueError):
    """:func:`encode_evidence` of a record that does not decode; ``code`` is the §2.2 code."""

    def __init__(self, invalid: Invalid) -> None:
        super().__init__(f"file evidence is invalid: {invalid.code}", detail=invalid.detail)
        self.code = invalid.code


@dataclass(frozen=True, slots=True)
class FileState:
    """A file state identity (spec-phase3 §1.3).

    ``type`` ``absent`` carries nothing else; ``regular`` carries ``size`` (bytes),
    ``content_digest`` (``sha256:`` + hex of the raw bytes) and optionally ``mode``
    (permission bits, ``st_mode & 0o7777``), which is then part of the identity.
    """

    type: Literal["absent", "regular"]
    size: int | None = None
    content_digest: str | None = None
    mode: int | None = None

    @classmethod
    def absent(cls) -> FileState:
        return cls("absent")

    @classmethod
    def regular(cls, size: int, content_digest: str, mode: int | None = None) -> FileState:
        return cls("regular", size, content_digest, mode)

    @classmethod
    def of_bytes(cls, data: bytes, mode: int | None = None) -> FileState:
        """The regular state of exactly ``data`` (and ``mode`` when bound)."""
        return cls("regular", len(data), content_digest(data), mode)

    def to_json(self) -> dict[str, Any]:
        """The JSON object of spec-phase3 §1.3 (absent keys omitted, never ``null``)."""
        if self.type == "absent":
            return {"type": "absent"}
        out: dict[str, Any] = {"type": "regular", "size": self.size, "contentDigest": self.content_digest}
        if self.mode is not None:
            out["mode"] = self.mode
        return out


@dataclass(frozen=True, slots=True)
class FileEvidence:
    """The evidence record of spec-phase3 §1.2 (``protocol`` is always ``file_evidence_v1``).

    Build one with the constructor and check it with :func:`encode_evidence` (which refuses a
    record that would not decode), or obtain one from :func:`decode_evidence`. ``result`` is
    kept deep-frozen.
    """

    operation_id: str
    session_id: str
    invocation_id: str
    run_id: str
    turn_id: str
    provider_tool_call_id: str
    call_event_id: str
    dispatch_event_id: str
    tool_name: str
    canonical_args_hash: str
    workspace_identity: str
    target_path: str
    transform: str
    before: FileState
    expected_after: FileState
    result: Any

    def __post_init__(self) -> None:
        object.__setattr__(self, "result", freeze(self.result))

    @classmethod
    def for_call(cls, identity: Mapping[str, Any], *, tool_name: str, workspace_identity: str, target_path: str,
                 before: FileState, expected_after: FileState, result: Any) -> FileEvidence:
        """A record whose execution identity and ``canonicalArgsHash`` are read from
        ``identity`` by their §1.2 keys — a decoded record's object, or the ids of the call and
        dispatch T1 will commit — so the key-to-field mapping exists once; ``transform`` is the
        one of ``tool_name`` (§1.4)."""
        return cls(
            operation_id=identity["operationId"],
            session_id=identity["sessionId"],
            invocation_id=identity["invocationId"],
            run_id=identity["runId"],
            turn_id=identity["turnId"],
            provider_tool_call_id=identity["providerToolCallId"],
            call_event_id=identity["callEventId"],
            dispatch_event_id=identity["dispatchEventId"],
            tool_name=tool_name,
            canonical_args_hash=identity["canonicalArgsHash"],
            workspace_identity=workspace_identity,
            target_path=target_path,
            transform=TRANSFORM_FOR_TOOL[tool_name],
            before=before,
            expected_after=expected_after,
            result=result,
        )

    def to_json(self) -> dict[str, Any]:
        """The JSON object of spec-phase3 §1.2 (a plain, mutable copy)."""
        return {
            "protocol": FILE_EVIDENCE_PROTOCOL,
            "operationId": self.operation_id,
            "sessionId": self.session_id,
            "invocationId": self.invocation_id,
            "runId": self.run_id,
            "turnId": self.turn_id,
            "providerToolCallId": self.provider_tool_call_id,
            "callEventId": self.call_event_id,
            "dispatchEventId": self.dispatch_event_id,
            "toolName": self.tool_name,
            "canonicalArgsHash": self.canonical_args_hash,
            "workspaceIdentity": self.workspace_identity,
            "targetPath": self.target_path,
            "transform": self.transform,
            "before": self.before.to_json(),
            "expectedAfter": self.expected_after.to_json(),
            "result": thaw(self.result),
        }


# --------------------------------------------------------------------------- digests


def content_digest(data: bytes) -> str:
    """``sha256:`` + lowercase hex SHA-256 of the raw bytes (spec-phase3 §1.3): no prefix, so
    ``sha256sum`` reproduces it."""
    return "sha256:" + hashlib.sha256(data).hexdigest()


def domain_digest(domain: str, text: str) -> str:
    """``sha256:`` + hex SHA-256 of ``LP(domain) ‖ LP(text)`` (LP: 8-byte big-endian length,
    then the UTF-8 bytes; spec 20 §1.9's construction)."""
    h = hashlib.sha256()
    for part in (domain.encode("utf-8"), text.encode("utf-8")):
        h.update(len(part).to_bytes(8, "big"))
        h.update(part)
    return "sha256:" + h.hexdigest()


def encode_evidence(evidence: FileEvidence) -> str:
    """The canonical text of spec-phase3 §2.1; raises :class:`EvidenceError` (with the §2.2
    code) when the record would not decode, so an invalid record is never written."""
    decoded = decode_evidence(evidence.to_json())
    if isinstance(decoded, Invalid):
        raise EvidenceError(decoded)
    return stable_json(decoded.to_json())


def evidence_digest(evidence: FileEvidence) -> str:
    """``sha256:…`` of ``LP("maka.file-evidence.v1") ‖ LP(canonical text)`` (spec-phase3 §2.1)."""
    return domain_digest(EVIDENCE_DIGEST_DOMAIN, encode_evidence(evidence))


# --------------------------------------------------------------------------- target path


def target_path_problem(path: object) -> str | None:
    """Why ``path`` is not a canonical target (spec-phase3 §1.5), or None when it is one.

    One ``/`` between components; no empty, ``.`` or ``..`` component; no NUL or ``\\``; not
    absolute (no leading ``/``); the first component not a reserved runtime name
    (case-insensitively); every component valid Unicode of at most 255 UTF-8 bytes; the whole
    path at most 4096 UTF-8 bytes.
    """
    if not isinstance(path, str) or not path:
        return "not a non-empty string"
    if "\x00" in path or "\\" in path:
        return "contains NUL or a backslash"
    if path.startswith("/"):  # §1.5's list is closed: "C:x" is a name on POSIX, not a drive
        return "is absolute"
    try:
        encoded = path.encode("utf-8")
    except UnicodeEncodeError:
        return "is not valid Unicode (lone surrogate)"
    if len(encoded) > MAX_PATH_BYTES:
        return f"is longer than {MAX_PATH_BYTES} bytes"
    parts = path.split("/")
    for part in parts:
        if part in ("", ".", ".."):
            return f"has an empty, '.' or '..' component ({part!r})"
        if len(part.encode("utf-8")) > MAX_COMPONENT_BYTES:
            return f"has a component longer than {MAX_COMPONENT_BYTES} bytes"
    if parts[0].casefold() in RESERVED_NAMES:
        return f"names a reserved runtime file ({parts[0]!r})"
    return None


def shown_path(path: str) -> str:
    """The path as the tools report it (spec-phase3 §1.4): empty and ``.`` components dropped."""
    return "/".join(part for part in path.split("/") if part not in ("", "."))


# --------------------------------------------------------------------------- decode


def decode_evidence_text(text: object) -> FileEvidence | Invalid:
    """Decode the canonical (or any) JSON text of a record; never raises (spec-phase3 §2.2)."""
    if not isinstance(text, str):
        return Invalid("evidence_not_json", f"expected text, got {type(text).__name__}")
    try:
        value = parse_json(text)
    except Exception as exc:  # noqa: BLE001 - decoding answers a code for every input
        if _is_one_json_document(text):  # one document, refused only for its depth: row 2, not row 1
            return Invalid("evidence_not_strict_json", str(exc))
        return Invalid("evidence_not_json", str(exc))
    return decode_evidence(value)


_JSON_TOKEN: Final = re.compile(
    r'[ \t\n\r]*(?:(?P<open>[\[{])|(?P<close>[\]}])|(?P<comma>,)|(?P<colon>:)'
    r'|(?P<string>"(?:[^"\\\x00-\x1f]|\\(?:["\\/bfnrt]|u[0-9a-fA-F]{4}))*")'
    r'|(?P<scalar>-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?|true|false|null))'
)


def _is_one_json_document(text: str) -> bool:
    """Whether ``text`` is exactly one JSON document (RFC 8259 grammar, any depth).

    Why its own check: the shared parser refuses nesting beyond 500 the same way it refuses
    malformed text, but spec-phase3 §2.2 gives them different codes (row 1 ``not_json``, row 2
    ``not_strict_json``). Iterative, so no depth can exhaust the interpreter's stack; only run
    when the parser has already refused the text.
    """
    stack: list[str] = []  # "[" or "{" per open container
    expect = "value"  # value | value_or_close | key | key_or_close | colon | comma_or_close | end
    pos = 0
    while True:
        match = _JSON_TOKEN.match(text, pos)
        if match is None:
            return expect == "end" and text[pos:].strip(" \t\n\r") == ""
        pos = match.end()
        kind = match.lastgroup
        if expect in ("value", "value_or_close") and kind in ("open", "string", "scalar"):
            if kind == "open":
                stack.append(match.group("open"))
                expect = "value_or_close" if match.group("open") == "[" else "key_or_close"
                continue
        elif expect in ("key", "key_or_close") and kind == "string":
            expect = "colon"
            continue
        elif expect == "colon" and kind == "colon":
            expect = "value"
            continue
        elif expect == "comma_or_close" and kind == "comma":
            expect = "value" if stack[-1] == "[" else "key"
            continue
        elif kind == "close" and stack and expect.endswith("_or_close") and \
                "[{".index(stack[-1]) == "]}".index(match.group("close")):
            stack.pop()
        else:
            return False
        expect = "comma_or_close" if stack else "end"


def decode_evidence(value: object) -> FileEvidence | Invalid:
    """Check ``value`` against spec-phase3 §2.2 (first failing check wins); never raises.

    The value is first written as canonical JSON and read back, which both proves it strict
    JSON (rule 2) and leaves only plain ``dict``/``list``/``str``/number values to inspect, so
    a hostile mapping subclass cannot run code during the later checks.
    """
    try:
        plain = parse_json(stable_json(value))
    except Exception as exc:  # noqa: BLE001 - any non-JSON input (even one raising oddly) is a code
        return Invalid("evidence_not_strict_json", str(exc))
    if not isinstance(plain, dict):
        return Invalid("evidence_not_object", f"got {_json_type(plain)}")
    if plain.get("protocol") != FILE_EVIDENCE_PROTOCOL:
        return Invalid("evidence_protocol_unsupported", f"protocol {plain.get('protocol')!r}")
    unknown = sorted(set(plain) - set(EVIDENCE_KEYS))
    if unknown:
        return Invalid("evidence_unknown_key", f"unknown key {unknown[0]!r}")
    missing = [key for key in EVIDENCE_KEYS if key not in plain]
    if missing:
        return Invalid("evidence_missing_key", f"missing key {missing[0]!r}")
    for key in _IDENTITY_KEYS:
        if not isinstance(plain[key], str) or not plain[key]:
            return Invalid("evidence_identity_invalid", f"{key} is not a non-empty string")
    tool = plain["toolName"]
    if not isinstance(tool, str) or tool not in TRANSFORM_FOR_TOOL:
        return Invalid("evidence_tool_unsupported", f"toolName {tool!r}")
    if plain["transform"] != TRANSFORM_FOR_TOOL[tool]:
        return Invalid("evidence_transform_unsupported", f"transform {plain['transform']!r} for {tool}")
    if not is_sha256_digest(plain["canonicalArgsHash"]):
        return Invalid("evidence_digest_invalid", "canonicalArgsHash is not a sha256-digest")
    workspace = plain["workspaceIdentity"]
    if not isinstance(workspace, str) or not _WORKSPACE_IDENTITY.match(workspace):
        return Invalid("evidence_workspace_invalid", f"workspaceIdentity {workspace!r}")
    problem = target_path_problem(plain["targetPath"])
    if problem is not None:
        return Invalid("evidence_target_invalid", f"targetPath {problem}")
    before = _decode_state(plain["before"], "before")
    if isinstance(before, Invalid):
        return before
    after = _decode_state(plain["expectedAfter"], "expectedAfter")
    if isinstance(after, Invalid):
        return after
    if after.type != "regular":
        return Invalid("evidence_state_invalid", "expectedAfter is not a regular file state")
    for name, state in (("before", before), ("expectedAfter", after)):
        if state.size is not None and state.size > MAX_FILE_BYTES:
            return Invalid("evidence_size_limit", f"{name}.size {state.size} > {MAX_FILE_BYTES}")
    conflict = _transform_conflict(tool, before, after)
    if conflict is not None:
        return Invalid("evidence_transform_conflict", conflict)
    if not isinstance(plain["result"], dict):
        return Invalid("evidence_result_invalid", f"result is {_json_type(plain['result'])}, not an object")
    return FileEvidence.for_call(plain, tool_name=tool, workspace_identity=workspace, target_path=plain["targetPath"],
                                 before=before, expected_after=after, result=plain["result"])


def _decode_state(value: Any, name: str) -> FileState | Invalid:
    """A file state of spec-phase3 §1.3 (rule 13 of §2.2)."""
    if not isinstance(value, dict):
        return Invalid("evidence_state_invalid", f"{name} is {_json_type(value)}, not an object")
    kind = value.get("type")
    if not isinstance(kind, str) or kind not in _STATE_KEYS:
        return Invalid("evidence_state_invalid", f"{name}.type {kind!r}")
    required, allowed = _STATE_KEYS[kind]
    keys = set(value)
    if not required <= keys or not keys <= allowed:
        extra = sorted(keys - allowed) or sorted(required - keys)
        return Invalid("evidence_state_invalid", f"{name} has or lacks key {extra[0]!r}")
    if kind == "absent":
        return FileState.absent()
    size, digest, mode = value["size"], value["contentDigest"], value.get("mode")
    if not _is_safe_count(size):
        return Invalid("evidence_state_invalid", f"{name}.size {size!r} is not a safe integer >= 0")
    if not is_sha256_digest(digest):
        return Invalid("evidence_state_invalid", f"{name}.contentDigest is not a sha256-digest")
    if "mode" in value and not (_is_int(mode) and 0 <= mode <= 0o7777):
        return Invalid("evidence_state_invalid", f"{name}.mode {mode!r} is not an integer 0..4095")
    return FileState.regular(size, digest, mode)


def _transform_conflict(tool: str, before: FileState, after: FileState) -> str | None:
    """Rule 15 of spec-phase3 §2.2: contradictions visible without the arguments."""
    if tool == "Edit" and before.type != "regular":
        return "Edit needs a regular before state"
    if tool == "Append" and after.size is not None and after.size < (before.size or 0):
        return "Append cannot shrink the file"
    if after.mode is not None:
        if before.type == "absent" and after.mode != CREATE_MODE:
            return f"a created file's mode is {CREATE_MODE:#o}, not {after.mode:#o}"
        if before.mode is not None and after.mode != before.mode:
            return f"expectedAfter.mode {after.mode:#o} differs from before.mode {before.mode:#o}"
    return None


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_safe_count(value: Any) -> bool:
    return _is_int(value) and 0 <= value <= _MAX_SAFE_INTEGER


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    return "an object"
