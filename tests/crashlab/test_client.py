"""The wire-protocol client against real misbehaving processes (protocol §1–§3, §7).

Every mode of :mod:`crashlab.testing.bad_adapter` is started for real. For each one: the
verdict is the expected one, it arrives within its timeout (elapsed bounds asserted), the
stderr tail is carried, and afterwards nothing is left running: no live process whose
command line carries the test's unique marker, and no live descendant of the test process.
"""

from __future__ import annotations

import os
import signal
import sys
import time
import uuid
from typing import Any, Iterator, Mapping

import pytest

psutil = pytest.importorskip("psutil")

from crashlab import (  # noqa: E402  (after the importorskip)
    SESSION_ENV,
    TAIL_BYTES,
    VERDICTS,
    CloseReport,
    KillProof,
    ProtocolClient,
    ProtocolFailure,
    Reply,
)
from crashlab._client._zygote.client import ForkedChild, zygote_pids  # noqa: E402
from crashlab.testing import bad_adapter as ba  # noqa: E402

SHORT = 2.0  # the deadline of requests that are meant to time out
STARTUP = 15.0  # handshake deadline for modes that answer hello (an interpreter start under load)
SLACK = 3.0  # kill + reap + scheduling on a loaded machine


def _live(proc: Any) -> bool:
    try:
        return proc.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def _marked(marker: str) -> list[str]:
    found = []
    for proc in psutil.process_iter(["cmdline"]):
        if marker in " ".join(proc.info.get("cmdline") or []) and _live(proc):
            found.append(f"{proc.pid} {proc.info['cmdline']}")
    return found


@pytest.fixture
def marker() -> Iterator[str]:
    """A unique token in every adapter's argv; nothing carrying it may outlive the test."""
    token = f"crashlab-test-{uuid.uuid4().hex}"
    before = {p.pid for p in psutil.Process().children(recursive=True)}
    yield token
    assert _marked(token) == [], "processes of the adapter survived"
    zygotes = set(zygote_pids())  # the pre-fork servers live on; their children may not
    left = [p for p in psutil.Process().children(recursive=True)
            if p.pid not in before and p.pid not in zygotes and _live(p)]
    assert left == [], f"descendants of the test process survived: {left}"


def start(mode: str, marker: str, **kwargs: Any) -> ProtocolClient:
    kwargs.setdefault("handshake_timeout", STARTUP)
    kwargs.setdefault("request_timeout", SHORT)
    return ProtocolClient.start(ba.command(mode, marker), env=ba.environment(), **kwargs)


# ------------------------------------------------------------------ happy path


def test_good_adapter_handshake_calls_and_clean_close(marker: str) -> None:
    seen: list[str] = []

    def validator(op: str, message: Mapping[str, Any]) -> list[str]:
        seen.append(op)
        return []

    client = ProtocolClient.start(
        " ".join(ba.command("good", marker)), env=ba.environment(), validator=validator
    )
    with client:
        hs = client.handshake
        assert (hs.protocol, hs.name, hs.version) == (1, "bad-adapter", "good")
        assert hs.capabilities == ("faults", "test.echo") and hs.failpoints == ba.FAILPOINTS
        environ = client.call("environ").result["environ"]
        assert environ["MAKA_CONFORMANCE"] == "1" and len(environ[SESSION_ENV]) == 32
        if not isinstance(client._tree.popen, ForkedChild):  # a fork keeps its zygote's /proc environ
            assert psutil.Process(client.pid).environ()[SESSION_ENV] == environ[SESSION_ENV]
        assert client.call("echo", {"x": [1, "é"]}) == Reply(True, {"params": {"x": [1, "é"]}}, None)
        refused = client.call("ledger.frobnicate")
        assert (refused.ok, refused.code) == (False, "unknown_op")
        report = client.close()
        assert report == CloseReport(exit_status=0, escalated=None, survivors=())
        assert report.verdict is None and client.close() is report  # idempotent
    assert seen == ["hello", "environ", "echo", "ledger.frobnicate"]
    assert "bad_adapter[good] stdin closed" in client.stderr_tail
    with pytest.raises(RuntimeError):
        client.call("echo")


