"""Spec 20 §8 Phase 1 scenarios not covered elsewhere, over real SQLite stores in tmp dirs.

The full scenario → test (or reason) table is ``docs/choices/continuation-scenarios.md``. Every
test here drives the library APIs (``maka_ref._continuation``, ``maka_ref._plan.continuation``,
``maka_ref._repair``) against a real workspace: a source turn whose script ends after its
Write (the provider is asked for a step that does not exist → the run ends
``failed/script_exhausted``, terminal event and header committed), then planning and execution.
Expected values are written from the spec (§3.8, §3.12–§3.15, §4.5, §4.9), not from the code.

The "runner admission" items 51–57 (§3.13) are about the product runner's in-process proof and
receipt objects; the reference host has no such objects, so the tests here prove the property
each item protects with the host's own mechanism (the durable claim is the one-shot admission,
the start writer is the only way to commit a start, the plan is frozen). What does not transfer
is listed in the doc.
"""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from maka_ref._codec.frozen import thaw
from maka_ref._continuation import (
    ContinuationExecutionError,
    LifecycleLog,
    RuntimeContinuationRevalidationError,
    StoreWorld,
    execute_continuation,
    resume_session,
)
from maka_ref._continuation.execute import _start_event
from maka_ref._errors import MakaRefError
from maka_ref._plan.continuation import plan_authoritative, plan_latest
from maka_ref._repair import repair_workspace
from maka_ref._runtime import ScriptedProvider, load_script, run_turn
from maka_ref._store.agent_runs.store import AgentRunStore
from maka_ref._store.runtime_store import RuntimeStore
from tests.maka_ref.runtime.support import LEGACY, T1, effect_lines, script, wait_for_stderr

REPO = Path(__file__).resolve().parents[3]
WRITE = {"toolCalls": [{"id": "call-1", "name": "Write", "args": {"path": "notes.txt", "content": "after"}}]}
FIRST_ONLY = script(T1, [WRITE])
FULL = script(T1, [WRITE, {"text": "continued"}])
ABANDONED = "continuation_abandoned_before_provider_dispatch"


def crashed_source(ws: Path, protocol: str = T1, session_id: str | None = None, seed: str | None = None) -> Any:
    summary = run_turn(ws, script(protocol, [WRITE]), session_id=session_id, seed=seed)
    assert summary.status == "failed" and summary.error["code"] == "script_exhausted"
    return summary


class World:
    """A ``StoreWorld`` over freshly opened stores (closed on exit)."""

    def __init__(self, ws: Path, **kwargs: Any) -> None:
        self.store, self.runs = RuntimeStore.open(ws), AgentRunStore.open(ws)
        self.world = StoreWorld(Path(os.path.realpath(ws)), self.store, self.runs, **kwargs)

    def __enter__(self) -> "World":
        return self

    def __exit__(self, *exc: object) -> None:
        self.store.close()
        self.runs.close()

    def plan(self, session_id: str, run_id: str, tag: str) -> Any:
        ids = iter([f"invocation_{tag}", f"run_{tag}", f"turn_{tag}", f"claim_{tag}"])
        return plan_authoritative(self.world, ids, session_id, run_id, feature_enabled=True)


def run_events(ws: Path, session_id: str, run_id: str) -> list[dict[str, Any]]:
    with RuntimeStore.open(ws) as store:
        return [thaw(e) for e in store.read_run_events(session_id, run_id)]


def header_of(ws: Path, session_id: str, run_id: str) -> dict[str, Any]:
    with AgentRunStore.open(ws) as runs:
        return thaw(runs.read_run(session_id, run_id))


def replan(ws: Path, session_id: str, tag: str = "replan", run_id: str | None = None) -> tuple[str, ...]:
    """Rejection reasons of a fresh plan: ``plan_latest`` of the session, or of ``run_id``."""
    with World(ws) as w:
        if run_id is not None:
            return w.plan(session_id, run_id, tag).rejection_reasons
        ids = iter([f"invocation_{tag}", f"run_{tag}", f"turn_{tag}", f"claim_{tag}"])
        return plan_latest(w.world, ids, session_id, feature_enabled=True).rejection_reasons


