"""The trial timeline (issue 19): offsets from the trial's start on the clock it is given (the
engine's monotonic clock; a fake one here), the process of every step numbered in start
order, replies and kills summarised, oracle verdicts in order, and the renderings."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest

from crashlab._client._errors import ProtocolFailure
from crashlab._lab.timeline import Timeline, TracedClient, render_html, render_text


class Clock:
    def __init__(self, start: float = 100.0) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now


@dataclass
class Reply:
    ok: bool
    result: dict[str, Any] | None = None
    error: dict[str, Any] | None = None


@dataclass
class Proof:
    pid: int
    returncode: int
    killed_by_sigkill: bool
    survivors: tuple[int, ...] = ()


@dataclass
class FakeClient:
    """Answers from a script; each call advances the clock by ``cost`` seconds."""

    pid: int
    clock: Clock
    answers: dict[str, Any] = field(default_factory=dict)
    cost: float = 0.25
    _next_id: int = 7  # private state a fault mode reads through the proxy

    def call(self, op: str, params: Any = None, *, timeout: float | None = None) -> Any:
        self.clock.now += self.cost
        answer = self.answers[op]
        if isinstance(answer, Exception):
            raise answer
        return answer

    def call_until_failpoint(self, op: str, params: Any, *, failpoint: str, timeout: float) -> Any:
        self.clock.now += self.cost
        return self.answers[op]

    def kill(self) -> Proof:
        self.clock.now += 0.01
        return Proof(self.pid, -9, True)


def test_offsets_processes_and_oracle_steps() -> None:
    clock = Clock()
    line = Timeline(clock, origin=99.5)  # the trial started half a second before the timeline
    writer = TracedClient(FakeClient(4242, clock, {
        "faults.arm": Reply(True, {}), "runtime.run_turn": "P3"}), line)
    reader = TracedClient(FakeClient(4300, clock, {
        "store.project": Reply(True, {"runs": [{}], "health": {"status": "healthy"}}),
        "runtime.resume": Reply(False, error={"code": "store_behind_effect_log", "message": "the\nlog is ahead"})}),
        line)
    writer.call("faults.arm", {"failpoint": "P3", "hit": 1})
    writer.call_until_failpoint("runtime.run_turn", {}, failpoint="P3", timeout=5)
    writer.kill()
    line.check("kill_was_real", True, "pid 4242 returncode -9")
    reader.call("store.project", {"workspace": "w"})
    line.check("allowed_prefix", False, "events ['user'] != ['user', 'call']")
    reader.call("runtime.resume", {})
    assert writer._next_id == 7 and writer.pid == 4242  # everything else is the client's own
    steps = line.steps()
    assert [(s["actor"], s.get("proc"), s["step"]) for s in steps] == [
        ("process", 1, "faults.arm P3#1"), ("process", 1, "runtime.run_turn"), ("process", 1, "SIGKILL"),
        ("oracle", None, "kill_was_real"), ("process", 2, "store.project"), ("oracle", None, "allowed_prefix"),
        ("process", 2, "runtime.resume")]
    assert [s["t"] for s in steps] == [0.5, 0.75, 1.0, 1.01, 1.01, 1.26, 1.26]  # start of each step
    assert [s.get("ms") for s in steps] == [250.0, 250.0, 10.0, None, 250.0, None, 250.0]
    assert steps[1]["saw"] == "announced P3: blocked at the point"
    assert steps[2]["saw"] == "killed by SIGKILL" and steps[2]["pid"] == 4242
    assert steps[4]["saw"] == "ok: 1 run(s), health healthy" and steps[4]["pid"] == 4300
    assert steps[5]["ok"] is False and steps[3]["ok"] is True
    assert steps[6]["saw"] == "ok:false store_behind_effect_log: the log is ahead"


def test_a_request_that_fails_is_a_step_too() -> None:
    clock = Clock()
    line = Timeline(clock)
    client = TracedClient(FakeClient(7, clock, {"store.open": ProtocolFailure("timeout", "no response within 1 s",
                                                                              op="store.open")}), line)
    with pytest.raises(ProtocolFailure):
        client.call("store.open", {"workspace": "w", "readOnly": True})
    (step,) = line.steps()
    assert step["step"] == "store.open (read-only)" and step["saw"] == "timeout: no response within 1 s"


def test_text_and_html_renderings() -> None:
    clock = Clock(0.0)
    line = Timeline(clock)
    line.process(31, "start + hello", "maka-ref 0.1.0, 9 capabilities")
    clock.now = 1.5
    line.check("effect_log", False, "<b>started twice</b>")
    line.add("verdict", "failed: 1 of 1 checks failed", ok=False)
    text = render_text(line.steps())
    assert text.splitlines() == [
        "+0.000 s  process 1 (pid 31)  start + hello          maka-ref 0.1.0, 9 capabilities",
        "+1.500 s  oracle              effect_log     FAILED  <b>started twice</b>",
        "+1.500 s  harness             verdict        FAILED  failed: 1 of 1 checks failed",
    ]
    html = render_html(line.steps())
    assert "<b>" not in html and "&lt;b&gt;started twice&lt;/b&gt;" in html
    assert html.count('<tr class="tl-bad">') == 2 and '<tr class="tl-process">' in html
    assert render_text([]) == "(no timeline recorded)\n"


def test_phase_breakdown_puts_every_millisecond_in_one_phase() -> None:
    """Issue 18 item 3: a hand-made trial whose phases are known by construction."""
    from crashlab._lab.timeline import PHASES, phase_breakdown, render_phases

    steps = [
        {"t": 0.010, "ms": 100.0, "actor": "process", "step": "start + hello"},  # 10 ms gap + 100 ms spawn
        {"t": 0.120, "ms": 20.0, "actor": "process", "step": "store.open"},  # 10 ms gap, 20 ms: prefix write
        {"t": 0.140, "ms": 30.0, "actor": "process", "step": "store.append"},  # prefix write
        {"t": 0.170, "ms": 5.0, "actor": "process", "step": "SIGKILL"},  # kill
        {"t": 0.180, "ms": 50.0, "actor": "process", "step": "start + hello"},  # 5 ms harness gap, 50 ms spawn
        {"t": 0.230, "ms": 10.0, "actor": "process", "step": "store.open (read-only)"},  # reopen
        {"t": 0.240, "ms": 40.0, "actor": "process", "step": "store.project"},  # project
        {"t": 0.300, "actor": "oracle", "step": "projection_stable", "ok": True},  # 20 ms oracle
        {"t": 0.300, "ms": 60.0, "actor": "process", "step": "runtime.repair"},  # repair
        {"t": 0.360, "ms": 4.0, "actor": "process", "step": "store.close"},  # close
        {"t": 0.400, "actor": "harness", "step": "verdict"},  # 36 ms reaping
    ]
    phases = phase_breakdown(steps)
    assert list(phases) == list(PHASES)
    assert phases == {
        "spawn": 160.0, "prefix write": 60.0, "kill": 5.0, "reopen": 10.0, "project": 40.0,
        "repair + resume": 60.0, "oracle": 20.0, "harness": 5.0, "close + reap": 40.0,
    }
    assert sum(phases.values()) == pytest.approx(400.0)
    assert render_phases(phases).startswith("spawn 160 ms · prefix write 60 ms · kill 5 ms")
    assert phase_breakdown([]) == dict.fromkeys(PHASES, 0.0)
