"""Helpers shared by the ``pause`` and ``race`` fault modes: the script, the oracles that read
the workspace back (effect log, projections, continuations of a boundary) and the wire steps.

Why here and not in the engine: the fault modes are written apart from the engine and must
not reach into it (``crashlab._lab.context``). These oracles use only the wire protocol
(``store.project``, ``store.open``) and the files the protocol names (``.maka-effects.jsonl``,
``ledgerFiles``); ``maka_ref`` is used only as the oracle for resolver decisions.
"""

from __future__ import annotations

import hashlib
import json
import os
import queue
import time
from pathlib import Path
from typing import Any, Mapping, Sequence

from crashlab._lab.effects import iter_effect_log, starts_by_operation
from crashlab._lab.oracles import operation_id_of

__all__ = [
    "CLAIM_STATE_CODES",
    "FaultNotApplicable",
    "LIVE_POINTS",
    "REVALIDATION_CODES",
    "StepFailed",
    "await_late_reply",
    "consistent_projection",
    "continuations_of",
    "double_starts",
    "effect_lines",
    "expect_ok",
    "unreached",
    "require",
    "script",
    "terminal_count",
    "wait_stopped",
]

#: The live tool-loop points a ``runtime.run_turn`` can reach (spec 20 §2).
LIVE_POINTS: tuple[str, ...] = tuple(f"P{n}" for n in range(10))

#: Spec 20 §3.9: the stable codes of ``RuntimeContinuationRevalidationError``.
REVALIDATION_CODES: frozenset[str] = frozenset((
    "continuation_claim_conflict", "target_run_conflict", "source_identity_changed", "source_terminal_changed",
    "source_cwd_changed", "source_high_water_changed", "source_ledger_identity_changed", "source_replay_changed",
    "workspace_identity_changed", "background_operation_started", "tool_catalog_changed",
    "workspace_checkpoint_changed",
))
#: Spec 20 §3.3 steps 6–8 / §3.5: the park reasons that say "this boundary is already claimed".
CLAIM_STATE_CODES: frozenset[str] = frozenset((
    "continuation_already_exists", "continuation_started_indeterminate", "continuation_claim_repair_required",
))

RUN_TIMEOUT = 30.0  # protocol §1.6: runtime.* may get longer deadlines than the default


class FaultNotApplicable(Exception):
    """The fault cannot run against this implementation or at this point: not a failure of the
    implementation (the engine should report it as ``not_claimed``; today it reports any
    exception of a fault mode as ``error``)."""

    outcome = "not_claimed"

    def __init__(self, message: str, *, missing: tuple[str, ...] = ()) -> None:
        super().__init__(message)
        self.message = message
        self.missing = missing


def unreached(ctx: Any, check_detail: str) -> None:
    """The armed point was never announced: the engine's signal is ``evidence["unreached"]``
    (outcome ``unreached``, never ``passed``); the failed ``point_reached`` check says why."""
    ctx.evidence["unreached"] = check_detail
    ctx.record("point_reached", False, check_detail)


class StepFailed(Exception):
    """A wire step the trial depends on failed: recorded as the failed check ``check``."""

    def __init__(self, check: str, detail: str) -> None:
        super().__init__(f"{check}: {detail}")
        self.check = check
        self.detail = detail


def script(protocol: str, seed: int) -> dict[str, Any]:
    """Write ``notes.txt``, Append to it, then say done: three provider steps, two tools.

    The first step's Write is where ``pause`` stops (P3 sits inside it); the later steps give
    a late writer something to commit after SIGCONT and a continuation something to run.
    """
    return {
        "userMessage": f"write the notes (seed {seed})",
        "protocol": protocol,
        "steps": [
            {"toolCalls": [{"id": "call-write", "name": "Write",
                            "args": {"path": "notes.txt", "content": f"first line {seed}\n"}}]},
            {"toolCalls": [{"id": "call-append", "name": "Append", "args": {"path": "notes.txt", "content": "more\n"}}]},
            {"text": "done"},
        ],
    }


def require(client: Any, capabilities: Sequence[str], fault: str) -> None:
    claimed = set(getattr(client.handshake, "capabilities", ()) or ())
    missing = tuple(c for c in capabilities if c not in claimed)
    if missing:
        raise FaultNotApplicable(f"the {fault} fault needs capabilities {', '.join(missing)}, not claimed",
                                 missing=missing)