# =========================================================================== planner / runner


def test_item_32_inspector_facts_canonical_path_and_catalog(tmp_path: Path) -> None:
    """§8 item 32 (spec 20 §3.8): the host inspector over a workspace reached through a symlink,
    with the catalog ``[Write, Read, Read]`` → ``{identity, workspacePath: <canonical path>,
    backgroundOperationsSettled: true, availableToolNames: [Read, Write]}``; the plan made through
    that world continues with exactly those facts and no cwd diagnostic."""
    real = tmp_path / "repo"
    real.mkdir()
    source = crashed_source(real)
    link = tmp_path / "link"
    link.symlink_to(real, target_is_directory=True)
    store, runs = RuntimeStore.open(link), AgentRunStore.open(link)
    try:
        world = StoreWorld(link, store, runs, tool_catalog=lambda: ["Write", "Read", "Read"])
        observation = world.inspect(source.session_id)
        assert observation.workspace_identity == source.workspace_identity
        assert observation.workspace_path == os.path.realpath(real)
        assert observation.background_operations_settled is True
        assert observation.available_tool_names == ("Read", "Write")
        plan = plan_authoritative(world, iter("irtc"), source.session_id, source.run_id, feature_enabled=True)
    finally:
        store.close(), runs.close()
    assert plan.disposition == "continue", plan.to_json()
    assert plan.diagnostics == ()  # the source cwd is the canonical path too: no location change
    assert plan.continuation.safety_snapshot.to_json() == {
        "workspaceIdentity": source.workspace_identity,
        "backgroundOperationsSettled": True,
        "availableToolNames": ["Read", "Write"],
    }


def test_item_33_admitted_continuation_flow_input(tmp_path: Path) -> None:
    """§8 item 33 (spec 20 §3.14): the provider's input is the source events (the planned
    ``runtimeContext``, high-water = the source's event count) + the live start; no user event is
    synthesized; the result's events are only the target run's own."""
    source = crashed_source(tmp_path)
    source_events = run_events(tmp_path, source.session_id, source.run_id)
    loaded = load_script(FULL)
    provider = ScriptedProvider(loaded, record=True)
    with World(tmp_path) as w:
        plan = w.plan(source.session_id, source.run_id, "a")
        c = plan.continuation
        assert c.source_runtime_event_high_water == len(source_events) == 5
        assert [e["id"] for e in c.runtime_context] == [e["id"] for e in source_events]
        result = execute_continuation(w.world, c, loaded, "a", provider=provider)
    assert len(provider.calls) == 1
    assert [e["id"] for e in provider.calls[0]] == [e["id"] for e in source_events] + [result.start_event_id]
    target = run_events(tmp_path, source.session_id, result.summary.run_id)
    assert list(result.summary.event_ids) == [e["id"] for e in target]
    assert all(e["runId"] == "run_a" for e in target)
    assert not any(e["role"] == "user" for e in target)


