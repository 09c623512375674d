"""SHA-256 digests of the v2 continuation protocol (spec 20 §1.9, spec 30 §2.6).

Why a module of its own: three different digests bind a continuation to what it replays —
the *prefix digest* (the exact bytes of one run's immutable RuntimeEvent rows), the
*manifest digest* (the ordered list of prefix segments a continuation stands on) and the
*provider replay digest* (the exact provider items the model will see). They are written
into durable claims, run headers and the continuation-start event, so their byte
construction is a wire contract. Keeping them here, below the prefix and replay builders,
lets every layer (planner, store, admission proof) recompute them the same way.

Construction (spec 20 §1.9):

* ``LP(b)`` = 8-byte big-endian unsigned length of ``b`` followed by ``b``;
* ``SJ(x)`` = :func:`maka_ref._codec.jsontext.stable_json` with ``negative_zero="zero"``
  (spec 20 §9 item 26: the digest canonicaliser prints ``-0`` as ``0``);
* prefix digest = ``SHA256(LP("maka.runtime-prefix.v1") ‖ LP(SJ(identity)) ‖
  for each row: U64BE(eventSeq) ‖ LP(canonical event JSON))``;
* manifest digest = ``SHA256(LP("maka.runtime-boundary-manifest.v1") ‖
  LP(SJ({"protocol": "runtime_boundary_cursor_v1", "segments": [...]})))``;
* provider replay digest = ``SHA256(SJ({"protocol": "provider_replay_plan_v1",
  "providerProjectionVersion": 1, "items": [...]}))`` — no length prefixing.

Every digest is ``"sha256:" + 64 lowercase hex``.

The functions here compute; they do not validate the *shape* of a prefix (gap-free
sequence numbers, one identity, no partial events). That is
:func:`maka_ref._plan.prefix.immutable.build_immutable_prefix`'s job. They do propagate the codec's
errors (``RuntimeEventSchemaError``, ``RuntimeEventNotSerializableError``,
``NotStrictJSONError``) and raise ``ValueError`` for a sequence number or length that is
not a non-negative safe integer.

Pure: no I/O, clock, randomness or global state.
"""

from __future__ import annotations

import hashlib
import re
import struct
from typing import Any, Iterable, Mapping

from maka_ref._codec.jsontext import stable_json
from maka_ref._events.encode import encode_runtime_event

__all__ = [
    "DIGEST_RE",
    "MANIFEST_DOMAIN",
    "PREFIX_DOMAIN",
    "PROVIDER_REPLAY_PROJECTION_VERSION",
    "PROVIDER_REPLAY_PROTOCOL",
    "digest_json",
    "is_digest",
    "length_prefixed",
    "manifest_digest",
    "prefix_digest",
    "prefix_event_json",
    "provider_replay_digest",
    "sj",
    "u64be",
]

#: Domain separator of the prefix digest (spec 20 §1.9).
PREFIX_DOMAIN = "maka.runtime-prefix.v1"
#: Domain separator of the manifest digest (spec 20 §1.9).
MANIFEST_DOMAIN = "maka.runtime-boundary-manifest.v1"
#: Protocol string hashed into the provider replay digest (spec 20 §1.9).
PROVIDER_REPLAY_PROTOCOL = "provider_replay_plan_v1"
#: The only supported provider projection version (spec 20 §1.9).
PROVIDER_REPLAY_PROJECTION_VERSION = 1
#: Protocol string of the boundary cursor, hashed into the manifest digest.
BOUNDARY_CURSOR_PROTOCOL = "runtime_boundary_cursor_v1"

#: Every digest of this module matches this (spec 20 §1.9).
DIGEST_RE = re.compile(r"^sha256:[0-9a-f]{64}\Z")

_MAX_SAFE_INTEGER = 2**53 - 1
_IDENTITY_KEYS = ("sessionId", "invocationId", "runId", "turnId")


def is_digest(value: object) -> bool:
    """True iff ``value`` is ``"sha256:"`` followed by exactly 64 lowercase hex digits."""
    return isinstance(value, str) and DIGEST_RE.match(value) is not None


def sj(value: Any) -> str:
    """``SJ(x)``: canonical JSON for digests (``-0`` printed as ``0``, spec 20 §9 item 26)."""
    return stable_json(value, negative_zero="zero")


