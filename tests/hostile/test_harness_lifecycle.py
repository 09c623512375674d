"""Issue 13 item 5: the harness enforces the protocol's lifecycle (protocol §1.2, §1.7).

Why these tests build their own hostile implementations: each is the reference adapter
wrapped by a few lines of Python that misbehave in exactly one way a careless or hostile
implementation does (ignore end of input and SIGTERM, exit 3, leave a daemon behind, exit while
a child keeps stdout open). Each runs through the real console entry point in a real process, so
what is asserted is what a user of ``maka-conformance`` or ``crashlab`` sees: the exit status,
the report on disk, stderr, and which processes are still running afterwards (psutil).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Callable, Iterator

import psutil
import pytest

#: A shared-session subset of the suite: a handful of golden vectors, a second or two.
SHARED_SUBSET = "args-hash"
#: A clause that opens dedicated processes (``maka.fresh``) and needs no failpoint.
FRESH_CLAUSE = "STORE-SCHEMA-001"

#: The reference adapter, misbehaving in one way selected by its first argument.
_HOSTILE = textwrap.dedent('''
    import os, runpy, signal, subprocess, sys, time
    mode = sys.argv.pop(1)
    if mode == "daemon":
        # double fork, new session, scrubbed environment: a daemon the process group misses
        if os.fork() == 0:
            os.setsid()
            if os.fork() == 0:
                os.execve("/bin/sleep", ["sleep", "300"], {})
            os._exit(0)
        os.wait()
    if mode == "orphan-stdout":
        # a child that keeps stdout open, then the leader exits at the first request
        subprocess.Popen(["sleep", "300"], stdin=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        sys.stdin.readline()  # the hello
        sys.stdout.write('{"id": 0, "ok": true, "result": {"protocol": 1, "implementation": {"name": "x", '
                         '"version": "0"}, "capabilities": ["ledger"], "failpoints": []}}\\n')
        sys.stdout.flush()
        sys.stdin.readline()
        os._exit(0)
    try:
        runpy.run_module("maka_ref.adapter", run_name="__main__", alter_sys=True)
    except SystemExit:
        pass
    if mode == "ignore-eof":  # end of input seen: neither exit nor honour SIGTERM
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        while True:
            time.sleep(1)
    if mode == "exit-3":
        sys.stdout.flush()
        os._exit(3)
''')


def _hostile(tmp_path: Path, mode: str) -> str:
    script = tmp_path / "hostile_impl.py"
    script.write_text(_HOSTILE, encoding="utf-8")
    return f"{sys.executable} {script} {mode}"


def _python(*args: str, cwd: Path, timeout: float = 240) -> subprocess.CompletedProcess[str]:
    """Run this interpreter in ``cwd`` (never the checkout: ``-m`` imports from the cwd first)."""
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, timeout=timeout, env=env, cwd=cwd)


def _certify(tmp_path: Path, *args: str) -> tuple[subprocess.CompletedProcess[str], dict]:
    report_dir = tmp_path / "report"
    done = _python("-m", "conformance", "certify", "--progress", "none", "-n", "0", "--report-dir",
                   str(report_dir), *args, cwd=tmp_path)
    path = report_dir / "report.json"
    return done, json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}


def _sleepers_of(marker: str) -> list[psutil.Process]:
    """Live ``sleep 300`` processes started after ``marker`` (a create time)."""
    found = []
    for proc in psutil.process_iter(["name", "cmdline", "create_time", "status"]):
        info = proc.info
        if info["cmdline"] == ["sleep", "300"] and info["create_time"] >= float(marker) \
                and info["status"] != psutil.STATUS_ZOMBIE:
            found.append(proc)
    return found


@pytest.fixture
def no_leftover_sleepers() -> Iterator[str]:
    """Yields a start mark; afterwards kills (and reports) any hostile ``sleep 300`` left."""
    mark = str(time.time() - 0.01)
    yield mark
    for proc in _sleepers_of(mark):
        proc.kill()


# ---------------------------------------------------------------------------------- 1. shutdown


def test_an_implementation_that_ignores_eof_and_sigterm_is_not_certified(tmp_path: Path) -> None:
    """Protocol §1.7: exit 0 within 5 s of end of input. One that needed SIGKILL fails the run
    with ``shutdown_timeout`` in the report (the shared session: a harness error of the run)."""
    done, report = _certify(tmp_path, "--impl", _hostile(tmp_path, "ignore-eof"), "-k", SHARED_SUBSET)
    assert done.returncode == 1, (done.returncode, done.stdout, done.stderr)
    assert "Traceback" not in done.stderr
    assert any("shutdown_timeout" in e for e in report["harness_errors"]), report["harness_errors"]


def test_an_implementation_that_exits_3_fails_the_clause_that_closed_it(tmp_path: Path) -> None:
    """A dedicated process that exits with status 3 at end of input fails its clause (``exited``)."""
    done, report = _certify(tmp_path, "--impl", _hostile(tmp_path, "exit-3"), "-k", FRESH_CLAUSE)
    assert done.returncode == 1, (done.returncode, done.stdout, done.stderr)
    (clause,) = [c for c in report["clauses"] if c["clause_id"] == FRESH_CLAUSE]
    assert clause["outcome"] == "failed", clause
    assert "exited" in clause["message"] and "status 3" in clause["message"], clause["message"]
    assert any("exited" in e for e in report["harness_errors"]), report["harness_errors"]


def test_the_reference_still_shuts_down_cleanly(tmp_path: Path) -> None:
    """The same clauses against the unmodified reference: every one passes, no harness error."""
    done, report = _certify(tmp_path, "-k", f"{SHARED_SUBSET} or {FRESH_CLAUSE}")
    assert done.returncode == 0, (done.returncode, done.stdout, done.stderr)
    assert report["harness_errors"] == []
    assert {c["outcome"] for c in report["clauses"]} == {"passed"}


# ---------------------------------------------------------------------------------- 6. options

_COMMANDS = {
    "certify": ["-m", "conformance", "certify", "--progress", "none", "-n", "0", "-k", SHARED_SUBSET],
    "fuzz": ["-m", "conformance", "fuzz", "--examples", "1", "--only", "ledger"],
    "selftest": ["-m", "conformance", "selftest", "--mutants", "none-such"],
    "sweep": ["-m", "crashlab", "sweep", "--points", "P0", "--trials", "1"],
}


def _bad_option_cases(tmp_path: Path) -> list[tuple[str, list[str], str]]:
    blocker = tmp_path / "a-regular-file"
    blocker.write_text("not a directory")
    under_file = str(blocker / "reports")
    cases = []
    for name in ("certify", "fuzz", "sweep"):
        cases += [(name, ["--impl", ""], "invalid_impl"), (name, ["--impl", "   "], "invalid_impl"),
                  (name, ["--impl", "python 'unbalanced"], "invalid_impl")]
        cases += [(name, ["--timeout", value], "invalid_timeout") for value in ("0", "-1", "nan", "inf")]
    cases += [(name, ["--report-dir", under_file], "report_dir_unwritable")
              for name in ("certify", "fuzz", "sweep", "selftest")]
    return cases


def test_bad_impl_timeout_and_report_dir_are_usage_errors(tmp_path: Path) -> None:
    """``--impl ''`` must not certify the bundled reference; ``--timeout 0/-1/nan/inf`` must not
    be accepted; a report directory under a regular file must not be a traceback. Each is exit 2
    with one line on stderr naming a stable code, and nothing is run (no report is written)."""
    failures = []
    for name, extra, code in _bad_option_cases(tmp_path):
        report_dir = tmp_path / f"r-{name}"
        argv = [*_COMMANDS[name], *(["--report-dir", str(report_dir)] if "--report-dir" not in extra else []), *extra]
        done = _python(*argv, timeout=120, cwd=tmp_path)
        lines = done.stderr.strip().splitlines()
        ok = (done.returncode == 2 and len(lines) == 1 and code in lines[0] and "Traceback" not in done.stderr
              and not any(report_dir.glob("*.json")))
        if not ok:
            failures.append((name, extra, done.returncode, done.stderr[-600:]))
    assert not failures, failures


@pytest.mark.parametrize("extra", [["--maka-impl", ""], ["--maka-timeout", "nan"], ["--maka-timeout", "0"]])
def test_the_pytest_plugin_refuses_the_same_bad_options(tmp_path: Path, extra: list[str]) -> None:
    """``pytest -p conformance.plugin`` directly: the same checks as the CLIs (a usage error)."""
    done = _python("-m", "pytest", "-p", "conformance.plugin", "-p", "no:cacheprovider", "--pyargs",
                   "conformance.suite", "-q", "-k", SHARED_SUBSET, *extra, cwd=tmp_path)
    assert done.returncode == 4, (done.returncode, done.stdout[-500:], done.stderr[-500:])
    assert "invalid_impl" in done.stderr or "invalid_timeout" in done.stderr, done.stderr


# ---------------------------------------------------------------------------------- 2. leader exit


def test_a_leader_that_exits_while_a_child_holds_stdout_is_noticed_at_its_exit(
        tmp_path: Path, no_leftover_sleepers: str) -> None:
    """The leader answers ``hello``, then exits at the next request while a child it started
    keeps stdout open, so no end of file comes. The verdict must be ``exited`` (the exit is
    watched), not ``timeout`` (waiting out the request's deadline); the child is killed."""
    from crashlab import ProtocolClient, ProtocolFailure

    client = ProtocolClient.start(_hostile(tmp_path, "orphan-stdout"), request_timeout=20.0, prefork=False)
    with pytest.raises(ProtocolFailure) as caught:
        client.call("ledger.resolve", {"events": []})
    client.close()
    assert caught.value.verdict == "exited", str(caught.value)
    assert "exit status 0" in caught.value.message, caught.value.message
    assert _sleepers_of(no_leftover_sleepers) == []


# ---------------------------------------------------------------------------------- 3. daemons


def _cgroup_unavailable() -> str | None:
    """Why the harness cannot track by cgroup here (``None``: it can; an older harness without
    cgroup tracking is judged as if it could, so the test shows what it misses)."""
    try:
        from crashlab._client import _cgroup
    except ImportError:
        return None
    return _cgroup.unavailable_reason()


def test_a_double_forked_setsid_daemon_without_the_token_fails_the_run_and_is_killed(
        tmp_path: Path, no_leftover_sleepers: str) -> None:
    """Every session of this implementation leaves a daemon (double fork, ``setsid``, empty
    environment) that neither the process group nor the session token can find. The session's
    cgroup finds it: the run fails with ``survivors`` and nothing is left running."""
    reason = _cgroup_unavailable()
    if reason is not None:
        pytest.skip(f"no cgroup v2 for the harness here: {reason}")
    done, report = _certify(tmp_path, "--impl", _hostile(tmp_path, "daemon"), "-k", FRESH_CLAUSE)
    assert done.returncode == 1, (done.returncode, done.stdout, done.stderr)
    (clause,) = [c for c in report["clauses"] if c["clause_id"] == FRESH_CLAUSE]
    assert clause["outcome"] == "failed" and "survivors" in clause["message"], clause
    assert any("survivors" in e for e in report["harness_errors"]), report["harness_errors"]
    assert _sleepers_of(no_leftover_sleepers) == []


# ---------------------------------------------------------------------------------- 4. lifelines

_CLIENT_AT_FAILPOINT = textwrap.dedent('''
    import sys, time
    from crashlab import ProtocolClient
    from crashlab.testing import bad_adapter
    client = ProtocolClient.start(bad_adapter.command("good", sys.argv[2]), prefork=sys.argv[1] == "prefork")
    client.call("faults.arm", {"failpoint": "FP2"})
    client.call_until_failpoint("work", {"through": ["FP1", "FP2"]}, failpoint="FP2", timeout=60)
    print(client.pid, flush=True)
    time.sleep(300)
''')


def _gone(pids: list[int], within: float) -> list[int]:
    """The pids still alive (not zombies) after waiting up to ``within`` seconds for them."""
    deadline = time.monotonic() + within
    while True:
        alive = []
        for pid in pids:
            try:
                if psutil.Process(pid).status() != psutil.STATUS_ZOMBIE:
                    alive.append(pid)
            except psutil.NoSuchProcess:
                pass
        if not alive or time.monotonic() > deadline:
            return alive
        time.sleep(0.05)


def _kill_all(pids: list[int]) -> None:
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass


@pytest.mark.parametrize("prefork", ["prefork", "plain"])
def test_an_implementation_blocked_at_a_failpoint_dies_with_a_sigkilled_client(tmp_path: Path, prefork: str) -> None:
    """A harness killed with SIGKILL runs no cleanup; its implementation, blocked at a failpoint
    (it waits to be killed), must still not wait forever: it dies with its parent."""
    script = tmp_path / "client.py"
    script.write_text(_CLIENT_AT_FAILPOINT, encoding="utf-8")
    harness = subprocess.Popen([sys.executable, str(script), prefork, f"lifeline-{tmp_path.name}"], cwd=tmp_path,
                               stdout=subprocess.PIPE, text=True, start_new_session=True)
    adapter = 0
    try:
        adapter = int(harness.stdout.readline())  # type: ignore[union-attr]
        assert psutil.Process(adapter).status() != psutil.STATUS_ZOMBIE
        harness.kill()
        harness.wait(10)
        alive = _gone([adapter], within=10.0)
        assert alive == [], f"the adapter {adapter} outlived its SIGKILLed client"
    finally:
        harness.kill()
        harness.wait(10)
        _kill_all([adapter] if adapter else [])


def test_a_sigkilled_sweep_leaves_no_stopped_implementation(tmp_path: Path) -> None:
    """``crashlab sweep`` of a pause trial stops an implementation (SIGSTOP at the point).
    SIGKILL the sweep while it is stopped: no process of the sweep's tree may stay behind."""
    sweep = subprocess.Popen([sys.executable, "-m", "crashlab", "sweep", "--points", "P3", "--fault", "pause",
                              "--trials", "3", "--report-dir", str(tmp_path / "r")], cwd=tmp_path,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    tree: dict[int, psutil.Process] = {}
    stopped = None
    try:
        deadline = time.monotonic() + 120
        while stopped is None and sweep.poll() is None and time.monotonic() < deadline:
            try:
                for proc in psutil.Process(sweep.pid).children(recursive=True):
                    tree.setdefault(proc.pid, proc)
                    if proc.status() == psutil.STATUS_STOPPED:
                        stopped = proc
            except psutil.NoSuchProcess:
                break
            time.sleep(0.005)
        assert stopped is not None, "no implementation was ever seen stopped"
        sweep.kill()
        sweep.wait(10)
        alive = _gone(list(tree), within=10.0)
        assert alive == [], f"processes of the sweep outlived it: {alive} (stopped one: {stopped.pid})"
    finally:
        sweep.kill()
        sweep.wait(10)
        for proc in tree.values():
            try:
                proc.kill()
            except psutil.Error:
                pass


def test_a_sigkilled_certify_leaves_no_pytest_tree_running(tmp_path: Path) -> None:
    """``certify`` runs pytest (and its xdist workers, and their implementations) in a child
    session. SIGKILL ``certify`` mid-run: its whole tree must be gone soon after."""
    certify = subprocess.Popen([sys.executable, "-m", "conformance", "certify", "--progress", "none", "-n", "2",
                                "--report-dir", str(tmp_path / "r")], cwd=tmp_path,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    tree: dict[int, psutil.Process] = {}
    try:
        deadline = time.monotonic() + 120
        adapters = 0
        while adapters < 2 and certify.poll() is None and time.monotonic() < deadline:
            for proc in psutil.Process(certify.pid).children(recursive=True):
                tree.setdefault(proc.pid, proc)
            adapters = sum(1 for p in tree.values() if _is_adapter(p))
            time.sleep(0.05)
        assert adapters >= 2, "the run never started its implementations"
        certify.kill()
        certify.wait(10)
        alive = _gone(list(tree), within=15.0)
        assert alive == [], f"processes of certify outlived it: {alive}"
    finally:
        certify.kill()
        certify.wait(10)
        for proc in tree.values():
            try:
                proc.kill()
            except psutil.Error:
                pass


def _is_adapter(proc: psutil.Process) -> bool:
    try:
        return "maka_ref.adapter" in " ".join(proc.cmdline())
    except psutil.Error:
        return False


# ---------------------------------------------------------------------------------- 5. SIGINT


def _tree_of(pid: int, into: dict[int, psutil.Process]) -> None:
    try:
        for proc in psutil.Process(pid).children(recursive=True):
            into.setdefault(proc.pid, proc)
    except psutil.NoSuchProcess:
        pass


def _interrupt_when(proc: "subprocess.Popen[str]", ready: "Callable[[], bool]", tree: dict[int, psutil.Process],
                    within: float = 120.0) -> tuple[int, str]:
    """Wait until ``ready()``, send SIGINT, and return (exit status, stderr)."""
    deadline = time.monotonic() + within
    while not ready() and proc.poll() is None and time.monotonic() < deadline:
        _tree_of(proc.pid, tree)
        time.sleep(0.05)
    _tree_of(proc.pid, tree)
    assert proc.poll() is None, "the command ended before it could be interrupted"
    assert ready(), "the command never got far enough to be interrupted"
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=90)
    return proc.returncode, err


def _finished_clauses(events: Path) -> int:
    try:
        return sum(1 for line in events.read_text().splitlines() if '"event": "clause"' in line)
    except OSError:
        return 0


def test_sigint_to_certify_writes_a_partial_report_and_leaves_nothing_running(tmp_path: Path) -> None:
    report_dir = tmp_path / "r"
    certify = subprocess.Popen([sys.executable, "-m", "conformance", "certify", "--progress", "none", "-n", "2",
                                "--report-dir", str(report_dir)], cwd=tmp_path, text=True,
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True)
    tree: dict[int, psutil.Process] = {}
    try:
        status, err = _interrupt_when(certify, lambda: _finished_clauses(report_dir / "events.jsonl") >= 3, tree)
        assert "Traceback" not in err, err
        assert status == 130, (status, err)
        assert len(err.strip().splitlines()) == 1 and "interrupted" in err, err
        report = json.loads((report_dir / "report.json").read_text())
        assert report["interrupted"] is True
        assert len(report["clauses"]) >= 3
        assert any("interrupted" in e for e in report["harness_errors"])
        assert report["level_reached"] is None
        assert _gone(list(tree), within=10.0) == []
    finally:
        certify.kill()
        certify.communicate()
        _kill_all(list(tree))


def test_sigint_to_a_sweep_writes_a_partial_report_and_leaves_nothing_running(tmp_path: Path) -> None:
    report_dir, progress = tmp_path / "r", tmp_path / "progress.txt"
    with open(progress, "w") as out:
        sweep = subprocess.Popen([sys.executable, "-m", "crashlab", "sweep", "--mode", "prefix", "--trials", "3", "-n", "2",
                                  "--report-dir", str(report_dir)], cwd=tmp_path, text=True,
                                 stdout=out, stderr=subprocess.PIPE, start_new_session=True)
    tree: dict[int, psutil.Process] = {}
    try:
        status, err = _interrupt_when(sweep, lambda: "[2/" in progress.read_text(), tree)
        assert "Traceback" not in err, err
        assert status == 130, (status, err)
        assert len(err.strip().splitlines()) == 1 and "interrupted" in err, err
        report = json.loads((report_dir / "crashlab-sweep.json").read_text())
        assert report["interrupted"] is True and report["ok"] is False
        assert 2 <= len(report["trials"]) < report["planned"]
        assert not any("interrupted" in t.get("message", "") for t in report["trials"])
        assert "Interrupted" in (report_dir / "crashlab-sweep.md").read_text()
        assert _gone(list(tree), within=10.0) == []
    finally:
        sweep.kill()
        sweep.communicate()
        _kill_all(list(tree))


def test_sigint_to_selftest_writes_a_partial_report_and_leaves_nothing_running(tmp_path: Path) -> None:
    """Two mutants certified at once; SIGINT once the first has finished: the self-test report
    holds the finished ones and is marked interrupted; every certification's tree is gone."""
    from conformance._selftest._run import list_mutants

    names = [m["name"] for m in list_mutants()][:6]
    report_dir, log = tmp_path / "r", tmp_path / "stderr.txt"
    with open(log, "w") as err_file:
        selftest = subprocess.Popen([sys.executable, "-m", "conformance", "selftest", "--no-baseline", "--variants",
                                     "none", "-n", "2", "--mutants", ",".join(names), "--report-dir", str(report_dir)],
                                    cwd=tmp_path, text=True, stdout=subprocess.DEVNULL, stderr=err_file,
                                    start_new_session=True)
    tree: dict[int, psutil.Process] = {}

    def one_finished() -> bool:  # the progress line of a finished mutant names it
        return any(name in log.read_text() for name in names)

    try:
        status, _ = _interrupt_when(selftest, one_finished, tree)
        err = log.read_text()
        assert "Traceback" not in err, err
        assert status == 130, (status, err)
        assert [line for line in err.splitlines() if "interrupted" in line] == [err.strip().splitlines()[-1]], err
        report = json.loads((report_dir / "selftest.json").read_text())
        assert report["interrupted"] is True and report["planned"] == len(names)
        assert 1 <= report["score"]["total"] < len(names)
        assert _gone(list(tree), within=10.0) == []
    finally:
        selftest.kill()
        selftest.communicate()
        _kill_all(list(tree))


def test_sigint_to_fuzz_writes_a_partial_report_and_leaves_nothing_running(tmp_path: Path) -> None:
    report_dir, log = tmp_path / "r", tmp_path / "stdout.txt"
    with open(log, "w") as out:
        fuzz = subprocess.Popen([sys.executable, "-m", "conformance", "fuzz", "--examples", "100000", "--seed", "7",
                                 "--only", "ledger", "--report-dir", str(report_dir)], cwd=tmp_path, text=True,
                                stdout=out, stderr=subprocess.PIPE, start_new_session=True)
    tree: dict[int, psutil.Process] = {}

    def searching() -> bool:  # the handshake is done: the example database is created next
        _tree_of(fuzz.pid, tree)
        return (report_dir / ".hypothesis" / "maka-fuzz").is_dir() and any(_is_adapter(p) for p in tree.values())

    try:
        status, err = _interrupt_when(fuzz, searching, tree)
        assert "Traceback" not in err, err
        assert status == 130, (status, err)
        assert len(err.strip().splitlines()) == 1 and "interrupted" in err, err
        report = json.loads((report_dir / "fuzz.json").read_text())
        assert report["interrupted"] is True
        assert report["properties"]["ledger"]["stopped"] == "interrupted"
        assert _gone(list(tree), within=10.0) == []
    finally:
        fuzz.kill()
        fuzz.communicate()
        _kill_all(list(tree))


def test_a_closed_stdout_is_one_error_line_not_a_traceback(tmp_path: Path) -> None:
    """``crashlab sweep --list | head -1``: the reader goes away while the listing (megabytes: more
    than a pipe holds) is written; one error line, exit 2."""
    proc = subprocess.Popen([sys.executable, "-m", "crashlab", "sweep", "--list", "--trials", "300"], cwd=tmp_path,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stdout.readline()
    proc.stdout.close()  # like head after its first line
    err = proc.stderr.read() if proc.stderr is not None else ""
    assert proc.wait(60) == 2, err
    assert "Traceback" not in err and err.strip().splitlines() == ["crashlab: error: output_unwritable: stdout was closed"]


def test_sigint_to_self_fuzz_stops_every_target_and_writes_a_partial_report(tmp_path: Path) -> None:
    """``fuzz --self``: Ctrl-C in the first target used to stop only that target (Hypothesis
    catches the interrupt) and the next one started; now the run stops, ``selffuzz.json`` is
    written marked interrupted with the target that was stopped and the one that never ran."""
    report_dir = tmp_path / "r"
    fuzz = subprocess.Popen([sys.executable, "-m", "conformance", "fuzz", "--self", "--only-target", "codec",
                             "--only-target", "ledger", "--examples", "1000000", "--seed", "7",
                             "--report-dir", str(report_dir)], cwd=tmp_path, text=True,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True)
    tree: dict[int, psutil.Process] = {}
    try:
        status, err = _interrupt_when(fuzz, lambda: (report_dir / ".hypothesis" / "maka-fuzz" / "self-codec").is_dir(),
                                      tree)
        assert "Traceback" not in err, err
        assert status == 130, (status, err)
        assert len(err.strip().splitlines()) == 1 and "interrupted" in err, err
        report = json.loads((report_dir / "selffuzz.json").read_text())
        assert report["interrupted"] is True
        assert report["targets"]["codec"]["stopped"] == "interrupted"
        assert report["targets"]["ledger"] == {"examples": 0, "stopped": "not run (interrupted)", "bundle": None}
    finally:
        fuzz.kill()
        fuzz.communicate()
        _kill_all(list(tree))


_SWALLOWER = """
import sys, time
from crashlab._lab.ending import install_interrupt_watchdog
install_interrupt_watchdog("swallower", grace=float(sys.argv[1]))
def swallow_every_interrupt():
    ready = False
    while True:
        try:
            if not ready:  # inside the try: a Ctrl-C right after "ready" is swallowed too
                ready = True
                print("ready", flush=True)
            time.sleep(0.05)
        except KeyboardInterrupt:
            pass  # the bug the watchdog is for: something below swallows Ctrl-C
swallow_every_interrupt()
"""


_GC_CALLBACK = """
import gc, sys, time
from crashlab._lab.ending import install_interrupt_watchdog
install_interrupt_watchdog("collector", grace=600)
inside = []
def callback(phase, info):  # a Ctrl-C arriving here must not be lost
    if phase == "start" and not inside:
        inside.append(1)
        print("in callback", flush=True)
        time.sleep(2.0)  # the signal arrives while the collector runs this
gc.callbacks.append(callback)
try:
    gc.collect()
    while True:
        time.sleep(0.05)
except KeyboardInterrupt:
    print("interrupted", flush=True)
    sys.exit(130)
"""


def test_a_ctrl_c_during_a_gc_callback_is_delivered_not_lost(tmp_path: Path) -> None:
    """CPython drops an exception raised in a gc callback ("Exception ignored in"): a Ctrl-C
    whose handler ran there was lost and the fuzz ran on (seen in CI). The handler now delivers
    it again outside the collector."""
    proc = subprocess.Popen([sys.executable, "-c", _GC_CALLBACK], cwd=tmp_path, text=True, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, start_new_session=True)
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "in callback"
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=30)
        assert proc.returncode == 130 and out.strip() == "interrupted", (proc.returncode, out, err)
        assert "Exception ignored" not in err, err
    finally:
        proc.kill()
        proc.communicate()


@pytest.mark.parametrize("second_interrupt", [False, True])
def test_an_interrupt_that_is_swallowed_still_ends_the_process_with_130(tmp_path: Path, second_interrupt: bool) -> None:
    """The console entry points' watchdog: a Ctrl-C that something swallows ends the process
    after the grace with 130 and every thread's stack on stderr (the stuck place named); a
    second Ctrl-C ends it at once."""
    proc = subprocess.Popen([sys.executable, "-c", _SWALLOWER, "1.0" if not second_interrupt else "600"], cwd=tmp_path,
                            text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
        proc.send_signal(signal.SIGINT)
        if second_interrupt:
            time.sleep(0.3)
            proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=30)
        assert proc.returncode == 130, (proc.returncode, err)
        if second_interrupt:
            assert err.strip() == "swallower: interrupted twice: exiting now"
        else:
            assert err.startswith("swallower: interrupted, but still stopping after 1 s; exiting")
            assert "swallow_every_interrupt" in err  # the stack names where it was stuck
    finally:
        proc.kill()
        proc.communicate()
