"""The pure-core operations: the golden-vector operations mapped onto ``maka_ref``.

Why here: the vectors (``conformance/vectors/README.md``) and the wire protocol's ``ledger.*``
operations (``docs/protocol.md`` §4.1) are the same operations with the same result forms, so
there is exactly one mapping, used by the adapter *and* by ``tests/conformance/vectors/test_golden_vectors.py``.

Each runner takes the vector ``input`` (the protocol ``params``) and returns the README's
result form. Only ``args_hash``, ``encode`` and ``decode`` fail: they *raise* the
:class:`~maka_ref.MakaRefError` (its ``message`` is the spec's exact text, its ``code`` is
stable); :func:`run_vector_operation` turns that into the README's ``{"error": {"message"}}``,
the protocol server into an ``ok: false`` response. ``prefix_digest`` is a protocol-only
operation (spec 20 §1.9) with no vectors.
"""

from __future__ import annotations

from typing import Any, Callable, Mapping

from maka_ref import (
    FAILPOINTS,
    MakaRefError,
    PrefixError,
    build_interrupted_code_mode_outcome_commits,
    build_resume_plan,
    canonical_args_hash,
    classify_lane,
    decode_runtime_event,
    encode_runtime_event,
    has_model_visible_content,
    interpret_operation,
    is_terminal_event,
    parse_json,
    resolve_recovery,
    scan_tool_ledger,
    validate_generic_append,
    validate_recovery_bundle,
    validate_transition,
)
from maka_ref._ledger.bundle import OperationIdentity
from maka_ref._plan.prefix.immutable import build_immutable_prefix
from maka_ref._plan.prefix.replay import build_composite_replay_plan, build_segment_replay

__all__ = ["REQUIRED_KEYS", "VECTOR_RUNNERS", "run_vector_operation"]

Runner = Callable[[Mapping[str, Any]], Any]


def _event_of(input_: Mapping[str, Any]) -> Any:
    """``eventJson`` is JSON *text*: parsed with double semantics so ``-0`` and big numbers survive."""
    return parse_json(input_["eventJson"]) if "eventJson" in input_ else input_["event"]


def _ids(events: Any) -> list[Any]:
    return [e.get("id") if isinstance(e, Mapping) else e for e in events]


def run_args_hash(input_: Mapping[str, Any]) -> Any:
    return {"hash": canonical_args_hash(input_["toolName"], parse_json(input_["argsJson"]))}


def run_encode(input_: Mapping[str, Any]) -> Any:
    return {"canonicalJson": encode_runtime_event(_event_of(input_)).canonical_json}


def run_decode(input_: Mapping[str, Any]) -> Any:
    return {"event": decode_runtime_event(_event_of(input_))}


def run_predicates(input_: Mapping[str, Any]) -> Any:
    event = input_["event"]
    return {"terminal": is_terminal_event(event), "modelVisible": has_model_visible_content(event)}


def run_lane(input_: Mapping[str, Any]) -> Any:
    return {"lane": classify_lane(input_["event"])}


def run_generic_append(input_: Mapping[str, Any]) -> Any:
    code = validate_generic_append(input_["event"])
    return {"ok": True} if code is None else {"ok": False, "code": code}


def run_scan(input_: Mapping[str, Any]) -> Any:
    return scan_tool_ledger(input_["events"]).to_json()


def run_validate_transition(input_: Mapping[str, Any]) -> Any:
    return validate_transition(input_["existing"], input_["candidates"], input_["kind"]).to_json()


def run_validate_bundle(input_: Mapping[str, Any]) -> Any:
    i = input_["identity"]
    identity = OperationIdentity(
        operation_id=i["operationId"], invocation_id=i["invocationId"], run_id=i["runId"], turn_id=i["turnId"],
        provider_tool_call_id=i["providerToolCallId"], tool_name=i["toolName"],
        canonical_args_hash=i["canonicalArgsHash"], recovery_mode=i["recoveryMode"],
        call_event_id=i["callEventId"], dispatch_event_id=i["dispatchEventId"],
    )
    return validate_recovery_bundle(
        identity, input_["callEvent"], input_["dispatchEvent"], input_["reconcileEvent"],
        input_.get("outcomeEvent"), input_["decisionEvent"],
    ).to_json()


def run_interpret(input_: Mapping[str, Any]) -> Any:
    events = input_["events"]
    scan = scan_tool_ledger(events)
    event_order = {e["id"]: index for index, e in enumerate(events) if isinstance(e, Mapping) and isinstance(e.get("id"), str)}
    result = interpret_operation(scan.operations[input_.get("operationIndex", 0)], event_order).to_json()
    return {k: result[k] for k in ("kind", "code") if k in result}


def run_resolve(input_: Mapping[str, Any]) -> Any:
    return resolve_recovery(input_["events"]).to_json()


def run_code_mode_commits(input_: Mapping[str, Any]) -> Any:
    commits = build_interrupted_code_mode_outcome_commits(input_["events"], input_["now"], input_["toolMode"])
    return {"commits": [c.to_json() if hasattr(c, "to_json") else c for c in commits]}


def run_plan(input_: Mapping[str, Any]) -> Any:
    return build_resume_plan(input_["events"], input_.get("expectedRuntimeEventHighWater")).to_json()