def reply_code(reply: Any) -> str | None:
    return None if reply.ok else (reply.error or {}).get("code")


def expect_ok(reply: Any, check: str, what: str) -> Mapping[str, Any]:
    if not reply.ok:
        error = reply.error or {}
        raise StepFailed(check, f"{what} answered ok:false {error.get('code')!r}: {str(error.get('message'))[:300]}")
    return reply.result


# --------------------------------------------------------------------------- the late reply


def await_late_reply(client: Any, timeout: float) -> dict[str, Any]:
    """After ``action: "stop"`` and SIGCONT, wait for the response to the request that reached
    the point (protocol §4.4: the stopped implementation carries on and answers it).

    Returns ``{"kind": "reply", "ok", "result"|"error"}``, ``{"kind": "timeout"}``,
    ``{"kind": "exited", "partial"}`` or ``{"kind": "violation", "detail"}``.

    The client has no public call for this yet (after an announcement it only allows
    ``kill``/``close``), so this reads its line queue: one reader thread feeds it and nothing
    else consumes it while the session is ``at_failpoint``.
    """
    from crashlab._client import _messages as msgs
    from crashlab._client._lines import Eof, Flood

    request_id = client._next_id - 1
    try:
        item = client._stdout.items.get(timeout=timeout)
    except queue.Empty:
        return {"kind": "timeout"}
    if isinstance(item, Eof):
        return {"kind": "exited", "partial": msgs.preview(item.partial) if item.partial else ""}
    if isinstance(item, Flood):
        return {"kind": "violation", "detail": f"a line longer than the cap ({item.size} bytes read)"}
    try:
        message = msgs.parse_object(item.data)
    except ValueError as exc:
        return {"kind": "violation", "detail": f"{exc}: {msgs.preview(item.data)}"}
    problem = msgs.check_response(message, request_id)
    if problem is not None:
        return {"kind": "violation", "detail": f"{problem}: {msgs.preview(item.data)}"}
    out: dict[str, Any] = {"kind": "reply", "ok": message["ok"]}
    out["result" if message["ok"] else "error"] = message.get("result" if message["ok"] else "error")
    return out


def wait_stopped(pid: int, timeout: float) -> str:
    """Poll until ``pid`` is stopped (SIGSTOP); return its last psutil status."""
    import psutil

    deadline = time.monotonic() + timeout
    status = "unknown"
    while True:
        try:
            status = psutil.Process(pid).status()
        except psutil.Error:
            return "gone"
        if status in (psutil.STATUS_STOPPED, getattr(psutil, "STATUS_TRACING_STOP", "tracing-stop")):
            return "stopped"
        if time.monotonic() >= deadline:
            return status
        time.sleep(0.01)


# --------------------------------------------------------------------------- the effect log


def effect_lines(workspace: str | os.PathLike[str]) -> tuple[list[dict[str, Any]], list[str]]:
    """The effect log (protocol §4.3) and the problems with it (every malformed line)."""
    lines: list[dict[str, Any]] = []
    problems: list[str] = []
    for n, line, value, problem in iter_effect_log(Path(workspace)):
        if value is None:
            problems.append(f"line {n} {problem}: {line[:120]!r}")
        else:
            lines.append(value)
    return lines, problems


def double_starts(lines: Sequence[Mapping[str, Any]]) -> dict[str, int]:
    counts = starts_by_operation({"operationId": str(line["operationId"])} for line in lines)
    return {op: n for op, n in counts.items() if n > 1}


# --------------------------------------------------------------------------- projections


def terminal_count(run: Mapping[str, Any]) -> int:
    """Terminal RuntimeEvents of a run (``endInvocation`` with a status, spec 20 §4.3)."""
    count = 0
    for event in run.get("events") or ():
        actions = event.get("actions") if isinstance(event.get("actions"), Mapping) else {}
        if actions.get("endInvocation") is True and event.get("status") is not None and not event.get("partial"):
            count += 1
    return count