def test_item_34_second_generation_gets_the_full_context(tmp_path: Path) -> None:
    """§8 item 34 (spec 20 §3.14, §3.15): a continuation of a continuation. The first
    continuation fails again (its script is exhausted after one more Write); planning from it
    walks the lineage, and the provider of the second generation receives the *full*
    ``runtimeContext`` (root user + both generations' replays + the new start), while the
    envelope's ``sourceRuntimeContext`` (immediate segment only) is not handed to the flow."""
    write2 = {"toolCalls": [{"id": "call-2", "name": "Write", "args": {"path": "two.txt", "content": "2"}}]}
    source = crashed_source(tmp_path)
    gen1_script = load_script(script(T1, [WRITE, write2]))
    with World(tmp_path) as w:
        gen1 = execute_continuation(w.world, w.plan(source.session_id, source.run_id, "g1").continuation, gen1_script, "g1")
    assert gen1.summary.status == "failed" and gen1.summary.error["code"] == "script_exhausted"
    full = load_script(script(T1, [WRITE, write2, {"text": "continued"}]))
    provider = ScriptedProvider(full, record=True)
    with World(tmp_path) as w:
        plan = w.plan(source.session_id, "run_g1", "g2")
        assert plan.disposition == "continue", plan.to_json()
        c = plan.continuation
        assert [s.identity.run_id for s in c.boundary.segments] == [source.run_id, "run_g1"]
        gen2 = execute_continuation(w.world, c, full, "g2", provider=provider)
    assert gen2.summary.status == "completed" and gen2.summary.final_text == "continued"
    history = provider.calls[0]
    assert [e["id"] for e in history] == [e["id"] for e in c.runtime_context] + [gen2.start_event_id]
    runs_in_history = [e["runId"] for e in history]
    assert runs_in_history[0] == source.run_id and "run_g1" in runs_in_history and runs_in_history[-1] == "run_g2"
    assert [e["role"] for e in history].count("user") == 1  # only the root user message
    # sourceRuntimeContext is the immediate segment's replay, a strict suffix of the full context
    immediate = [e["id"] for e in c.source_runtime_context]
    assert immediate and all(e["runId"] == "run_g1" for e in c.source_runtime_context)
    assert [e["id"] for e in history][: len(history) - 1][-len(immediate):] == immediate
    assert (tmp_path / "two.txt").read_text() == "2"
    assert len([x for x in effect_lines(tmp_path) if x.get("tool") == "Write"]) == 2  # each Write once


def test_item_51_no_public_path_admits_a_continuation(tmp_path: Path) -> None:
    """§8 items 51/52 (spec 20 §3.13 "package-internal durable admission"): the public turn
    entry cannot carry continuation metadata (the script is closed-shape: refused before any
    header or event exists), and a continuation-start cannot be committed through the generic
    append/import writers — only through the claim-bound start writer."""
    source = crashed_source(tmp_path)
    with pytest.raises(MakaRefError) as info:
        run_turn(tmp_path, {**FULL, "continuation": {"sourceRunId": source.run_id}})
    assert info.value.code == "invalid_script"
    with World(tmp_path) as w:
        assert len(w.runs.list_session_runs(source.session_id)) == 1  # nothing was created
        c = w.plan(source.session_id, source.run_id, "p").continuation
        start = _start_event(c, 10**13, True)
        for write in (lambda: w.store.append(start), lambda: w.store.import_event(c.session_id, c.run_id, start)):
            with pytest.raises(MakaRefError) as refused:
                write()
            assert refused.value.code == "reserved_continuation_start"
        assert w.store.read_run_events(c.session_id, c.run_id) == []
        assert w.store.list_claims(c.session_id) == []


def test_item_53_admitted_continuation_completes(tmp_path: Path) -> None:
    """§8 item 53 (spec 20 §3.9–§3.12): an admitted continuation → ``completed``, final output
    ``continued``, target events exactly ``[continuation-start, continued-text, terminal]``."""
    source = crashed_source(tmp_path)
    with World(tmp_path) as w:
        result = execute_continuation(w.world, w.plan(source.session_id, source.run_id, "a").continuation, load_script(FULL), "a")
    assert result.summary.status == "completed" and result.summary.final_text == "continued"
    events = run_events(tmp_path, source.session_id, "run_a")
    assert [e["id"] for e in events][0] == result.start_event_id == "run_a_start"
    assert "continuationStart" in events[0]["actions"]
    assert events[1]["role"] == "model" and events[1]["content"] == {"kind": "text", "text": "continued"}
    assert events[2]["status"] == "completed" and events[2]["actions"]["endInvocation"] is True
    assert len(events) == 3
    assert header_of(tmp_path, source.session_id, "run_a")["status"] == "completed"