def run_failpoint_catalog(input_: Mapping[str, Any]) -> Any:
    return {"failpoints": [fp.to_json() for fp in FAILPOINTS]}


def _prefix(events: Any, high_water: Any = None) -> Any:
    """The immutable prefix of one run given as its events (``event_seq`` = position + 1).

    With ``high_water`` H the rows are first cut to ``event_seq <= H``, as a store read up to H
    does (upstream's ``readImmutableRuntimePrefix({upToEventSeq})``, spec 30 §4); the builder
    then requires the prefix to end exactly at H (``prefix_high_water_unavailable``) and
    refuses an H that is not a positive safe integer (``prefix_high_water_invalid``).
    """
    if not isinstance(events, list):  # found by ``fuzz --self``: was internal_error (TypeError)
        raise ValueError("params.events must be an array")  # -> invalid_params (the handler)
    rows = [(index + 1, event) for index, event in enumerate(events)]
    if type(high_water) in (int, float) and high_water >= 1:
        rows = [row for row in rows if row[0] <= high_water]
    return build_immutable_prefix(rows, high_water=high_water)


def run_segment_replay(input_: Mapping[str, Any]) -> Any:
    result = build_segment_replay(_prefix(input_["events"]),
                                  provider_projection_version=input_.get("providerProjectionVersion", 1))
    if result.blocked:
        return {"blocked": True, "blockReason": result.reason}
    return {
        "blocked": False,
        "trimmedSuffixEventIds": list(result.trimmed_suffix_event_ids),
        "replayEventIds": _ids(result.replay_runtime_events),
        "providerItemEventIds": [item["eventId"] for item in result.provider_items],
    }


def run_composite_replay(input_: Mapping[str, Any]) -> Any:
    segments = input_["segments"]
    if not isinstance(segments, list) or not all(isinstance(s, Mapping) for s in segments):
        raise ValueError("params.segments must be an array of objects")  # -> invalid_params
    result = build_composite_replay_plan([_prefix(s["events"]) for s in segments],
                                         provider_projection_version=input_.get("providerProjectionVersion", 1))
    if result.blocked:
        out: dict[str, Any] = {"blocked": True, "blockReason": result.reason}
        if result.segment_index is not None:
            out["blockedSegmentIndex"] = result.segment_index
        return out
    plan = result.to_json()
    return {
        "blocked": False,
        "runtimeContextEventIds": _ids(result.runtime_context),
        "trimmedSuffixEventIds": [list(s.trimmed_suffix_event_ids) for s in result.segments],
        "boundaryRunIds": [s["identity"]["runId"] for s in plan["boundary"]["segments"]],
        "providerItemEventIds": [item["eventId"] for item in result.provider_items],
    }


def run_prefix_digest(input_: Mapping[str, Any]) -> Any:
    """Spec 20 §1.9: a ``PrefixError`` is a *result* ``{"ok": false, "code"}``, not a failure."""
    try:
        prefix = _prefix(input_["events"], input_.get("highWater"))
    except PrefixError as exc:
        return {"ok": False, "code": exc.code}
    return {
        "ok": True,
        "highWater": prefix.position.last_event_seq,
        "digest": prefix.prefix_digest,
        "eventIds": [event["id"] for event in prefix.events],
    }


#: Vector operation name → runner (the protocol op is ``ledger.<name>``).
VECTOR_RUNNERS: dict[str, Runner] = {
    "args_hash": run_args_hash,
    "encode": run_encode,
    "decode": run_decode,
    "predicates": run_predicates,
    "lane": run_lane,
    "generic_append": run_generic_append,
    "scan": run_scan,
    "validate_transition": run_validate_transition,
    "validate_bundle": run_validate_bundle,
    "interpret": run_interpret,
    "resolve": run_resolve,
    "code_mode_commits": run_code_mode_commits,
    "plan": run_plan,
    "failpoint_catalog": run_failpoint_catalog,
    "segment_replay": run_segment_replay,
    "composite_replay": run_composite_replay,
    "prefix_digest": run_prefix_digest,
}

#: Params each operation cannot run without (a missing one is ``invalid_params``, never a crash).
REQUIRED_KEYS: dict[str, tuple[str, ...]] = {
    "args_hash": ("toolName", "argsJson"),
    "predicates": ("event",),
    "lane": ("event",),
    "generic_append": ("event",),
    "scan": ("events",),
    "validate_transition": ("existing", "candidates", "kind"),
    "validate_bundle": ("identity", "callEvent", "dispatchEvent", "reconcileEvent", "decisionEvent"),
    "interpret": ("events",),
    "resolve": ("events",),
    "code_mode_commits": ("events", "now", "toolMode"),
    "plan": ("events",),
    "failpoint_catalog": (),
    "segment_replay": ("events",),
    "composite_replay": ("segments",),
    "prefix_digest": ("events",),
}


def run_vector_operation(operation: str, input_: Mapping[str, Any]) -> Any:
    """Run one vector operation and return the README's result form (failures included)."""
    try:
        return VECTOR_RUNNERS[operation](input_)
    except MakaRefError as exc:
        if operation not in ("args_hash", "encode", "decode"):
            raise
        return {"error": {"message": exc.message}}
