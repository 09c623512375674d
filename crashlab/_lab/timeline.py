"""A trial told in time: every step with its offset from the trial's start, the process that
did it, and what came back or what the oracle saw.

Why: a failing crash trial is a story (armed, announced, killed, reopened, repaired, resumed,
verdict), and the checks alone say *what* broke but not *when* or *in which process*. The
timeline is recorded while the trial runs — every request to every implementation process
(through :class:`TracedClient`), every kill, every oracle verdict — and travels with the
trial's evidence (``evidence["timeline"]``: the failure bundle's ``trial.json``, the sweep's
JSON, a ``CRASH-*`` clause's evidence in ``report.json``), so the HTML reports and ``crashlab
replay`` can show it without re-running anything.

The clock is not read here: :class:`Timeline` is given one (the engine, the lab's I/O layer,
passes :func:`time.monotonic` and the trial's start), so offsets are monotonic seconds from
the trial's start and this module stays deterministic under test.

A step is plain JSON (docs/crashlab.md, "Timeline")::

    {"t": 0.412, "ms": 3.1, "actor": "process", "proc": 2, "pid": 4242,
     "step": "store.project", "saw": "ok: 1 run, health healthy"}
    {"t": 0.415, "actor": "oracle", "step": "projection_stable", "ok": true, "saw": "…"}
    {"t": 2.480, "actor": "harness", "step": "verdict", "ok": false, "saw": "failed: …"}

``actor`` is ``process`` (an implementation process: ``proc`` is its number in the trial,
1 for the first started, ``pid`` its process id), ``oracle`` (a check's verdict: ``ok``) or
``harness`` (the trial's end). ``ms`` is how long a request took.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from html import escape
from typing import Any, Self

__all__ = [
    "PHASES",
    "SAW_CHARS",
    "Timeline",
    "TracedClient",
    "phase_breakdown",
    "render_html",
    "render_phases",
    "render_text",
    "summarize_reply",
]

#: What a step keeps of a reply or a check's detail (the checks keep the whole detail).
SAW_CHARS = 400


def _short(text: object, limit: int = SAW_CHARS) -> str:
    one = " ".join(str(text).split())
    return one if len(one) <= limit else one[: limit - 1] + "…"


class Timeline:
    """Steps of one trial, in the order they happened (thread-safe: the race fault drives
    several processes at once)."""

    def __init__(self, clock: Callable[[], float], origin: float | None = None) -> None:
        self._clock = clock
        self._origin = clock() if origin is None else origin
        self._steps: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self._procs: dict[int, int] = {}

    def now(self) -> float:
        """Seconds since the trial started."""
        return self._clock() - self._origin

    def proc_number(self, pid: int) -> int:
        """The number of the process ``pid`` in this trial (1 for the first one started)."""
        with self._lock:
            return self._procs.setdefault(pid, len(self._procs) + 1)

    def add(self, step: str, saw: str = "", *, actor: str = "harness", at: float | None = None,
            pid: int | None = None, ok: bool | None = None) -> dict[str, Any]:
        """Record one step; ``at`` is when it started (default: now), its duration is then
        the time since ``at``."""
        now = self.now()
        entry: dict[str, Any] = {"t": round(now if at is None else at, 4)}
        if at is not None:
            entry["ms"] = round((now - at) * 1000.0, 1)
        entry["actor"] = actor
        if pid is not None:
            entry["proc"] = self.proc_number(pid)
            entry["pid"] = pid
        entry["step"] = step
        if ok is not None:
            entry["ok"] = bool(ok)
        entry["saw"] = _short(saw)
        with self._lock:
            self._steps.append(entry)
        return entry

    def process(self, pid: int, step: str, saw: str, at: float | None = None) -> None:
        self.add(step, saw, actor="process", at=at, pid=pid)

    def check(self, name: str, ok: bool, detail: str) -> None:
        self.add(name, detail, actor="oracle", ok=ok)

    def steps(self) -> list[dict[str, Any]]:
        with self._lock:
            return [dict(s) for s in self._steps]


# --------------------------------------------------------------------------- what came back


def _params_hint(op: str, params: Mapping[str, Any] | None) -> str:
    params = params or {}
    if op == "faults.arm":
        action = f" {params['action']}" if params.get("action") else ""
        return f"{op} {params.get('failpoint')}#{params.get('hit', 1)}{action}"
    if op == "store.append":
        event = params.get("event") or {}
        return f"{op} {event.get('id')}" if isinstance(event, Mapping) else op
    if op == "store.open" and params.get("readOnly"):
        return f"{op} (read-only)"
    return op


def summarize_reply(op: str, reply: Any) -> str:
    """One line of what an implementation answered to ``op`` (a :class:`crashlab.Reply`)."""
    if not getattr(reply, "ok", False):
        error = getattr(reply, "error", None) or {}
        return f"ok:false {error.get('code')}: {_short(error.get('message'), 160)}"
    result = getattr(reply, "result", None) or {}
    if not isinstance(result, Mapping):
        return "ok"
    if op == "store.project":
        runs = result.get("runs") or []
        health = (result.get("health") or {}).get("status")
        return f"ok: {len(runs)} run(s), health {health}"
    if op == "runtime.repair":
        actions = [r.get("action") for r in result.get("repairs") or [] if isinstance(r, Mapping)]
        return f"ok: repairs {actions}"
    if op == "runtime.resume":
        keys = ("parked", "rejectionReasons", "status", "targetRunId")
        return "ok: " + ", ".join(f"{k}={result[k]}" for k in keys if k in result)
    if op == "store.append":
        return f"ok: created={result.get('created')}"
    if op == "runtime.run_turn":
        return "ok: " + ", ".join(f"{k}={result[k]}" for k in ("status", "runId") if k in result)
    return "ok"


class TracedClient:
    """A :class:`crashlab.ProtocolClient` whose requests, kill and close are written to a
    :class:`Timeline`. Everything else (``pid``, ``handshake``, ``stderr_tail``, the private
    state a fault mode reads) is the client's own."""

    def __init__(self, client: Any, timeline: Timeline) -> None:
        self._traced_client = client
        self._traced_timeline = timeline

    def __getattr__(self, name: str) -> Any:
        return getattr(self._traced_client, name)

    def _failed(self, what: str, at: float, exc: BaseException) -> None:
        verdict = getattr(exc, "verdict", type(exc).__name__)
        self._traced_timeline.process(self._traced_client.pid, what, f"{verdict}: {getattr(exc, 'message', exc)}", at)

    def call(self, op: str, params: Mapping[str, Any] | None = None, *, timeout: float | None = None) -> Any:
        at = self._traced_timeline.now()
        what = _params_hint(op, params)
        try:
            reply = self._traced_client.call(op, params, timeout=timeout)
        except Exception as exc:
            self._failed(what, at, exc)
            raise
        self._traced_timeline.process(self._traced_client.pid, what, summarize_reply(op, reply), at)
        return reply

    def call_until_failpoint(self, op: str, params: Mapping[str, Any] | None, *, failpoint: str,
                             timeout: float) -> Any:
        at = self._traced_timeline.now()
        try:
            got = self._traced_client.call_until_failpoint(op, params, failpoint=failpoint, timeout=timeout)
        except Exception as exc:
            self._failed(op, at, exc)
            raise
        saw = (f"announced {got}: blocked at the point" if isinstance(got, str)
               else f"answered without announcing {failpoint}: {summarize_reply(op, got)}")
        self._traced_timeline.process(self._traced_client.pid, op, saw, at)
        return got

    def kill(self) -> Any:
        at = self._traced_timeline.now()
        proof = self._traced_client.kill()
        how = ("killed by SIGKILL" if proof.killed_by_sigkill else f"ended with return code {proof.returncode}")
        if proof.survivors:
            how += f"; survivors {list(proof.survivors)}"
        self._traced_timeline.process(self._traced_client.pid, "SIGKILL", how, at)
        return proof

    def close(self, *args: Any, **kwargs: Any) -> Any:
        at = self._traced_timeline.now()
        report = self._traced_client.close(*args, **kwargs)
        saw = "killed" if getattr(report, "killed", False) else f"exit status {getattr(report, 'exit_status', None)}"
        self._traced_timeline.process(self._traced_client.pid, "close", saw, at)
        return report

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self._traced_client.__exit__(*exc)


