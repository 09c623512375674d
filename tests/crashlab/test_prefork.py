"""Pre-forked children (``crashlab/_client/_zygote/client.py``): same protocol behaviour, real kills,
nothing left running, and a plain spawn wherever the command is not ``python -m``.

Each test uses its own environment variable value, so it gets its own zygote (zygotes are
keyed by command line and environment) and can check that zygote's lifetime in isolation.
"""

from __future__ import annotations

import os
import signal
import sys
import time
import uuid
from typing import Any

import pytest

psutil = pytest.importorskip("psutil")

from crashlab import SESSION_ENV, ProtocolClient, ProtocolFailure, Reply  # noqa: E402
from crashlab._client._zygote import client as _zygote  # noqa: E402
from crashlab._client._zygote.client import ForkedChild, prefork_argv, shutdown_zygotes, zygote_pids  # noqa: E402
from crashlab.testing import bad_adapter as ba  # noqa: E402

pytestmark = pytest.mark.skipif(not _zygote.supported(), reason="pre-forking needs fork and send_fds (POSIX)")


def _live(proc: Any) -> bool:
    try:
        return proc.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


@pytest.fixture
def env() -> Any:
    """A fresh environment (so a fresh zygote); afterwards nothing of ours may be alive."""
    before = {p.pid for p in psutil.Process().children(recursive=True)}
    yield ba.environment({**os.environ, "CRASHLAB_PREFORK_TEST": uuid.uuid4().hex})
    shutdown_zygotes()
    assert zygote_pids() == []
    left = [p for p in psutil.Process().children(recursive=True) if p.pid not in before and _live(p)]
    assert left == [], f"a zygote or a child survived: {left}"


def _start(mode: str, env: dict[str, str], prefork: bool | None = True, **kw: Any) -> ProtocolClient:
    kw.setdefault("handshake_timeout", 15.0)
    kw.setdefault("request_timeout", 2.0)
    return ProtocolClient.start(ba.command(mode, "prefork-test"), env=env, prefork=prefork, **kw)


def test_command_selection() -> None:
    exe = sys.executable
    assert prefork_argv([exe, "-m", "maka_ref.adapter", "--claim", "store"], True) == ("maka_ref.adapter",
                                                                                         ["--claim", "store"])
    assert prefork_argv([exe, "-m", "maka_ref.adapter"], False) is None
    assert prefork_argv([exe, "-c", "pass"], True) is None
    assert prefork_argv([exe, "-X", "dev", "-m", "x"], True) is None
    assert prefork_argv(["/bin/sh", "-m", "x"], True) is None
    assert prefork_argv(["node", "adapter.js"], True) is None


def test_opt_out_environment_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CRASHLAB_NO_PREFORK", "1")
    assert prefork_argv([sys.executable, "-m", "x"], None) is None
    assert prefork_argv([sys.executable, "-m", "x"], True) == ("x", [])  # forced
    monkeypatch.setenv("CRASHLAB_NO_PREFORK", "0")
    assert prefork_argv([sys.executable, "-m", "x"], None) == ("x", [])


def _transcript(client: ProtocolClient) -> list[Any]:
    hs = client.handshake
    out: list[Any] = [(hs.protocol, hs.name, hs.version, hs.capabilities, hs.failpoints)]
    out.append(client.call("echo", {"x": [1, "é"]}))
    out.append(client.call("ledger.frobnicate"))
    out.append(client.call("faults.arm", {"failpoint": ba.FAILPOINTS[1]}))
    out.append(client.call_until_failpoint("work", {"through": list(ba.FAILPOINTS)}, failpoint=ba.FAILPOINTS[1],
                                           timeout=5.0))
    proof = client.kill()
    out.append((proof.returncode, proof.killed_by_sigkill, proof.survivors, proof.verdict))
    return out


def test_prefork_gives_identical_protocol_behaviour(env: dict[str, str]) -> None:
    forked, plain = _start("good", env, prefork=True), _start("good", env, prefork=False)
    assert isinstance(forked._tree.popen, ForkedChild) and not isinstance(plain._tree.popen, ForkedChild)
    assert _transcript(forked) == _transcript(plain)
    assert forked.close() == plain.close()
    seen = {}
    for prefork in (True, False):  # the environment and working directory the client asked for
        with _start("good", env, prefork=prefork, cwd="/") as client:
            got = client.call("environ").result
            seen[prefork] = got
            assert got["cwd"] == "/" and got["environ"]["MAKA_CONFORMANCE"] == "1"
            assert len(got["environ"][SESSION_ENV]) == 32
            assert got["environ"]["CRASHLAB_PREFORK_TEST"] == env["CRASHLAB_PREFORK_TEST"]
    strip = {SESSION_ENV}
    assert ({k: v for k, v in seen[True]["environ"].items() if k not in strip}
            == {k: v for k, v in seen[False]["environ"].items() if k not in strip})


def test_clean_exit_status_and_stderr_come_through(env: dict[str, str]) -> None:
    with _start("good", env) as client:
        assert isinstance(client._tree.popen, ForkedChild)
        assert client.call("echo") == Reply(True, {"params": {}}, None)
        report = client.close()
    assert (report.exit_status, report.escalated, report.survivors, report.verdict) == (0, None, (), None)
    assert "bad_adapter[good] stdin closed" in client.stderr_tail


