"""The continuation claim saga (spec 20 §4.5): pre-provider convergence of durable claims.

A continuation takes its durable claim *before* the target run exists (§3.10, §9 item 16).
A crash (or a failed revalidation) between the claim and the live continuation-start leaves a
claim that no provider call stands on; startup repair closes it — per session, before generic
repair (§4.4 step 4) — and never touches a target whose **live** start exists without a
terminal (§9 item 17: ``continuation_started_indeterminate`` until an owner proof exists).

Per claim targeting the session (``claimedAt``, ``claimId`` order), §4.5 steps 1–6:

1. target header missing → create it from ``claim.targetRunHeader`` (a concurrent creation is
   tolerated);
2. re-read the claim; start recorded → the header must be *compatible* (§3.5 step 2), no start
   → the header must be *exactly* the claimed header; else refuse;
3. no start → the target must have zero immutable events (else refuse); commit the
   deterministic repair start (``claim_repair``, ``ts = claimedAt``, no T1 marker);
4. the first target event must be the recorded start (else refuse);
5. live start (``runtime_admission``): nothing — reported as skipped
   (``continuation_started_indeterminate``) when it has no terminal event; with one, generic
   repair (§4.6) finishes the header;
6. repair start: the deterministic failed terminal
   (``continuation_abandoned_before_provider_dispatch``, ``ts = max(start.ts + 1,
   claimedAt + 1)``) committed by §4.1 (event, then header, then the ``run_failed``
   operational event, each skipped when already there).

Every id is ``continuation-repair-<kind>-<first 32 hex of
SHA256("maka.continuation-repair.<kind>.v1\\0<claimId>")>`` (``kind`` ∈ ``start``,
``terminal``, ``run-terminal``) and every value a pure function of the claim, so a crash
between any two commits converges on the next pass and a converged claim costs no write.

Refusals ("raise" in §4.5) quarantine the session (:class:`ClaimSagaRefused`); a failed write
in best-effort mode quarantines it too (:class:`ClaimSagaWriteFailed`, §8 item 89: "session
not reported"), strict mode re-raises the store error. Neither ever falls back to generic repair
for that session. Choices: docs/choices/repair.md "Claim saga".
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from typing import Any, Final

from maka_ref._codec.frozen import thaw
from maka_ref._events.encode import json_strict_equal
from maka_ref._plan.continuation.claims import (
    expected_continuation_start,
    start_matches_claim,
    target_header_compatible,
)
from maka_ref._plan.continuation.terminal import classify_terminal, header_matches_fact
from maka_ref._repair.claims import ClaimAuthorityUnavailable, ClaimSagaContext, ClaimSagaOutcome
from maka_ref._repair.report import RunRepair, SkippedRun
from maka_ref._repair.terminal import header_patch, recovered_terminal_event
from maka_ref._store.writers.continuation import ClaimRecord
from maka_ref._store.errors import StoreError
from maka_ref._store.engine.failpoints import failpoint
from maka_ref._store.engine.faults import STORE_FAULT_CODES

__all__ = [
    "ABANDONED",
    "CLAIM_SAGA",
    "ClaimSagaRefused",
    "ClaimSagaWriteFailed",
    "ContinuationClaimSaga",
    "continuation_repair_id",
]

ABANDONED: Final = "continuation_abandoned_before_provider_dispatch"
INDETERMINATE: Final = "continuation_started_indeterminate"
ACTION: Final = "continuation_claim_abandoned"


def continuation_repair_id(kind: str, claim_id: str) -> str:
    """§4.5 deterministic id; ``kind`` ∈ ``start``, ``terminal``, ``run-terminal``."""
    text = f"maka.continuation-repair.{kind}.v1\0{claim_id}"
    return f"continuation-repair-{kind}-" + hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]


class ClaimSagaRefused(ClaimAuthorityUnavailable):
    """§4.5 "otherwise raise": the durable claim state contradicts the claim (session quarantined)."""

    code = "continuation_claim_repair_refused"
    skip_reason = "continuation_claim_repair_refused"


class ClaimSagaWriteFailed(ClaimAuthorityUnavailable):
    """A saga write failed (best-effort): the session is quarantined for this pass."""

    code = "continuation_claim_repair_failed"
    skip_reason = "continuation_claim_repair_failed"


def _refuse(record: ClaimRecord, why: str) -> ClaimSagaRefused:
    return ClaimSagaRefused(f"continuation claim {record.claim_id}: {why}")


def repair_start_event(claim: Mapping[str, Any]) -> dict[str, Any]:
    """The deterministic ``claim_repair`` continuation-start of ``claim`` (§3.12, §4.5 step 3)."""
    return {
        "id": continuation_repair_id("start", claim["claimId"]),
        **claim["target"],
        "ts": claim["claimedAt"],
        "partial": False,
        "role": "system",
        "author": "system",
        "actions": {"continuationStart": expected_continuation_start(claim, "claim_repair")},
    }


def repair_terminal_event(claim: Mapping[str, Any], header: Mapping[str, Any], start: Mapping[str, Any]) -> dict[str, Any]:
    """The deterministic failed terminal of §4.5 step 6 (the §4.2 recovered shape)."""
    ts = max(start["ts"] + 1, claim["claimedAt"] + 1)
    event = recovered_terminal_event(
        header, ts, "failed", failure_class=ABANDONED, message=ABANDONED, recovery_reason=ABANDONED,
        invocation_id=claim["target"]["invocationId"],
    )
    event["id"] = continuation_repair_id("terminal", claim["claimId"])
    event["invocationId"] = claim["target"]["invocationId"]  # "invocation = target invocation"
    return event


class ContinuationClaimSaga:
    """The default ``claim_saga`` of :func:`maka_ref._repair.repair_workspace` (§4.5)."""

    def repair_claims(self, context: ClaimSagaContext) -> ClaimSagaOutcome:
        session_id = context.session_id
        try:
            records = [r for r in context.store.list_claims(session_id) if r.claim.target.session_id == session_id]
        except StoreError as exc:
            if isinstance(exc, ClaimAuthorityUnavailable):
                raise
            raise ClaimAuthorityUnavailable(f"continuation claims of {session_id} cannot be read: {exc.message}", detail=exc.code) from exc
        repairs: list[RunRepair] = []
        skipped: list[SkippedRun] = []
        for record in records:
            try:
                result = _repair_claim(context, record)
            except ClaimAuthorityUnavailable:
                raise
            except StoreError as exc:
                if context.strict or exc.code in STORE_FAULT_CODES:  # store-wide: no skip (faults.py)
                    raise
                raise ClaimSagaWriteFailed(
                    f"continuation claim {record.claim_id}: {exc.code}: {exc.message}", detail=exc.code
                ) from exc
            if isinstance(result, RunRepair):
                repairs.append(result)
            elif isinstance(result, SkippedRun):
                skipped.append(result)
        owned = frozenset(record.claim.target.run_id for record in records)
        return ClaimSagaOutcome(tuple(repairs), owned, tuple(skipped))


CLAIM_SAGA: Final = ContinuationClaimSaga()


def _read_header(context: ClaimSagaContext, session_id: str, run_id: str) -> Mapping[str, Any] | None:
    try:
        return context.runs.read_run(session_id, run_id)
    except StoreError as exc:
        if exc.code == "ENOENT":
            return None
        raise


def _repair_claim(context: ClaimSagaContext, record: ClaimRecord) -> RunRepair | SkippedRun | None:
    store, runs = context.store, context.runs
    claim = record.claim.to_json()
    target = claim["target"]
    session_id, run_id = target["sessionId"], target["runId"]
    wrote = False
    # step 1: the target header
    header = _read_header(context, session_id, run_id)
    if header is None:
        try:
            runs.create_run(claim["targetRunHeader"])
            wrote = True
        except StoreError as exc:
            if exc.code != "run_already_exists":  # a concurrent creator won: re-read below
                raise
        header = runs.read_run(session_id, run_id)
    # step 2: re-read the claim state; header compatible (start) / exactly the claimed one (no start)
    current = store.read_claim(record.claim_id)
    if current is None or current.claim.canonical_json != record.claim.canonical_json:
        raise _refuse(record, "the claim changed while it was being repaired")
    record = current
    if record.start_event_id is not None:
        if not target_header_compatible(header, claim["targetRunHeader"]):
            raise _refuse(record, "target run header is not compatible with the claimed header")
    elif not json_strict_equal(thaw(header), claim["targetRunHeader"]):
        raise _refuse(record, "target run header is not exactly the claimed header")
    # step 3: no start yet → deterministic repair start on an empty target ledger
    events = list(store.read_run_events(session_id, run_id))
    if record.start_event_id is None:
        if events:
            raise _refuse(record, f"target has {len(events)} immutable events but no recorded start")
        store.commit_continuation_repair_start(claim, repair_start_event(claim))
        wrote = True
        record = store.read_claim(record.claim_id) or record
        events = list(store.read_run_events(session_id, run_id))
    # step 4: the first target event is the recorded start
    first = events[0] if events else None
    if first is None or first.get("id") != record.start_event_id or not start_matches_claim(first, claim, record.start_kind):
        raise _refuse(record, "the first target event is not the recorded continuation start")
    fact = classify_terminal(header, events)
    # step 5: a live start is never terminated here
    if record.start_kind == "runtime_admission":
        if fact.kind == "none":
            return SkippedRun(
                session_id, run_id, INDETERMINATE,
                "live continuation start without a terminal event: never auto-terminated (§9 item 17)",
            )
        return None  # a terminal exists: generic repair (§4.6) finishes the header
    # step 6: repair start → deterministic failed terminal
    terminal = repair_terminal_event(claim, header, first)
    if fact.kind != "none":
        if fact.event is None or not json_strict_equal(thaw(fact.event), terminal):
            raise _refuse(record, "target holds a terminal event other than the deterministic repair terminal")
    op_events = list(runs.read_events(session_id, run_id, strict=context.strict))
    has_run_failed = any(item.get("type") == "run_failed" for item in op_events)
    if fact.is_fact and header_matches_fact(header, fact) and has_run_failed:
        return _entry(record, header, terminal) if wrote else None
    header = _commit_terminal(context, claim, header, terminal, op_events, fact.kind != "none")
    return _entry(record, header, terminal)


def _commit_terminal(
    context: ClaimSagaContext,
    claim: Mapping[str, Any],
    header: Mapping[str, Any],
    terminal: Mapping[str, Any],
    op_events: Sequence[Mapping[str, Any]],
    event_durable: bool,
) -> Mapping[str, Any]:
    """§4.1 with the claim's ids: event (barrier), header, then the ``run_failed`` event."""
    store, runs = context.store, context.runs
    session_id, run_id = header["sessionId"], header["runId"]
    if not event_durable:
        store.ensure_terminal_durable(terminal)
    failpoint("P10")  # terminal fact durable, header not yet (§4.8)
    patch = header_patch(terminal, "failed", failure_class=ABANDONED, failure_message=ABANDONED, abort_source=None)
    if not all(json_strict_equal(thaw(header.get(k)), v) for k, v in patch.items()):
        header = runs.update_run(session_id, run_id, patch)
    if not any(item.get("type") == "run_failed" for item in op_events):
        runs.append_event(
            session_id,
            run_id,
            {
                "type": "run_failed",
                "id": continuation_repair_id("run-terminal", claim["claimId"]),
                "runId": run_id,
                "sessionId": session_id,
                "turnId": header["turnId"],
                "ts": terminal["ts"],
                "message": ABANDONED,
                "data": {
                    "failureClass": ABANDONED,
                    "recovered": True,
                    "recoveryReason": ABANDONED,
                    "continuationClaimId": claim["claimId"],
                    "terminalEventId": terminal["id"],
                },
            },
        )
    return header


def _entry(record: ClaimRecord, header: Mapping[str, Any], terminal: Mapping[str, Any]) -> RunRepair:
    return RunRepair(
        session_id=header["sessionId"],
        run_id=header["runId"],
        action=ACTION,
        header_status=header["status"],
        terminal_event_id=terminal["id"],
        failure_class=header.get("failureClass"),
        recovery_reason=ABANDONED,
    )
