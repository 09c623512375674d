"""The continuation-start event's own checks (spec 30 §2.6): its shape, and its match to a claim.

Why a module of its own: these checks read only the encoded start event and the claim value,
never the database; the start writer (``continuation_claims.commit_continuation_start``) runs
them before and inside its transaction, and keeping them apart keeps that writer short.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from maka_ref._errors import MakaRefError
from maka_ref._events.encode import EncodedRuntimeEvent, encode_runtime_event
from maka_ref._store.claims.codec import (
    ContinuationClaim,
    ContinuationClaimError,
    _plain,
    stable,
)
from maka_ref._store.claims.rows import PROVENANCES, _error

__all__ = ["CONTINUATION_START_PROTOCOL", "TOOL_BOUNDARY_MARKER", "prepare_start"]

CONTINUATION_START_PROTOCOL = "continuation_start_v2"
TOOL_BOUNDARY_MARKER = {"toolBoundary": "t1_after_preflight_v1"}


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
        or any(key in start for key in ("content", "status"))
        or not isinstance(actions, Mapping)
        or "continuationStart" not in actions
    ):
        # refs are allowed, as upstream's assertContinuationStartEvent allows them (spec 10 §1.3.2
        # fixes role, author, partial, content, status and the action keys only)
        raise _invalid_start("shape: system/system, non-partial, no content/status, actions.continuationStart")
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