# --------------------------------------------------------------------------- where the time goes

#: The phases of :func:`phase_breakdown`, in the order a trial meets them.
PHASES = ("spawn", "prefix write", "kill", "reopen", "project", "repair + resume", "oracle", "harness", "close + reap")


def _phase(step: Mapping[str, Any], killed: bool) -> str:
    name = str(step.get("step", ""))
    if name == "start + hello":
        return "spawn"
    if name == "SIGKILL":
        return "kill"
    if name.startswith("store.open"):
        return "reopen" if killed else "prefix write"
    if name == "store.project":
        return "project"
    if name.startswith(("runtime.repair", "runtime.resume")):
        return "repair + resume"
    if name.startswith(("store.close", "close")):
        return "close + reap"
    return "harness" if killed else "prefix write"


def phase_breakdown(steps: Sequence[Mapping[str, Any]]) -> dict[str, float]:
    """Milliseconds of one trial per phase of :data:`PHASES` (issue 18 item 3), from its
    recorded timeline alone (no clock read: works on any stored ``evidence["timeline"]``).

    A timed step (``ms``: a request, a spawn, the kill) counts in its own phase: ``spawn``
    (every ``start + hello``), ``prefix write`` (requests before the kill: open, create,
    append…), ``kill``, ``reopen`` (``store.open`` after the kill), ``project``, ``repair +
    resume``, ``close + reap``. The time *between* steps is the harness's: before an oracle
    verdict it is that ``oracle``'s check (the harness computes it after the last request it
    needs), before a request it is ``harness`` (building the request, waiting for a worker),
    before the kill it is ``prefix write`` (the driver's own work), and before the final
    ``verdict`` it is ``close + reap`` (the survivors check). The phases sum to the trial's
    time up to its verdict."""
    out = dict.fromkeys(PHASES, 0.0)
    end = 0.0
    killed = False
    for step in steps:
        start = float(step.get("t", 0.0))
        took = float(step.get("ms") or 0.0) / 1000.0
        gap = max(0.0, start - end)
        actor = step.get("actor")
        if actor == "oracle":
            out["oracle"] += gap * 1000.0
        elif step.get("step") == "verdict":
            out["close + reap"] += gap * 1000.0
        else:
            out[_phase(step, killed) if not killed else "harness"] += gap * 1000.0
            out[_phase(step, killed)] += took * 1000.0
        if step.get("step") == "SIGKILL":
            killed = True
        end = max(end, start + took)
    return {phase: round(ms, 1) for phase, ms in out.items()}


