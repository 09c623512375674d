"""Prefix protocol names, ``PrefixError`` codes and the v2 prefix value types (spec 20 §1.9).

Split out of :mod:`maka_ref._plan.prefix` so the plain data (identity, position, prefix,
segment, cursor) and their exact JSON decoders sit apart from the builders that check rows
and the cursor rules; both of those import from here, never the other way round.
Pure: no I/O, clock, randomness or global state.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from maka_ref._errors import PrefixError
from maka_ref._plan.digests import is_digest

__all__ = [
    "BOUNDARY_CURSOR_PROTOCOL",
    "IMMUTABLE_PREFIX_PROTOCOL",
    "PREFIX_ERROR_CODES",
    "PREFIX_SEGMENT_PROTOCOL",
    "ImmutableRuntimePrefix",
    "PrefixIdentity",
    "PrefixPosition",
    "RuntimeBoundaryCursor",
    "RuntimePrefixSegment",
    "decode_segment",
]

IMMUTABLE_PREFIX_PROTOCOL = "immutable_runtime_prefix_v1"
PREFIX_SEGMENT_PROTOCOL = "runtime_prefix_segment_v1"
BOUNDARY_CURSOR_PROTOCOL = "runtime_boundary_cursor_v1"

_MAX_SAFE_INTEGER = 2**53 - 1
_IDENTITY_KEYS = ("sessionId", "invocationId", "runId", "turnId")
_POSITION_KEYS = ("lastEventSeq", "eventCount", "lastEventId")
_SEGMENT_KEYS = ("protocol", "identity", "position", "prefixDigest")

#: Every ``PrefixError.code`` raised by ``prefix`` and its helper modules, with the rule it enforces.
PREFIX_ERROR_CODES: Mapping[str, str] = {
    "prefix_empty": "an immutable prefix needs at least one row",
    "prefix_row_invalid": "a row is not an (event_seq, event) pair",
    "prefix_seq_gap": "event_seq values must be exactly 1, 2, 3, … with no gap",
    "prefix_high_water_invalid": "a requested high-water must be a positive safe integer",
    "prefix_high_water_unavailable": "a prefix read up to H must end exactly at H",
    "prefix_identity_invalid": "identity must be exactly the four non-empty id strings",
    "prefix_identity_drift": "every event must carry the prefix identity",
    "prefix_partial_event": "a partial snapshot can never be part of an immutable prefix",
    "prefix_event_not_encodable": "every event must survive the canonical encoding",
    "prefix_protocol_invalid": "the value is not an immutable_runtime_prefix_v1",
    "prefix_position_mismatch": "the stated position differs from the rebuilt one",
    "prefix_digest_mismatch": "the stated prefix digest differs from the rebuilt one",
    "segment_invalid": "the value is not a well-formed runtime_prefix_segment_v1",
    "segment_mismatch": "a segment differs from the one rebuilt from its prefix",
    "boundary_empty": "a boundary cursor needs at least one segment",
    "boundary_session_mismatch": "all segments of a cursor must share one sessionId",
    "boundary_duplicate_run_id": "a runId may not repeat across segments",
    "boundary_duplicate_invocation_id": "an invocationId may not repeat across segments",
    "boundary_duplicate_turn_id": "a turnId may not repeat across segments",
}


def _fail(code: str, message: str, detail: str | None = None) -> PrefixError:
    assert code in PREFIX_ERROR_CODES, code
    return PrefixError(message, code=code, detail=detail)


def _is_non_empty_str(value: object) -> bool:
    return isinstance(value, str) and len(value) > 0


def _safe_int(value: object) -> int | None:
    """``value`` as an int when it is a JavaScript safe integer (``2.0`` counts), else None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value if -_MAX_SAFE_INTEGER <= value <= _MAX_SAFE_INTEGER else None
    if isinstance(value, float) and value.is_integer() and abs(value) <= _MAX_SAFE_INTEGER:
        return int(value)
    return None


# ---------------------------------------------------------------------------------------
# Value types
# ---------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class PrefixIdentity:
    """``{sessionId, invocationId, runId, turnId}`` — all non-empty (spec 20 §1.9)."""

    session_id: str
    invocation_id: str
    run_id: str
    turn_id: str

    def __post_init__(self) -> None:
        for name in ("session_id", "invocation_id", "run_id", "turn_id"):
            if not _is_non_empty_str(getattr(self, name)):
                raise _fail("prefix_identity_invalid", "Invalid RuntimeEvent prefix identity", name)

    @classmethod
    def from_json(cls, value: Any) -> PrefixIdentity:
        """Decode the exact four-key object (or pass a PrefixIdentity through)."""
        if isinstance(value, PrefixIdentity):
            return value
        if not isinstance(value, Mapping) or set(value.keys()) != set(_IDENTITY_KEYS):
            raise _fail("prefix_identity_invalid", "Invalid RuntimeEvent prefix identity")
        return cls(value["sessionId"], value["invocationId"], value["runId"], value["turnId"])

    @classmethod
    def of_event(cls, event: Mapping[str, Any]) -> PrefixIdentity:
        """The identity an event carries."""
        return cls(event.get("sessionId"), event.get("invocationId"), event.get("runId"), event.get("turnId"))

    def matches(self, event: Mapping[str, Any]) -> bool:
        return (
            event.get("sessionId") == self.session_id
            and event.get("invocationId") == self.invocation_id
            and event.get("runId") == self.run_id
            and event.get("turnId") == self.turn_id
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "sessionId": self.session_id,
            "invocationId": self.invocation_id,
            "runId": self.run_id,
            "turnId": self.turn_id,
        }


