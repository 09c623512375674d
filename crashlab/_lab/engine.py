"""``run_trial``: one trial from a fresh workspace to a :class:`TrialResult`.

Why the engine is small: it owns only what every trial shares — the workspace, the processes
(spawned through :class:`crashlab.ProtocolClient`, all reaped at the end and checked with
psutil), the capability gate, the watchdog that bounds the whole trial, and the outcome. The
drivers (:mod:`drive_prefix`, :mod:`drive_live`), the post-kill oracles (:mod:`aftermath`) and
the fault modes (:mod:`faults`) do the rest through :class:`TrialContext`.
"""

from __future__ import annotations

import importlib
import os
import shutil
import signal
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import psutil

from crashlab._client._client import ProtocolClient
from crashlab._client._errors import ProtocolFailure
from crashlab._lab.catalogue import crash_point
from crashlab._lab.drive import DriveError, Unreached
from crashlab._lab.model import Check, TrialResult, TrialSpec
from crashlab._lab.timeline import Timeline, TracedClient

__all__ = ["DEFAULT_TRIAL_TIMEOUT", "abort_running", "reference_command", "run_trial"]

DEFAULT_TRIAL_TIMEOUT = 120.0
REQUEST_TIMEOUT = 30.0
TAIL_CHARS = 8000


_running: set["_Trial"] = set()
_running_lock = threading.Lock()


def abort_running() -> int:
    """Interrupt every trial running in this process (SIGINT to a sweep): their processes are
    killed at once, they write no failure bundle, and their results say ``interrupted``.
    Returns how many were running."""
    with _running_lock:
        trials = list(_running)
    for trial in trials:
        trial.interrupted = True
        trial.abort()
    return len(trials)


def reference_command() -> tuple[str, ...]:
    """The bundled reference runtime's adapter, run by the current interpreter."""
    return (sys.executable, "-m", "maka_ref.adapter")


