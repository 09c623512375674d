"""The ``pause`` and ``race`` fault modes (``crashlab/_lab/faults``) against real processes.

Until the engine exists these tests drive the fault modules through a small
:class:`~crashlab._lab.context.TrialContext` of their own: real ``python -m maka_ref.adapter``
processes (or a deliberately broken wrapper of it), a real temporary workspace, checks
collected in a list. Also the ``faults.arm`` ``action`` param of protocol §4.4.
"""

from __future__ import annotations

import os
import signal
import sys
import textwrap
import time
from pathlib import Path
from typing import Any, Sequence

import pytest

from conformance.protocol import validate_request, validate_response
from crashlab import ProtocolClient
from crashlab._lab.faults import pause, race
from crashlab._lab.faults._shared import FaultNotApplicable
from crashlab._lab.model import Check, TrialSpec

REFERENCE = (sys.executable, "-m", "maka_ref.adapter")


class LocalContext:
    """A TrialContext (``crashlab/_lab/context.py``) for these tests."""

    def __init__(self, spec: TrialSpec, tmp_path: Path) -> None:
        self.spec = spec
        self.workspace = tmp_path / "ws"
        self.workspace.mkdir()
        self.evidence: dict[str, Any] = {}
        self.checks: list[Check] = []
        self._scratch = tmp_path / "scratch"
        self._scratch.mkdir()
        self._clients: list[ProtocolClient] = []

    def spawn(self) -> ProtocolClient:
        command = list(self.spec.command) if self.spec.command else list(REFERENCE)
        client = ProtocolClient.start(command, cwd=self._scratch, request_timeout=30.0, validator=validate_response)
        self._clients.append(client)
        return client

    def record(self, name: str, ok: bool, detail: str = "") -> None:
        self.checks.append(Check(name, ok, detail))

    @property
    def handshake(self) -> Any:
        return self._clients[0].handshake

    def reap(self) -> list[int]:
        survivors: list[int] = []
        for client in self._clients:
            try:  # a stopped process (a failed trial) must not survive either
                os.kill(client.pid, signal.SIGCONT)
            except OSError:
                pass
            survivors.extend(client.close(timeout=5.0).survivors)
        return survivors

    def verdicts(self) -> dict[str, Check]:
        return {c.name: c for c in self.checks}


def trial(tmp_path: Path, fault: str, point: str, *, command: Sequence[str] | None = None, **options: Any
          ) -> LocalContext:
    spec = TrialSpec(point=point, mode="live", fault=fault, seed=7, command=tuple(command) if command else None,
                     options=options)
    ctx = LocalContext(spec, tmp_path)
    started = time.monotonic()
    try:
        (pause if fault == "pause" else race).run(ctx)
    finally:
        assert ctx.reap() == []
    ctx.evidence["testDurationS"] = time.monotonic() - started
    return ctx


def failed(ctx: LocalContext) -> list[Check]:
    return [c for c in ctx.checks if not c.ok]


# --------------------------------------------------------------------------- faults.arm action


def test_faults_arm_action_param_is_validated(tmp_path: Path) -> None:
    assert validate_request({"id": 1, "op": "faults.arm", "params": {"failpoint": "P3", "action": "stop"}}) == []
    assert validate_request({"id": 1, "op": "faults.arm", "params": {"failpoint": "P3", "action": "block"}}) == []
    assert any(e.startswith("$.params") for e in
               validate_request({"id": 1, "op": "faults.arm", "params": {"failpoint": "P3", "action": "pause"}}))
    with ProtocolClient.start(REFERENCE, cwd=tmp_path) as client:
        assert client.call("faults.arm", {"failpoint": "P3", "action": "pause"}).code == "invalid_params"
        assert client.call("faults.arm", {"failpoint": "P99", "action": "stop"}).code == "unknown_failpoint"
        assert client.call("faults.arm", {"failpoint": "P3", "action": "stop"}).result == {"armed": "P3"}
        assert client.call("faults.arm", {"failpoint": "P3", "action": "block"}).result == {"armed": "P3"}


# --------------------------------------------------------------------------- pause


def test_pause_inside_the_write_passes_on_the_reference(tmp_path: Path) -> None:
    ctx = trial(tmp_path, "pause", "P3")
    assert failed(ctx) == [], ctx.checks
    verdicts = ctx.verdicts()
    for name in ("point_reached", "stopped_at_point", "single_continuation", "no_double_run",
                 "late_writer_rejected", "projection_consistent"):
        assert verdicts[name].ok, name
    ev = ctx.evidence["pause"]
    # B sealed the run with a recovered terminal; its resume parked on the indeterminate Write.
    assert ev["repair"]["repairs"][0]["action"] == "failed_terminal_appended"
    assert ev["resume"]["parked"] is True and ev["resume"]["rejectionReasons"] == ["runtime_ledger_unreadable"]
    # A came back, its T2 was refused on the sealed run, and it failed closed.
    assert ev["lateReply"]["kind"] == "reply" and ev["lateReply"]["result"]["status"] == "failed"
    assert "t2_failed" in ev["codes"]
    assert "0 continuation" in verdicts["single_continuation"].detail
    assert [line["tool"] for line in ev["effectLog"]] == ["Write"]  # started once, by A
    assert {"announced", "repaired", "resumed", "late_reply", "projected"} <= set(ev["timings"])
    assert ctx.evidence["testDurationS"] < 20


