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

Every failure is a :class:`~maka_ref._store.claim_codec.ContinuationClaimError` (a
``StoreError``) with the spec's exact message and a stable ``code`` (see ``CODES`` in
``docs/choices/continuation-claims.md``).
"""

from __future__ import annotations

import contextvars
import sqlite3
from dataclasses import dataclass
from collections.abc import Mapping
from typing import Any, Literal

from maka_ref._codec.jsontext import parse_json
from maka_ref._errors import MakaRefError
from maka_ref._events.encode import EncodedRuntimeEvent, encode_runtime_event, json_strict_equal
from maka_ref._events.predicates import is_terminal_event
from maka_ref._plan.prefix import RuntimePrefixSegment, build_immutable_prefix
from maka_ref._store.claim_codec import (
    ContinuationClaim,
    ContinuationClaimError,
    decode_claim,
    encode_claim,
    stable,
)
from maka_ref._store.failpoints import failpoint
from maka_ref._store.insert import insert_event
from maka_ref._store.rows import EVENT_COLUMNS, decode_event_row, read_event_row

__all__ = [
    "CLAIM_COLUMNS",
    "PROVENANCES",
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
CONTINUATION_START_PROTOCOL = "continuation_start_v2"
TOOL_BOUNDARY_MARKER = {"toolBoundary": "t1_after_preflight_v1"}
PROVENANCES = ("runtime_admission", "claim_repair")

CLAIM_COLUMNS = (
    "claim_id, source_session_id, source_invocation_id, source_run_id, source_turn_id, "
    "source_event_high_water, source_prefix_digest, boundary_digest, boundary_json, "
    "provider_projection_version, provider_replay_digest, target_session_id, target_invocation_id, "
    "target_run_id, target_turn_id, target_run_header_json, claimed_at, start_event_id, start_kind, "
    "protocol_version"
)

#: The start event id the start writer is inserting right now (lets the guard tell the one
#: authorised start apart from a generic append that wants the target's seq 1).
_authorised_start: contextvars.ContextVar[str | None] = contextvars.ContextVar("_authorised_start", default=None)


def _error(message: str, code: str, detail: str | None = None) -> ContinuationClaimError:
    return ContinuationClaimError(message, code=code, detail=detail)


@dataclass(frozen=True, slots=True)
class ClaimRecord:
    """A stored claim: the decoded value plus the start columns."""

    claim: ContinuationClaim
    start_event_id: str | None
    start_kind: str | None

    @property
    def claim_id(self) -> str:
        return self.claim.claim_id

    def to_json(self) -> dict[str, Any]:
        """``{claim, startEventId?, startKind?}`` (the planner's ``ClaimState`` form)."""
        out: dict[str, Any] = {"claim": encode_claim(self.claim)}
        if self.start_event_id is not None:
            out["startEventId"] = self.start_event_id
        if self.start_kind is not None:
            out["startKind"] = self.start_kind
        return out


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


# ------------------------------------------------------------------ rows


def _mismatch(claim_id: Any) -> ContinuationClaimError:
    return _error(f"Continuation claim row/payload identity mismatch for {claim_id}", "continuation_claim_row_mismatch")


def _decode_row(row: tuple[Any, ...]) -> ClaimRecord:
    """A stored row → claim, cross-checking every column against the decoded value (§2.6 step 1)."""
    (
        claim_id, src_session, src_invocation, src_run, src_turn, high_water, prefix_digest, boundary_digest,
        boundary_json, projection_version, replay_digest, tgt_session, tgt_invocation, tgt_run, tgt_turn,
        header_json, claimed_at, start_event_id, start_kind, protocol_version,
    ) = row
    try:
        boundary = parse_json(boundary_json)
        header = parse_json(header_json)
        claim = decode_claim(
            {
                "protocol": "continuation_claim_v1",
                "claimId": claim_id,
                "boundaryDigest": boundary_digest,
                "boundary": boundary,
                "providerProjectionVersion": projection_version,
                "providerReplayDigest": replay_digest,
                "target": {
                    "sessionId": tgt_session,
                    "invocationId": tgt_invocation,
                    "runId": tgt_run,
                    "turnId": tgt_turn,
                },
                "targetRunHeader": header,
                "claimedAt": claimed_at,
            }
        )
    except (MakaRefError, ValueError, TypeError):
        raise _mismatch(claim_id) from None
    source = claim.immediate_source
    if (
        (src_session, src_invocation, src_run, src_turn)
        != (
            source.identity.session_id,
            source.identity.invocation_id,
            source.identity.run_id,
            source.identity.turn_id,
        )
        or type(high_water) is not int
        or high_water != source.position.last_event_seq
        or prefix_digest != source.prefix_digest
        or boundary_json != claim.boundary_json
        or header_json != claim.target_run_header_json
        or type(protocol_version) is not int
        or protocol_version != 1
        or start_kind not in (None, *PROVENANCES)
        or (start_event_id is None) != (start_kind is None)
    ):
        raise _mismatch(claim_id)
    return ClaimRecord(claim, start_event_id, start_kind)


def _select(conn: sqlite3.Connection, where: str, params: tuple[Any, ...]) -> list[ClaimRecord]:
    rows = conn.execute(
        f"SELECT {CLAIM_COLUMNS} FROM runtime_continuation_claims WHERE {where} ORDER BY claimed_at, claim_id", params
    ).fetchall()
    return [_decode_row(row) for row in rows]


def _all_claims(conn: sqlite3.Connection) -> list[ClaimRecord]:
    return _select(conn, "1 = 1", ())


def read_claim(conn: sqlite3.Connection, claim_id: str) -> ClaimRecord | None:
    """The stored claim ``claim_id`` (row re-checked), or None."""
    records = _select(conn, "claim_id = ?", (claim_id,))
    return records[0] if records else None


def read_claim_by_boundary(conn: sqlite3.Connection, boundary_digest: str) -> ClaimRecord | None:
    """The claim of a boundary (the planner's ``read_claim_state``), or None."""
    records = _select(conn, "boundary_digest = ?", (boundary_digest,))
    return records[0] if records else None


def read_claim_for_target(
    conn: sqlite3.Connection, session_id: str, run_id: str | None = None, *, invocation_id: str | None = None
) -> ClaimRecord | None:
    """The claim whose target is (``session_id``, ``run_id``) or ``invocation_id``, or None."""
    if invocation_id is not None:
        records = _select(conn, "target_session_id = ? AND target_invocation_id = ?", (session_id, invocation_id))
    else:
        records = _select(conn, "target_session_id = ? AND target_run_id = ?", (session_id, run_id))
    return records[0] if records else None


def list_claims(conn: sqlite3.Connection, session_id: str) -> list[ClaimRecord]:
    """Every claim of a session (source or target side), in ``claimed_at`` order."""
    return _select(conn, "source_session_id = ? OR target_session_id = ?", (session_id, session_id))


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


def _run_rows(conn: sqlite3.Connection, session_id: str, run_id: str, up_to: int | None) -> list[Any]:
    rows = conn.execute(
        f"SELECT {EVENT_COLUMNS} FROM runtime_events WHERE session_id = ? AND run_id = ? "
        "AND (? IS NULL OR event_seq <= ?) ORDER BY event_seq ASC, event_id ASC",
        (session_id, run_id, up_to, up_to),
    ).fetchall()
    return [decode_event_row(row) for row in rows]


def _recompute(segment: RuntimePrefixSegment, rows: list[Any], high_water: int | None) -> tuple[Any, ...] | None:
    """The prefix's events if it rebuilds to exactly ``segment``, else None."""
    try:
        prefix = build_immutable_prefix(
            [(row.event_seq, row.event) for row in rows], identity=segment.identity, high_water=high_water
        )
    except MakaRefError:
        return None
    rebuilt = RuntimePrefixSegment(prefix.identity, prefix.position, prefix.prefix_digest)
    return prefix.events if rebuilt == segment else None


def _check_boundary(conn: sqlite3.Connection, claim: ContinuationClaim) -> None:
    """§2.6 step 2: ancestors up to their high-water, the source over its whole ledger."""
    *ancestors, source = claim.boundary.segments
    for segment in ancestors:
        ident, high_water = segment.identity, segment.position.last_event_seq
        rows = _run_rows(conn, ident.session_id, ident.run_id, high_water)
        if not rows or rows[-1].event_seq < high_water:
            raise _error(
                f"Continuation ancestor boundary is missing for {ident.run_id}", "continuation_ancestor_missing"
            )
        if _recompute(segment, rows, high_water) is None:
            raise _error(
                f"Continuation ancestor boundary changed for {ident.run_id}", "continuation_ancestor_changed"
            )
    ident = source.identity
    rows = _run_rows(conn, ident.session_id, ident.run_id, None)
    if not rows:
        raise _error("Continuation source boundary is missing", "continuation_source_missing")
    events = _recompute(source, rows, None)
    if events is None:
        raise _error("Continuation source boundary changed", "continuation_source_changed")
    terminals = [event for event in events if is_terminal_event(event)]
    if len(terminals) != 1 or not is_terminal_event(events[-1]):
        raise _error(
            "Continuation source boundary must end with exactly one terminal RuntimeEvent",
            "continuation_source_not_terminal",
        )


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


def _invalid_start(detail: str) -> ContinuationClaimError:
    return _error("Invalid continuation-start authority event", "continuation_start_invalid", detail)


def prepare_start(event: Any, provenance: str) -> EncodedRuntimeEvent:
    """Before the transaction: canonical encoding and the claim-independent shape (§2.6)."""
    if provenance not in PROVENANCES:
        raise _invalid_start(f"unknown provenance {provenance!r}")
    try:
        encoded = encode_runtime_event(event)
    except MakaRefError as error:
        raise _invalid_start(str(error)) from None
    start = encoded.event
    actions = start.get("actions")
    if (
        start.get("partial") is not False
        or start.get("role") != "system"
        or start.get("author") != "system"
        or any(key in start for key in ("content", "status", "refs"))
        or not isinstance(actions, Mapping)
        or "continuationStart" not in actions
    ):
        raise _invalid_start("shape: system/system, non-partial, no content/status/refs, actions.continuationStart")
    allowed = {"continuationStart", "runtimeProtocol"} if provenance == "runtime_admission" else {"continuationStart"}
    if set(actions.keys()) - allowed:
        raise _invalid_start(f"actions must be exactly {sorted(allowed)}")
    if "runtimeProtocol" in actions and stable(dict(actions["runtimeProtocol"])) != stable(TOOL_BOUNDARY_MARKER):
        raise _invalid_start("actions.runtimeProtocol")
    body = actions["continuationStart"]
    if body.get("protocol") != CONTINUATION_START_PROTOCOL or body.get("provenance") != provenance:
        raise _invalid_start("continuationStart protocol/provenance")
    return encoded


def _check_start_matches(start: Mapping[str, Any], claim: ContinuationClaim) -> None:
    target, source = claim.target, claim.immediate_source
    if not target.matches(start):
        raise _invalid_start("identity must be the claim target")
    if type(start["ts"]) not in (int, float) or start["ts"] < claim.claimed_at:
        raise _invalid_start("ts must be >= claimedAt")
    body = start["actions"]["continuationStart"]
    expected = {
        "claimId": claim.claim_id,
        "boundaryDigest": claim.boundary_digest,
        "replayManifestDigest": claim.boundary.manifest_digest,
        "providerProjectionVersion": claim.provider_projection_version,
        "providerReplayDigest": claim.provider_replay_digest,
        "immediateSource": {
            **source.identity.to_json(),
            "highWater": source.position.last_event_seq,
            "prefixDigest": source.prefix_digest,
        },
    }
    for key, value in expected.items():
        if stable(_plain(body.get(key))) != stable(value):
            raise _invalid_start(f"continuationStart.{key} must match the claim")


def _plain(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {key: _plain(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(item) for item in value]
    return value


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


# ------------------------------------------------------------------ the insert guard


def check_continuation_authority(conn: sqlite3.Connection, event: Mapping[str, Any], exact_retry: bool) -> bool:
    """Effects of claims on every insert (spec 30 §2.6), called by the insert primitive.

    Claims of the event's session are decoded and cross-checked first (a tampered row fails
    every write near it closed). An exact retry stops there (dedup semantics are kept even
    after a claim, §2.8). A new event then must not touch a sealed source run, must not
    collide with a target on some identity axes but not all, and must not take a target's
    ``event_seq`` 1 unless it is the start being written by the start writer.

    Returns True when the session has no claim row at all (the insert cache, ``insert_facts``,
    may then skip this check for the session), False otherwise.
    """
    session_id = event.get("sessionId")
    records = _select(conn, "source_session_id = ? OR target_session_id = ?", (session_id, session_id))
    if exact_retry or not records:
        return not records
    run_id, invocation_id, turn_id = event.get("runId"), event.get("invocationId"), event.get("turnId")
    for record in records:
        claim = record.claim
        for segment in claim.boundary.segments:
            if segment.identity.session_id == session_id and segment.identity.run_id == run_id:
                raise _error(
                    f"RuntimeEvent source boundary is sealed by continuation claim {claim.claim_id}",
                    "continuation_source_sealed",
                )
        target = claim.target
        same_session = session_id == target.session_id
        axes = (
            invocation_id == target.invocation_id,
            same_session and run_id == target.run_id,
            same_session and turn_id == target.turn_id,
        )
        if any(axes) and not all(axes):
            raise _error(
                f"RuntimeEvent continuation target identity conflict for {claim.claim_id}",
                "continuation_target_identity_conflict",
            )
        if all(axes) and record.start_event_id is None and _authorised_start.get() != event.get("id"):
            raise _error(
                f"RuntimeEvent target sequence one is reserved for continuation-start by claim {claim.claim_id}",
                "continuation_target_reserved",
            )
    return False
