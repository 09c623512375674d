"""``run_turn``: one turn of the live reference runtime, from header creation to terminal header.

Order (spec 00 "The answer first", spec 20 §4.1, §5.3):

1. load and validate the script (nothing is written when it is invalid);
2. resolve the workspace identity (creates ``.maka-workspace.json`` on first use) and open
   the stores: ``<workspace>/runtime.sqlite`` holds the RuntimeEvents and the AgentRun header;
3. **create the AgentRun header first** (status ``running``) — production creates the header
   before any RuntimeEvent append;
4. append the initial user event (with ``actions.runtimeProtocol`` only under
   ``t1_after_preflight_v1``);
5. loop: ask the provider for the next model step given the history handed on so far; a
   text-only step is committed as a model text event and ends the turn; a tool-calls step
   runs each call through :class:`~maka_ref._runtime.tool_runtime.ToolRuntime` and hands each
   committed call + response to the provider (appends them to its history);
6. finish: the terminal RuntimeEvent (``completed``, ``endInvocation: true``) is made durable
   through the store's terminal barrier **before** the header is updated to ``completed``
   (spec 20 §4.1), then the ``run_completed`` operational event is appended.

A failure after the header exists (T1/T2 failure, script exhausted, a store error) finishes
the run as ``failed`` the same way (terminal ``failed`` event with ``failureClass`` = the
error code, then the header), best effort, and is reported in the summary. Errors before the
header exists (bad script, bad workspace) raise.

Failpoints P6–P9 sit here (P0–P5 in ``tool_runtime``, P3 in ``tools``).
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from maka_ref._codec.frozen import FrozenDict
from maka_ref._errors import MakaRefError
from maka_ref._runtime import events as ev
from maka_ref._runtime.errors import ToolBoundaryError
from maka_ref._runtime.ids import RunIds, new_seed
from maka_ref._runtime.provider import Script, ScriptedProvider, load_script
from maka_ref._runtime.tool_runtime import Clock, ToolCallOutcome, ToolRuntime
from maka_ref._runtime.tools import TOOLS, Tool
from maka_ref._store.agent_runs.store import AgentRunStore
from maka_ref._store.engine.failpoints import failpoint
from maka_ref._store.runtime_store import RuntimeStore
from maka_ref._store.workspace.identity import resolve_workspace_identity

__all__ = [
    "BACKEND_KIND",
    "LLM_CONNECTION_SLUG",
    "MODEL_ID",
    "PERMISSION_MODE",
    "MillisecondClock",
    "RunSummary",
    "run_turn",
]

#: Header constants of a scripted run (``backendKind`` must be ``ai-sdk`` or ``fake``).
BACKEND_KIND = "fake"
LLM_CONNECTION_SLUG = "scripted"
MODEL_ID = "scripted-provider"
#: Tools run without asking: there is no permission prompt in the reference loop.
PERMISSION_MODE = "bypass"


class MillisecondClock:
    """Unix milliseconds, never decreasing within one process (event ``ts`` and header times)."""

    def __init__(self) -> None:
        self._last = 0
        self._lock = threading.Lock()

    def __call__(self) -> int:
        now = time.time_ns() // 1_000_000
        with self._lock:
            self._last = max(self._last, now)
            return self._last


@dataclass(frozen=True, slots=True)
class RunSummary:
    """What ``maka-ref run`` prints: ids, status, tool calls, events."""

    session_id: str
    run_id: str
    invocation_id: str
    turn_id: str
    protocol: str
    status: str
    header_status: str | None
    workspace: str
    workspace_identity: str
    tool_calls: tuple[ToolCallOutcome, ...]
    event_ids: tuple[str, ...]
    final_text: str | None = None
    error: Mapping[str, str] | None = None
    finalize_error: Mapping[str, str] | None = None
    provider_steps: int = 0

    @property
    def event_count(self) -> int:
        return len(self.event_ids)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "sessionId": self.session_id,
            "runId": self.run_id,
            "invocationId": self.invocation_id,
            "turnId": self.turn_id,
            "protocol": self.protocol,
            "status": self.status,
            "headerStatus": self.header_status,
            "workspace": self.workspace,
            "workspaceIdentity": self.workspace_identity,
            "providerSteps": self.provider_steps,
            "toolCalls": [outcome.to_json() for outcome in self.tool_calls],
            "eventCount": self.event_count,
            "eventIds": list(self.event_ids),
        }
        if self.final_text is not None:
            out["finalText"] = self.final_text
        if self.error is not None:
            out["error"] = dict(self.error)
        if self.finalize_error is not None:
            out["finalizeError"] = dict(self.finalize_error)
        return out


def _error_json(exc: BaseException) -> dict[str, str]:
    if isinstance(exc, ToolBoundaryError) and exc.operation_id is not None:
        return {"code": exc.code, "message": exc.message, "operationId": exc.operation_id}
    if isinstance(exc, MakaRefError):
        return {"code": exc.code, "message": exc.message}
    return {"code": "internal_error", "message": f"{type(exc).__name__}: {exc}"}


class _Turn:
    """The mutable state of one turn (kept out of ``run_turn`` so each phase is one method)."""

    def __init__(
        self,
        script: Script,
        root: Path,
        identity: str,
        ids: RunIds,
        store: RuntimeStore,
        runs: AgentRunStore,
        clock: Clock,
        provider: ScriptedProvider,
        tools: Mapping[str, Tool],
        effect_log: Any = None,
    ) -> None:
        self.script = script
        self.root = root
        self.identity = identity
        self.ids = ids
        self.store = store
        self.runs = runs
        self.clock = clock
        self.provider = provider
        # ``effect_log``: the store's (beside ``runtime.sqlite``) when the tools act elsewhere — a
        # continuation in an isolated restore's destination (docs/spec-phase4.md §7.2)
        self.tool_runtime = ToolRuntime(store, root, ids, script.protocol, clock, tools=tools, workspace_identity=identity,
                                        effect_log=effect_log)
        self.history: list[Mapping[str, Any]] = []
        self.outcomes: list[ToolCallOutcome] = []
        self.final_text: str | None = None
        self.provider_steps = 0
        self.op_seq = 0
        self.terminal_committed = False

    def create_header(self) -> None:
        now = self.clock()
        self.runs.create_run(
            {
                "runId": self.ids.run_id,
                "sessionId": self.ids.session_id,
                "turnId": self.ids.turn_id,
                "invocationId": self.ids.invocation_id,
                "status": "running",
                "backendKind": BACKEND_KIND,
                "llmConnectionSlug": LLM_CONNECTION_SLUG,
                "modelId": MODEL_ID,
                "cwd": str(self.root),
                "permissionMode": PERMISSION_MODE,
                "workspaceIdentity": self.identity,
                "toolMode": "direct",
                "createdAt": now,
                "updatedAt": now,
            }
        )

    def run_loop(self) -> None:
        user = ev.user_event(self.ids, self.clock(), self.script.user_message, self.script.protocol)
        self.store.append(user)
        self.history.append(FrozenDict(user))
        self.provider_loop()

    def provider_loop(self) -> None:
        """The provider/tool loop over ``self.history`` (hook: a Phase 1 continuation,
        ``maka_ref._continuation``, seeds the history with the replayed source context and
        the continuation-start instead of a user event, then calls this)."""
        results_handed_on = False
        while True:
            if results_handed_on:
                failpoint("P7")  # results handed on, next provider step not started
            step = self.provider.next_step(self.history)
            self.provider_steps += 1
            if step.ends_turn:
                assert step.text is not None
                text = ev.model_text_event(self.ids, self.clock(), step.index, step.text)
                self.store.append(text)
                self.history.append(FrozenDict(text))
                self.final_text = step.text
                return
            for call in step.tool_calls:
                outcome = self.tool_runtime.execute(step.index, call)
                self.outcomes.append(outcome)
                failpoint("P6")  # outcome committed, result not handed to the provider
                self.history.append(outcome.call_event)
                self.history.append(outcome.response_event)
            results_handed_on = True

    def drive(self, loop: Callable[[], None]) -> tuple[str, Mapping[str, str] | None, Mapping[str, str] | None]:
        """Run ``loop``, then seal the run (terminal event before header) whatever happened.

        Returns ``(status, error, finalize_error)``. A store/runtime error ends the run
        ``failed``; any other exception also ends it ``failed`` and is then re-raised. A
        failure while sealing is reported, not raised: startup repair owns the rest.
        """
        status, error, finalize_error = "completed", None, None
        unexpected: BaseException | None = None
        try:
            loop()
        except MakaRefError as exc:
            status, error = "failed", _error_json(exc)
        except Exception as exc:  # noqa: BLE001 - finish the run as failed, then re-raise
            status, error, unexpected = "failed", _error_json(exc), exc
        try:
            self.finalize(status, error)
        except Exception as exc:  # noqa: BLE001 - reported; startup repair owns the rest
            finalize_error = _error_json(exc)
            if not self.terminal_committed:  # no terminal fact: the run did not complete
                status = "failed"
        if unexpected is not None:
            raise unexpected
        return status, error, finalize_error

    def finalize(self, status: str, error: Mapping[str, str] | None) -> None:
        """Terminal event (barrier) before the terminal header, then the operational event."""
        failure_class = error["code"] if error is not None else None
        message = error["message"] if error is not None else None
        terminal = ev.terminal_event(self.ids, self.clock(), status, failure_class=failure_class, message=message)
        failpoint("P8")  # before the terminal RuntimeEvent commit
        self.store.ensure_terminal_durable(terminal)
        self.terminal_committed = True
        failpoint("P9")  # terminal event durable, terminal header not yet
        ts = terminal["ts"]
        patch: dict[str, Any] = {"status": status, "updatedAt": ts, "completedAt": ts}
        if status == "failed":
            patch["failureClass"] = failure_class
            patch["failureMessage"] = (message or "")[:2000]
        self.runs.update_run(self.ids.session_id, self.ids.run_id, patch)
        event_type = "run_completed" if status == "completed" else "run_failed"
        data: dict[str, Any] = {"terminalEventId": terminal["id"]}
        if failure_class is not None:
            data["failureClass"] = failure_class
        self.runs.append_event(
            self.ids.session_id,
            self.ids.run_id,
            {
                "type": event_type,
                "id": self.ids.operational_event_id(self.op_seq, event_type),
                "runId": self.ids.run_id,
                "sessionId": self.ids.session_id,
                "turnId": self.ids.turn_id,
                "ts": ts,
                "data": data,
            },
        )
        self.op_seq += 1


def run_turn(
    workspace: str | os.PathLike[str],
    script: "Script | Mapping[str, Any] | str | os.PathLike[str]",
    *,
    seed: str | None = None,
    session_id: str | None = None,
    clock: Clock | None = None,
    provider: ScriptedProvider | None = None,
    tools: Mapping[str, Tool] | None = None,
) -> RunSummary:
    """Run one scripted turn in ``workspace`` and return its summary (see the module docstring).

    ``seed`` fixes every id (default: a fresh ``uuid4`` hex, :mod:`maka_ref._runtime.ids`);
    ``provider`` lets tests observe what was handed on (it must wrap the same script).
    Raises :class:`~maka_ref._errors.MakaRefError` subclasses for errors before the run header
    exists; afterwards failures end the run as ``failed`` and are reported in the summary.
    """
    loaded = load_script(script)
    identity = resolve_workspace_identity(workspace)
    root = Path(identity.workspace_path)
    ids = RunIds.from_seed(seed if seed is not None else new_seed(), session_id)
    tick = clock if clock is not None else MillisecondClock()
    the_provider = provider if provider is not None else ScriptedProvider(loaded)
    store = RuntimeStore.open(root)
    try:
        runs = AgentRunStore.open(root)
        try:
            turn = _Turn(loaded, root, identity.identity, ids, store, runs, tick, the_provider, tools or TOOLS)
            turn.create_header()
            status, error, finalize_error = turn.drive(turn.run_loop)
            return _summary(turn, loaded, root, identity.identity, status, error, finalize_error)
        finally:
            runs.close()
    finally:
        store.close()


#: The summary lists the run's committed events by id, in ledger order (the order of
#: ``RuntimeStore.read_run_events``). Only the indexed ``event_id`` column is read: decoding
#: and re-validating every payload just to print its id cost ≈ 50 µs per tool call (issue 4).
_RUN_EVENT_IDS_SQL = (
    "SELECT event_id FROM runtime_events WHERE session_id = ? AND run_id = ? ORDER BY event_seq ASC, event_id ASC"
)


def _run_event_ids(store: RuntimeStore, session_id: str, run_id: str) -> tuple[str, ...]:
    with store.read() as conn:
        return tuple(row[0] for row in conn.execute(_RUN_EVENT_IDS_SQL, (session_id, run_id)))


def _summary(
    turn: _Turn,
    script: Script,
    root: Path,
    identity: str,
    status: str,
    error: Mapping[str, str] | None,
    finalize_error: Mapping[str, str] | None,
) -> RunSummary:
    ids = turn.ids
    event_ids = _run_event_ids(turn.store, ids.session_id, ids.run_id)
    header = turn.runs.read_run(ids.session_id, ids.run_id)
    return RunSummary(
        session_id=ids.session_id,
        run_id=ids.run_id,
        invocation_id=ids.invocation_id,
        turn_id=ids.turn_id,
        protocol=script.protocol,
        status=status,
        header_status=header["status"],
        workspace=str(root),
        workspace_identity=identity,
        tool_calls=tuple(turn.outcomes),
        event_ids=event_ids,
        final_text=turn.final_text,
        error=error,
        finalize_error=finalize_error,
        provider_steps=turn.provider_steps,
    )
