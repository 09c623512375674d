"""Continuation authority writer: durable claims, continuation starts, the insert guard
(spec 30 §2.6, §1.2, §2.8; spec 20 §3.10–§3.12).

Why: a v2 continuation stands on an exact, terminal source boundary, and exactly one target
may ever continue it. ``BEGIN IMMEDIATE`` is the only judge: the claim writer re-reads the
ledger under the write lock, the claim row is the idempotency key of the boundary, and once a
claim exists every writer (through :func:`check_continuation_authority`, called by the insert
primitive for every event) honours it: source runs are sealed, the target identity is
reserved, and the target's ``event_seq`` 1 belongs to the continuation-start only.

Functions take an open connection inside a write (or read) transaction, like every other
store module; ``RuntimeStore`` wraps them (``claim_continuation``,
``commit_continuation_start``, ``commit_continuation_repair_start``, ``read_claim``, …).

Every failure is a :class:`~maka_ref._store.claims.codec.ContinuationClaimError` (a
``StoreError``) with the spec's exact message and a stable ``code`` (see ``CODES`` in
``docs/choices/continuation-claims.md``).

Layout: this module holds the two writers (:func:`claim_continuation`,
:func:`commit_continuation_start`) and re-exports the names of the claims room
(:mod:`maka_ref._store.claims`): ``rows`` (columns, row decoder, reads), ``boundary`` (§2.6
step 2 re-check), ``start`` (start event shape and claim match) and ``guard`` (the insert
guard, which the insert primitive calls on every insert — so it lives below the primitive, and
this writer above it).
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from typing import Any, Literal

from maka_ref._events.encode import EncodedRuntimeEvent, json_strict_equal
from maka_ref._store.claims.boundary import _check_boundary
from maka_ref._store.claims.codec import ContinuationClaim, decode_claim, encode_claim
from maka_ref._store.claims.guard import _authorised_start, check_continuation_authority
from maka_ref._store.claims.rows import (
    CLAIM_COLUMNS,
    PROVENANCES,
    ClaimRecord,
    _all_claims,
    _error,
    _select,
    list_claims,
    read_claim,
    read_claim_by_boundary,
    read_claim_for_target,
)
from maka_ref._store.claims.start import (
    CONTINUATION_START_PROTOCOL,
    TOOL_BOUNDARY_MARKER,
    _check_start_matches,
    prepare_start,
)
from maka_ref._store.engine.failpoints import failpoint
from maka_ref._store.engine.rows import read_event_row
from maka_ref._store.insert.primitive import insert_event

__all__ = [
    "CLAIM_COLUMNS",
    "CONTINUATION_START_PROTOCOL",
    "PROVENANCES",
    "TOOL_BOUNDARY_MARKER",
    "ClaimRecord",
    "ClaimResult",
    "StartResult",
    "check_continuation_authority",
    "decode_claim",
    "claim_continuation",
    "commit_continuation_start",
    "list_claims",
    "prepare_claim",
    "prepare_start",
    "read_claim",
    "read_claim_by_boundary",
    "read_claim_for_target",
]

WORKSPACE_AUTHORITY_SESSION_ID = "maka_workspace_authority"


@dataclass(frozen=True, slots=True)
class ClaimResult:
    """``acquired`` (this call inserted it), ``existing`` (same boundary) or ``conflict``."""

    kind: Literal["acquired", "existing", "conflict"]
    claim: ContinuationClaim

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "claim": encode_claim(self.claim)}


@dataclass(frozen=True, slots=True)
class StartResult:
    """A committed (or exactly retried) continuation start; its ``event_seq`` is always 1."""

    created: bool
    event_seq: int
    start_event_id: str
    start_kind: str

    def to_json(self) -> dict[str, Any]:
        return {
            "created": self.created,
            "eventSeq": self.event_seq,
            "startEventId": self.start_event_id,
            "startKind": self.start_kind,
        }


# ------------------------------------------------------------------ claim


def prepare_claim(value: Any) -> ContinuationClaim:
    """Before the transaction: decode, then refuse the reserved workspace stream."""
    claim = decode_claim(value)
    sessions = {claim.target.session_id, *(segment.identity.session_id for segment in claim.boundary.segments)}
    if WORKSPACE_AUTHORITY_SESSION_ID in sessions:
        raise _error(
            "Continuation cannot target the reserved workspace authority stream", "continuation_reserved_stream"
        )
    return claim


def _existing_or_conflict(conn: sqlite3.Connection, claim: ContinuationClaim) -> ClaimResult | None:
    """§2.6 steps 3–4 (decoded rows only)."""
    same = _select(conn, "boundary_digest = ?", (claim.boundary_digest,))
    if same:
        if same[0].claim.boundary_json != claim.boundary_json:
            raise _error(
                "Continuation claim boundary digest has conflicting canonical JSON",
                "continuation_boundary_json_conflict",
            )
        return ClaimResult("existing", same[0].claim)
    target, source = claim.target, claim.immediate_source
    colliding = _select(
        conn,
        "claim_id = ? OR target_invocation_id = ? OR target_run_id = ? "
        "OR (target_session_id = ? AND target_turn_id = ?) "
        "OR (source_session_id = ? AND source_run_id = ? AND source_event_high_water = ?)",
        (
            claim.claim_id,
            target.invocation_id,
            target.run_id,
            target.session_id,
            target.turn_id,
            source.identity.session_id,
            source.identity.run_id,
            source.position.last_event_seq,
        ),
    )
    if colliding:
        return ClaimResult("conflict", colliding[0].claim)
    return None


def claim_continuation(conn: sqlite3.Connection, claim: ContinuationClaim) -> ClaimResult:
    """``claimContinuation`` inside the caller's write transaction (spec 30 §2.6, in order).

    ``claim`` comes from :func:`prepare_claim` (decoded, reserved stream refused).
    """
    _all_claims(conn)  # step 1: every stored claim row decodes and matches its columns
    _check_boundary(conn, claim)  # step 2
    found = _existing_or_conflict(conn, claim)  # steps 3-4
    if found is not None:
        return found
    target = claim.target
    for table in ("runtime_events", "runtime_partial_snapshots"):  # step 5
        row = conn.execute(
            f"SELECT 1 FROM {table} WHERE invocation_id = ? OR (session_id = ? AND run_id = ?) LIMIT 1",
            (target.invocation_id, target.session_id, target.run_id),
        ).fetchone()
        if row is not None:
            raise _error(
                "Continuation claim target RuntimeEvent ledger is not empty", "continuation_target_not_empty"
            )
    source = claim.immediate_source
    try:  # step 6
        conn.execute(
            f"INSERT INTO runtime_continuation_claims ({CLAIM_COLUMNS}) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, NULL, NULL, 1)",
            (
                claim.claim_id,
                source.identity.session_id,
                source.identity.invocation_id,
                source.identity.run_id,
                source.identity.turn_id,
                source.position.last_event_seq,
                source.prefix_digest,
                claim.boundary_digest,
                claim.boundary_json,
                claim.provider_projection_version,
                claim.provider_replay_digest,
                target.session_id,
                target.invocation_id,
                target.run_id,
                target.turn_id,
                claim.target_run_header_json,
                claim.claimed_at,
            ),
        )
    except sqlite3.IntegrityError:
        found = _existing_or_conflict(conn, claim)
        if found is None:
            raise
        return found
    failpoint("after_continuation_claim_insert")
    return ClaimResult("acquired", claim)


# ------------------------------------------------------------------ start


def commit_continuation_start(
    conn: sqlite3.Connection, claim: str | ContinuationClaim, encoded: EncodedRuntimeEvent, provenance: str
) -> StartResult:
    """``commitContinuationStart`` (``runtime_admission``) / ``commitContinuationRepairStart``
    (``claim_repair``) inside the caller's write transaction (spec 30 §2.6).

    ``claim`` is the claim id, or the full claim the caller holds (then the stored claim must
    equal it: ``Continuation start claim identity conflict``). ``encoded`` comes from
    :func:`prepare_start`.
    """
    claim_id = claim if isinstance(claim, str) else claim.claim_id
    record = read_claim(conn, claim_id)
    if record is None:
        raise _error("Continuation start requires an acquired durable claim", "continuation_claim_missing")
    if not isinstance(claim, str) and record.claim.canonical_json != claim.canonical_json:
        raise _error("Continuation start claim identity conflict", "continuation_start_claim_conflict")
    start = encoded.event
    _check_start_matches(start, record.claim)
    if record.start_event_id is not None:
        stored = read_event_row(conn, record.start_event_id)
        if (
            record.start_event_id == start["id"]
            and record.start_kind == provenance
            and stored is not None
            and json_strict_equal(stored.event, start)
        ):
            return StartResult(False, stored.event_seq, start["id"], provenance)
        raise _error("Continuation claim already has a different start event", "continuation_start_conflict")
    token = _authorised_start.set(start["id"])
    try:
        event_seq, _created = insert_event(conn, encoded, start["ts"], allow_exact_duplicate=False)
    finally:
        _authorised_start.reset(token)
    if event_seq != 1:
        raise _error("Continuation start must be the first target RuntimeEvent", "continuation_start_not_first")
    failpoint("after_continuation_start_insert")
    conn.execute(
        "UPDATE runtime_continuation_claims SET start_event_id = ?, start_kind = ? WHERE claim_id = ?",
        (start["id"], provenance, claim_id),
    )
    return StartResult(True, event_seq, start["id"], provenance)
