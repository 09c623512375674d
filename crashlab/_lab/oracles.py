"""The oracles a trial applies to what a fresh process reads back after the kill.

Why transcribed tables and not the reference's own answers: the catalogue states what the
contract allows (spec 20 §2, §4.9; spec 30 §6.2), so an implementation — including the
reference — is checked against the spec, never against itself. The reference ``maka_ref`` is
used only as a second opinion on the events read back (its resolver and Phase 0 planner must
agree with what the implementation projects), exactly as the conformance clauses do.

Every function returns a list of ``(name, ok, detail)`` tuples; the engine records them.
"""

from __future__ import annotations

import json
from typing import Any, Mapping, Sequence

__all__ = ["find_run", "label", "labels", "match_state", "reference_check", "subject_run"]

Verdict = tuple[str, bool, str]
_TERMINAL = {"completed", "failed", "aborted", "cancelled"}


def label(event: Mapping[str, Any]) -> str:
    """A coarse kind for an event, from its shape (spec 10 §1.6): user, call, dispatch,
    response, text, terminal, start, reconcile, decision or other."""
    content = event.get("content") if isinstance(event.get("content"), Mapping) else {}
    actions = event.get("actions") if isinstance(event.get("actions"), Mapping) else {}
    kind = content.get("kind")
    if actions.get("continuationStart") is not None:
        return "start"
    if actions.get("toolDispatch") is not None:
        return "dispatch"
    recovery = actions.get("toolRecovery")
    if isinstance(recovery, Mapping):
        return "decision" if recovery.get("kind") == "maka.tool.recovery_decision" else "reconcile"
    if kind == "function_call":
        return "call"
    if kind == "function_response":
        return "response"
    if event.get("status") in _TERMINAL or actions.get("endInvocation") is True:
        return "terminal"
    if event.get("role") == "user" and kind == "text":
        return "user"
    if event.get("role") == "model" and kind == "text":
        return "text"
    return "other"


def labels(events: Sequence[Mapping[str, Any]] | None) -> list[str] | None:
    return None if events is None else [label(e) for e in events]


def find_run(projection: Mapping[str, Any], session_id: str, run_id: str) -> Mapping[str, Any] | None:
    for run in projection.get("runs") or []:
        if run.get("sessionId") == session_id and run.get("runId") == run_id:
            return run
    return None


def subject_run(projection: Mapping[str, Any], subject: str, source: tuple[str, str]) -> Mapping[str, Any] | None:
    """The run a state describes: the crashed ``source`` run, or the ``target`` (the run whose
    header names the source as its ``continuationSource``; ``None`` when there is none)."""
    if subject != "target":
        return find_run(projection, *source)
    for run in projection.get("runs") or []:
        src = ((run.get("header") or {}).get("continuationSource") or {})
        if src.get("sourceRunId") == source[1] and run.get("sessionId") == source[0]:
            return run
    return None


def _state_problems(state: Mapping[str, Any], run: Mapping[str, Any] | None, unsettled: Sequence[str]) -> list[str]:
    """Why ``run`` does not match one allowed ``state`` (empty: it matches)."""
    out: list[str] = []
    if state.get("labels", "") is None:  # the state says: no such run at all
        return [] if run is None else [f"a run {run.get('runId')} exists"]
    if run is None:
        return ["no such run"]
    found = labels(run.get("events"))
    if found is None:
        return ["its events are unreadable (null)"]
    if "labels" in state and found != state["labels"]:
        out.append(f"events {found} != {state['labels']}")
    if "first" in state and found[:1] != [state["first"]]:
        out.append(f"first event {found[:1]} is not {state['first']}")
    if "last" in state and found[-1:] != [state["last"]]:
        out.append(f"last event {found[-1:]} is not {state['last']}")
    if "terminals" in state and found.count("terminal") != state["terminals"]:
        out.append(f"{found.count('terminal')} terminal events, allowed {state['terminals']}")
    header = run.get("header") or {}
    if "header" in state and header.get("status") not in state["header"]:
        out.append(f"header status {header.get('status')!r} not in {state['header']}")
    if "toolStates" in state:
        states = [o.get("currentState") for o in run.get("toolOperations") or []]
        if states != state["toolStates"]:
            out.append(f"tool operation states {states} != {state['toolStates']}")
    if "unsettled" in state and len(unsettled) != state["unsettled"]:
        out.append(f"{len(unsettled)} unsettled operations, allowed {state['unsettled']}")
    return out