@dataclass(frozen=True, slots=True)
class PrefixPosition:
    """``{lastEventSeq, eventCount, lastEventId}``; ``eventCount == lastEventSeq > 0``."""

    last_event_seq: int
    event_count: int
    last_event_id: str

    @classmethod
    def from_json(cls, value: Any) -> PrefixPosition:
        if isinstance(value, PrefixPosition):
            return value
        if not isinstance(value, Mapping) or set(value.keys()) != set(_POSITION_KEYS):
            raise _fail("segment_invalid", "Invalid RuntimeEvent prefix position")
        last = _safe_int(value["lastEventSeq"])
        count = _safe_int(value["eventCount"])
        if last is None or last <= 0 or count != last or not _is_non_empty_str(value["lastEventId"]):
            raise _fail("segment_invalid", "Invalid RuntimeEvent prefix position")
        return cls(last, count, value["lastEventId"])

    def to_json(self) -> dict[str, Any]:
        return {
            "lastEventSeq": self.last_event_seq,
            "eventCount": self.event_count,
            "lastEventId": self.last_event_id,
        }


@dataclass(frozen=True, slots=True)
class ImmutableRuntimePrefix:
    """One run's committed rows ``1..n`` (spec 20 §1.9).

    ``events`` are the canonical (decoded, deep-frozen) events in ``event_seq`` order.
    Build it with :func:`build_immutable_prefix`; constructing it directly skips every
    check (that is what :func:`segment_of` is for).
    """

    identity: PrefixIdentity
    position: PrefixPosition
    prefix_digest: str
    events: tuple[Any, ...]
    protocol: str = IMMUTABLE_PREFIX_PROTOCOL

    def to_json(self) -> dict[str, Any]:
        return {
            "protocol": self.protocol,
            "identity": self.identity.to_json(),
            "position": self.position.to_json(),
            "prefixDigest": self.prefix_digest,
            "events": list(self.events),
        }


@dataclass(frozen=True, slots=True)
class RuntimePrefixSegment:
    """``{protocol: "runtime_prefix_segment_v1", identity, position, prefixDigest}``."""

    identity: PrefixIdentity
    position: PrefixPosition
    prefix_digest: str
    protocol: str = PREFIX_SEGMENT_PROTOCOL

    def to_json(self) -> dict[str, Any]:
        return {
            "protocol": self.protocol,
            "identity": self.identity.to_json(),
            "position": self.position.to_json(),
            "prefixDigest": self.prefix_digest,
        }


@dataclass(frozen=True, slots=True)
class RuntimeBoundaryCursor:
    """``{protocol: "runtime_boundary_cursor_v1", segments: [oldest … source], manifestDigest}``."""

    segments: tuple[RuntimePrefixSegment, ...]
    manifest_digest: str
    protocol: str = BOUNDARY_CURSOR_PROTOCOL

    @property
    def immediate_source(self) -> RuntimePrefixSegment:
        return self.segments[-1]

    def to_json(self) -> dict[str, Any]:
        return {
            "protocol": self.protocol,
            "segments": [segment.to_json() for segment in self.segments],
            "manifestDigest": self.manifest_digest,
        }


# ---------------------------------------------------------------------------------------
# Segment decoding
# ---------------------------------------------------------------------------------------


def decode_segment(value: Any) -> RuntimePrefixSegment:
    """Decode a segment's exact JSON form (or pass a well-formed segment through)."""
    if isinstance(value, RuntimePrefixSegment):
        if value.protocol != PREFIX_SEGMENT_PROTOCOL or not is_digest(value.prefix_digest):
            raise _fail("segment_invalid", "Invalid RuntimeEvent prefix segment")
        PrefixPosition.from_json(value.position.to_json())  # re-check invariants
        return value
    if (
        not isinstance(value, Mapping)
        or set(value.keys()) != set(_SEGMENT_KEYS)
        or value.get("protocol") != PREFIX_SEGMENT_PROTOCOL
    ):
        raise _fail("segment_invalid", "Invalid RuntimeEvent prefix segment")
    try:
        identity = PrefixIdentity.from_json(value["identity"])
    except PrefixError as exc:
        raise _fail("segment_invalid", "Invalid RuntimeEvent prefix segment", "identity") from exc
    position = PrefixPosition.from_json(value["position"])
    if not is_digest(value["prefixDigest"]):
        raise _fail("segment_invalid", "Invalid RuntimeEvent boundary digest", "prefixDigest")
    return RuntimePrefixSegment(identity, position, value["prefixDigest"])
