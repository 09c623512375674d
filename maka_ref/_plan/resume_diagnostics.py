"""The diagnostics step of the Phase 0 ResumePlan (spec 20 §1.3 items 1-6).

Why a module of its own: once the prefix is projected into operations (§1.1), listing what is
wrong with it is one self-contained step with a fixed order (the first-seen reasons of §1.4
follow that order), and it is the longest part of the planner.
"""

from __future__ import annotations

from typing import Any

from maka_ref._ledger.results import Resolution
from maka_ref._plan.resume_codes import (
    _DIAGNOSTIC_OF_STATUS,
    _OWN_CODE_ISSUES,
    PENDING_TOOL_RESULT,
    RUNTIME_OFFSET_MISMATCH,
    TOOL_LEDGER_CORRUPTION,
    TOOL_NAME_MISMATCH,
    TOOL_RECOVERY_CORRUPTION,
    UNMATCHED_TOOL_RESULT,
)
from maka_ref._plan.resume_inputs import _get, _high_water_mismatch
from maka_ref._plan.resume_messages import _message
from maka_ref._plan.resume_types import PlanDiagnostic, ToolOperation

__all__: list[str] = []  # private helper of the planner, imported by name


def _collect_diagnostics(
    expected_runtime_event_high_water: Any,
    high_water: int,
    recovery: Resolution,
    operations: list[ToolOperation],
    operation_reasons: list[str],
    hidden: dict[Any, bool],
    responses: list[tuple[dict[str, Any], dict[str, Any]]],
) -> list[PlanDiagnostic]:
    """The §1.3 diagnostics of a projected prefix, in the spec's order.

    Step for step upstream's ``collectResumeDiagnostics`` (``runtime-resume.ts:1253``): the
    fields it copies are copied as they are (an empty tool name stays ``""``, an absent one is
    absent); ``hidden`` says, for the call event id of each indeterminate decision, whether the
    last event carrying it is hidden; ``responses`` are the non-partial, non-hidden
    function_response events as ``(event, content)``.
    """
    diagnostics: list[PlanDiagnostic] = []
    add = diagnostics.append

    # 1. runtime_offset_mismatch
    if _high_water_mismatch(expected_runtime_event_high_water, high_water):
        add(
            PlanDiagnostic(
                code=RUNTIME_OFFSET_MISMATCH,
                message=_message(RUNTIME_OFFSET_MISMATCH),
                detail={
                    "expectedRuntimeEventHighWater": expected_runtime_event_high_water,
                    "actualRuntimeEventHighWater": high_water,
                },
            )
        )

    # 2. one per operation, operation order
    for op, op_reason in zip(operations, operation_reasons):
        code = _DIAGNOSTIC_OF_STATUS.get(op.status)
        if code is None:
            continue
        add(
            PlanDiagnostic(
                code=code,
                message=_message(code, tool_call_id=op.tool_call_id, tool_name=op.tool_name, reason=op_reason),
                event_id=op.call_runtime_event_id,
                tool_call_id=op.tool_call_id,
                tool_name=op.tool_name,
            )
        )

    # 3. one per resolver issue
    for issue in recovery.issues:
        issue_code = issue.code
        event_id = issue.event_id
        if issue_code in _OWN_CODE_ISSUES:
            add(PlanDiagnostic(code=issue_code, message=_message(issue_code, event_id=event_id), event_id=event_id))
        else:
            add(
                PlanDiagnostic(
                    code=TOOL_LEDGER_CORRUPTION,
                    message=_message(TOOL_LEDGER_CORRUPTION, event_id=event_id, issue_code=issue_code),
                    event_id=event_id,
                    detail={"issueCode": issue_code},
                )
            )

    # 4. corruption decisions without a (non-empty) call event id; orphan responses are
    # reported by item 6. eventId: the dispatch id, else the response id.
    for decision in recovery.decisions:
        if decision.status != "corruption" or decision.call_runtime_event_id or decision.reason == "orphan_response":
            continue
        event_id = decision.dispatch_runtime_event_id
        if event_id is None:
            event_id = decision.response_runtime_event_id
        add(
            PlanDiagnostic(
                code=TOOL_RECOVERY_CORRUPTION,
                message=_message(TOOL_RECOVERY_CORRUPTION, tool_call_id=decision.tool_call_id,
                                 tool_name=decision.tool_name, reason=decision.reason),
                event_id=event_id,
                tool_call_id=decision.tool_call_id,
                tool_name=decision.tool_name or None,
            )
        )

    # 5. indeterminate decisions whose (non-empty) call event id's last event is hidden
    for decision in recovery.decisions:
        call_id = decision.call_runtime_event_id
        if decision.status != "indeterminate" or not call_id or not hidden.get(call_id):
            continue
        add(
            PlanDiagnostic(
                code=PENDING_TOOL_RESULT,
                message=_message(PENDING_TOOL_RESULT, tool_call_id=decision.tool_call_id,
                                 tool_name=decision.tool_name, hidden=True),
                event_id=call_id,
                tool_call_id=decision.tool_call_id,
                tool_name=decision.tool_name or None,
            )
        )

    # 6. visible committed responses: "the" operation of a response is the *last* operation
    # with its provider call id (whatever the invocation), as in upstream's operationsById.
    if responses:
        by_call_id: dict[Any, ToolOperation] = {}
        for op in operations:
            by_call_id[op.tool_call_id] = op
        for event, content in responses:
            call_id = _get(content, "id")
            name = _get(content, "name")
            op = by_call_id.get(call_id) if call_id is None or type(call_id) is str else None
            event_id = _get(event, "id")
            event_id = event_id if type(event_id) is str else None
            if op is None:
                add(
                    PlanDiagnostic(
                        code=UNMATCHED_TOOL_RESULT,
                        message=_message(UNMATCHED_TOOL_RESULT, event_id=event_id),
                        event_id=event_id,
                        tool_call_id=call_id if type(call_id) is str else None,
                        tool_name=name if type(name) is str else None,
                    )
                )
            elif not (type(name) is str and name == op.tool_name or name is None and op.tool_name is None
                      and "name" not in content):
                add(
                    PlanDiagnostic(
                        code=TOOL_NAME_MISMATCH,
                        message=_message(TOOL_NAME_MISMATCH, event_id=event_id, tool_name=name,
                                         call_tool_name=op.tool_name),
                        event_id=event_id,
                        tool_call_id=call_id if type(call_id) is str else None,
                        tool_name=name if type(name) is str else None,
                        detail=_name_detail(op.tool_name, content),
                    )
                )

    return diagnostics


def _name_detail(call_tool_name: str | None, content: dict[str, Any]) -> dict[str, Any]:
    """``{callToolName, responseToolName}``, each absent when the name is (upstream builds the
    object literally, so an ``undefined`` name drops its key)."""
    detail: dict[str, Any] = {}
    if call_tool_name is not None:
        detail["callToolName"] = call_tool_name
    if "name" in content:
        detail["responseToolName"] = content["name"]
    return detail
