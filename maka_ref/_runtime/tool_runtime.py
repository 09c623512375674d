"""``ToolRuntime``: one provider tool call through preflight → T1 → implementation → T2.

Why this order (spec 00 "Normal tool execution", spec 30 §6.5): T1 durably records "every
pre-execution guard passed; from now on it is unsafe to assume the implementation did not
run" *before* the implementation runs, and T2 records its outcome *before* the model may see
it. Hence:

* a **preflight refusal** (arguments not an object, unknown tool, arguments not matching the
  tool's schema, a path not confined to the workspace) never reaches T1: an *unbound* call and
  a synthetic ``isError`` response are committed together on the generic lane (one
  all-or-nothing batch, no ``refs.operationId``, no dispatch) — the resolver's
  ``pre_t1_synthetic``;
* if **T1** raises or returns ``created: false`` the implementation runs **zero** times and
  :class:`ToolBoundaryError` (``t1_failed`` / ``t1_already_claimed``) stops the turn;
* the implementation's first act is the effect-log line (``.maka-effects.jsonl``, fsynced);
  an expected tool failure (or any exception of the implementation) becomes an ``isError``
  result that goes through T2 like a success;
* if **T2** raises, the implementation ran once but its result is never returned, so the
  caller can never hand it to the provider (``t2_failed``).

Under the ``legacy`` protocol the same loop writes the call and the response through generic
appends (unbound, no dispatch, no journal) — a pre-T1 producer — so both protocols can be
crash-tested. The effect log still records the derived operation id, which then exists only
there and in the summary.

Failpoints P0–P5 sit in this module (P3 inside the tools); see :mod:`maka_ref._runtime.livepoints`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from maka_ref._codec.argshash import canonical_args_hash
from maka_ref._codec.frozen import thaw
from maka_ref._errors import MakaRefError
from maka_ref._runtime import events as ev
from maka_ref._runtime.effects import EffectLog
from maka_ref._runtime.errors import ToolBoundaryError
from maka_ref._runtime.file_evidence import build_evidence
from maka_ref._runtime.ids import RunIds
from maka_ref._runtime.paths import ConfinementError
from maka_ref._runtime.provider import T1_PROTOCOL, ToolCallRequest
from maka_ref._runtime.tools import TOOLS, Tool, ToolContext, ToolError
from maka_ref._store.engine.failpoints import failpoint
from maka_ref._store.runtime_store import RuntimeStore, T1Input, T2Input

__all__ = [
    "BOUNDARY_LEGACY",
    "BOUNDARY_PRE_T1",
    "BOUNDARY_T1_T2",
    "Clock",
    "ToolCallOutcome",
    "ToolRuntime",
]

BOUNDARY_T1_T2: Final = "t1_t2"
BOUNDARY_LEGACY: Final = "legacy"
BOUNDARY_PRE_T1: Final = "pre_t1_synthetic"

Clock = Callable[[], int]


@dataclass(frozen=True, slots=True)
class ToolCallOutcome:
    """A committed tool call: the events as committed and the result that may be handed on."""

    call_id: str
    name: str
    operation_id: str
    boundary: str
    call_event: Mapping[str, Any]
    dispatch_event: Mapping[str, Any] | None
    response_event: Mapping[str, Any]
    result: Any
    is_error: bool
    implementation_started: bool

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "toolCallId": self.call_id,
            "name": self.name,
            "operationId": self.operation_id,
            "boundary": self.boundary,
            "callEventId": self.call_event["id"],
        }
        if self.dispatch_event is not None:
            out["dispatchEventId"] = self.dispatch_event["id"]
        out["responseEventId"] = self.response_event["id"]
        out["isError"] = self.is_error
        out["implementationStarted"] = self.implementation_started
        out["result"] = thaw(self.result)
        return out


@dataclass(frozen=True, slots=True)
class _Refusal:
    code: str
    message: str


class ToolRuntime:
    """Executes tool calls of one run against one store and one workspace."""

    def __init__(
        self,
        store: RuntimeStore,
        root: Path,
        ids: RunIds,
        protocol: str,
        clock: Clock,
        *,
        tools: Mapping[str, Tool] = TOOLS,
        effect_log: EffectLog | None = None,
        workspace_identity: str | None = None,
    ) -> None:
        self.store = store
        self.root = root
        self.ids = ids
        self.protocol = protocol
        self.clock = clock
        self.tools = tools
        self.effect_log = effect_log if effect_log is not None else EffectLog(root)
        self._preflight_hash: tuple[ToolCallRequest, str] | None = None
        #: The run's workspace identity; None records no Phase 3 evidence (spec-phase3 §1.1).
        self.workspace_identity = workspace_identity

    # ----------------------------------------------------------------------- entry point

    def execute(self, step_index: int, call: ToolCallRequest) -> ToolCallOutcome:
        """Run one call to a committed outcome, or raise ToolBoundaryError (see module doc)."""
        operation_id = self.ids.operation_id(call.id)
        tool, refusal, args_hash = self._preflight(call)
        if refusal is not None:
            return self._commit_refusal(step_index, call, operation_id, refusal)
        assert tool is not None and args_hash is not None
        failpoint("P0")  # spec 20 §2 P0: before tool preparation (T1)
        self._preflight_hash = (call, args_hash)
        if self.protocol == T1_PROTOCOL:
            return self._execute_t1(step_index, call, tool, operation_id)
        return self._execute_legacy(step_index, call, tool, operation_id)

    def _args_hash(self, call: ToolCallRequest) -> str:
        """The canonical args hash of ``call``: the one preflight just computed for this very
        request object (handed on by ``execute``; the lanes keep their four-argument signature),
        else computed here. The store recomputes it from the call event anyway (spec 30 §2.3)."""
        memo, self._preflight_hash = self._preflight_hash, None
        if memo is not None and memo[0] is call:
            return memo[1]
        return canonical_args_hash(call.name, call.args)

    # ----------------------------------------------------------------------- preflight

    def _preflight(self, call: ToolCallRequest) -> tuple[Tool | None, _Refusal | None, str | None]:
        """Arguments, availability, confinement — in that order; the first refusal wins.

        Returns ``(tool, refusal, args_hash)``; the canonical args hash computed here (it also
        proves the arguments are strict JSON) is the one T1 / the effect log carry, so the loop
        hashes each call once (the store still recomputes it from the call event, spec 30 §2.3)."""
        if not isinstance(call.args, dict):
            return None, _Refusal("invalid_tool_arguments", f"Tool {call.name} did not run: arguments must be a JSON object"), None
        tool = self.tools.get(call.name)
        if tool is None:
            return None, _Refusal("tool_not_available", f"Tool {call.name} did not run: no such tool is available"), None
        try:
            args_hash = canonical_args_hash(call.name, call.args)
            tool.preflight(self.root, call.args)
        except (ToolError, ConfinementError) as exc:
            return tool, _Refusal(exc.code, f"Tool {call.name} did not run: {exc.message}"), None
        except MakaRefError as exc:  # ArgsHashError: not strict JSON
            return tool, _Refusal("invalid_tool_arguments", f"Tool {call.name} did not run: {exc.message}"), None
        return tool, None, args_hash

    def _commit_refusal(
        self, step_index: int, call: ToolCallRequest, operation_id: str, refusal: _Refusal
    ) -> ToolCallOutcome:
        """Unbound call + synthetic error response, one generic batch (spec 10 §1.6)."""
        ts = self.clock()
        result = {"code": refusal.code, "message": refusal.message}
        call_ev = ev.call_event(self.ids, ts, step_index, operation_id, call.id, call.name, call.args, bound=False)
        response_ev = ev.response_event(self.ids, ts, operation_id, call.id, call.name, result, True, bound=False)
        try:
            self.store.import_batch(self.ids.session_id, self.ids.run_id, [call_ev, response_ev])
        except Exception as exc:  # noqa: BLE001 - any failure stops the turn with a stable code
            raise ToolBoundaryError(
                "refusal_append_failed", f"Committing the refusal of tool call {call.id} failed: {exc}",
                operation_id=operation_id,
            ) from exc
        return ToolCallOutcome(
            call.id, call.name, operation_id, BOUNDARY_PRE_T1, ev.frozen_event(call_ev), None, ev.frozen_event(response_ev),
            result, True, False,
        )

    # ----------------------------------------------------------------------- T1 / T2 lane

    def _execute_t1(self, step_index: int, call: ToolCallRequest, tool: Tool, operation_id: str) -> ToolCallOutcome:
        args_hash = self._args_hash(call)
        ts = self.clock()
        call_ev = ev.call_event(self.ids, ts, step_index, operation_id, call.id, call.name, call.args, bound=True)
        evidence = self._evidence(call, operation_id, args_hash, call_ev)
        recovery_mode = "reconcile" if evidence is not None else tool.recovery_mode  # spec-phase3 §1.1 item 2
        dispatch_ev = ev.dispatch_event(self.ids, ts, operation_id, call.id, call.name, args_hash, recovery_mode)
        t1 = T1Input(
            operation_id=operation_id,
            journal_event_id=f"{operation_id}_prepared",
            runtime_event=call_ev,
            dispatch_runtime_event=dispatch_ev,
            provider_tool_call_id=call.id,
            tool_name=call.name,
            canonical_args_hash=args_hash,
            recovery_mode=recovery_mode,
            committed_at=ts,
            evidence=evidence,
        )
        try:
            committed = self.store.commit_tool_prepared(t1)
        except Exception as exc:  # noqa: BLE001 - T1 failed: the implementation must run zero times
            raise ToolBoundaryError(
                "t1_failed", f"T1 commitToolPrepared failed for {operation_id}: {exc}", operation_id=operation_id
            ) from exc
        if not committed.created:
            raise ToolBoundaryError(
                "t1_already_claimed", f"Tool operation {operation_id} was already claimed", operation_id=operation_id
            )
        failpoint("P1")  # T1 committed: call, dispatch and prepared journal together
        result, is_error, started = self._run_implementation(tool, call, operation_id, args_hash, evidence)
        failpoint("P4")  # side effect done, T2 not committed
        response_ev = ev.response_event(self.ids, self.clock(), operation_id, call.id, call.name, result, is_error, bound=True)
        t2 = T2Input(
            operation_id=operation_id,
            journal_event_id=f"{operation_id}_outcome",
            runtime_event=response_ev,
            committed_at=response_ev["ts"],
        )
        try:
            self.store.commit_tool_outcome(t2)
        except Exception as exc:  # noqa: BLE001 - T2 failed: the result is never handed on
            raise ToolBoundaryError(
                "t2_failed", f"T2 commitToolOutcome failed for {operation_id}: {exc}", operation_id=operation_id
            ) from exc
        failpoint("P5")  # T2 committed: response and outcome journal together
        return ToolCallOutcome(
            call.id, call.name, operation_id, BOUNDARY_T1_T2, ev.frozen_event(call_ev), ev.frozen_event(dispatch_ev),
            ev.frozen_event(response_ev), result, is_error, started,
        )

    # ----------------------------------------------------------------------- legacy lane

    def _execute_legacy(self, step_index: int, call: ToolCallRequest, tool: Tool, operation_id: str) -> ToolCallOutcome:
        args_hash = self._args_hash(call)
        call_ev = ev.call_event(self.ids, self.clock(), step_index, operation_id, call.id, call.name, call.args, bound=False)
        try:
            self.store.append(call_ev)
        except Exception as exc:  # noqa: BLE001
            raise ToolBoundaryError(
                "legacy_call_append_failed", f"Appending call {call.id} failed: {exc}", operation_id=operation_id
            ) from exc
        failpoint("P1")  # function_call committed (legacy: no prepared journal exists)
        result, is_error, started = self._run_implementation(tool, call, operation_id, args_hash)
        failpoint("P4")
        response_ev = ev.response_event(self.ids, self.clock(), operation_id, call.id, call.name, result, is_error, bound=False)
        try:
            self.store.append(response_ev)
        except Exception as exc:  # noqa: BLE001
            raise ToolBoundaryError(
                "legacy_response_append_failed", f"Appending the response of {call.id} failed: {exc}",
                operation_id=operation_id,
            ) from exc
        failpoint("P5")
        return ToolCallOutcome(
            call.id, call.name, operation_id, BOUNDARY_LEGACY, ev.frozen_event(call_ev), None, ev.frozen_event(response_ev),
            result, is_error, started,
        )

    # ----------------------------------------------------------------------- implementation

    def _evidence(self, call: ToolCallRequest, operation_id: str, args_hash: str, call_ev: Mapping[str, Any]) -> Any:
        """Phase 3 evidence for this call (spec-phase3 §1.1), computed after preflight and before
        T1 by reading the target; None when the run has no workspace identity or the call gets
        none (:func:`~maka_ref._runtime.file_evidence.build_evidence`)."""
        if self.workspace_identity is None:
            return None
        identity = {
            "operationId": operation_id, "sessionId": self.ids.session_id, "invocationId": self.ids.invocation_id,
            "runId": self.ids.run_id, "turnId": self.ids.turn_id, "providerToolCallId": call.id,
            "callEventId": call_ev["id"], "dispatchEventId": f"{operation_id}_dispatch",  # the id ev.dispatch_event gives it
            "canonicalArgsHash": args_hash,
        }
        return build_evidence(str(self.root), call.name, call.args, identity=identity,
                              workspace_identity=self.workspace_identity)

    def _run_implementation(
        self, tool: Tool, call: ToolCallRequest, operation_id: str, args_hash: str, evidence: Any = None
    ) -> tuple[Any, bool, bool]:
        """``(result, is_error, started)``: effect-log line first, then the tool itself."""
        failpoint("P2")  # prepared journal committed, implementation not started
        try:
            self.effect_log.record_start(operation_id, call.name, args_hash)
        except OSError as exc:  # no durable start record → the side effect must not begin
            message = f"Tool {call.name} did not start: effect log unavailable: {exc.strerror or exc}"
            return {"code": "effect_log_unavailable", "message": message}, True, False
        try:
            value = tool.run(ToolContext(self.root, operation_id, evidence), call.args)
        except (ToolError, ConfinementError) as exc:
            return {"code": exc.code, "message": exc.message}, True, True
        except Exception as exc:  # noqa: BLE001 - a thrown tool error is a committed error outcome
            return {"code": "tool_crashed", "message": f"{type(exc).__name__}: {exc}"}, True, True
        return value, False, True
