"""The ``WorkspaceBoundary`` codec and the ``actions.workspaceBoundary`` fact envelope
(spec-phase4 §1.1–§1.4).

Why here, beside the RuntimeEvent schema: a boundary is durable only as an immutable
RuntimeEvent (spec-phase4 §1.3), and the RuntimeEvent schema is closed (spec 10 §1.3), so the
schema itself must know the exact shape of ``actions.workspaceBoundary`` — a store that let an
open object through under that key would let a forged boundary become resume authority. The
same rules serve the standalone codec (``checkpoint.boundary_encode`` / ``_decode``, §10.1),
whose errors name the first offending key as a JSON pointer.

Why a key of its own (not ``actions.workspaceFact``): the spec 30 §2.7 scan treats every
``workspaceFact`` row as baseline authority (spec-phase4 §1.4).

"First offending key" (§1.2 leaves the order open): keys are examined in ascending order of
the union of present and required keys; at each key, an extra key, a missing key or a value
breaking its rule is the answer. A non-object is reported at the object's own pointer.

Pure: no I/O, no clock, no randomness.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any, Final

from maka_ref._codec import parse_json, stable_json
from maka_ref._errors import MakaRefError
from maka_ref._events._values import fail, freeze_json

__all__ = [
    "AFFECTED_PATHS_MAX",
    "BOUNDARY_CAPTURED_KIND",
    "BOUNDARY_KEYS",
    "BOUNDARY_KINDS",
    "REBASELINED_KIND",
    "RESTORED_KIND",
    "WorkspaceBoundaryError",
    "boundary_fact_issue",
    "check_workspace_boundary_action",
    "decode_boundary_fact",
    "decode_workspace_boundary",
    "encode_workspace_boundary",
    "ref_uuid",
    "validate_workspace_boundary",
    "workspace_uuid",
]

BOUNDARY_CAPTURED_KIND: Final = "maka.workspace.boundary_captured"
REBASELINED_KIND: Final = "maka.workspace.rebaselined"
RESTORED_KIND: Final = "maka.workspace.restored"
BOUNDARY_KINDS: Final = (BOUNDARY_CAPTURED_KIND, REBASELINED_KIND, RESTORED_KIND)
_PROTOCOLS: Final = {
    BOUNDARY_CAPTURED_KIND: "workspace_boundary_captured_v1",
    REBASELINED_KIND: "workspace_rebaselined_v1",
    RESTORED_KIND: "workspace_restored_v1",
}
#: §1.3: ``affectedPaths`` holds at most this many paths.
AFFECTED_PATHS_MAX: Final = 1000
_MAX_SAFE: Final = 2**53 - 1

_UUID = r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[1-8][0-9a-fA-F]{3}-[89abAB][0-9a-fA-F]{3}-[0-9a-fA-F]{12}"
_IDENTITY_RE: Final = re.compile(r"workspace:v1:(" + _UUID + r")")
_REF_RE: Final = re.compile(r"refs/maka/checkpoints/(" + _UUID + r")/[0-9]{13}-[0-9a-f]{32}")
_DIGEST_RE: Final = re.compile(r"sha256:[0-9a-f]{64}")

Issue = tuple[str, str]  # (JSON pointer, reason)


class WorkspaceBoundaryError(MakaRefError, ValueError):
    """§1.2: not a valid boundary; ``detail`` is the JSON pointer of the first offending key."""

    code = "invalid_workspace_boundary"

    def __init__(self, pointer: str, reason: str) -> None:
        super().__init__(f"Invalid workspace boundary: {reason}", detail=pointer)
        self.pointer = pointer
        self.reason = reason


def _is_int(value: Any) -> bool:
    """A JSON number with an integral value in ``1..2^53−1`` (never a bool, never ``-0``)."""
    cls = type(value)
    if cls is float:
        return value.is_integer() and 1 <= value <= _MAX_SAFE
    return cls is int and 1 <= value <= _MAX_SAFE


def _string(pattern: re.Pattern[str], what: str) -> Callable[[Any], str | None]:
    def check(value: Any) -> str | None:
        if type(value) is not str or pattern.fullmatch(value) is None:
            return f"must be {what}"
        return None

    return check


def _int_rule(value: Any) -> str | None:
    return None if _is_int(value) else "must be an integer 1 ≤ n ≤ 2^53−1"


_BOUNDARY_RULES: Final[dict[str, Callable[[Any], str | None]]] = {
    "checkpointPolicyHash": _string(_DIGEST_RE, "'sha256:' followed by 64 lowercase hex digits"),
    "checkpointRef": _string(_REF_RE, "refs/maka/checkpoints/<uuid>/<13 digits>-<32 lowercase hex>"),
    "immutableRuntimeDigest": _string(_DIGEST_RE, "'sha256:' followed by 64 lowercase hex digits"),
    "immutableRuntimeHighWater": _int_rule,
    "workspaceEpoch": _int_rule,
    "workspaceIdentity": _string(_IDENTITY_RE, "'workspace:v1:' followed by a UUID"),
}
#: §1.2: the canonical key order (all ASCII, none an array index).
BOUNDARY_KEYS: Final = tuple(sorted(_BOUNDARY_RULES))


def _escape(key: str) -> str:
    return "/" + key.replace("~", "~0").replace("/", "~1")


def _object_issue(
    value: Any, pointer: str, required: Mapping[str, Callable[[Any, str], Issue | None]],
    optional: Mapping[str, Callable[[Any, str], Issue | None]] | None = None,
) -> Issue | None:
    """The first issue of a closed object in ascending key order, or ``None``."""
    if not isinstance(value, Mapping) or any(type(key) is not str for key in value):
        return (pointer, "must be a JSON object with string keys")
    optional = optional or {}
    for key in sorted(set(value) | set(required)):
        here = pointer + _escape(key)
        check = required.get(key) or optional.get(key)
        if check is None:
            return (here, "unknown key")
        if key not in value:
            if key in required:
                return (here, "required key is missing")
            continue
        issue = check(value[key], here)
        if issue is not None:
            return issue
    return None


def _leaf(rule: Callable[[Any], str | None]) -> Callable[[Any, str], Issue | None]:
    def check(value: Any, pointer: str) -> Issue | None:
        reason = rule(value)
        return None if reason is None else (pointer, reason)

    return check


_BOUNDARY_TABLE: Final = {key: _leaf(rule) for key, rule in _BOUNDARY_RULES.items()}


def _boundary_issue(value: Any, pointer: str = "") -> Issue | None:
    return _object_issue(value, pointer, _BOUNDARY_TABLE)


def validate_workspace_boundary(value: Any) -> Mapping[str, Any]:
    """``value`` itself when it is a valid boundary (§1.1); else :class:`WorkspaceBoundaryError`."""
    issue = _boundary_issue(value)
    if issue is not None:
        raise WorkspaceBoundaryError(*issue)
    return value


def encode_workspace_boundary(boundary: Any) -> str:
    """§1.2: ``SJ(boundary)`` of a valid boundary (the text; UTF-8 is the caller's encoding)."""
    validate_workspace_boundary(boundary)
    return stable_json(dict(boundary))


def decode_workspace_boundary(text: str | bytes) -> Any:
    """§1.2: one JSON document → the deep-frozen boundary, never normalised."""
    if isinstance(text, bytes):
        try:
            text = text.decode("utf-8")
        except UnicodeDecodeError:
            raise WorkspaceBoundaryError("", "not UTF-8 text") from None
    if type(text) is not str:
        raise WorkspaceBoundaryError("", "must be JSON text")
    try:
        value = parse_json(text)
    except (MakaRefError, ValueError, RecursionError):
        raise WorkspaceBoundaryError("", "not one JSON document") from None
    validate_workspace_boundary(value)
    return freeze_json(value, "$")


def workspace_uuid(identity: str) -> str:
    """The UUID of a valid ``workspace:v1:`` identity, verbatim."""
    match = _IDENTITY_RE.fullmatch(identity)
    if match is None:
        raise WorkspaceBoundaryError("", "not a workspace identity")
    return match.group(1)


def ref_uuid(ref: str) -> str:
    """The ``<uuid>`` component of a valid checkpoint ref, verbatim."""
    match = _REF_RE.fullmatch(ref)
    if match is None:
        raise WorkspaceBoundaryError("", "not a checkpoint ref")
    return match.group(1)


# ---------------------------------------------------------------------------------------
# The fact envelope (§1.3): {kind, version: 1, payload}
# ---------------------------------------------------------------------------------------


def _literal(expected: Any) -> Callable[[Any, str], Issue | None]:
    def check(value: Any, pointer: str) -> Issue | None:
        if type(value) is not type(expected) or value != expected:
            return (pointer, f"must be exactly {expected!r}")
        return None

    return check


def _version(value: Any, pointer: str) -> Issue | None:
    if type(value) not in (int, float) or value != 1:
        return (pointer, "must be exactly the number 1")
    return None


def _boundary_value(value: Any, pointer: str) -> Issue | None:
    return _boundary_issue(value, pointer)


def _affected_paths(value: Any, pointer: str) -> Issue | None:
    if not isinstance(value, list):
        return (pointer, "must be an array of strings")
    if len(value) > AFFECTED_PATHS_MAX:
        return (pointer, f"holds more than {AFFECTED_PATHS_MAX} paths")
    previous: bytes | None = None
    for index, item in enumerate(value):
        if type(item) is not str or not item:
            return (f"{pointer}/{index}", "must be a non-empty string")
        try:
            key = item.encode("utf-8")
        except UnicodeEncodeError:
            return (f"{pointer}/{index}", "must be valid UTF-8")
        if previous is not None and key <= previous:
            return (f"{pointer}/{index}", "paths must be sorted by UTF-8 bytes and unique")
        previous = key
    return None


def _count(value: Any, pointer: str) -> Issue | None:
    cls = type(value)
    ok = (cls is int and 0 <= value <= _MAX_SAFE) or (
        cls is float and value.is_integer() and 0 <= value <= _MAX_SAFE and str(value) != "-0.0"
    )
    return None if ok else (pointer, "must be an integer 0 ≤ n ≤ 2^53−1")


def _bool(value: Any, pointer: str) -> Issue | None:
    return None if type(value) is bool else (pointer, "must be a boolean")


_PAYLOADS: Final[dict[str, tuple[dict[str, Any], dict[str, Any]]]] = {
    BOUNDARY_CAPTURED_KIND: (
        {"protocol": _literal(_PROTOCOLS[BOUNDARY_CAPTURED_KIND]), "boundary": _boundary_value}, {}),
    REBASELINED_KIND: (
        {
            "protocol": _literal(_PROTOCOLS[REBASELINED_KIND]),
            "boundary": _boundary_value,
            "affectedPaths": _affected_paths,
            "affectedPathCount": _count,
            "affectedPathsComplete": _bool,
        },
        {"previous": _boundary_value},
    ),
    RESTORED_KIND: (
        {"protocol": _literal(_PROTOCOLS[RESTORED_KIND]), "from": _boundary_value, "boundary": _boundary_value}, {}),
}


def _payload_for(kind: Any) -> Callable[[Any, str], Issue | None]:
    def check(value: Any, pointer: str) -> Issue | None:
        required, optional = _PAYLOADS[kind]
        issue = _object_issue(value, pointer, required, optional)
        if issue is not None or kind != REBASELINED_KIND:
            return issue
        # Cross-key rules (§7.1 step 3): the list is a prefix of the full count, and complete
        # means nothing was left out.
        listed, count = len(value["affectedPaths"]), value["affectedPathCount"]
        if count < listed:
            return (pointer + "/affectedPathCount", "is smaller than the number of listed paths")
        if value["affectedPathsComplete"] is True and count != listed:
            return (pointer + "/affectedPathsComplete", "is true but paths were left out")
        return None

    return check


def boundary_fact_issue(value: Any, pointer: str = "") -> Issue | None:
    """The first issue of an ``actions.workspaceBoundary`` envelope (§1.3), or ``None``."""
    if not isinstance(value, Mapping):
        return (pointer, "must be a JSON object")
    kind = value.get("kind")
    if type(kind) is not str or kind not in _PAYLOADS:
        if "kind" not in value:
            return (pointer + "/kind", "required key is missing")
        return (pointer + "/kind", f"must be one of {', '.join(BOUNDARY_KINDS)}")
    return _object_issue(value, pointer, {"kind": lambda v, p: None, "payload": _payload_for(kind),
                                          "version": _version})


def decode_boundary_fact(value: Any) -> Any:
    """A valid envelope, deep-frozen; else :class:`WorkspaceBoundaryError` (its pointer)."""
    issue = boundary_fact_issue(value)
    if issue is not None:
        raise WorkspaceBoundaryError(*issue)
    return freeze_json(value, "$")


def _pointer_to_path(path: str, pointer: str) -> str:
    out = path
    for part in pointer.split("/")[1:]:
        part = part.replace("~1", "/").replace("~0", "~")
        out += f"[{part}]" if part.isdigit() else f".{part}"
    return out


def check_workspace_boundary_action(value: Any, path: str) -> Any:
    """The RuntimeEvent schema's checker for ``actions.workspaceBoundary`` (closed, §1.3)."""
    issue = boundary_fact_issue(value)
    if issue is not None:
        fail(_pointer_to_path(path, issue[0]), issue[1])
    return freeze_json(value, path)

