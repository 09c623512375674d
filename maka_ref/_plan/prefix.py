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
v2 functions that raise; the replay planners (``segment_replay``) never do.

Pure: no I/O, clock, randomness or global state.

Layout: the protocol names, error codes, value types and segment decoding live in
:mod:`~maka_ref._plan.prefix_values`, the cursor rules in :mod:`~maka_ref._plan.prefix_cursor`;
this module holds the prefix builders and verifiers and re-exports the rest, so callers
import everything from here.
"""

from __future__ import annotations

from typing import Any, Iterable, Mapping

from maka_ref._events.encode import encode_runtime_event
from maka_ref._plan.digests import manifest_digest, prefix_digest
from maka_ref._plan.prefix_cursor import build_boundary_cursor, cursor_problem
from maka_ref._plan.prefix_values import (
    BOUNDARY_CURSOR_PROTOCOL,
    IMMUTABLE_PREFIX_PROTOCOL,
    PREFIX_ERROR_CODES,
    PREFIX_SEGMENT_PROTOCOL,
    ImmutableRuntimePrefix,
    PrefixIdentity,
    PrefixPosition,
    RuntimeBoundaryCursor,
    RuntimePrefixSegment,
    _fail,
    _safe_int,
    decode_segment,
)

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