class _Trial:
    """The engine's :class:`crashlab._lab.context.TrialContext`."""

    def __init__(self, spec: TrialSpec, timeout: float, env: dict[str, str] | None,
                 prefork: bool | None = None, started: float | None = None) -> None:
        self.spec = spec
        # the trial's clock: monotonic seconds from its start (the timeline module reads none)
        self.timeline = Timeline(time.monotonic, started)
        self.prefork = prefork
        self.command = tuple(spec.command) if spec.command else reference_command()
        self.root = Path(tempfile.mkdtemp(prefix="crashlab-"))
        self.workspace = Path(os.path.realpath(self.root / "ws"))
        self.workspace.mkdir()
        self.scratch = self.root / "scratch"
        self.scratch.mkdir()
        self.evidence: dict[str, Any] = {}
        self.checks: list[Check] = []
        self.clients: list[ProtocolClient] = []
        self.env = env
        self.deadline = time.monotonic() + timeout
        self.timed_out = False
        self.interrupted = False
        self.failure_stderr = ""  # the stderr of a process that failed before it was tracked
        self._handshake: Any = None
        self._spare: ProtocolClient | None = None
        self._lock = threading.Lock()

    def remaining(self) -> float:
        return max(1.0, self.deadline - time.monotonic())

    def spawn(self) -> Any:
        """A started, handshaken implementation process whose requests go to the timeline
        (a :class:`TracedClient` around the :class:`ProtocolClient`)."""
        if self.timed_out:
            raise TimeoutError("the trial's deadline passed")
        if self._spare is not None:  # the process started for the handshake: idle since hello
            client, self._spare = self._spare, None
            return client
        at = self.timeline.now()
        try:
            started = ProtocolClient.start(list(self.command), cwd=self.scratch, env=self.env,
                                           request_timeout=min(REQUEST_TIMEOUT, self.remaining()),
                                           handshake_timeout=min(15.0, self.remaining()), prefork=self.prefork)
        except ProtocolFailure as exc:
            self.timeline.add("start + hello", f"{exc.verdict}: {exc.message}", at=at)
            raise
        with self._lock:
            self.clients.append(started)
        if self._handshake is None:
            self._handshake = started.handshake
        hello = started.handshake
        self.timeline.process(started.pid, "start + hello",
                              f"{hello.name} {hello.version}, {len(hello.capabilities)} capabilities", at)
        return TracedClient(started, self.timeline)

    @property
    def handshake(self) -> Any:
        if self._handshake is None:
            # the first process answers hello, then serves as the trial's first spawn: a
            # process that only said hello is as fresh as a new one (one spawn fewer a trial)
            self._spare = self.spawn()
        return self._handshake

    def record(self, name: str, ok: bool, detail: str = "") -> None:
        self.checks.append(Check(name, bool(ok), detail))
        self.timeline.check(name, bool(ok), detail)

    def abort(self) -> None:
        """Watchdog: SIGKILL every process group of the trial (the blocked calls then fail)."""
        self.timed_out = True
        with self._lock:
            pids = [c.pid for c in self.clients]
        for pid in pids:
            try:
                os.killpg(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass

    def reap(self) -> None:
        """Close every process; survivors fail ``no_survivors`` (protocol §1.2)."""
        leftovers: list[int] = []
        for client in self.clients:
            report = client.close()
            leftovers += list(report.survivors)
            try:
                proc = psutil.Process(client.pid)
                if proc.status() != psutil.STATUS_ZOMBIE:
                    leftovers.append(client.pid)
            except psutil.NoSuchProcess:
                pass
        self.record("no_survivors", not leftovers, f"{len(self.clients)} process(es) reaped" if not leftovers
                    else f"processes outlived the trial (killed): {leftovers}")

    def stderr_tail(self) -> str:
        parts = [f"--- pid {c.pid}\n{c.stderr_tail[-2000:]}" for c in self.clients if c.stderr_tail.strip()]
        if self.failure_stderr.strip():
            parts.append(f"--- failed process\n{self.failure_stderr[-3000:]}")
        return "\n".join(parts)[-TAIL_CHARS:]


def _missing(point: Any, mode: str, handshake: Any) -> list[str]:
    claimed = set(handshake.capabilities)
    return [c for c in point.capabilities(mode) if c not in claimed]


def _body(trial: _Trial) -> tuple[str, str]:
    """Run the trial; returns ``(outcome hint, message)`` ('' = decide from the checks)."""
    spec = trial.spec
    point = crash_point(spec.point)
    if spec.mode not in point.modes or spec.fault not in point.faults(spec.mode):
        return "error", f"the catalogue has no {spec.mode}/{spec.fault} trial for {spec.point}"
    if spec.fault in ("powerloss", "powerloss-torn"):  # mount while the first process starts, drive, cut
        from crashlab._lab.powerloss.fault import run_powerloss

        return run_powerloss(trial, point, lambda: _missing(point, spec.mode, trial.handshake))
    missing = _missing(point, spec.mode, trial.handshake)
    if missing:
        return "not_claimed", f"capabilities not claimed: {missing}"
    if point.group == "reconciler":  # spec-phase3 §5.6, §5.7: a tool crash, then the reconciler killed or raced
        from crashlab._lab.faults.reconciler import run_reconciler

        return run_reconciler(trial, point)
    if spec.fault in ("pause", "race"):
        try:
            module = importlib.import_module(f"crashlab._lab.faults.{spec.fault}")
        except ModuleNotFoundError as exc:
            return "error", f"fault mode {spec.fault!r} is not available: {exc}"
        try:
            module.run(trial)
        except Exception as exc:  # a fault mode that cannot apply here (its own FaultNotApplicable)
            if getattr(exc, "outcome", None) == "not_claimed":
                return "not_claimed", getattr(exc, "message", str(exc))
            raise
        return ("unreached", str(trial.evidence.get("unreached"))) if trial.evidence.get("unreached") else ("", "")
    from crashlab._lab.drive import drive_live
    from crashlab._lab.drive import drive_prefix

    driven = (drive_prefix if spec.mode == "prefix" else drive_live)(trial, point)
    trial.evidence["killedPid"] = driven.pid
    if spec.fault == "torn":
        from crashlab._lab.faults.torn import run_torn

        run_torn(trial)
        return "", ""
    from crashlab._lab.aftermath import after_kill

    after_kill(trial, point, driven)
    return "", ""


def run_trial(spec: TrialSpec, *, timeout: float = DEFAULT_TRIAL_TIMEOUT, bundle_dir: str | os.PathLike[str] | None = None,
              env: dict[str, str] | None = None, prefork: bool | None = None) -> TrialResult:
    """Run one trial; never raises for anything the implementation does, never hangs past
    ``timeout`` (plus reaping). With ``bundle_dir``, a trial that did not pass leaves a
    failure bundle there (:mod:`crashlab._lab.bundles`). ``prefork`` is passed to
    :meth:`ProtocolClient.start` (``None``: pre-fork a ``python -m`` command unless
    ``CRASHLAB_NO_PREFORK=1``)."""
    started = time.monotonic()
    trial = _Trial(spec, timeout, env, prefork, started)
    with _running_lock:
        _running.add(trial)
    try:
        return _run(trial, spec, timeout, bundle_dir, started)
    finally:
        with _running_lock:
            _running.discard(trial)


def _run(trial: _Trial, spec: TrialSpec, timeout: float, bundle_dir: str | os.PathLike[str] | None,
         started: float) -> TrialResult:
    watchdog = threading.Timer(timeout, trial.abort)
    watchdog.daemon = True
    watchdog.start()
    hint, message = "", ""
    try:
        hint, message = _body(trial)
    except Unreached as exc:
        hint, message = "unreached", exc.message
        trial.evidence["unreachedReply"] = exc.reply
    except (ProtocolFailure, DriveError) as exc:
        trial.failure_stderr = getattr(exc, "stderr_tail", "") or ""
        verdict = getattr(exc, "verdict", "refused")
        text = getattr(exc, "message", str(exc))
        if trial.timed_out:
            hint, message = "error", f"the trial exceeded its {timeout:.0f} s deadline ({verdict}: {text})"
        else:
            trial.record("implementation_behaved", False, f"{verdict}: {text}")
            hint, message = "failed", f"the implementation misbehaved: {verdict}: {text}"
    except Exception as exc:  # a harness error: reported, never raised into a sweep
        hint, message = "error", f"harness error: {type(exc).__name__}: {exc}"
    finally:
        watchdog.cancel()
        trial.reap()
    if not hint:
        bad = [c for c in trial.checks if not c.ok]
        hint = "failed" if bad else ("passed" if trial.checks else "error")
        message = "; ".join(f"{c.name}: {c.detail}" for c in bad)[:4000] if bad else (message or "")
    elif hint in ("not_claimed", "not_run"):
        trial.checks = [c for c in trial.checks if c.name != "no_survivors" or not c.ok]
    result = TrialResult(spec=spec, outcome=hint, checks=trial.checks, message=message, evidence=trial.evidence,
                         stderr_tail=trial.stderr_tail(), duration_s=round(time.monotonic() - started, 3))
    if trial.interrupted:
        result.outcome, result.message = "error", "interrupted (SIGINT): the trial was stopped before its end"
    bad = sum(1 for c in result.checks if not c.ok)
    trial.timeline.add("verdict", f"{result.outcome}" + (f": {bad} of {len(result.checks)} checks failed" if bad else "")
                       + (f"; {result.message}" if result.message and not bad else ""),
                       ok=result.outcome in ("passed", "not_claimed", "not_run"))
    trial.evidence["timeline"] = trial.timeline.steps()
    try:
        if bundle_dir is not None and result.outcome not in ("passed", "not_claimed", "not_run") and not trial.interrupted:
            from crashlab._lab.bundles import write_bundle

            result.bundle = str(write_bundle(Path(bundle_dir), result, trial.workspace))
    finally:
        shutil.rmtree(trial.root, ignore_errors=True)
    return result
