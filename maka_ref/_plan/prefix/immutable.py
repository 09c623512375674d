"""Immutable RuntimeEvent prefixes, segments and boundary cursors (spec 20 §1.9).

Why this exists: a v2 continuation stands on *exactly* the committed rows of its source
runs. An :class:`ImmutableRuntimePrefix` is one run's rows ``1..n`` (gap-free, one
identity, no partial snapshots) together with its position and SHA-256 prefix digest; the
v2 high-water is its ``lastEventSeq``. A :class:`RuntimePrefixSegment` is the same without
the events (what claims and headers store), and a :class:`RuntimeBoundaryCursor` is the
ordered list of segments ``[oldest … immediate source]`` plus a manifest digest.

A segment can never be taken on trust: :func:`segment_of` and :func:`verify_segment`
re-derive position and digest from the prefix's events and refuse any difference, so a
caller cannot forge either.

Errors: every rule violation raises :class:`~maka_ref._errors.PrefixError` with a stable
``code`` (one per rule, listed in :data:`PREFIX_ERROR_CODES`). These builders are the only
v2 functions that raise; the replay planners (:mod:`~maka_ref._plan.prefix.immutable.replay`) never do.

Reading order: the protocol names, error codes, value types and their exact JSON decoders;
the cursor rules (they only combine decoded segments and never read events; the replay
planner reuses :func:`cursor_problem` to report instead of raise); then the prefix builders
and verifiers that check rows.

Pure: no I/O, clock, randomness or global state.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable, Mapping, Sequence

from maka_ref._errors import PrefixError
from maka_ref._events.encode import encode_runtime_event
from maka_ref._plan.prefix.digests import is_digest, manifest_digest, prefix_digest

__all__ = [
    "BOUNDARY_CURSOR_PROTOCOL",
    "IMMUTABLE_PREFIX_PROTOCOL",
    "ImmutableRuntimePrefix",
    "PREFIX_ERROR_CODES",
    "PREFIX_SEGMENT_PROTOCOL",
    "PrefixIdentity",
    "PrefixPosition",
    "RuntimeBoundaryCursor",
    "RuntimePrefixSegment",
    "boundary_cursor",
    "build_boundary_cursor",
    "build_immutable_prefix",
    "coerce_prefix",
    "cursor_problem",
    "decode_segment",
    "manifest_digest",
    "prefix_digest",
    "segment_of",
    "v2_high_water",
    "verified_prefix",
    "verify_segment",
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


def cursor_problem(segments: Sequence[RuntimePrefixSegment]) -> tuple[int, str, str] | None:
    """The first cursor rule ``segments`` break, as ``(segment index, code, message)``.

    Rules (spec 20 §1.9): non-empty; one ``sessionId``; no ``runId``, ``invocationId`` or
    ``turnId`` repeated across segments. Checked per segment in order, in that order.
    """
    if not segments:
        return (0, "boundary_empty", "Runtime boundary cursor needs at least one segment")
    session_id = segments[0].identity.session_id
    run_ids: set[str] = set()
    invocation_ids: set[str] = set()
    turn_ids: set[str] = set()
    for index, segment in enumerate(segments):
        ident = segment.identity
        if ident.session_id != session_id:
            return (index, "boundary_session_mismatch", "Runtime boundary segments must belong to the same session")
        if ident.run_id in run_ids:
            return (index, "boundary_duplicate_run_id", "Runtime boundary lineage contains a duplicate runId")
        run_ids.add(ident.run_id)
        if ident.invocation_id in invocation_ids:
            return (
                index,
                "boundary_duplicate_invocation_id",
                "Runtime boundary lineage contains a duplicate invocationId",
            )
        invocation_ids.add(ident.invocation_id)
        if ident.turn_id in turn_ids:
            return (index, "boundary_duplicate_turn_id", "Runtime boundary lineage contains a duplicate turnId")
        turn_ids.add(ident.turn_id)
    return None


def build_boundary_cursor(segments: Iterable[RuntimePrefixSegment | Mapping[str, Any]]) -> RuntimeBoundaryCursor:
    """A :class:`RuntimeBoundaryCursor` over ``[oldest … immediate source]`` (spec 20 §1.9).

    Each segment is decoded (``segment_invalid``), then :func:`cursor_problem` is applied;
    a violation raises ``PrefixError`` with its code and the offending segment index as
    ``detail``.
    """
    decoded = tuple(decode_segment(segment) for segment in segments)
    problem = cursor_problem(decoded)
    if problem is not None:
        index, code, message = problem
        raise _fail(code, message, f"segments[{index}]")
    return RuntimeBoundaryCursor(segments=decoded, manifest_digest=manifest_digest(decoded))


# ---------------------------------------------------------------------------------------
# Building and verifying prefixes
# ---------------------------------------------------------------------------------------


def _row_parts(row: Any, index: int) -> tuple[Any, Any]:
    if isinstance(row, Mapping) and set(row.keys()) == {"eventSeq", "event"}:
        return row["eventSeq"], row["event"]
    if isinstance(row, (tuple, list)) and len(row) == 2:
        return row[0], row[1]
    raise _fail("prefix_row_invalid", "immutable RuntimeEvent row must be (event_seq, event)", f"rows[{index}]")


def _encode(event: Any, index: int) -> Any:
    try:
        return encode_runtime_event(event).event
    except Exception as exc:  # noqa: BLE001 - schema / not-serializable / any odd input
        raise _fail(
            "prefix_event_not_encodable",
            "immutable RuntimeEvent prefix row is not a losslessly encodable RuntimeEvent",
            f"rows[{index}]: {exc}",
        ) from exc


def build_immutable_prefix(
    rows: Iterable[Any],
    *,
    identity: PrefixIdentity | Mapping[str, Any] | None = None,
    high_water: int | None = None,
) -> ImmutableRuntimePrefix:
    """Build an :class:`ImmutableRuntimePrefix` from physical rows (spec 20 §1.9).

    ``rows`` are ``(event_seq, event)`` pairs (or ``{"eventSeq", "event"}`` objects) in
    ``event_seq`` order. ``identity`` defaults to the identity of the first event.
    ``high_water``, when given, is the ``event_seq`` the caller read up to: the prefix must
    end exactly there.

    Checks, in order (each raises ``PrefixError`` with the listed code):

    1. ``high_water`` is a positive safe integer — ``prefix_high_water_invalid``;
    2. the explicit identity is exactly four non-empty strings — ``prefix_identity_invalid``;
    3. at least one row — ``prefix_empty``;
    4. per row, in order: a pair — ``prefix_row_invalid``; ``event_seq`` equals its
       1-based position — ``prefix_seq_gap``; the event encodes canonically —
       ``prefix_event_not_encodable``; not partial — ``prefix_partial_event``; carries
       the identity — ``prefix_identity_drift``;
    5. the last ``event_seq`` equals ``high_water`` — ``prefix_high_water_unavailable``.
    """
    expected_high_water: int | None = None
    if high_water is not None:
        expected_high_water = _safe_int(high_water)
        if expected_high_water is None or expected_high_water <= 0:
            raise _fail(
                "prefix_high_water_invalid",
                "immutable RuntimeEvent prefix high-water must be a positive safe integer",
                repr(high_water),
            )
    prefix_identity = PrefixIdentity.from_json(identity) if identity is not None else None
    try:
        row_list = list(rows)
    except TypeError as exc:
        raise _fail("prefix_row_invalid", "immutable RuntimeEvent rows must be a sequence") from exc
    if not row_list:
        raise _fail("prefix_empty", "immutable RuntimeEvent prefix is empty")

    events: list[Any] = []
    hashed_rows: list[tuple[int, Any]] = []
    for index, row in enumerate(row_list):
        raw_seq, raw_event = _row_parts(row, index)
        expected_seq = index + 1
        seq = _safe_int(raw_seq)
        if seq is None or seq != expected_seq:
            raise _fail(
                "prefix_seq_gap",
                f"immutable RuntimeEvent event_seq gap: expected {expected_seq}, received {raw_seq!r}",
            )
        event = _encode(raw_event, index)
        if event.get("partial") is True:
            raise _fail(
                "prefix_partial_event",
                f"immutable RuntimeEvent prefix contains partial snapshot {event.get('id')}",
            )
        if prefix_identity is None:
            prefix_identity = PrefixIdentity.of_event(event)
        if not prefix_identity.matches(event):
            raise _fail(
                "prefix_identity_drift",
                f"immutable RuntimeEvent identity mismatch for {event.get('id')}",
            )
        events.append(event)
        hashed_rows.append((seq, event))

    assert prefix_identity is not None
    last_seq = hashed_rows[-1][0]
    if expected_high_water is not None and last_seq != expected_high_water:
        raise _fail(
            "prefix_high_water_unavailable",
            "immutable RuntimeEvent prefix high-water unavailable",
            f"requested {expected_high_water}, prefix ends at {last_seq}",
        )
    return ImmutableRuntimePrefix(
        identity=prefix_identity,
        position=PrefixPosition(last_seq, len(events), events[-1]["id"]),
        prefix_digest=prefix_digest(prefix_identity, hashed_rows),
        events=tuple(events),
    )


def v2_high_water(prefix: ImmutableRuntimePrefix | RuntimePrefixSegment) -> int:
    """The v2 high-water: ``position.lastEventSeq`` (spec 20 §1.9, §9 item 3)."""
    return prefix.position.last_event_seq


def coerce_prefix(value: Any) -> ImmutableRuntimePrefix:
    """An :class:`ImmutableRuntimePrefix` from itself or its JSON form (no verification).

    Only the *shape* is checked (protocol, identity, position, an events list); raises
    ``PrefixError`` (``prefix_protocol_invalid``, ``prefix_identity_invalid`` or
    ``segment_invalid``) otherwise. Use :func:`verified_prefix` to trust the content.
    """
    if isinstance(value, ImmutableRuntimePrefix):
        protocol, identity, position = value.protocol, value.identity, value.position
        digest, events = value.prefix_digest, value.events
    elif isinstance(value, Mapping):
        protocol, identity, position = value.get("protocol"), value.get("identity"), value.get("position")
        digest, events = value.get("prefixDigest"), value.get("events")
    else:
        raise _fail("prefix_protocol_invalid", "Invalid immutable RuntimeEvent prefix protocol")
    if protocol != IMMUTABLE_PREFIX_PROTOCOL:
        raise _fail("prefix_protocol_invalid", "Invalid immutable RuntimeEvent prefix protocol")
    if not isinstance(events, (list, tuple)):
        raise _fail("prefix_protocol_invalid", "immutable RuntimeEvent prefix events must be a list")
    if isinstance(position, PrefixPosition):
        position = position.to_json()
    return ImmutableRuntimePrefix(
        identity=PrefixIdentity.from_json(identity),
        position=PrefixPosition.from_json(position),
        prefix_digest=digest if isinstance(digest, str) else "",
        events=tuple(events),
    )


def verified_prefix(prefix: ImmutableRuntimePrefix | Mapping[str, Any]) -> ImmutableRuntimePrefix:
    """The prefix rebuilt from its own events, after checking it equals what it states.

    The events are rebuilt as rows ``1..n`` under the prefix's identity (every rule of
    :func:`build_immutable_prefix` applies); a stated position or digest that differs from
    the rebuilt one raises ``PrefixError`` (``prefix_position_mismatch`` /
    ``prefix_digest_mismatch``). The result carries the canonical (re-encoded) events.
    """
    stated = coerce_prefix(prefix)
    rebuilt = build_immutable_prefix(
        [(index + 1, event) for index, event in enumerate(stated.events)],
        identity=stated.identity,
    )
    if rebuilt.position != stated.position:
        raise _fail(
            "prefix_position_mismatch",
            "Immutable RuntimeEvent prefix position mismatch",
            f"stated {stated.position.to_json()}, rebuilt {rebuilt.position.to_json()}",
        )
    if rebuilt.prefix_digest != stated.prefix_digest:
        raise _fail("prefix_digest_mismatch", "Immutable RuntimeEvent prefix digest mismatch")
    return rebuilt


def segment_of(prefix: ImmutableRuntimePrefix | Mapping[str, Any]) -> RuntimePrefixSegment:
    """The segment of a prefix, re-derived from its events (spec 20 §1.9).

    A caller cannot forge position or digest: see :func:`verified_prefix` for the checks
    and their ``PrefixError`` codes.
    """
    rebuilt = verified_prefix(prefix)
    return RuntimePrefixSegment(rebuilt.identity, rebuilt.position, rebuilt.prefix_digest)


def verify_segment(
    segment: RuntimePrefixSegment | Mapping[str, Any], prefix: ImmutableRuntimePrefix | Mapping[str, Any]
) -> RuntimePrefixSegment:
    """Check that ``segment`` is exactly the segment of ``prefix``; return the rebuilt one.

    Raises ``PrefixError``: ``segment_invalid`` for a malformed segment, any
    :func:`segment_of` code for a prefix that does not rebuild, ``segment_mismatch`` when
    identity, position or digest differ.
    """
    claimed = decode_segment(segment)
    rebuilt = segment_of(prefix)
    if claimed != rebuilt:
        raise _fail(
            "segment_mismatch",
            "RuntimeEvent prefix segment does not match its rebuilt prefix",
        )
    return rebuilt


#: Name used in the architecture table (``_plan.prefix.boundary_cursor``).
boundary_cursor = build_boundary_cursor
