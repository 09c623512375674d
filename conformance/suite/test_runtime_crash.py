"""Live crash clauses: a real SIGKILL at each live failpoint P0–P9 of spec 20 §2, under both
tool-boundary protocols, then a fresh process reads the files back.

One clause per ``(point, protocol)``: ``RUNTIME-CRASH-<Pk>-t1`` (``t1_after_preflight_v1``)
and ``RUNTIME-CRASH-<Pk>-legacy``. Each trial (spec 30 §6.3 adapted to a live loop, protocol
§2.3/§4.4):

1. a dedicated process arms ``Pk`` (``faults.arm``) and runs ``runtime.run_turn`` with the
   script "Write ``notes.txt``, then Append to it, then say done"; the implementation must
   announce ``{"failpoint": "Pk"}`` (a listed point that is never reached fails as
   *unreached*);
2. the harness SIGKILLs the process group and proves the kill was real (exit by SIGKILL, no
   survivor) — the spec's "finally marker" proof, done by the client;
3. **another** process (the worker's shared session, which has never touched this workspace)
   reopens the files: ``store.project`` twice gives deep-equal projections and leaves every
   ``ledgerFiles`` file byte-identical (spec 20 §2 ``[test]``, spec 30 §6.3 steps 6 and 8,
   protocol §4.2.1);
4. the committed prefix is one the spec allows at that point (:data:`ALLOWED_PREFIXES`,
   transcribed from spec 20 §2 and spec 30 §6.3 and the T1/T2 atomicity of spec 30 §2.3–§2.4);
   a non-terminal header (spec 20 §4.1: a header never claims an end without a terminal fact);
5. the resolver's decision and the Phase 0 plan match the spec tables (spec 20 §2 "Required
   decisions", spec 30 §6.3 step 7), both as the implementation projects them and as the
   reference ``maka_ref`` computes them on the events read back (and the two agree);
6. the effect-log oracle (protocol §4.3): no operation started twice, exactly the starts the
   point allows (none before the implementation, one from P3 on), each logged by the killed
   process; ``notes.txt`` holds what the point allows.

The helpers of this module are also used by ``test_recovery.py`` (they build the crashed
workspaces that repair and resume start from).
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any, Iterator, Mapping, Sequence

import pytest

import crashlab
from conformance.clauses import ClauseMismatch, clause, expect_equal, expect_ok
from maka_ref.testing.contract import plan_form

#: Short protocol names used in clause ids → the script's ``protocol`` value.
PROTOCOLS: Mapping[str, str] = {"t1": "t1_after_preflight_v1", "legacy": "legacy"}
#: The live points of the tool loop (spec 20 §2; P10 and P11 are outside the loop).
LIVE_POINTS: tuple[str, ...] = tuple(f"P{n}" for n in range(10))
#: Deadline for a request that runs a turn (protocol §1.6 allows longer ones for runtime.*).
RUN_TIMEOUT = 60.0

#: The crash script and its two effects live in :mod:`crashlab` (one copy for the lab and the
#: clauses): Write ``notes.txt``, Append to it, then a text step.
FIRST, MORE, FINAL_TEXT = crashlab.FIRST, crashlab.MORE, "done"
crash_script = crashlab.crash_script


# --------------------------------------------------------------------------- small helpers


def workspace_dir(tmp_path: Path, name: str = "ws") -> str:
    path = tmp_path / name
    path.mkdir()
    return os.path.realpath(path)


def failure(exc: Exception, what: str) -> ClauseMismatch:
    """A crashlab ``ProtocolFailure`` (or anything else) as a clause failure."""
    verdict = getattr(exc, "verdict", type(exc).__name__)
    return ClauseMismatch(f"{what}: {verdict}: {getattr(exc, 'message', exc)}",
                          evidence={"verdict": verdict, "stderrTail": getattr(exc, "stderr_tail", "")})


def call_on(client: Any, op: str, params: Mapping[str, Any], *, timeout: float | None = None) -> Any:
    """``client.call`` with protocol failures turned into clause failures."""
    from crashlab import ProtocolFailure

    try:
        return client.call(op, params, timeout=timeout)
    except ProtocolFailure as exc:
        raise failure(exc, f"the implementation misbehaved on {op}") from None


#: Event labels (user, call, dispatch, response, text, terminal, start, …): :func:`crashlab.label`.
label = crashlab.label


def labels(events: Sequence[Mapping[str, Any]]) -> list[str]:
    return [label(e) for e in events]


def effect_lines(workspace: str) -> list[dict[str, Any]]:
    """The effect log (protocol §4.3, read by :func:`crashlab.read_effects`); a malformed line
    fails the clause."""
    lines, problem = crashlab.read_effects(Path(workspace))
    if problem:
        raise ClauseMismatch(problem)
    return lines


starts_by_operation = crashlab.starts_by_operation


def expect_no_double_start(lines: Sequence[Mapping[str, Any]], where: str) -> None:
    twice = {op: n for op, n in starts_by_operation(lines).items() if n > 1}
    if twice:
        raise ClauseMismatch(f"{where}: an operation's side effect started more than once: {twice}",
                             evidence={"effectLog": list(lines)})


#: ``refs.operationId`` or spec 30 §0.3 (:func:`crashlab.operation_id_of`).
operation_id_of = crashlab.operation_id_of


def read_file(workspace: str, name: str) -> str | None:
    path = Path(workspace) / name
    return path.read_text(encoding="utf-8") if path.exists() else None


def plain(value: Any) -> Any:
    from maka_ref import thaw

    return json.loads(json.dumps(thaw(value)))


def wire(value: Any) -> Any:
    """``value`` as the reference reads JSON text (double semantics)."""
    from maka_ref import parse_json

    return parse_json(json.dumps(value, ensure_ascii=True))


def reference_resolution(events: Any) -> Any:
    from maka_ref import resolve_recovery

    return plain(resolve_recovery(wire(events)).to_json())


def reference_plan(events: Any) -> Any:
    from maka_ref import build_resume_plan

    return plain(build_resume_plan(wire(events)).to_json())


# --------------------------------------------------------------------------- store reads


def ledger_digests(maka: Any, workspace: str) -> dict[str, str | None]:
    """SHA-256 of every file ``store.open`` (read-only) names in ``ledgerFiles``."""
    reply = maka.call("store.open", {"workspace": workspace, "readOnly": True})
    result = expect_ok(reply, "store.open")
    out: dict[str, str | None] = {}
    for name in result.get("ledgerFiles", []):
        path = Path(workspace) / name
        out[name] = hashlib.sha256(path.read_bytes()).hexdigest() if path.exists() else None
    return out


def project(maka: Any, workspace: str) -> dict[str, Any]:
    projection = dict(expect_ok(maka.call("store.project", {"workspace": workspace}), "store.project"))
    health = projection.get("health", {})
    if health.get("status") != "healthy":
        raise ClauseMismatch(f"the store is not healthy after the kill: {health}", evidence={"projection": projection})
    return projection


def release(maka: Any, workspace: str) -> None:
    """Let the shared process release the workspace (protocol §4.2 ``store.close``)."""
    try:
        maka.call("store.close", {"workspace": workspace})
    except ClauseMismatch:
        pass


def stable_projection(maka: Any, workspace: str) -> dict[str, Any]:
    """``store.project`` twice in a process that never touched the workspace: deep-equal, and
    the ledger files byte-identical (spec 20 §2 [test]; protocol §4.2.1)."""
    before = ledger_digests(maka, workspace)
    first = project(maka, workspace)
    second = project(maka, workspace)
    expect_equal(first, second, what="the second store.project (projection must be deterministic)")
    after = ledger_digests(maka, workspace)
    expect_equal(before, after, what="ledger file digests around store.project (reading must not write)")
    return first


def source_run(projection: Mapping[str, Any], run_id: str | None = None) -> dict[str, Any]:
    runs = projection.get("runs", [])
    if run_id is not None:
        runs = [r for r in runs if r.get("runId") == run_id]
    if len(runs) != 1:
        raise ClauseMismatch(f"expected exactly one run{' ' + run_id if run_id else ''} in the projection, found {len(runs)}",
                             evidence={"runs": [r.get("runId") for r in projection.get("runs", [])]})
    run = runs[0]
    if run.get("events") is None:
        raise ClauseMismatch("the run's events are unreadable (null) after the kill", evidence={"run": run})
    return run


# --------------------------------------------------------------------------- the trial


def require_listed(maka: Any, point: str) -> None:
    """Protocol §3/§4.4 make no live point optional: a runtime that claims ``faults`` and
    ``runtime.loop`` must offer P0–P9, so an unlisted live point fails (it is not a skip)."""
    offered = tuple(maka.handshake.failpoints)
    if point not in offered:
        raise ClauseMismatch(f"failpoint {point} is not listed in the handshake; protocol §4.4 and spec 20 §2 make "
                             "every live point P0–P9 part of the crash contract of an implementation claiming faults",
                             evidence={"failpoints": list(offered)})


def crash_turn(maka: Any, workspace: str, script: Mapping[str, Any], point: str, *, hit: int = 1) -> Any:
    """Arm ``point`` in a dedicated process, run the turn until the announcement, SIGKILL it
    and prove the kill. Returns the :class:`crashlab.KillProof`."""
    from crashlab import ProtocolFailure

    require_listed(maka, point)
    with maka.fresh() as client:
        try:
            expect_ok(client.call("faults.arm", {"failpoint": point, "hit": hit}), "faults.arm")
            outcome = client.call_until_failpoint("runtime.run_turn", {"workspace": workspace, "script": dict(script)},
                                                  failpoint=point, timeout=RUN_TIMEOUT)
        except ProtocolFailure as exc:
            raise failure(exc, f"runtime.run_turn armed at {point}") from None
        if not isinstance(outcome, str):
            raise ClauseMismatch(f"unreached: failpoint {point} is listed in the handshake but runtime.run_turn "
                                 "answered without announcing it",
                                 evidence={"reply": {"ok": outcome.ok, "result": outcome.result, "error": outcome.error}})
        proof = client.kill()
    if not proof.killed_by_sigkill or proof.survivors:
        raise ClauseMismatch(f"the kill at {point} was not a real SIGKILL of the whole tree",
                             evidence={"returncode": proof.returncode, "survivors": list(proof.survivors)})
    return proof


# --------------------------------------------------------------------------- the spec tables

def allowed_prefixes(point: str, short: str) -> list[list[str]]:
    """Committed prefixes (event labels) ``point`` allows under the protocol ``short``: the
    crash lab's catalogue (``crashlab/catalogue.json``, transcribed from spec 20 §2 and spec 30
    §6.3 with the T1/T2 atomicity of spec 30 §2.3–§2.4), so the clauses and the lab share one
    table."""
    return [list(state["labels"]) for state in crashlab.crash_point(point).allowed(f"live-{short}")]


def check_prefix(point: str, short: str, run: Mapping[str, Any]) -> list[str]:
    found = labels(run["events"])
    allowed = allowed_prefixes(point, short)
    if found not in allowed:
        raise ClauseMismatch(f"after a kill at {point} ({PROTOCOLS[short]}) the committed prefix {found} is not one "
                             f"spec 20 §2 allows: {allowed}",
                             evidence={"eventIds": [e.get("id") for e in run["events"]]})
    if short == "t1" and not (run["events"][0].get("actions") or {}).get("runtimeProtocol"):
        raise ClauseMismatch("the first event of a t1_after_preflight_v1 run carries no runtimeProtocol marker",
                             evidence={"event": run["events"][0]})
    if short == "legacy" and any(l == "dispatch" for l in found):
        raise ClauseMismatch("a legacy run committed a toolDispatch", evidence={"labels": found})
    header = run.get("header") or {}
    terminal_statuses = {"completed", "failed", "cancelled"}
    if header.get("status") in terminal_statuses and "terminal" not in found:
        raise ClauseMismatch(f"the header says {header.get('status')!r} but no terminal RuntimeEvent is committed "
                             "(spec 20 §4.1: the terminal event is durable before the terminal header)",
                             evidence={"header": header})
    return found


def check_decisions(point: str, short: str, run: Mapping[str, Any], found: Sequence[str]) -> None:
    events = run["events"]
    ref_resolution = reference_resolution(events)
    ref_plan = reference_plan(events)
    expect_equal(ref_resolution, run.get("resolution"), what="the projected resolution vs maka_ref.resolve_recovery")
    expect_equal(plan_form(ref_plan), plan_form(run.get("plan")),
                 what="the projected plan (wording aside) vs maka_ref.build_resume_plan")
    decisions = [d.get("status") for d in ref_resolution.get("decisions", [])]
    plan_statuses = [o.get("status") for o in ref_plan.get("operations", [])]
    n = int(point[1:])
    not_dispatched = short == "t1" and point == "P1" and list(found) == ["user", "call"]
    if n == 0:
        want = ([], [], "safe_replay", [])
    elif not_dispatched:  # spec 20 §2 informative: T1 marker, call without dispatch
        want = (["not_dispatched"], None, "blocked", None)
    elif n <= 4:
        want = (["indeterminate"], ["indeterminate"], "blocked", ["dangling_tool_state"])
    else:
        count = 1 if n <= 7 else 2
        want = (["completed"] * count, ["succeeded"] * count, "safe_replay", [])
    expect_equal(want[0], decisions, what=f"resolver decisions after a kill at {point}")
    if want[1] is not None:
        expect_equal(want[1], plan_statuses, what=f"Phase 0 operation statuses after a kill at {point}")
    expect_equal(want[2], ref_plan.get("disposition"), what=f"Phase 0 disposition after a kill at {point}")
    if want[3] is not None:
        expect_equal(want[3], ref_plan.get("rejectionReasons"), what=f"Phase 0 rejection reasons after a kill at {point}")
    # spec 20 §2 table: the unresolved call is never replayed; a committed pair is.
    replay = [label(e) for e in ref_plan.get("runtimeEvents", [])]
    if 1 <= n <= 4 and "response" in replay:
        raise ClauseMismatch(f"the Phase 0 replay after a kill at {point} holds a response", evidence={"replay": replay})
    if n >= 5 and replay[:1] != ["user"]:
        raise ClauseMismatch(f"the Phase 0 replay after a kill at {point} does not start with the user event",
                             evidence={"replay": replay})


def check_tool_operations(point: str, short: str, projection: Mapping[str, Any], run: Mapping[str, Any],
                          found: Sequence[str]) -> None:
    ops = run.get("toolOperations") or []
    unsettled = list(projection.get("unsettledOperations") or [])
    if short == "legacy":
        expect_equal([], [o.get("operationId") for o in ops], what="tool operations of a legacy run (no T1)")
        return
    n = int(point[1:])
    states = [o.get("currentState") for o in ops]
    if "dispatch" not in found:
        want: list[str] = []
    elif n <= 4:
        want = ["prepared"]
    else:
        want = ["outcome_committed"] * (1 if n <= 7 else 2)
    expect_equal(want, states, what=f"tool operation states after a kill at {point}")
    expect_equal([o.get("operationId") for o in ops if o.get("currentState") == "prepared"], unsettled,
                 what=f"unsettled operations after a kill at {point}")


def check_effects(point: str, workspace: str, run: Mapping[str, Any], pid: int) -> None:
    lines = effect_lines(workspace)
    expect_no_double_start(lines, f"after a kill at {point}")
    n = int(point[1:])
    calls = [e for e in run["events"] if label(e) == "call"]
    expected_ops = [operation_id_of(c) for c in calls]
    if n <= 2:
        want = 0
    elif n <= 7:
        want = 1
    else:
        want = 2
    if len(lines) != want:
        raise ClauseMismatch(f"after a kill at {point} the effect log holds {len(lines)} start(s), the point allows {want} "
                             "(P0–P2: the implementation has not started; P3–P7: the Write started; P8–P9: both)",
                             evidence={"effectLog": lines})
    for line in lines:
        if line["operationId"] not in expected_ops:
            raise ClauseMismatch(f"an effect-log start names no committed call's operation: {line['operationId']}",
                                 evidence={"effectLog": lines, "operations": expected_ops})
        if line.get("pid") != pid:
            raise ClauseMismatch("an effect-log start was not written by the process that ran the turn",
                                 evidence={"effectLog": lines, "killedPid": pid})
    content = read_file(workspace, "notes.txt")
    if n <= 2:
        ok = content is None
        allowed = "absent"
    elif n == 3:
        ok = content is None or FIRST.startswith(content)
        allowed = f"absent or a prefix of {FIRST!r}"
    elif n <= 7:
        ok = content == FIRST
        allowed = repr(FIRST)
    else:
        ok = content == FIRST + MORE
        allowed = repr(FIRST + MORE)
    if not ok:
        raise ClauseMismatch(f"after a kill at {point} notes.txt is {content!r}; allowed: {allowed}")


def _params() -> Iterator[Any]:
    for point in LIVE_POINTS:
        for short in PROTOCOLS:
            mark = clause(f"RUNTIME-CRASH-{point}-{short}", spec="20 §2; 30 §6.3; 30 §2.3–§2.4; protocol §4.3",
                          capability="faults", needs=("runtime.loop", "store"),
                          title=f"SIGKILL at {point} ({PROTOCOLS[short]}): a legal committed prefix, spec decisions, no double start")
            yield pytest.param(point, short, id=f"{point}-{short}", marks=mark)


@pytest.mark.parametrize(("point", "short"), list(_params()))
def test_crash_at_live_point(maka: Any, tmp_path: Path, point: str, short: str) -> None:
    workspace = workspace_dir(tmp_path)
    proof = crash_turn(maka, workspace, crash_script(PROTOCOLS[short]), point)
    try:
        projection = stable_projection(maka, workspace)
        run = source_run(projection)
        found = check_prefix(point, short, run)
        check_decisions(point, short, run, found)
        check_tool_operations(point, short, projection, run, found)
        check_effects(point, workspace, run, proof.pid)
    finally:
        release(maka, workspace)