def test_item_54_admission_is_one_shot(tmp_path: Path) -> None:
    """§8 item 54 (spec 20 §3.10, §3.13): the durable claim is the one-shot admission. Reusing
    the same admitted continuation is refused before the provider; a start for a forged claim id
    is refused; re-committing the start of a consumed claim creates nothing (no provider
    authority); a start for another target than the claim's is refused. The provider is called
    exactly once."""
    source = crashed_source(tmp_path)
    loaded = load_script(FULL)
    provider = ScriptedProvider(loaded, record=True)
    with World(tmp_path) as w:
        c = w.plan(source.session_id, source.run_id, "a").continuation
        execute_continuation(w.world, c, loaded, "a", provider=provider)
        with pytest.raises(RuntimeContinuationRevalidationError) as reused:
            execute_continuation(w.world, c, loaded, "a", provider=provider)
        assert reused.value.code in ("continuation_claim_conflict", "source_terminal_changed", "target_run_conflict")
        start = thaw(run_events(tmp_path, source.session_id, "run_a")[0])
        with pytest.raises(MakaRefError) as forged:
            w.store.commit_continuation_start("claim_forged", start)
        assert forged.value.code == "continuation_claim_missing"
        again = w.store.commit_continuation_start(c.claim_id, start)
        assert again.created is False
        other = dict(start, id="run_other_start", runId="run_other")
        with pytest.raises(MakaRefError):
            w.store.commit_continuation_start(c.claim_id, other)
        assert len(w.store.list_claims(source.session_id)) == 1
    assert len(provider.calls) == 1
    assert [e["id"] for e in run_events(tmp_path, source.session_id, "run_a")].count("run_a_start") == 1


@pytest.mark.parametrize("protocol", [T1, LEGACY])
def test_item_55_start_carries_the_marker_iff_t1(tmp_path: Path, protocol: str) -> None:
    """§8 item 55 (spec 20 §3.12, §3.13): the admission's tool-boundary identity is complete —
    the live start carries ``runtimeProtocol {toolBoundary: t1_after_preflight_v1}`` exactly when
    the runner (script) declares T1; a legacy runner's start has none. The store refuses a
    repair start with the marker and a live start with a wrong marker value."""
    source = crashed_source(tmp_path, protocol)
    loaded = load_script(script(protocol, [WRITE, {"text": "continued"}]))
    with World(tmp_path) as w:
        c = w.plan(source.session_id, source.run_id, "a").continuation
        bad = _start_event(c, 10**13, True)
        bad["actions"]["runtimeProtocol"] = {"toolBoundary": "legacy"}
        result = execute_continuation(w.world, c, loaded, "a")
        for event, provenance in ((_start_event(c, 10**13, True), "claim_repair"), (bad, "runtime_admission")):
            with pytest.raises(MakaRefError):
                w.store.commit_continuation_start(c.claim_id, event, provenance)
    assert result.summary.status == "completed"
    start = run_events(tmp_path, source.session_id, "run_a")[0]
    if protocol == T1:
        assert start["actions"]["runtimeProtocol"] == {"toolBoundary": T1}
    else:
        assert "runtimeProtocol" not in start["actions"]
    assert set(start["actions"]) <= {"continuationStart", "runtimeProtocol"}


def test_item_57_caller_cannot_change_an_admitted_continuation(tmp_path: Path) -> None:
    """§8 item 57 (spec 20 §3.13 "snapshot the plan"): the plan's runtime context and boundary
    are frozen (a caller's mutation attempt raises), and changing the caller's own thawed copy or
    its script mapping after admission changes nothing the flow sees."""
    source = crashed_source(tmp_path)
    raw_script = script(T1, [WRITE, {"text": "continued"}])
    loaded = load_script(raw_script)
    provider = ScriptedProvider(loaded, record=True)
    with World(tmp_path) as w:
        c = w.plan(source.session_id, source.run_id, "a").continuation
        original = [thaw(e) for e in c.runtime_context]
        with pytest.raises(TypeError):
            c.runtime_context[0]["id"] = "forged"  # type: ignore[index]
        with pytest.raises((TypeError, AttributeError)):
            c.runtime_context.append({"id": "extra"})  # type: ignore[attr-defined]
        mine = [thaw(e) for e in c.runtime_context]
        mine[0]["content"] = {"kind": "text", "text": "tampered"}
        raw_script["steps"][1]["text"] = "tampered"
        result = execute_continuation(w.world, c, loaded, "a", provider=provider)
    assert [thaw(e) for e in provider.calls[0][:-1]] == original
    assert result.summary.final_text == "continued"


