"""Read-path guarantees (spec 30 §4).

Why every read re-checks row/payload identity: the identity columns exist for indexing, the
payload is the fact; a disagreement means the file was edited outside the writers, and reads
fail closed rather than attribute an event to the wrong run. Partial snapshots are merged only
into presentation reads, never into immutable reads or prefixes (they would change digests).

Immutable prefixes reuse ``maka_ref._plan.prefix.immutable.build_immutable_prefix`` (one definition of
the v1 prefix digest); the store adds the spec's read-side messages for an empty prefix and an
unavailable high-water.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from typing import Any, Callable

from maka_ref._codec.frozen import FrozenDict
from maka_ref._codec.jsontext import stable_json
from maka_ref._errors import PrefixError
from maka_ref._plan.prefix.immutable import (
    ImmutableRuntimePrefix,
    build_immutable_prefix,
)
from maka_ref._store.engine.rows import EVENT_COLUMNS, decode_event_row
from maka_ref._store.errors import StoreError
from maka_ref._store.insert.primitive import steering_events
from maka_ref._store.partials import merge_partials, read_partials

__all__ = [
    "ScanBudget",
    "read_immutable_prefix",
    "read_run_events",
    "read_runtime_events",
    "read_session_events",
    "read_session_events_by_ordinal",
    "read_steering_message",
    "scan_runtime_events",
    "session_ordinals",
]

_MAX_SAFE_INTEGER = 2**53 - 1


def read_run_events(conn: sqlite3.Connection, session_id: str, run_id: str) -> list[FrozenDict]:
    rows = conn.execute(
        f"SELECT {EVENT_COLUMNS} FROM runtime_events WHERE session_id = ? AND run_id = ? "
        "ORDER BY event_seq ASC, event_id ASC",
        (session_id, run_id),
    ).fetchall()
    return [decode_event_row(row).event for row in rows]


def read_runtime_events(conn: sqlite3.Connection, session_id: str, run_id: str) -> list[FrozenDict]:
    return merge_partials(read_run_events(conn, session_id, run_id), read_partials(conn, session_id, run_id))


def read_session_events(conn: sqlite3.Connection, session_id: str) -> list[FrozenDict]:
    """By-run merge sorted by ``ts``, run id, in-run index, event id (§4)."""
    runs = conn.execute(
        "SELECT run_id FROM runtime_events WHERE session_id = ? UNION "
        "SELECT run_id FROM runtime_partial_snapshots WHERE session_id = ? ORDER BY run_id ASC",
        (session_id, session_id),
    ).fetchall()
    ordered: list[tuple[Any, str, int, str, FrozenDict]] = []
    for (run_id,) in runs:
        for index, event in enumerate(read_runtime_events(conn, session_id, run_id)):
            ordered.append((event["ts"], run_id, index, event["id"], event))
    ordered.sort(key=lambda item: item[:4])
    return [item[4] for item in ordered]


def read_session_events_by_ordinal(conn: sqlite3.Connection, session_id: str) -> list[FrozenDict]:
    """Immutable events of a session in commit order (``runtime_session_event_ordinals``)."""
    rows = conn.execute(
        "SELECT e.event_id, e.session_id, e.invocation_id, e.run_id, e.turn_id, e.event_seq, e.payload_json, "
        "e.committed_at FROM runtime_session_event_ordinals AS o JOIN runtime_events AS e "
        "ON e.event_id = o.event_id WHERE o.session_id = ? ORDER BY o.ordinal ASC",
        (session_id,),
    ).fetchall()
    return [decode_event_row(row).event for row in rows]


def session_ordinals(conn: sqlite3.Connection, session_id: str) -> dict[str, int]:
    rows = conn.execute(
        "SELECT event_id, ordinal FROM runtime_session_event_ordinals WHERE session_id = ? ORDER BY ordinal",
        (session_id,),
    ).fetchall()
    return {event_id: ordinal for event_id, ordinal in rows}


def read_steering_message(conn: sqlite3.Connection, session_id: str, message_id: str) -> FrozenDict | None:
    events = steering_events(conn, session_id, message_id)
    if len(events) > 1:
        raise StoreError(
            f"Immutable steering message identity conflict: {message_id}", code="steering_identity_conflict"
        )
    return events[0] if events else None


def read_immutable_prefix(
    conn: sqlite3.Connection, session_id: str, run_id: str, up_to_event_seq: int | None = None
) -> ImmutableRuntimePrefix:
    """§4 ``readImmutableRuntimePrefix``; partial snapshots never take part."""
    if up_to_event_seq is not None and (
        type(up_to_event_seq) is not int or not 0 < up_to_event_seq <= _MAX_SAFE_INTEGER
    ):
        raise StoreError("Invalid immutable RuntimeEvent prefix high-water", code="prefix_high_water_invalid")
    rows = conn.execute(
        f"SELECT {EVENT_COLUMNS} FROM runtime_events WHERE session_id = ? AND run_id = ? "
        "AND (? IS NULL OR event_seq <= ?) ORDER BY event_seq ASC",
        (session_id, run_id, up_to_event_seq, up_to_event_seq),
    ).fetchall()
    if not rows:
        raise StoreError("immutable RuntimeEvent prefix is empty", code="prefix_empty")
    if up_to_event_seq is not None and rows[-1][5] != up_to_event_seq:
        raise StoreError(
            f"immutable RuntimeEvent prefix high-water {up_to_event_seq} is unavailable",
            code="prefix_high_water_unavailable",
        )
    stored = [decode_event_row(row) for row in rows]
    try:
        return build_immutable_prefix([(item.event_seq, item.event) for item in stored])
    except PrefixError as error:
        raise StoreError(error.message, code=error.code, detail=error.detail) from None


@dataclass(frozen=True, slots=True)
class ScanBudget:
    """Byte/record budgets of a bounded scan (all positive integers)."""

    max_batch_bytes: int
    max_record_bytes: int
    max_immutable_records: int
    max_immutable_bytes: int
    max_partial_records: int
    max_partial_bytes: int

    def __post_init__(self) -> None:
        for name in self.__slots__:  # type: ignore[attr-defined]
            value = getattr(self, name)
            if type(value) is not int or not 0 < value <= _MAX_SAFE_INTEGER:
                raise ValueError(f"Invalid scan budget: {name}")


def _within(sizes: list[int], max_records: int, max_bytes: int, max_record: int) -> bool:
    return len(sizes) <= max_records and sum(sizes) <= max_bytes and all(0 < s <= max_record for s in sizes)


def scan_runtime_events(
    conn: sqlite3.Connection,
    session_id: str,
    run_id: str,
    budget: ScanBudget,
    visit: Callable[[list[FrozenDict]], None],
) -> str:
    """Measure stored byte lengths first; any budget exceeded → ``"limit_exceeded"`` with no
    visit at all. Otherwise visit the merged (partials included) events in batches of at
    most ``max_batch_bytes`` stored bytes (a batch always holds at least one record)."""
    immutable = conn.execute(
        "SELECT event_id, length(CAST(payload_json AS BLOB)) FROM runtime_events "
        "WHERE session_id = ? AND run_id = ? ORDER BY event_seq ASC, event_id ASC",
        (session_id, run_id),
    ).fetchall()
    partial = conn.execute(
        "SELECT s.stream_key, length(CAST(s.payload_json AS BLOB)) + length(CAST(s.text_content AS BLOB)) "
        "+ COALESCE((SELECT SUM(length(CAST(g.text_content AS BLOB))) FROM runtime_partial_segments AS g "
        "WHERE g.stream_key = s.stream_key), 0) + COALESCE(length(CAST(s.after_event_id AS BLOB)), 0) "
        "FROM runtime_partial_snapshots AS s WHERE s.session_id = ? AND s.run_id = ?",
        (session_id, run_id),
    ).fetchall()
    if not _within([r[1] for r in immutable], budget.max_immutable_records, budget.max_immutable_bytes,
                   budget.max_record_bytes):
        return "limit_exceeded"
    if not _within([r[1] for r in partial], budget.max_partial_records, budget.max_partial_bytes,
                   budget.max_record_bytes):
        return "limit_exceeded"
    events = read_run_events(conn, session_id, run_id)
    sizes = {id(event): size for event, (_, size) in zip(events, immutable)}
    merged = merge_partials(events, read_partials(conn, session_id, run_id))
    batch: list[FrozenDict] = []
    batch_bytes = 0
    for event in merged:
        size = sizes.get(id(event))
        if size is None:  # a partial snapshot: measured by its visible JSON
            size = len(stable_json(event).encode("utf-8", "surrogatepass"))
        if batch and batch_bytes + size > budget.max_batch_bytes:
            visit(batch)
            batch, batch_bytes = [], 0
        batch.append(event)
        batch_bytes += size
    if batch:
        visit(batch)
    return "complete"
