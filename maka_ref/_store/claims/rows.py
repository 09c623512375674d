"""Claim rows: the ``runtime_continuation_claims`` columns, their decoder and the claim reads.

Why a module of its own: every part of the continuation authority (the claim writer, the start
writer, the insert guard, the facade reads) reads claim rows through :func:`_select`, which
re-checks each stored row against its decoded value (§2.6 step 1); keeping that one reader
apart lets the writers and the guard share it without importing one another.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from typing import Any

from maka_ref._codec.jsontext import parse_json
from maka_ref._errors import MakaRefError
from maka_ref._store.claims.codec import (
    ContinuationClaim,
    ContinuationClaimError,
    decode_claim,
    encode_claim,
)

__all__ = [
    "CLAIM_COLUMNS",
    "PROVENANCES",
    "ClaimRecord",
    "list_claims",
    "read_claim",
    "read_claim_by_boundary",
    "read_claim_for_target",
]

PROVENANCES = ("runtime_admission", "claim_repair")

CLAIM_COLUMNS = (
    "claim_id, source_session_id, source_invocation_id, source_run_id, source_turn_id, "
    "source_event_high_water, source_prefix_digest, boundary_digest, boundary_json, "
    "provider_projection_version, provider_replay_digest, target_session_id, target_invocation_id, "
    "target_run_id, target_turn_id, target_run_header_json, claimed_at, start_event_id, start_kind, "
    "protocol_version"
)


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