# =========================================================================== §4.9 SIGKILL harness

CHILD = r"""
import os, sys
from maka_ref._store.engine import failpoints
from maka_ref._store.agent_runs.store import AgentRunStore
from maka_ref._store.runtime_store import RuntimeStore
from maka_ref._continuation import LifecycleLog, resume_session

ws, point = sys.argv[1], sys.argv[2]

def ready():
    os.write(2, ("READY:" + point + "\n").encode())
    failpoints.block_forever()

def after(owner, name, condition=lambda *a, **k: True):
    original = getattr(owner, name)
    def wrapped(self, *args, **kwargs):
        out = original(self, *args, **kwargs)
        if condition(*args, **kwargs):
            ready()
        return out
    setattr(owner, name, wrapped)

if point == "after_continuation_claim_committed":
    after(RuntimeStore, "claim_continuation")
elif point == "after_run_created":
    failpoints.arm("P11", lambda _name: ready())
elif point == "after_continuation_start_committed":
    after(RuntimeStore, "commit_continuation_start")
elif point == "after_terminal_event_committed":
    failpoints.arm("P9", lambda _name: ready())
elif point == "after_terminal_header_committed":
    after(AgentRunStore, "update_run", lambda _s, _r, patch: patch.get("status") in ("completed", "failed", "cancelled"))
else:
    raise SystemExit("unknown point " + point)
resume_session(ws, flag=True, script=sys.argv[3], lifecycle_log=LifecycleLog(os.path.join(ws, "life.jsonl")))
raise SystemExit("the continuation finished without reaching " + point)
"""

#: §4.9: (re-plan before repair, after repair: target header status, event kinds, re-plan of
#: the source boundary after repair). Rows 1–2: the boundary stays consumed by its claim; the
#: session's newest failed run is then the repaired target, and planning from it continues
#: (§8 item 89 "planning from that target run → continue", checked below).
MATRIX = {
    "after_continuation_claim_committed": ("continuation_claim_repair_required", "failed", ["start", "terminal"],
                                           "continuation_already_exists"),
    "after_run_created": ("continuation_claim_repair_required", "failed", ["start", "terminal"],
                          "continuation_already_exists"),
    "after_continuation_start_committed": ("continuation_started_indeterminate", None, ["start"],
                                           "continuation_started_indeterminate"),
    "after_terminal_event_committed": ("continuation_claim_repair_required", "completed", ["start", "text", "terminal"],
                                       "continuation_already_exists"),
    "after_terminal_header_committed": ("continuation_already_exists", "completed", ["start", "text", "terminal"],
                                        "continuation_already_exists"),
}


def _kind(event: dict[str, Any]) -> str:
    if "continuationStart" in (event.get("actions") or {}):
        return "start"
    if event.get("status") is not None:
        return "terminal"
    return "text" if event.get("role") == "model" else "other"