def test_exit_verdicts_via_zygote_status(env: dict[str, str]) -> None:
    with pytest.raises(ProtocolFailure) as info:
        _start("partial", env).call("echo")
    assert info.value.verdict == "exited" and info.value.exit_status == ba.PARTIAL_EXIT_STATUS
    client = _start("ignore_sigterm", env)
    started = time.monotonic()
    report = client.close(timeout=0.5)
    assert report.verdict == "shutdown_timeout" and report.escalated == "sigkill"
    assert report.exit_status == -signal.SIGKILL and time.monotonic() - started < 10


def test_kill_proof_is_real(env: dict[str, str]) -> None:
    client = _start("good", env)
    pid = client.pid
    zygotes = zygote_pids()
    assert len(zygotes) >= 1 and psutil.Process(pid).ppid() in zygotes  # forked by a zygote
    assert os.getsid(pid) == pid and os.getpgid(pid) == pid  # its own session, as a plain spawn
    client.call("faults.arm", {"failpoint": ba.FAILPOINTS[0]})
    assert client.call_until_failpoint("work", {"through": [ba.FAILPOINTS[0]]}, failpoint=ba.FAILPOINTS[0],
                                       timeout=5.0) == ba.FAILPOINTS[0]
    proof = client.kill()
    assert proof.returncode == -signal.SIGKILL and proof.killed_by_sigkill and proof.survivors == ()
    assert not psutil.pid_exists(pid) or not _live(psutil.Process(pid))
    # a status the zygote did not see as SIGKILL is not a kill proof: an own exit stays itself
    client = _start("exit_early", env)
    with pytest.raises(ProtocolFailure) as info:
        client.call("echo")
    assert info.value.exit_status == ba.EARLY_EXIT_STATUS and client.kill().killed_by_sigkill is False


def test_grandchildren_are_found_and_killed(env: dict[str, str]) -> None:
    client = _start("grandchild", env)
    assert isinstance(client._tree.popen, ForkedChild)
    client.call("echo")
    proof = client.kill()
    assert proof.killed_by_sigkill and proof.survivors != ()  # it escaped the group: found, killed, reported


def test_zygote_is_reaped_and_children_do_not_outlive_it(env: dict[str, str]) -> None:
    clients = [_start("good", env) for _ in range(3)]
    [zygote] = [z for z in zygote_pids() if psutil.Process(z).children()]
    assert {c.pid for c in clients} <= {p.pid for p in psutil.Process(zygote).children()}
    for c in clients:
        c.close()
    shutdown_zygotes()
    assert not psutil.pid_exists(zygote) or not _live(psutil.Process(zygote))


def test_fallback_to_plain_spawn(env: dict[str, str], tmp_path: Any) -> None:
    script = tmp_path / "adapter.py"
    script.write_text("import runpy, sys; sys.argv[1:1] = []; runpy.run_module('crashlab.testing.bad_adapter', "
                      "run_name='__main__')\n")
    with ProtocolClient.start([sys.executable, str(script), "good", "x"], env=env, prefork=True) as client:
        assert not isinstance(client._tree.popen, ForkedChild)
        assert client.call("echo").ok
    assert client.close().verdict is None
    # a module the zygote cannot import: the zygote fails, the client spawns plainly (and
    # the plain child then fails the same way it always would)
    with pytest.raises(ProtocolFailure) as info:
        ProtocolClient.start([sys.executable, "-m", "no_such_module_for_crashlab"], env=env, prefork=True,
                             handshake_timeout=10.0)
    assert info.value.verdict == "exited" and "No module named" in info.value.stderr_tail


def test_import_time_environment_is_the_childs(env: dict[str, str]) -> None:
    """A module that reads the environment at import sees the child's: one zygote per environment."""
    armed = {**env, "MAKA_REF_FAILPOINT": "P3"}
    with ProtocolClient.start([sys.executable, "-m", "maka_ref.adapter"], env=armed, prefork=True) as a:
        assert isinstance(a._tree.popen, ForkedChild)
        zygote = psutil.Process(psutil.Process(a.pid).ppid())
        assert zygote.pid in zygote_pids() and zygote.environ()["MAKA_REF_FAILPOINT"] == "P3"  # imported under it
        before = set(zygote_pids())
    with ProtocolClient.start([sys.executable, "-m", "maka_ref.adapter"], env=env, prefork=True) as b:
        assert isinstance(b._tree.popen, ForkedChild)
        assert set(zygote_pids()) != before  # a different zygote for a different environment
    assert _zygote._key("m", [], armed, SESSION_ENV) != _zygote._key("m", [], env, SESSION_ENV)
    assert _zygote._key("m", [], {**env, SESSION_ENV: "a", "PYTEST_CURRENT_TEST": "x"}, SESSION_ENV) == \
        _zygote._key("m", [], env, SESSION_ENV)


def test_reference_trial_with_and_without_prefork() -> None:
    from crashlab import TrialSpec, run_trial

    for prefork in (True, False):
        result = run_trial(TrialSpec("P7", "prefix", "kill"), prefork=prefork)
        assert result.outcome == "passed", result.message
        assert any(c.name == "kill_was_real" and c.ok for c in result.checks)