def match_state(states: Sequence[Mapping[str, Any]], projection: Mapping[str, Any], source: tuple[str, str],
                what: str) -> tuple[Mapping[str, Any] | None, list[Verdict]]:
    """The first allowed state the reopened store matches (``allowed_prefix``), plus a check
    that a header never claims an end without a terminal fact (spec 20 §4.1)."""
    unsettled = list(projection.get("unsettledOperations") or [])
    reasons = []
    for state in states:
        run = subject_run(projection, state.get("subject", "source"), source)
        problems = _state_problems(state, run, unsettled)
        if not problems:
            return state, [("allowed_prefix", True, f"{what}: matches an allowed state"), _header_check(run)]
        reasons.append("; ".join(problems))
    detail = f"{what}: the reopened store is in no state the contract allows: " + " | ".join(
        f"allowed #{n + 1}: {r}" for n, r in enumerate(reasons))
    return None, [("allowed_prefix", False, detail), _header_check(subject_run(projection, "source", source))]


def _header_check(run: Mapping[str, Any] | None) -> Verdict:
    if run is None or run.get("events") is None:
        return ("terminal_before_header", True, "no run")
    status = (run.get("header") or {}).get("status")
    has_terminal = "terminal" in (labels(run["events"]) or [])
    ok = not (status in {"completed", "failed", "cancelled"} and not has_terminal)
    return ("terminal_before_header", ok,
            "" if ok else f"the header says {status!r} but no terminal RuntimeEvent is committed (spec 20 §4.1)")


def _plain(value: Any) -> Any:
    from maka_ref import thaw

    return json.loads(json.dumps(thaw(value)))


def _wire(value: Any) -> Any:
    from maka_ref import parse_json

    return parse_json(json.dumps(value, ensure_ascii=True))


def reference_check(run: Mapping[str, Any], decision: Mapping[str, Any] | None, what: str) -> list[Verdict]:
    """``decision_table``: the spec's decision for the matched state (resolver statuses, Phase
    0 disposition, operation statuses, rejection reasons, replay labels), computed by the
    reference on the events read back; and ``reference_agreement``: the implementation's
    projected resolution and plan equal the reference's."""
    from maka_ref import build_resume_plan, resolve_recovery
    from maka_ref.testing.contract import plan_form

    events = run.get("events") or []
    resolution = _plain(resolve_recovery(_wire(events)).to_json())
    plan = _plain(build_resume_plan(_wire(events)).to_json())
    out: list[Verdict] = []
    # The plan's wording (diagnostic messages, the directive's sentence) is free: compare codes.
    agree = resolution == run.get("resolution") and plan_form(plan) == plan_form(run.get("plan"))
    out.append(("reference_agreement", agree, "" if agree else
                f"{what}: the projected resolution/plan differ from the reference's on the same events"))
    if not decision:
        return out
    problems = []
    got = {"resolver": [d.get("status") for d in resolution.get("decisions", [])],
           "operations": [o.get("status") for o in plan.get("operations", [])],
           "disposition": plan.get("disposition"), "rejectionReasons": plan.get("rejectionReasons"),
           "replay": labels(plan.get("replayRuntimeEvents") or [])}
    for key, want in decision.items():
        if got.get(key) != want:
            problems.append(f"{key} {got.get(key)!r}, the table requires {want!r}")
    out.append(("decision_table", not problems, f"{what}: " + "; ".join(problems) if problems else ""))
    return out


def operation_ids(run: Mapping[str, Any], statuses: set[str]) -> list[str]:
    """Operation ids of the run's calls whose reference decision has one of ``statuses``."""
    from maka_ref import resolve_recovery

    events = run.get("events") or []
    resolution = _plain(resolve_recovery(_wire(events)).to_json())
    by_call = {e.get("id"): e for e in events}
    out = []
    for d in resolution.get("decisions", []):
        call = by_call.get(d.get("callRuntimeEventId"))
        if d.get("status") in statuses and call is not None:
            out.append(d.get("operationId") or operation_id_of(call))
    return out


def operation_id_of(call_event: Mapping[str, Any]) -> str:
    """``refs.operationId`` (T1 lane) or spec 30 §0.3 from invocation id and provider call id."""
    refs = call_event.get("refs") if isinstance(call_event.get("refs"), Mapping) else {}
    if isinstance(refs.get("operationId"), str):
        return refs["operationId"]
    from maka_ref._runtime.ids import operation_id

    return operation_id(call_event["invocationId"], call_event["content"]["id"])
