"""The diagnostics step of the Phase 0 ResumePlan (spec 20 §1.3 items 1-6).

Why a module of its own: once the prefix is projected into operations (§1.1), listing what is
wrong with it is one self-contained step with a fixed order (the first-seen reasons of §1.4
follow that order), and it is the longest part of the planner.
"""

from __future__ import annotations

from typing import Any

from maka_ref._ledger.results import Decision, Resolution
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
from maka_ref._plan.resume_inputs import _content_of, _get, _high_water_mismatch, _str_or_none
from maka_ref._plan.resume_messages import _message
from maka_ref._plan.resume_types import PlanDiagnostic, ToolOperation

__all__: list[str] = []  # private helper of the planner, imported by name


def _collect_diagnostics(
    expected_runtime_event_high_water: Any,
    high_water: int,
    recovery: Resolution,
    operations: list[ToolOperation],
    operation_reasons: list[str],
    operation_calls: list[dict[str, Any]],
    operation_by_call_id: dict[str, ToolOperation],
    hidden_call_decisions: list[tuple[Decision, dict[str, Any] | None]],
    callless_decisions: list[Decision],
    responses: list[Any],
) -> tuple[list[PlanDiagnostic], bool]:
    """The §1.3 diagnostics of a projected prefix, in the spec's order, and ``hidden_pending``.

    The arguments are what ``build_resume_plan`` computed before this step (the scan and the
    §1.1 projection); ``hidden_pending`` is True iff an indeterminate hidden (nested) call was
    found (item 5), which §1.5 counts as needing verification.
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
                message=_message(
                    code,
                    tool_call_id=op.tool_call_id,
                    tool_name=op.tool_name,
                    reason=op_reason,
                ),
                event_id=op.call_runtime_event_id,
                tool_call_id=op.tool_call_id,
                tool_name=op.tool_name or None,
            )
        )

    # 3. one per resolver issue
    for issue in recovery.issues:
        issue_code = issue.code
        event_id = _str_or_none(issue.event_id)  # "" = an entry without an id
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

    # 4. corruption decisions without a call event (orphan responses are reported by item 6)
    for decision in callless_decisions:
        if decision.status != "corruption" or decision.reason == "orphan_response":
            continue
        event_id = _str_or_none(decision.dispatch_runtime_event_id) or _str_or_none(decision.response_runtime_event_id)
        add(
            PlanDiagnostic(
                code=TOOL_RECOVERY_CORRUPTION,
                message=_message(
                    TOOL_RECOVERY_CORRUPTION,
                    tool_call_id=decision.tool_call_id,
                    tool_name=decision.tool_name,
                    reason=decision.reason,
                ),
                event_id=event_id,
                tool_call_id=_str_or_none(decision.tool_call_id),
                tool_name=_str_or_none(decision.tool_name),
            )
        )

    # 5. indeterminate hidden (nested) calls: still unknown effects, still blocking
    hidden_pending = False
    for decision, call in hidden_call_decisions:
        if decision.status != "indeterminate":
            continue
        hidden_pending = True
        content = _content_of(call)
        tool_name = _str_or_none(_get(content, "name")) if content is not None else None
        tool_name = tool_name or _str_or_none(decision.tool_name)
        add(
            PlanDiagnostic(
                code=PENDING_TOOL_RESULT,
                message=_message(PENDING_TOOL_RESULT, tool_call_id=decision.tool_call_id, tool_name=tool_name, hidden=True),
                event_id=_str_or_none(decision.call_runtime_event_id),
                tool_call_id=_str_or_none(decision.tool_call_id),
                tool_name=tool_name,
            )
        )

    # 6. visible committed responses without an operation, or naming another tool. "The"
    # operation of a response is the one with its toolCallId; when a provider reused a call id
    # across invocations (several operations share it) the one whose call is in the response's
    # invocation is preferred, as tool calls are keyed by (invocationId, call id) — spec 10 §4.3.
    if responses:
        # Only a reused call id needs the (invocationId, call id) map; otherwise both lookups
        # find the same operation.
        operation_by_key: dict[tuple[str, str], ToolOperation] | None = None
        if len(operation_by_call_id) != len(operations):
            operation_by_key = {}
            for op, call in zip(operations, operation_calls):
                invocation_id = _get(call, "invocationId")
                if type(invocation_id) is str:
                    operation_by_key.setdefault((invocation_id, op.tool_call_id), op)
        for event, response_call_id, response_name in responses:
            op = None
            if type(response_call_id) is str:
                if operation_by_key is not None:
                    invocation_id = _get(event, "invocationId")
                    if type(invocation_id) is str:
                        op = operation_by_key.get((invocation_id, response_call_id))
                if op is None:
                    op = operation_by_call_id.get(response_call_id)
            if op is not None and type(response_name) is str and response_name == op.tool_name:
                continue  # the response matches its operation
            event_id = _str_or_none(_get(event, "id"))
            if op is None:
                add(
                    PlanDiagnostic(
                        code=UNMATCHED_TOOL_RESULT,
                        message=_message(UNMATCHED_TOOL_RESULT, event_id=event_id),
                        event_id=event_id,
                        tool_call_id=_str_or_none(response_call_id),
                        tool_name=_str_or_none(response_name),
                    )
                )
            else:
                add(
                    PlanDiagnostic(
                        code=TOOL_NAME_MISMATCH,
                        message=_message(
                            TOOL_NAME_MISMATCH,
                            event_id=event_id,
                            tool_name=response_name,
                            call_tool_name=op.tool_name,
                        ),
                        event_id=event_id,
                        tool_call_id=op.tool_call_id,
                        tool_name=_str_or_none(response_name),
                        detail={"callToolName": op.tool_name, "responseToolName": response_name},
                    )
                )

    return diagnostics, hidden_pending