def _run_child_until_ready(ws: Path, point: str, script_path: Path) -> subprocess.Popen[bytes]:
    env = dict(os.environ, PYTHONPATH=str(REPO))
    env.pop("MAKA_REF_FAILPOINT", None)
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(ws), point, str(script_path)],
        env=env, cwd=str(REPO), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )
    return wait_for_stderr(child, f"READY:{point}\n".encode(), point, seconds=60)


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX SIGKILL semantics")
@pytest.mark.parametrize("point", list(MATRIX))
def test_items_59_63_continuation_sigkill_matrix(tmp_path: Path, point: str) -> None:
    """§8 items 59–63 (spec 20 §4.9, one row each): a real ``resume`` process is SIGKILLed at
    the row's point; the durable state, the re-plan before repair, startup repair
    (``repair_workspace``, §4.4/§4.5) and the re-plan after repair are as the table says. The
    provider is never called for the pre-start rows (the Write ran once, in the source)."""
    import json

    from tests.maka_ref.runtime.support import kill_and_reap

    ws = tmp_path / "ws"
    ws.mkdir()
    source = crashed_source(ws)
    script_path = tmp_path / "script.json"
    script_path.write_text(json.dumps(FULL), encoding="utf-8")
    before_replan, status_after, kinds_after, replan_after = MATRIX[point]

    child = _run_child_until_ready(ws, point, script_path)
    kill_and_reap(child)

    with RuntimeStore.open(ws) as store:
        claims = store.list_claims(source.session_id)
    assert len(claims) == 1
    target = claims[0].claim.target.run_id
    with AgentRunStore.open(ws) as runs:
        headers = {h["runId"]: thaw(h) for h in runs.list_session_runs(source.session_id)}
    if point == "after_continuation_claim_committed":
        assert target not in headers
    else:
        assert headers[target]["status"] in ("created", "running") or point == "after_terminal_header_committed"
    assert replan(ws, source.session_id, "before") == (before_replan,)

    repair_workspace(ws)
    header = header_of(ws, source.session_id, target)
    events = run_events(ws, source.session_id, target)
    assert [_kind(e) for e in events] == kinds_after
    assert sum(1 for e in events if _kind(e) == "terminal") == (0 if status_after is None else 1)
    if status_after is None:
        assert header["status"] in ("created", "running")
    else:
        assert header["status"] == status_after
    if status_after == "failed":
        assert header["failureClass"] == ABANDONED and events[0]["actions"]["continuationStart"]["provenance"] == "claim_repair"
        assert events[-1]["actions"]["stateDelta"]["failureClass"] == ABANDONED
    assert replan(ws, source.session_id, "after", run_id=source.run_id) == (replan_after,)
    if status_after == "failed":
        with World(ws) as w:
            latest = plan_latest(w.world, iter(["i9", "r9", "t9", "c9"]), source.session_id, feature_enabled=True)
        assert latest.disposition == "continue" and latest.continuation.source_run_id == target
    else:
        assert replan(ws, source.session_id, "after") == (replan_after,)
    # one durable claim, one target run, and the Write ran exactly once (in the source)
    with RuntimeStore.open(ws) as store:
        assert len(store.list_claims(source.session_id)) == 1
    assert len([x for x in effect_lines(ws) if x.get("tool") == "Write"]) == 1


# =========================================================================== execution revalidation


