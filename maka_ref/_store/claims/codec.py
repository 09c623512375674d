"""The durable continuation claim value ``continuation_claim_v1`` (spec 20 §3.10, §3.11) — pure.

Why a module of its own: the claim is read by the store (``continuation_claims``: the claim
writer, the start writers, the insert guard, the reads), and later by the planner and startup
repair. They must agree on one exact-shape decoder, and it must not depend on SQLite.

:func:`decode_claim` checks, in order (every violation raises
:class:`ContinuationClaimSchemaError` ``Invalid continuation claim`` with a ``detail`` path):

1. exact key set and ``protocol == "continuation_claim_v1"``; ``claimId`` a non-empty string;
2. ``boundary`` is exactly ``{protocol, segments, manifestDigest}``, every segment decodes and
   the cursor rules hold (``_plan.prefix.build_boundary_cursor``), and the stated manifest
   digest equals the recomputed one; ``boundaryDigest == boundary.manifestDigest``;
3. ``providerProjectionVersion`` is exactly the integer 1; ``providerReplayDigest`` a digest;
4. ``claimedAt`` a safe integer ``>= 0`` (never a bool);
5. ``target`` is exactly four non-empty strings; ``target.sessionId`` equals the immediate
   source session; no target run/invocation/turn id is used by **any** segment;
6. ``targetRunHeader`` strictly decodes (``_store.run_header``), carries the target identity
   (``runId``, ``sessionId``, ``turnId`` and ``invocationId``), ``status: "created"``,
   ``createdAt == updatedAt == claimedAt``, no ``completedAt``/``failureClass``/
   ``failureMessage``, and a v2 ``continuationSource`` equal to the one the claim implies
   (:func:`expected_continuation_source`).

:func:`encode_claim` is the exact JSON form; :func:`stable` is the stable JSON text used for
``boundary_json`` and ``target_run_header_json`` and for "identical canonical JSON" checks.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, NoReturn

from maka_ref._codec.frozen import FrozenDict
from maka_ref._codec.jsontext import stable_json
from maka_ref._errors import MakaRefError
from maka_ref._plan.prefix.digests import (
    PROVIDER_REPLAY_PROJECTION_VERSION,
    is_digest,
    manifest_digest,
)
from maka_ref._plan.prefix.immutable import (
    BOUNDARY_CURSOR_PROTOCOL,
    PrefixIdentity,
    RuntimeBoundaryCursor,
    build_boundary_cursor,
)
from maka_ref._store.agent_runs.header import (
    CONTINUATION_SOURCE_V2_PROTOCOL,
    decode_run_header,
)
from maka_ref._store.errors import StoreError

__all__ = [
    "CLAIM_KEYS",
    "CLAIM_PROTOCOL",
    "ContinuationClaim",
    "ContinuationClaimError",
    "ContinuationClaimSchemaError",
    "decode_boundary",
    "decode_claim",
    "encode_claim",
    "expected_continuation_source",
    "stable",
]

CLAIM_PROTOCOL = "continuation_claim_v1"
CLAIM_KEYS = frozenset(
    {
        "protocol",
        "claimId",
        "boundaryDigest",
        "boundary",
        "providerProjectionVersion",
        "providerReplayDigest",
        "target",
        "targetRunHeader",
        "claimedAt",
    }
)
_BOUNDARY_KEYS = frozenset({"protocol", "segments", "manifestDigest"})
_TARGET_KEYS = ("sessionId", "invocationId", "runId", "turnId")
_MAX_SAFE_INTEGER = 2**53 - 1


class ContinuationClaimError(StoreError):
    """A continuation-authority failure (claim or start); ``code`` is stable (spec 30 §2.6)."""

    code = "continuation_authority"


class ContinuationClaimSchemaError(ContinuationClaimError, ValueError):
    """The claim value does not decode as ``continuation_claim_v1`` (spec 20 §3.10)."""

    code = "continuation_claim_invalid"

    def __init__(self, detail: str) -> None:
        super().__init__("Invalid continuation claim", detail=detail)


def _fail(path: str, what: str) -> NoReturn:
    raise ContinuationClaimSchemaError(f"{path}: {what}")


def stable(value: Any) -> str:
    """Stable (canonical) JSON text of a claim part (spec 10 §2.3)."""
    return stable_json(value)


def _is_safe_int(value: Any) -> bool:
    return type(value) is int and -_MAX_SAFE_INTEGER <= value <= _MAX_SAFE_INTEGER


def _plain(value: Any) -> Any:
    """A plain ``dict``/``list`` copy (the codec accepts frozen values too)."""
    if isinstance(value, Mapping):
        return {key: _plain(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(item) for item in value]
    return value


@dataclass(frozen=True, slots=True)
class ContinuationClaim:
    """A decoded ``continuation_claim_v1`` (use :func:`decode_claim`; the constructor trusts)."""

    claim_id: str
    boundary: RuntimeBoundaryCursor
    provider_projection_version: int
    provider_replay_digest: str
    target: PrefixIdentity
    target_run_header: FrozenDict
    claimed_at: int

    @property
    def boundary_digest(self) -> str:
        return self.boundary.manifest_digest

    @property
    def immediate_source(self) -> Any:
        return self.boundary.immediate_source

    @property
    def boundary_json(self) -> str:
        return stable(self.boundary.to_json())

    @property
    def target_run_header_json(self) -> str:
        return stable(_plain(self.target_run_header))

    def to_json(self) -> dict[str, Any]:
        return encode_claim(self)

    @property
    def canonical_json(self) -> str:
        return stable(self.to_json())


def decode_boundary(value: Any) -> RuntimeBoundaryCursor:
    """``RuntimeBoundaryCursorV1`` with exact keys whose manifest digest recomputes."""
    if isinstance(value, RuntimeBoundaryCursor):
        value = value.to_json()
    if not isinstance(value, Mapping) or set(value.keys()) != _BOUNDARY_KEYS:
        _fail("boundary", "must have exactly the keys protocol, segments, manifestDigest")
    if value["protocol"] != BOUNDARY_CURSOR_PROTOCOL:
        _fail("boundary.protocol", f"must be {BOUNDARY_CURSOR_PROTOCOL!r}")
    segments = value["segments"]
    if not isinstance(segments, (list, tuple)):
        _fail("boundary.segments", "must be an array")
    try:
        cursor = build_boundary_cursor(list(segments))
    except MakaRefError as error:
        _fail("boundary.segments", f"{error.message} ({getattr(error, 'detail', None)})")
    stated = value["manifestDigest"]
    if not is_digest(stated) or stated != manifest_digest(cursor.segments):
        _fail("boundary.manifestDigest", "does not match the recomputed manifest digest")
    return cursor


def expected_continuation_source(claim_id: str, boundary: RuntimeBoundaryCursor) -> dict[str, Any]:
    """The v2 ``continuationSource`` a target header must carry (spec 20 §3.11)."""
    source = boundary.immediate_source
    return {
        "protocol": CONTINUATION_SOURCE_V2_PROTOCOL,
        "claimId": claim_id,
        "boundaryDigest": boundary.manifest_digest,
        "sourceInvocationId": source.identity.invocation_id,
        "sourceRunId": source.identity.run_id,
        "sourceTurnId": source.identity.turn_id,
        "sourceRuntimeEventHighWater": source.position.last_event_seq,
        "sourcePrefixDigest": source.prefix_digest,
        "replayManifestDigest": boundary.manifest_digest,
    }


def _decode_target(value: Any) -> PrefixIdentity:
    if not isinstance(value, Mapping) or set(value.keys()) != set(_TARGET_KEYS):
        _fail("target", "must have exactly the keys sessionId, invocationId, runId, turnId")
    for key in _TARGET_KEYS:
        if type(value[key]) is not str or not value[key]:
            _fail(f"target.{key}", "must be a non-empty string")
    return PrefixIdentity.from_json(dict(value))


def _check_header(header: FrozenDict, claim_id: str, target: PrefixIdentity, claimed_at: int, boundary: Any) -> None:
    for key, expected in (
        ("sessionId", target.session_id),
        ("invocationId", target.invocation_id),
        ("runId", target.run_id),
        ("turnId", target.turn_id),
    ):
        if header.get(key) != expected:
            _fail(f"targetRunHeader.{key}", "must carry the claim target identity")
    if header["status"] != "created":
        _fail("targetRunHeader.status", "must be 'created'")
    for key in ("createdAt", "updatedAt"):
        if not _is_safe_int(header[key]) or header[key] != claimed_at:
            _fail(f"targetRunHeader.{key}", "must equal claimedAt")
    for key in ("completedAt", "failureClass", "failureMessage"):
        if key in header:
            _fail(f"targetRunHeader.{key}", "must be absent on a created target")
    source = header.get("continuationSource")
    if source is None or stable(_plain(source)) != stable(expected_continuation_source(claim_id, boundary)):
        _fail("targetRunHeader.continuationSource", "must be the v2 source implied by the claim")


def decode_claim(value: Any) -> ContinuationClaim:
    """Decode ``continuation_claim_v1`` exactly (module docstring); pass a claim through."""
    if isinstance(value, ContinuationClaim):
        value = encode_claim(value)
    if not isinstance(value, Mapping):
        _fail("(root)", "must be a JSON object")
    keys = set(value.keys())
    if keys != CLAIM_KEYS:
        missing, extra = sorted(CLAIM_KEYS - keys), sorted(str(k) for k in keys - CLAIM_KEYS)
        _fail("(root)", f"exact keys required (missing {missing}, unknown {extra})")
    if value["protocol"] != CLAIM_PROTOCOL:
        _fail("protocol", f"must be {CLAIM_PROTOCOL!r}")
    claim_id = value["claimId"]
    if type(claim_id) is not str or not claim_id:
        _fail("claimId", "must be a non-empty string")
    boundary = decode_boundary(value["boundary"])
    if value["boundaryDigest"] != boundary.manifest_digest:
        _fail("boundaryDigest", "must equal boundary.manifestDigest")
    version = value["providerProjectionVersion"]
    if type(version) is not int or version != PROVIDER_REPLAY_PROJECTION_VERSION:
        _fail("providerProjectionVersion", "must be 1")
    if not is_digest(value["providerReplayDigest"]):
        _fail("providerReplayDigest", "must match ^sha256:[0-9a-f]{64}$")
    claimed_at = value["claimedAt"]
    if not _is_safe_int(claimed_at) or claimed_at < 0:
        _fail("claimedAt", "must be a safe integer >= 0")
    target = _decode_target(value["target"])
    source = boundary.immediate_source.identity
    if target.session_id != source.session_id:
        _fail("target.sessionId", "must equal the immediate source session")
    for segment in boundary.segments:
        ident = segment.identity
        if target.run_id == ident.run_id:
            _fail("target.runId", "is used by a boundary segment")
        if target.invocation_id == ident.invocation_id:
            _fail("target.invocationId", "is used by a boundary segment")
        if target.turn_id == ident.turn_id:
            _fail("target.turnId", "is used by a boundary segment")
    try:
        header = decode_run_header(_plain(value["targetRunHeader"]))
    except StoreError as error:
        _fail("targetRunHeader", f"{error.message} ({error.detail})")
    _check_header(header, claim_id, target, claimed_at, boundary)
    return ContinuationClaim(
        claim_id=claim_id,
        boundary=boundary,
        provider_projection_version=version,
        provider_replay_digest=value["providerReplayDigest"],
        target=target,
        target_run_header=header,
        claimed_at=claimed_at,
    )


def encode_claim(claim: ContinuationClaim) -> dict[str, Any]:
    """The exact JSON form of a decoded claim (plain dicts and lists)."""
    return {
        "protocol": CLAIM_PROTOCOL,
        "claimId": claim.claim_id,
        "boundaryDigest": claim.boundary.manifest_digest,
        "boundary": claim.boundary.to_json(),
        "providerProjectionVersion": claim.provider_projection_version,
        "providerReplayDigest": claim.provider_replay_digest,
        "target": claim.target.to_json(),
        "targetRunHeader": _plain(claim.target_run_header),
        "claimedAt": claim.claimed_at,
    }