def u64be(value: int) -> bytes:
    """8-byte big-endian unsigned encoding of a non-negative safe integer (as the anchor)."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 0 or value > _MAX_SAFE_INTEGER:
        raise ValueError(f"not a non-negative safe integer: {value!r}")
    return struct.pack(">Q", value)


def length_prefixed(b: bytes) -> bytes:
    """``LP(b)``: the 8-byte big-endian unsigned length of ``b``, then ``b`` itself."""
    data = bytes(b)
    return u64be(len(data)) + data


def digest_json(value: Any) -> str:
    """``"sha256:" + hex(SHA256(utf8(SJ(value))))`` — the un-prefixed form."""
    return "sha256:" + hashlib.sha256(sj(value).encode("utf-8")).hexdigest()


def _identity_json(identity: Any) -> dict[str, Any]:
    """The four identity fields as a plain dict (accepts PrefixIdentity or a mapping)."""
    if hasattr(identity, "to_json"):
        identity = identity.to_json()
    if not isinstance(identity, Mapping):
        raise ValueError("prefix identity must be an object")
    return {key: identity.get(key) for key in _IDENTITY_KEYS}


def prefix_event_json(event: Any) -> str:
    """The bytes (as text) hashed for one prefix row.

    Normally the canonical event JSON (spec 10 §2.2). Legacy quirk (spec 20 §1.9, spec 30
    §2.6): a ``text`` content whose ``origin.kind`` is ``legacy_automation`` is hashed as
    if its origin were ``{"kind": "automation", "automationId": …}`` — the bytes released
    writers produced before the decoder started renaming that origin. Only ``kind`` and
    ``automationId`` survive in the rewritten origin (as in the spec's formula and the
    anchor); ``automationId`` is omitted when the origin has none.
    """
    encoded = encode_runtime_event(event)
    canonical_event = encoded.event
    content = canonical_event.get("content")
    origin = content.get("origin") if isinstance(content, Mapping) else None
    if not (
        isinstance(content, Mapping)
        and content.get("kind") == "text"
        and isinstance(origin, Mapping)
        and origin.get("kind") == "legacy_automation"
    ):
        return encoded.canonical_json
    legacy_origin: dict[str, Any] = {"kind": "automation"}
    if "automationId" in origin:
        legacy_origin["automationId"] = origin["automationId"]
    rewritten = dict(canonical_event)
    rewritten["content"] = {**content, "origin": legacy_origin}
    return sj(rewritten)


def prefix_digest(identity: Any, rows: Iterable[tuple[int, Any]]) -> str:
    """Prefix digest over ``(event_seq, event)`` rows of one run (spec 20 §1.9).

    ``identity`` is a :class:`~maka_ref._plan.prefix.immutable.PrefixIdentity` or a mapping with
    ``sessionId``, ``invocationId``, ``runId`` and ``turnId``. Rows are hashed in the
    order given; this function does not check that they are gap-free or share the
    identity (use ``build_immutable_prefix`` for that).
    """
    hasher = hashlib.sha256()
    hasher.update(length_prefixed(PREFIX_DOMAIN.encode("utf-8")))
    hasher.update(length_prefixed(sj(_identity_json(identity)).encode("utf-8")))
    for event_seq, event in rows:
        hasher.update(u64be(event_seq))
        hasher.update(length_prefixed(prefix_event_json(event).encode("utf-8")))
    return "sha256:" + hasher.hexdigest()


def _segment_json(segment: Any) -> Any:
    return segment.to_json() if hasattr(segment, "to_json") else segment


def manifest_digest(segments: Iterable[Any]) -> str:
    """Manifest digest over prefix segments, oldest first (spec 20 §1.9).

    ``segments`` are :class:`~maka_ref._plan.prefix.immutable.RuntimePrefixSegment` values or their
    JSON form. Order matters.
    """
    manifest = {"protocol": BOUNDARY_CURSOR_PROTOCOL, "segments": [_segment_json(s) for s in segments]}
    hasher = hashlib.sha256()
    hasher.update(length_prefixed(MANIFEST_DOMAIN.encode("utf-8")))
    hasher.update(length_prefixed(sj(manifest).encode("utf-8")))
    return "sha256:" + hasher.hexdigest()


def provider_replay_digest(
    items: Iterable[Any], *, provider_projection_version: int = PROVIDER_REPLAY_PROJECTION_VERSION
) -> str:
    """Provider replay digest over provider items (spec 20 §1.9; no length prefixing)."""
    return digest_json(
        {
            "protocol": PROVIDER_REPLAY_PROTOCOL,
            "providerProjectionVersion": provider_projection_version,
            "items": list(items),
        }
    )