def test_item_96_tampered_target_after_completed_continuation(tmp_path: Path) -> None:
    """§8 item 96 (tamper cases, spec 20 §3.5) over the real store: after a completed
    continuation, a target header whose ``modelId`` was changed on disk, or whose terminal class
    disagrees with its terminal fact, makes re-planning park
    ``continuation_claim_repair_required``; appending output after the target's terminal is
    refused by the store (the invocation is sealed), so that state cannot arise through it."""
    source = crashed_source(tmp_path)
    outcome = resume_session(tmp_path, flag=True, script=FULL, lifecycle_log=LifecycleLog(tmp_path / "l"))
    target = outcome.summary.run_id
    assert replan(tmp_path, source.session_id) == ("continuation_already_exists",)
    db = tmp_path / "runtime.sqlite"

    def tamper(**changes: Any) -> None:
        import json

        conn = sqlite3.connect(db)
        try:
            (text,) = conn.execute("SELECT header_json FROM agent_runs WHERE run_id = ?", (target,)).fetchone()
            header = json.loads(text)
            header.update(changes)
            conn.execute("UPDATE agent_runs SET header_json = ? WHERE run_id = ?", (json.dumps(header), target))
            conn.commit()
        finally:
            conn.close()

    def replan_source() -> tuple[str, ...]:
        return replan(tmp_path, source.session_id, run_id=source.run_id)

    original = header_of(tmp_path, source.session_id, target)
    tamper(modelId="another-model")
    assert replan_source() == ("continuation_claim_repair_required",)
    tamper(modelId=original["modelId"])
    assert replan_source() == ("continuation_already_exists",)
    tamper(status="failed", failureClass="tool_failed", failureMessage="x")  # header vs terminal fact
    assert replan_source() == ("continuation_claim_repair_required",)

    terminal = run_events(tmp_path, source.session_id, target)[-1]
    late = {k: terminal[k] for k in ("invocationId", "runId", "sessionId", "turnId")}
    late.update(id=f"{target}_late", ts=terminal["ts"] + 1, partial=False, role="model", author="agent",
                content={"kind": "text", "text": "late"})
    with RuntimeStore.open(tmp_path) as store:
        with pytest.raises(MakaRefError):
            store.append(late)
    assert run_events(tmp_path, source.session_id, target)[-1]["id"] == terminal["id"]


def test_item_97_continuation_while_another_is_active(tmp_path: Path) -> None:
    """§8 item 97 (spec 20 §3.9 step 2, continuation side): while a continuation of the session
    is running, executing the same boundary again → ``continuation_in_progress`` and a
    continuation of another run of the same session → ``another run is active``; neither claims
    anything nor calls the provider. (The normal-turn half does not apply: see the doc.)"""
    first = crashed_source(tmp_path, seed="s1")
    second = crashed_source(tmp_path, session_id=first.session_id, seed="s2")
    loaded = load_script(FULL)
    seen: dict[str, Any] = {}
    with World(tmp_path) as w:
        p_first = w.plan(first.session_id, first.run_id, "a")
        p_same = w.plan(first.session_id, first.run_id, "b")
        p_other = w.plan(first.session_id, second.run_id, "c")
        assert p_first.disposition == p_same.disposition == p_other.disposition == "continue"
        inner = ScriptedProvider(loaded, record=True)

        class Nested(ScriptedProvider):
            def next_step(self, history: Any) -> Any:
                for key, plan, tag in (("same", p_same, "b"), ("other", p_other, "c")):
                    with pytest.raises(ContinuationExecutionError) as info:
                        execute_continuation(w.world, plan.continuation, loaded, tag, provider=inner)
                    seen[key] = (info.value.code, info.value.message)
                return super().next_step(history)

        result = execute_continuation(w.world, p_first.continuation, loaded, "a", provider=Nested(loaded))
        assert len(w.store.list_claims(first.session_id)) == 1
    assert result.summary.status == "completed"
    assert seen["same"][0] == "continuation_in_progress"
    assert seen["other"] == ("another_run_active", "another run is active")
    assert inner.calls == []


def test_item_107_flag_off_never_calls_the_inspector(tmp_path: Path) -> None:
    """§8 item 107 (spec 20 §3.1), the part that applies: with the flag off, resume parks
    ``resume_feature_disabled`` without calling any safety inspector fact (identity, catalog)
    and without writing anything; a normal turn never consults the inspector either."""
    source = crashed_source(tmp_path)
    called: list[str] = []
    outcome = resume_session(
        tmp_path, flag=False, lifecycle_log=LifecycleLog(tmp_path / "l"),
        resolve_identity=lambda p: called.append("identity") or "x",
        tool_catalog=lambda: called.append("catalog") or [],
    )
    assert outcome.rejection_reasons == ("resume_feature_disabled",) and called == []
    with AgentRunStore.open(tmp_path) as runs:
        assert [h["runId"] for h in runs.list_session_runs(source.session_id)] == [source.run_id]