def continuations_of(projection: Mapping[str, Any], source_run_id: str,
                     high_water: int | None = None) -> list[Mapping[str, Any]]:
    """Runs whose header's ``continuationSource`` names ``source_run_id`` (and ``high_water``,
    when given): the continuations of that source boundary (spec 20 §3.3 step 8, §3.11)."""
    found = []
    for run in projection.get("runs", ()):
        source = (run.get("header") or {}).get("continuationSource")
        if not isinstance(source, Mapping) or source.get("sourceRunId") != source_run_id:
            continue
        if high_water is not None and source.get("sourceRuntimeEventHighWater") != high_water:
            continue
        found.append(run)
    return found


def _ledger_digests(client: Any, workspace: str) -> tuple[dict[str, str | None], str | None]:
    reply = client.call("store.open", {"workspace": workspace, "readOnly": True})
    if not reply.ok:
        return {}, f"store.open readOnly answered {reply_code(reply)!r}"
    out: dict[str, str | None] = {}
    for name in reply.result.get("ledgerFiles", []):
        path = Path(workspace) / name
        out[name] = hashlib.sha256(path.read_bytes()).hexdigest() if path.exists() else None
    return out, None


def _reference_resolution(events: Any) -> Any:
    from maka_ref import parse_json, resolve_recovery, thaw

    return json.loads(json.dumps(thaw(resolve_recovery(parse_json(json.dumps(events, ensure_ascii=True))).to_json())))


def consistent_projection(client: Any, workspace: str) -> tuple[dict[str, Any] | None, list[str]]:
    """``store.project`` twice in a process that never wrote the workspace: healthy, deep-equal,
    the ``ledgerFiles`` byte-identical around the reads (protocol §4.2.1), every run readable and
    its projected resolution equal to ``maka_ref.resolve_recovery`` of its events."""
    problems: list[str] = []
    before, problem = _ledger_digests(client, workspace)
    if problem:
        problems.append(problem)
    first = client.call("store.project", {"workspace": workspace})
    second = client.call("store.project", {"workspace": workspace})
    if not first.ok or not second.ok:
        return None, problems + [f"store.project answered {reply_code(first) or reply_code(second)!r}"]
    after, _ = _ledger_digests(client, workspace)
    projection = dict(first.result)
    if first.result != second.result:
        problems.append("two store.project calls of one process differ")
    if before != after:
        problems.append(f"reading changed the ledger files: {before} -> {after}")
    health = projection.get("health") or {}
    if health.get("status") != "healthy":
        problems.append(f"store health is {health}")
    for run in projection.get("runs", ()):
        rid = run.get("runId")
        if run.get("events") is None:
            problems.append(f"run {rid}: events unreadable (null)")
            continue
        try:
            expected = _reference_resolution(run["events"])
        except Exception as exc:  # noqa: BLE001 - the oracle must not crash the trial
            problems.append(f"run {rid}: maka_ref could not resolve the projected events: {exc}")
            continue
        if run.get("resolution") != expected:
            problems.append(f"run {rid}: projected resolution differs from maka_ref.resolve_recovery of its events")
    client.call("store.close", {"workspace": workspace})
    return projection, problems


def run_by_id(projection: Mapping[str, Any] | None, run_id: str | None) -> Mapping[str, Any] | None:
    for run in (projection or {}).get("runs", ()):
        if run.get("runId") == run_id:
            return run
    return None


def ops_of(run: Mapping[str, Any] | None) -> dict[str, str]:
    """``operationId`` → ``currentState`` of a projected run's tool operations."""
    return {str(op.get("operationId")): str(op.get("currentState")) for op in (run or {}).get("toolOperations") or ()}


def unanswered_operations(run: Mapping[str, Any] | None) -> set[str]:
    """Operations of a projected run whose call is committed and whose outcome is not: the
    indeterminate ones, on both lanes (T1 ``toolOperations`` not settled; legacy: a
    ``function_call`` event without a ``function_response`` of the same call id)."""
    out = {op for op, state in ops_of(run).items() if state not in ("outcome_committed", "recovery_completed")}
    events = (run or {}).get("events") or ()
    answered = {str((e.get("content") or {}).get("id")) for e in events
                if isinstance(e.get("content"), Mapping) and e["content"].get("kind") == "function_response"}
    for event in events:
        content = event.get("content") if isinstance(event.get("content"), Mapping) else {}
        if content.get("kind") == "function_call" and str(content.get("id")) not in answered:
            try:
                out.add(operation_id_of(event))
            except (KeyError, TypeError):
                continue
    return out
