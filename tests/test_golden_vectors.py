"""Run every golden vector in ``conformance/vectors/`` against ``maka_ref``.

The vectors (and their expectations, transcribed from spec 10 and spec 20) are described in
``conformance/vectors/README.md``; :func:`conformance.vectors.check_vector` does the
comparison. This module only adapts ``maka_ref`` to the result forms of the README: one small
function per operation, each importing what it needs lazily so that a missing module fails
only the vectors of that operation.
"""

from __future__ import annotations

from typing import Any, Callable, Mapping

import pytest

from conformance.vectors import Vector, check_vector, iter_vectors, parse_json_text

# ---------------------------------------------------------------------------------------
# Adapters: maka_ref -> the README's result forms
# ---------------------------------------------------------------------------------------


def _failure(exc: Exception) -> dict[str, Any]:
    return {"error": {"message": getattr(exc, "message", str(exc))}}


def _event_of(input_: Mapping[str, Any]) -> Any:
    return parse_json_text(input_["eventJson"]) if "eventJson" in input_ else input_["event"]


def _ids(events: Any) -> list[Any]:
    return [e.get("id") if isinstance(e, Mapping) else e for e in events]


def run_args_hash(input_: Mapping[str, Any]) -> Any:
    from maka_ref import MakaRefError, canonical_args_hash

    try:
        return {"hash": canonical_args_hash(input_["toolName"], parse_json_text(input_["argsJson"]))}
    except MakaRefError as exc:
        return _failure(exc)


def run_encode(input_: Mapping[str, Any]) -> Any:
    from maka_ref import MakaRefError, encode_runtime_event

    try:
        return {"canonicalJson": encode_runtime_event(_event_of(input_)).canonical_json}
    except MakaRefError as exc:
        return _failure(exc)


def run_decode(input_: Mapping[str, Any]) -> Any:
    from maka_ref import MakaRefError, decode_runtime_event

    try:
        return {"event": decode_runtime_event(_event_of(input_))}
    except MakaRefError as exc:
        return _failure(exc)


def run_predicates(input_: Mapping[str, Any]) -> Any:
    from maka_ref import has_model_visible_content, is_terminal_event

    event = input_["event"]
    return {"terminal": is_terminal_event(event), "modelVisible": has_model_visible_content(event)}


def run_lane(input_: Mapping[str, Any]) -> Any:
    from maka_ref import classify_lane

    return {"lane": classify_lane(input_["event"])}


def run_generic_append(input_: Mapping[str, Any]) -> Any:
    from maka_ref import validate_generic_append

    code = validate_generic_append(input_["event"])
    return {"ok": True} if code is None else {"ok": False, "code": code}


def run_scan(input_: Mapping[str, Any]) -> Any:
    from maka_ref import scan_tool_ledger

    return scan_tool_ledger(input_["events"]).to_json()


def run_validate_transition(input_: Mapping[str, Any]) -> Any:
    from maka_ref import validate_transition

    return validate_transition(input_["existing"], input_["candidates"], input_["kind"]).to_json()


def run_validate_bundle(input_: Mapping[str, Any]) -> Any:
    from maka_ref import validate_recovery_bundle
    from maka_ref._ledger.bundle import OperationIdentity

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
    from maka_ref import interpret_operation, scan_tool_ledger

    events = input_["events"]
    scan = scan_tool_ledger(events)
    event_order = {e["id"]: index for index, e in enumerate(events) if isinstance(e, Mapping) and isinstance(e.get("id"), str)}
    result = interpret_operation(scan.operations[input_.get("operationIndex", 0)], event_order).to_json()
    return {k: result[k] for k in ("kind", "code") if k in result}


def run_resolve(input_: Mapping[str, Any]) -> Any:
    from maka_ref import resolve_recovery

    return resolve_recovery(input_["events"]).to_json()


def run_code_mode_commits(input_: Mapping[str, Any]) -> Any:
    from maka_ref import build_interrupted_code_mode_outcome_commits

    commits = build_interrupted_code_mode_outcome_commits(input_["events"], input_["now"], input_["toolMode"])
    return {"commits": [c.to_json() if hasattr(c, "to_json") else c for c in commits]}


def run_plan(input_: Mapping[str, Any]) -> Any:
    from maka_ref import build_resume_plan

    return build_resume_plan(input_["events"], input_.get("expectedRuntimeEventHighWater")).to_json()


def run_failpoint_catalog(input_: Mapping[str, Any]) -> Any:
    from maka_ref import FAILPOINTS

    return {"failpoints": [fp.to_json() for fp in FAILPOINTS]}


def _prefix(events: Any) -> Any:
    from maka_ref._plan.prefix import build_immutable_prefix

    return build_immutable_prefix([(index + 1, event) for index, event in enumerate(events)])


def run_segment_replay(input_: Mapping[str, Any]) -> Any:
    from maka_ref._plan.segment_replay import build_segment_replay

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
    from maka_ref._plan.segment_replay import build_composite_replay_plan

    result = build_composite_replay_plan([_prefix(s["events"]) for s in input_["segments"]],
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


RUNNERS: dict[str, Callable[[Mapping[str, Any]], Any]] = {
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
}


def run_maka_ref(operation: str, input_: Mapping[str, Any]) -> Any:
    return RUNNERS[operation](input_)


# ---------------------------------------------------------------------------------------
# Tests
# ---------------------------------------------------------------------------------------

VECTORS = list(iter_vectors())


def test_every_operation_has_a_runner() -> None:
    assert {v.operation for v in VECTORS} <= set(RUNNERS)


@pytest.mark.parametrize("vector", [pytest.param(v, id=v.id) for v in VECTORS])
def test_golden_vector(vector: Vector) -> None:
    """One vector: ``vector.spec`` names the spec text its expectation is copied from."""
    mismatches = check_vector(vector, run_maka_ref)
    assert not mismatches, f"{vector.id} ({vector.spec}): {vector.description}\n  " + "\n  ".join(mismatches)


@pytest.mark.parametrize("vector", [pytest.param(v, id=v.id) for v in VECTORS if "failpoint" in v.input])
def test_reference_crash_ledger_matches_vector(vector: Vector) -> None:
    """Spec 20 §2: maka_ref's reference crash ledger is the vector's ledger (event ids aside).

    The spec names the four events ``user``/``call``/``response``/``terminal``; an
    implementation may make ids unique per failpoint, so only the label prefix is compared.
    """
    from maka_ref import reference_crash_ledger

    ours = reference_crash_ledger(vector.input["failpoint"])
    theirs = vector.input["events"]
    assert len(ours) == len(theirs)
    for mine, spec in zip(ours, theirs):
        assert str(mine["id"]).startswith(spec["id"])
        assert {k: v for k, v in mine.items() if k not in ("id", "ts")} == {k: v for k, v in spec.items() if k not in ("id", "ts")}