def test_kill_is_a_real_sigkill(marker: str) -> None:
    client = start("good", marker)
    client.call("echo")
    started = time.monotonic()
    proof = client.kill()
    assert time.monotonic() - started < SLACK
    assert proof == KillProof(pid=client.pid, returncode=-signal.SIGKILL, killed_by_sigkill=True, survivors=())
    assert proof.verdict is None and client.kill() is proof
    assert not psutil.pid_exists(client.pid)
    report = client.close()
    assert (report.killed, report.exit_status, report.verdict) == (True, -9, None)


def test_call_until_failpoint_reached_then_killed(marker: str) -> None:
    client = start("good", marker)
    assert client.call("faults.arm", {"failpoint": "FP2"}).result == {"armed": "FP2"}
    started = time.monotonic()
    got = client.call_until_failpoint("work", {"through": ["FP1", "FP2", "FP3"]}, failpoint="FP2", timeout=SHORT)
    assert got == "FP2" and time.monotonic() - started < SHORT
    assert _live(psutil.Process(client.pid))  # announced and blocked: not exited, not killed
    with pytest.raises(RuntimeError):
        client.call("echo")
    assert client.kill().killed_by_sigkill


def test_call_until_failpoint_unreached_returns_the_reply(marker: str) -> None:
    with start("good", marker) as client:
        client.call("faults.arm", {"failpoint": "FP3"})
        got = client.call_until_failpoint("work", {"through": ["FP1"]}, failpoint="FP3", timeout=SHORT)
        assert got == Reply(True, {"passed": ["FP1"]}, None)
        assert client.call("echo").ok  # the session goes on


def test_call_until_failpoint_other_point_is_unexpected(marker: str) -> None:
    client = start("good", marker)
    client.call("faults.arm", {"failpoint": "FP1"})
    with pytest.raises(ProtocolFailure) as info:
        client.call_until_failpoint("work", {"through": ["FP1"]}, failpoint="FP2", timeout=SHORT)
    assert info.value.verdict == "unexpected_failpoint" and "'FP1'" in info.value.message


def test_validator_errors_are_protocol_violations(marker: str) -> None:
    def validator(op: str, message: Mapping[str, Any]) -> list[str]:
        return ["/result: 'answer' is a required property"] if op == "echo" else []

    client = start("good", marker, validator=validator)
    with pytest.raises(ProtocolFailure) as info:
        client.call("echo")
    failure = info.value
    assert (failure.verdict, failure.op, failure.exit_status) == ("protocol_violation", "echo", -9)
    assert "'answer' is a required property" in failure.message


def test_context_manager_reaps_on_a_harness_exception(marker: str) -> None:
    with pytest.raises(KeyError):
        with start("ignore_sigterm", marker) as client:
            raise KeyError("harness bug")
    assert not psutil.pid_exists(client.pid)


def test_spawn_failed() -> None:
    started = time.monotonic()
    with pytest.raises(ProtocolFailure) as info:
        ProtocolClient.start(["/nonexistent/maka-adapter", "--x"])
    assert info.value.verdict == "spawn_failed" and time.monotonic() - started < 1.0
    assert "/nonexistent/maka-adapter" in info.value.message


# ------------------------------------------------------------------ one verdict per mode

# mode -> (when it misbehaves, exit status, deadline the verdict must beat)
FAILING = {
    "hang": ("call", -9, SHORT),
    "hang_hello": ("hello", -9, SHORT),
    "deaf": ("call", -9, SHORT),
    "garbage": ("call", -9, 0.0),
    "partial": ("call", ba.PARTIAL_EXIT_STATUS, 0.0),
    "exit_early": ("call", ba.EARLY_EXIT_STATUS, 0.0),
    "wrong_id": ("call", -9, 0.0),
    "flood": ("call", -9, 0.0),
    "double_response": ("call", -9, 0.0),
    "announce_unarmed": ("call", -9, 0.0),
    "old_protocol": ("hello", -9, 0.0),
}


