"""Existing durable claims: start/claim matching and classification (spec 20 §3.5, §3.12).

Why this exists: a boundary that was already claimed must never be continued a second
time. When the planner finds a claim for the boundary it just built, it classifies the
claim's target run — finished (``continuation_already_exists``), started but with no
terminal (``continuation_started_indeterminate``, never auto-terminated, §9 item 17), or
anything else (``continuation_claim_repair_required``). The lineage walk (§3.4) uses the same
start/claim and header-compatibility rules for every v2 ancestor edge.

Inputs are plain values: the claim state ``{claim, startEventId?, startKind?}`` (claim in its
``continuation_claim_v1`` JSON form), the target header (a mapping, or None when it cannot be
read) and the target's immutable events (a sequence, or None when they cannot be read or are
empty). Never raises. Pure.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from maka_ref._codec.frozen import thaw
from maka_ref._events.constants import CONTINUATION_START_KEYS, T1_PROTOCOL

from .terminal import TERMINAL_HEADER_STATUSES, classify_terminal, header_matches_fact

__all__ = [
    "CONTINUATION_START_PROTOCOL",
    "MUTABLE_HEADER_FIELDS",
    "START_KINDS",
    "ClaimClassification",
    "ClaimState",
    "classify_existing_claim",
    "expected_continuation_start",
    "start_matches_claim",
    "target_header_compatible",
]

CONTINUATION_START_PROTOCOL = "continuation_start_v2"
START_KINDS = ("runtime_admission", "claim_repair")

#: §3.5 step 2: header fields removed before the compatibility comparison.
MUTABLE_HEADER_FIELDS = frozenset(
    {"status", "updatedAt", "completedAt", "failureClass", "failureMessage", "abortSource", "traceWriteError"}
)
_START_KEYS = frozenset(CONTINUATION_START_KEYS)


def _get(value: Any, key: str) -> Any:
    return value.get(key) if isinstance(value, Mapping) else None


@dataclass(frozen=True, slots=True)
class ClaimState:
    """A durable claim as read from the authority: ``{claim, startEventId?, startKind?}``."""

    claim: Mapping[str, Any]
    start_event_id: str | None = None
    start_kind: str | None = None

    @classmethod
    def of(cls, value: Any) -> ClaimState | None:
        if value is None or isinstance(value, ClaimState):
            return value
        if isinstance(value, Mapping):
            return cls(value.get("claim"), value.get("startEventId"), value.get("startKind"))  # type: ignore[arg-type]
        return None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"claim": thaw(self.claim)}
        if self.start_event_id is not None:
            out["startEventId"] = self.start_event_id
        if self.start_kind is not None:
            out["startKind"] = self.start_kind
        return out


def expected_continuation_start(claim: Mapping[str, Any], provenance: str) -> dict[str, Any] | None:
    """The exact ``actions.continuationStart`` a start of ``claim`` must carry (§3.12)."""
    boundary = _get(claim, "boundary")
    segments = _get(boundary, "segments")
    if not isinstance(segments, Sequence) or isinstance(segments, str) or not segments:
        return None
    immediate = segments[-1]
    identity = _get(immediate, "identity")
    position = _get(immediate, "position")
    return {
        "protocol": CONTINUATION_START_PROTOCOL,
        "provenance": provenance,
        "claimId": _get(claim, "claimId"),
        "boundaryDigest": _get(claim, "boundaryDigest"),
        "immediateSource": {
            "sessionId": _get(identity, "sessionId"),
            "invocationId": _get(identity, "invocationId"),
            "runId": _get(identity, "runId"),
            "turnId": _get(identity, "turnId"),
            "highWater": _get(position, "lastEventSeq"),
            "prefixDigest": _get(immediate, "prefixDigest"),
        },
        "replayManifestDigest": _get(boundary, "manifestDigest"),
        "providerProjectionVersion": 1,
        "providerReplayDigest": _get(claim, "providerReplayDigest"),
    }


def _is_number(value: Any) -> bool:
    return type(value) in (int, float)


def start_matches_claim(event: Any, claim: Any, start_kind: Any) -> bool:
    """Does ``event`` match ``claim`` as a continuation-start of kind ``start_kind`` (§3.12)?

    Identity = claim target; ``partial: false``; role/author ``system``; no ``status``,
    ``content`` or ``refs``; ``ts >= claimedAt`` (``claim_repair``: exactly ``claimedAt``);
    ``actions`` = exactly ``continuationStart`` plus, for ``runtime_admission`` only, an
    optional ``runtimeProtocol = {toolBoundary: t1_after_preflight_v1}``; the start payload
    deep-equals :func:`expected_continuation_start` (``provenance`` mirrors ``start_kind``).
    """
    if not isinstance(event, Mapping) or not isinstance(claim, Mapping) or start_kind not in START_KINDS:
        return False
    target = _get(claim, "target")
    if not isinstance(target, Mapping):
        return False
    for key in ("sessionId", "invocationId", "runId", "turnId"):
        if event.get(key) != target.get(key) or type(event.get(key)) is not str:
            return False
    if event.get("partial") is not False or event.get("role") != "system" or event.get("author") != "system":
        return False
    if "status" in event or "content" in event or "refs" in event:
        return False
    ts, claimed_at = event.get("ts"), claim.get("claimedAt")
    if not _is_number(ts) or not _is_number(claimed_at):
        return False
    if (start_kind == "claim_repair" and ts != claimed_at) or ts < claimed_at:
        return False
    actions = event.get("actions")
    if not isinstance(actions, Mapping):
        return False
    keys = set(actions.keys())
    if keys == {"continuationStart", "runtimeProtocol"}:
        if start_kind != "runtime_admission" or thaw(actions["runtimeProtocol"]) != {"toolBoundary": T1_PROTOCOL}:
            return False
    elif keys != {"continuationStart"}:
        return False
    start = actions["continuationStart"]
    if not isinstance(start, Mapping) or set(start.keys()) != _START_KEYS:
        return False
    expected = expected_continuation_start(claim, start_kind)
    return expected is not None and _json_equal(thaw(start), expected)


def _json_equal(a: Any, b: Any) -> bool:
    """Deep JSON equality where ``True`` is not ``1`` (JavaScript semantics)."""
    if type(a) is bool or type(b) is bool:
        return type(a) is type(b) and a == b
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        return set(a.keys()) == set(b.keys()) and all(_json_equal(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(_json_equal(x, y) for x, y in zip(a, b))
    if _is_number(a) and _is_number(b):
        return a == b
    return type(a) is type(b) and a == b


def target_header_compatible(target_header: Any, claimed_header: Any) -> bool:
    """§3.5 step 2: deep-equal after removing the mutable fields (§9 item 20)."""
    if not isinstance(target_header, Mapping) or not isinstance(claimed_header, Mapping):
        return False
    strip = lambda h: {k: thaw(v) for k, v in h.items() if k not in MUTABLE_HEADER_FIELDS}  # noqa: E731
    return _json_equal(strip(target_header), strip(claimed_header))


@dataclass(frozen=True, slots=True)
class ClaimClassification:
    """The park reason of an authenticated existing claim (§3.5) and the step that decided."""

    reason: str
    step: int
    continuation_claim_id: Any = None
    continuation_run_id: Any = None

    def detail(self) -> dict[str, Any]:
        return {"continuationClaimId": self.continuation_claim_id, "continuationRunId": self.continuation_run_id}


def classify_existing_claim(
    claim_state: ClaimState | Mapping[str, Any],
    target_header: Any,
    target_events: Sequence[Any] | None,
) -> ClaimClassification:
    """Classify an existing claim that authenticates the current replay (§3.5 steps 1–11).

    ``target_header`` is None when the target run is missing/unreadable; ``target_events``
    is None (or empty) when the target prefix cannot be read.
    """
    state = ClaimState.of(claim_state)
    claim = state.claim if state is not None else None
    claim_id = _get(claim, "claimId")
    run_id = _get(_get(claim, "target"), "runId")

    def result(reason: str, step: int) -> ClaimClassification:
        return ClaimClassification(reason, step, claim_id, run_id)

    repair = "continuation_claim_repair_required"
    if state is None or not isinstance(target_header, Mapping):
        return result(repair, 1)
    if not target_header_compatible(target_header, _get(claim, "targetRunHeader")):
        return result(repair, 2)
    if not target_events:
        return result(repair, 3)
    first = target_events[0]
    if (
        type(state.start_event_id) is not str
        or _get(first, "id") != state.start_event_id
        or not start_matches_claim(first, claim, state.start_kind)
    ):
        return result(repair, 4)
    terminal = classify_terminal(target_header, target_events)
    if terminal.kind in ("fact", "incomplete_single_terminal") and terminal.event_index != len(target_events) - 1:
        return result(repair, 5)
    if terminal.kind in ("ambiguous", "incomplete_single_terminal"):
        return result(repair, 6)
    status = target_header.get("status")
    header_terminal = type(status) is str and status in TERMINAL_HEADER_STATUSES
    if terminal.is_fact and not header_terminal:
        return result(repair, 7)
    if terminal.is_fact and header_matches_fact(target_header, terminal):
        return result("continuation_already_exists", 8)
    if terminal.is_fact or header_terminal:
        return result(repair, 9)
    return result("continuation_started_indeterminate", 10)