def render_phases(phases: Mapping[str, float]) -> str:
    """``spawn 136 ms · prefix write 150 ms · …`` (phases under 1 ms left out)."""
    return " · ".join(f"{name} {ms:.0f} ms" for name, ms in phases.items() if ms >= 1.0) or "no timed step"


# --------------------------------------------------------------------------- rendering


def _actor(step: Mapping[str, Any]) -> str:
    if step.get("actor") == "process":
        return f"process {step.get('proc')} (pid {step.get('pid')})"
    return str(step.get("actor", ""))


def _mark(step: Mapping[str, Any]) -> str:
    if "ok" not in step:
        return ""
    return "ok" if step["ok"] else "FAILED"


def render_text(steps: Iterable[Mapping[str, Any]]) -> str:
    """The timeline as aligned plain-text lines (``crashlab replay``)."""
    rows = [(f"+{float(s.get('t', 0.0)):.3f} s", _actor(s), str(s.get("step", "")), _mark(s), str(s.get("saw", "")))
            for s in steps]
    if not rows:
        return "(no timeline recorded)\n"
    widths = [max(len(r[i]) for r in rows) for i in range(4)]
    lines = ["  ".join(r[i].ljust(widths[i]) if i else r[i].rjust(widths[i]) for i in range(4)) + "  " + r[4]
             for r in rows]
    return "\n".join(line.rstrip() for line in lines) + "\n"


#: Stylesheet of :func:`render_html` (the pages that embed it include it once).
CSS = """
table.timeline td { font-size:.84rem; padding:2px 7px; }
table.timeline td.t { font-variant-numeric:tabular-nums; text-align:right; white-space:nowrap; }
table.timeline tr.tl-bad td { background:#ffebe9; color:#82071e; font-weight:600; }
table.timeline tr.tl-oracle td.who, table.timeline tr.tl-harness td.who { font-style:italic; }
@media (prefers-color-scheme: dark) { table.timeline tr.tl-bad td { background:#2d1214; color:#ff9492; } }
"""


def _html_text(text: object) -> str:
    return escape(str(text), quote=True)


def render_html(steps: Sequence[Mapping[str, Any]], escape_text: Callable[[object], str] = _html_text) -> str:
    """The timeline as an HTML table: time, process, step, what it saw (failed checks marked)."""
    if not steps:
        return "<p>No timeline was recorded for this trial.</p>"
    rows = []
    for s in steps:
        bad = s.get("ok") is False
        cls = "tl-bad" if bad else f"tl-{s.get('actor', 'harness')}"
        mark = {True: " ✓", False: " ✗"}.get(s.get("ok"), "") if "ok" in s else ""
        took = f" ({float(s['ms']):.0f} ms)" if s.get("ms") is not None and float(s["ms"]) >= 1 else ""
        rows.append(f'<tr class="{cls}"><td class="t">+{float(s.get("t", 0.0)):.3f} s</td>'
                    f'<td class="who">{escape_text(_actor(s))}</td>'
                    f"<td><code>{escape_text(s.get('step', ''))}</code>{escape_text(mark)}</td>"
                    f"<td>{escape_text(s.get('saw', ''))}{escape_text(took)}</td></tr>")
    return ('<table class="timeline"><thead><tr><th>time</th><th>who</th><th>step</th><th>what it saw</th></tr>'
            f"</thead><tbody>{''.join(rows)}</tbody></table>")