def test_pause_between_steps_lets_b_continue_and_fences_a(tmp_path: Path) -> None:
    """P7: the Write settled; B's continuation runs the Append; A's late second step is refused."""
    ctx = trial(tmp_path, "pause", "P7")
    assert failed(ctx) == [], ctx.checks
    ev = ctx.evidence["pause"]
    assert ev["resume"]["parked"] is False and ev["resume"]["status"] == "completed"
    assert "1 continuation" in ctx.verdicts()["single_continuation"].detail
    by_tool = {(line["tool"], line["pid"]) for line in ev["effectLog"]}
    assert by_tool == {("Write", ev["pidA"]), ("Append", ev["pidB"])}
    assert ev["lateReply"]["result"]["status"] == "failed"


def test_pause_needs_a_live_point(tmp_path: Path) -> None:
    spec = TrialSpec(point="after_run_created", mode="live", fault="pause")
    ctx = LocalContext(spec, tmp_path)
    with pytest.raises(FaultNotApplicable):
        pause.run(ctx)


def test_pause_fails_when_the_implementation_does_not_stop(tmp_path: Path) -> None:
    """An implementation that ignores ``action: stop`` (blocks instead) fails ``stopped_at_point``."""
    wrapper = tmp_path / "ignores_stop.py"
    wrapper.write_text(textwrap.dedent("""
        from maka_ref.adapter import _faults
        _original = _faults.arm
        def arm(params):
            params = {k: v for k, v in params.items() if k != "action"}  # forgets the action
            return _original(params)
        _faults.arm = arm
        from maka_ref.adapter import _dispatch
        from maka_ref.adapter._server import main
        main()
    """))
    ctx = trial(tmp_path, "pause", "P3", command=[sys.executable, str(wrapper)], stop_timeout=1.0)
    verdicts = ctx.verdicts()
    assert verdicts["point_reached"].ok
    assert not verdicts["stopped_at_point"].ok and "did not stop itself" in verdicts["stopped_at_point"].detail


# --------------------------------------------------------------------------- race


def test_race_of_four_resumers_passes_on_the_reference(tmp_path: Path) -> None:
    ctx = trial(tmp_path, "race", "P7", racers=4)
    assert failed(ctx) == [], ctx.checks
    outcomes = ctx.evidence["race"]["outcomes"]
    assert len(outcomes) == 4
    assert sum(1 for o in outcomes if o.get("ok") and o.get("parked") is False) == 1
    assert "exactly one continuation" in ctx.verdicts()["single_continuation"].detail
    assert ctx.evidence["testDurationS"] < 20


def test_race_at_an_indeterminate_point_parks_every_racer(tmp_path: Path) -> None:
    ctx = trial(tmp_path, "race", "P3", racers=3)
    assert failed(ctx) == [], ctx.checks
    assert all(o.get("parked") is True for o in ctx.evidence["race"]["outcomes"])


BROKEN_CLAIM = """
    # A deliberately broken build of the reference: the continuation claim is not unique.
    # The store steals any claim of the same boundary instead of answering existing/conflict,
    # and the planner and the executor no longer see existing claims or continuation headers.
    from maka_ref._continuation.world import StoreWorld
    from maka_ref._store.writers import continuation as continuation_claims
    from maka_ref._store.agent_runs.store import AgentRunStore

    def _steal(conn, claim):
        source = claim.immediate_source
        conn.execute(
            "DELETE FROM runtime_continuation_claims WHERE boundary_digest = ? OR "
            "(source_session_id = ? AND source_run_id = ? AND source_event_high_water = ?)",
            (claim.boundary_digest, source.identity.session_id, source.identity.run_id,
             source.position.last_event_seq),
        )
        return None

    continuation_claims._existing_or_conflict = _steal
    StoreWorld.read_claim_state = lambda self, digest: None
    _list = AgentRunStore.list_session_runs
    AgentRunStore.list_session_runs = lambda self, sid: [h for h in _list(self, sid) if not h.get("continuationSource")]

    from maka_ref.adapter._server import main
    main()
"""


def test_race_fails_single_continuation_on_a_build_without_a_unique_claim(tmp_path: Path) -> None:
    wrapper = tmp_path / "broken_claim.py"
    wrapper.write_text(textwrap.dedent(BROKEN_CLAIM))
    ctx = trial(tmp_path, "race", "P7", command=[sys.executable, str(wrapper)], racers=4)
    verdicts = ctx.verdicts()
    single = verdicts["single_continuation"]
    assert not single.ok
    assert "runs continue source" in single.detail and "unique per boundary" in single.detail
    # Whether the Append also ran twice depends on the interleaving (a racer whose claim was
    # stolen before its start fails closed); when it did, no_double_run says so.
    if not verdicts["no_double_run"].ok:
        assert "racers started side effects" in verdicts["no_double_run"].detail
    assert ctx.evidence["testDurationS"] < 20


NO_SEAL = """
    # A deliberately broken build of the reference: a run holding its terminal fact is not
    # sealed, so a late writer's T2, T1 and events are accepted after repair's terminal.
    from maka_ref._store.writers import generic
    from maka_ref._store.insert import primitive as insert

    def _never_sealed(conn, session_id, run_id):
        return None

    insert.check_run_sealed = _never_sealed
    generic.check_run_sealed = _never_sealed

    from maka_ref.adapter._server import main
    main()
"""


def test_pause_fails_late_writer_rejected_on_a_build_that_does_not_seal(tmp_path: Path) -> None:
    wrapper = tmp_path / "no_seal.py"
    wrapper.write_text(textwrap.dedent(NO_SEAL))
    ctx = trial(tmp_path, "pause", "P3", command=[sys.executable, str(wrapper)])
    verdicts = ctx.verdicts()
    assert verdicts["stopped_at_point"].ok and verdicts["single_continuation"].ok
    late = verdicts["late_writer_rejected"]
    assert not late.ok
    assert "A changed the store after B sealed the run" in late.detail
    assert "without a T1 durable before B sealed the run" in late.detail  # A went on to the Append
    assert ctx.evidence["testDurationS"] < 20