@pytest.mark.parametrize("mode", sorted(FAILING))
def test_misbehaviour_becomes_its_verdict(mode: str, marker: str) -> None:
    phase, exit_status, deadline = FAILING[mode]
    timeouts = {"handshake_timeout": SHORT if mode == "hang_hello" else STARTUP}
    params = {"blob": "y" * (4 << 20)} if mode == "deaf" else {}  # far beyond a pipe buffer
    client = None
    started = time.monotonic()
    with pytest.raises(ProtocolFailure) as info:
        client = start(mode, marker, **timeouts)
        started = time.monotonic()
        client.call("echo", params)
        client.call("echo", params)  # a double response shows before the second request
    elapsed = time.monotonic() - started
    failure = info.value
    assert failure.verdict == ba.EXPECTED[mode] and failure.verdict in VERDICTS
    assert failure.op == ("hello" if phase == "hello" else "echo")
    assert (client is None) == (phase == "hello")
    assert failure.exit_status == exit_status
    assert f"bad_adapter[{mode}] pid" in failure.stderr_tail
    if mode != "old_protocol":
        assert f"bad_adapter[{mode}] misbehaving now" in failure.stderr_tail
    assert failure.survivors == ()
    startup = 2.0 if client is None else 0.0  # an interpreter start under load
    assert deadline <= elapsed < deadline + SLACK + startup
    if client is not None:
        with pytest.raises(RuntimeError):
            client.call("echo")
        assert client.close().killed
    if mode in ("garbage", "wrong_id", "double_response"):
        assert "'" in failure.message and len(failure.message) < 400  # the line, truncated
    if mode == "garbage":
        assert "this is not JSON" in failure.message
    if mode == "partial":
        assert '{"id": 1, "ok": tr' in failure.message


@pytest.mark.parametrize("mode", ["grandchild", "orphan"])
@pytest.mark.parametrize("ending", ["close", "kill"])
def test_escaped_grandchild_is_a_survivor_and_is_killed(mode: str, ending: str, marker: str) -> None:
    client = start(mode, marker)
    assert client.call("echo").ok
    deadline = time.monotonic() + STARTUP  # the sleeper may be forked but not yet exec'd (old cmdline)
    while True:
        escaped = [p for p in psutil.process_iter(["cmdline"]) if "bad_adapter-sleeper" in (p.info["cmdline"] or [])
                   and marker in p.info["cmdline"]]
        if escaped or time.monotonic() > deadline:
            break
        time.sleep(0.01)
    if len(escaped) != 1:
        client.kill()
    assert len(escaped) == 1
    started = time.monotonic()
    result: CloseReport | KillProof = client.close() if ending == "close" else client.kill()
    assert time.monotonic() - started < SLACK
    assert result.survivors == (escaped[0].pid,) and result.verdict == "survivors"
    assert not _live(escaped[0])
    assert "left an escaped sleeper behind" in client.stderr_tail


def test_ignore_sigterm_is_a_shutdown_timeout(marker: str) -> None:
    client = start("ignore_sigterm", marker)
    assert client.call("echo").ok
    started = time.monotonic()
    report = client.close(timeout=0.5)
    assert 0.5 + 2.0 <= time.monotonic() - started < 0.5 + 2.0 + SLACK
    assert report == CloseReport(exit_status=-9, escalated="sigkill", survivors=())
    assert report.verdict == "shutdown_timeout"
    assert "ignoring end of stdin" in client.stderr_tail


def test_exit_with_nonzero_status_at_close(marker: str) -> None:
    client = start("exit_early", marker)
    report = client.close()
    assert (report.exit_status, report.verdict) == (ba.EARLY_EXIT_STATUS, "exited")


def test_stderr_tail_is_the_last_64_kib(marker: str) -> None:
    with start("stderr_spam", marker) as client:
        assert client.call("echo", {"n": 1}).ok
        client.close()
    tail = client.stderr_tail
    assert 60_000 < len(tail.encode()) <= TAIL_BYTES
    assert ba.STDERR_END in tail and tail.endswith("stdin closed, exiting 0\n")
    assert "spam line 000000" not in tail and "spam line 019999" in tail


def test_bad_adapter_rejects_unknown_modes() -> None:
    with pytest.raises(ValueError):
        ba.command("nonsense")
    assert set(ba.MODES) == set(ba.EXPECTED) and all(v in VERDICTS for v in ba.EXPECTED.values() if v)
    assert sys.executable == ba.command("good")[0] and os.path.isdir(ba.environment()["PYTHONPATH"].split(os.pathsep)[0])


# ------------------------------------------------------------------ the pieces, without processes


def test_line_reader_splits_chunks_caps_lines_and_reports_partial_eof() -> None:
    from crashlab._client._lines import Eof, Flood, Line, LineReader

    read_fd, write_fd = os.pipe()
    reader = LineReader(read_fd, max_line=10)
    os.write(write_fd, b'{"a"')
    os.write(write_fd, b':1}\n\nabc')
    os.close(write_fd)
    assert reader.join(5.0)
    items = [reader.items.get_nowait() for _ in range(3)]
    assert items == [Line(b'{"a":1}'), Line(b""), Eof(b"abc")]
    os.close(read_fd)

    read_fd, write_fd = os.pipe()
    reader = LineReader(read_fd, max_line=10)
    os.write(write_fd, b"0123456789\n" + b"x" * 11)  # exactly the cap is fine, one more is not
    assert reader.join(5.0)
    assert [reader.items.get_nowait() for _ in range(2)] == [Line(b"0123456789"), Flood(11, b"x" * 11)]
    os.close(write_fd)
    os.close(read_fd)


def test_stderr_tail_keeps_only_the_end() -> None:
    from crashlab._client._stderr import StderrTail

    read_fd, write_fd = os.pipe()
    tail = StderrTail(read_fd, limit=8)
    os.write(write_fd, b"0123456789")
    os.write(write_fd, "abcé".encode())
    os.close(write_fd)
    assert tail.join(5.0)
    assert tail.text() == "789abcé"  # the last 8 bytes: é is two of them
    os.close(read_fd)


def test_envelope_rules() -> None:
    from crashlab._client import _messages as msgs

    with pytest.raises(ValueError, match="not JSON"):
        msgs.parse_object(b'{"id": 1, "x": NaN}')
    with pytest.raises(ValueError, match="not a JSON object"):
        msgs.parse_object(b"[1]")
    with pytest.raises(ValueError, match="not UTF-8"):
        msgs.parse_object(b'{"a": "\xff"}')
    assert msgs.check_response({"id": 3, "ok": True, "result": {}}, 3) is None
    assert "wrong id" in (msgs.check_response({"id": 9, "ok": True, "result": {}}, 3) or "")
    assert "integer id" in (msgs.check_response({"id": True, "ok": True, "result": {}}, 1) or "")
    assert "code" in (msgs.check_response({"id": 3, "ok": False, "error": {"message": "x"}}, 3) or "")
    assert "result" in (msgs.check_response({"id": 3, "ok": True}, 3) or "")
    assert msgs.is_announcement({"failpoint": "P3"}) and not msgs.is_announcement({"id": 1, "failpoint": "x"})
    assert len(msgs.preview(b"z" * 10_000)) < 260
    with pytest.raises(ValueError, match="protocol"):
        msgs.parse_handshake(Reply(True, {"protocol": 2, "implementation": {"name": "a", "version": "1"},
                                          "capabilities": []}, None))
    with pytest.raises(ValueError, match="capabilities"):
        msgs.parse_handshake(Reply(True, {"protocol": 1, "implementation": {"name": "a", "version": "1"}}, None))


def test_reused_pid_never_gets_our_group_signals(marker: str) -> None:
    """After the leader is reaped its pid — our group id — may name another process (under a
    sweep: another trial's fresh adapter, the leader of a new session of that id). The old
    group must then be neither signalled nor scanned (a stray SIGKILL made that adapter
    "exit before answering hello" with an empty stderr)."""
    import subprocess

    client = start("good", marker)
    tree = client._tree
    client.kill()
    stranger = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)", marker],
                                start_new_session=True)
    try:
        # pretend the kernel handed our old pid to the stranger (pid reuse after a wrap-around)
        tree.pid = tree.pgid = stranger.pid
        assert tree.group_is_ours() is False
        tree.signal_group(signal.SIGKILL)
        tree.emergency_kill()
        assert all(p.pid != stranger.pid for p in tree.members())
        time.sleep(0.2)
        assert stranger.poll() is None, "the stranger was killed through a reused group id"
    finally:
        stranger.kill()
        stranger.wait()
