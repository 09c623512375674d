"""Issue 13 item 2: bounded, typed reads — no input can make a command read without end, block
on a FIFO, or buffer what a client sends without limit.

Why real processes with resource limits: a regression here does not fail, it hangs or eats
the machine. Every command runs as a real child under a hard ``timeout`` (a hang fails the
test) and, where the old behaviour was to fill memory or disk, under ``RLIMIT_AS`` /
``RLIMIT_FSIZE`` (the old behaviour then dies fast instead of hurting the suite's machine).
What is asserted is what a user sees: exit status, one JSON error document with a stable code,
no traceback, nothing left behind, nothing changed.
"""

from __future__ import annotations

import hashlib
import json
import os
import resource
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any, Callable

import psutil
import pytest

from maka_ref._store.runtime_store import RuntimeStore
from maka_ref.testing import families as fam

EXAMPLES = Path(__file__).resolve().parents[2] / "maka_ref" / "examples"
MIB = 1024 * 1024
#: Hard wall-clock bound per command: far above what a correct answer takes; a hang fails.
HANG_S = 60


def _limited(address_space: int = 2048 * MIB, file_size: int = 256 * MIB) -> Callable[[], None]:
    def apply() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (address_space, address_space))
        resource.setrlimit(resource.RLIMIT_FSIZE, (file_size, file_size))

    return apply


def _maka_ref(*args: str, env: dict[str, str] | None = None, stdin: Any = subprocess.DEVNULL,
              timeout: float = HANG_S) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run([sys.executable, "-m", "maka_ref", *args], capture_output=True, text=True,
                              stdin=stdin, env=env, timeout=timeout, preexec_fn=_limited())
    except subprocess.TimeoutExpired:
        pytest.fail(f"maka-ref {' '.join(args)} did not answer within {timeout} s (it hangs)")


def _error(done: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    """The one JSON error document of a refused command (exit 2, no traceback)."""
    assert "Traceback" not in done.stderr, done.stderr[-2000:]
    assert done.returncode == 2, (done.returncode, done.stdout[-500:], done.stderr[-500:])
    lines = done.stdout.splitlines()
    assert len(lines) == 1, done.stdout[-500:]
    error = json.loads(lines[0])["error"]
    assert done.stderr.count("\n") == 1 and error["code"] in done.stderr
    return error


def _tree(root: Path) -> dict[str, Any]:
    """Every entry under ``root`` without following links: kind and content digest."""
    out: dict[str, Any] = {}
    for base, dirs, files in os.walk(root, followlinks=False):
        for name in dirs + files:
            path = Path(base, name)
            st = path.lstat()
            if path.is_symlink():
                out[str(path)] = ("link", os.readlink(path))
            elif path.is_file():
                out[str(path)] = ("file", hashlib.sha256(path.read_bytes()).hexdigest(), st.st_mtime_ns)
            else:
                out[str(path)] = (st.st_mode, None)
    return out


def _store(root: Path) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    with RuntimeStore.open(root) as store:
        store.append(fam.w_marker())
    return root


def _tmpdir_env(tmp: Path) -> dict[str, str]:
    tmp.mkdir(exist_ok=True)
    return {**os.environ, "TMPDIR": str(tmp)}


# --------------------------------------------------------------------------- inspect


def _place(path: Path, what: str, outside: Path) -> None:
    if path.exists() or path.is_symlink():
        path.unlink()
    if what == "dev_zero":
        path.symlink_to("/dev/zero")
    elif what == "fifo":
        os.mkfifo(path)
    elif what == "symlink_to_store_outside":
        _store(outside)
        path.symlink_to(outside / "runtime.sqlite")
    else:
        raise AssertionError(what)


@pytest.mark.parametrize(
    "name, what",
    [
        ("runtime.sqlite-wal", "dev_zero"),
        ("runtime.sqlite-wal", "fifo"),
        ("runtime.sqlite-shm", "dev_zero"),
        ("runtime.sqlite-shm", "fifo"),
        ("runtime.sqlite-journal", "fifo"),
        ("runtime.sqlite", "fifo"),
        ("runtime.sqlite", "dev_zero"),
        ("runtime.sqlite", "symlink_to_store_outside"),
    ],
)
def test_inspect_refuses_a_store_file_that_is_not_a_regular_file(tmp_path: Path, name: str, what: str) -> None:
    """A symlink to ``/dev/zero`` used to be copied without end into the temporary directory,
    a FIFO blocked the copy forever. Now: the store's own codes (``store_file_symlink``,
    ``store_file_not_regular``, as a writer open answers) naming the file, nothing copied, nothing left in the temporary directory, the workspace unchanged."""
    ws = _store(tmp_path / "ws")
    _place(ws / name, what, tmp_path / "outside")
    tmp = tmp_path / "tmp"
    before = _tree(tmp_path)
    error = _error(_maka_ref("inspect", "--workspace", str(ws), env=_tmpdir_env(tmp)))
    assert error["code"] == ("store_file_symlink" if what != "fifo" else "store_file_not_regular")
    assert name in error["message"] and "not a regular file" in error["message"]
    assert list(tmp.iterdir()) == []
    tmp.rmdir()
    assert _tree(tmp_path) == before


def test_inspect_still_reads_a_healthy_store(tmp_path: Path) -> None:
    ws = _store(tmp_path / "ws")
    tmp = tmp_path / "tmp"
    done = _maka_ref("inspect", "--workspace", str(ws), env=_tmpdir_env(tmp))
    assert done.returncode == 0, done.stdout + done.stderr
    assert json.loads(done.stdout)["storage"]["kind"] == "sqlite"
    assert list(tmp.iterdir()) == []


def _snapshot_dirs(tmp: Path) -> list[Path]:
    return sorted(tmp.glob("maka-ref-inspect-*"))


def test_a_killed_inspect_leaves_no_snapshot_after_the_next_inspect(tmp_path: Path) -> None:
    """SIGKILL during the copy runs no cleanup, so the snapshot directory stays; the next
    ``inspect`` (same temporary directory) removes the directory of the dead process."""
    big = tmp_path / "big"
    big.mkdir()
    with open(big / "runtime.sqlite", "wb") as handle:  # copied before SQLite ever sees it
        handle.truncate(200 * MIB)
    tmp = tmp_path / "tmp"
    env = _tmpdir_env(tmp)
    proc = subprocess.Popen([sys.executable, "-m", "maka_ref", "inspect", "--workspace", str(big)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env,
                            preexec_fn=_limited(file_size=512 * MIB))
    try:
        deadline = time.monotonic() + HANG_S
        while not any(d.is_dir() and any(d.iterdir()) for d in _snapshot_dirs(tmp)):
            assert proc.poll() is None, "inspect ended before the copy could be interrupted"
            assert time.monotonic() < deadline, "no snapshot directory appeared"
            time.sleep(0.001)
        proc.send_signal(signal.SIGKILL)
    finally:
        proc.kill()
        proc.wait(timeout=HANG_S)
    left = _snapshot_dirs(tmp)
    assert left, "the kill did not interrupt the copy"
    ws = _store(tmp_path / "ws")
    done = _maka_ref("inspect", "--workspace", str(ws), env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    assert _snapshot_dirs(tmp) == []


def test_the_sweep_keeps_a_live_owners_directory_and_foreign_entries(tmp_path: Path) -> None:
    """Only directories of *ended* owners go: this process's own (same pid and start time)
    stays, as do a name that does not parse, a link, and a pid reused by a newer process."""
    from maka_ref._inspect.private_dirs import PREFIX, sweep_stale_dirs

    me = psutil.Process()
    start_ms = round(me.create_time() * 1000)
    live = tmp_path / f"{PREFIX}{me.pid}-{start_ms}-abc"
    reused = tmp_path / f"{PREFIX}{me.pid}-{start_ms - 3_600_000}-abc"  # same pid, an hour older
    foreign = tmp_path / f"{PREFIX}xyz"
    link = tmp_path / f"{PREFIX}999999999-1-abc"
    target = tmp_path / "target"
    for d in (live, reused, foreign, target):
        d.mkdir()
        (d / "f").write_text("x")
    link.symlink_to(target)
    child = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True,
                           text=True, timeout=HANG_S)
    dead = tmp_path / f"{PREFIX}{int(child.stdout)}-{start_ms}-abc"
    dead.mkdir()
    (dead / "runtime.sqlite").write_bytes(b"x" * 10)
    removed = sweep_stale_dirs(tmp_path)
    assert sorted(removed) == sorted([reused, dead])
    assert live.is_dir() and foreign.is_dir() and link.is_symlink() and (target / "f").exists()
    assert not reused.exists() and not dead.exists()


# --------------------------------------------------------------------------- ledger input


@pytest.mark.parametrize("command", ["resolve", "plan", "encode"])
@pytest.mark.parametrize("what", ["dev_zero", "fifo", "directory"])
def test_a_ledger_that_is_not_a_regular_file_is_refused(tmp_path: Path, command: str, what: str) -> None:
    """``resolve /dev/zero`` used to read until ``MemoryError``; a FIFO blocked for ever; a
    directory was ``unreadable_input``. Now all three are ``input_not_regular_file``."""
    path = tmp_path / "ledger"
    if what == "dev_zero":
        path.symlink_to("/dev/zero")
    elif what == "fifo":
        os.mkfifo(path)
    else:
        path.mkdir()
    error = _error(_maka_ref(command, str(path)))
    assert error["code"] == "input_not_regular_file"
    assert "line" not in error


def test_a_symlink_to_a_regular_ledger_is_read(tmp_path: Path) -> None:
    link = tmp_path / "ledger.jsonl"
    link.symlink_to(EXAMPLES / "t1-completed.jsonl")
    via_link = _maka_ref("resolve", str(link))
    direct = _maka_ref("resolve", str(EXAMPLES / "t1-completed.jsonl"))
    assert via_link.returncode == 0 and via_link.stdout == direct.stdout


def _from_stdin(command: str, feed: Callable[[Any], None]) -> subprocess.CompletedProcess[str]:
    """Run ``command -`` with a pipe on stdin that ``feed`` writes into (in a thread, so a
    command that stops reading early cannot block the test)."""
    proc = subprocess.Popen([sys.executable, "-m", "maka_ref", command, "-"], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=False,
                            preexec_fn=_limited())

    def write() -> None:
        assert proc.stdin is not None
        try:
            feed(proc.stdin)
            proc.stdin.close()
        except (BrokenPipeError, ValueError, OSError):
            pass

    outputs: dict[str, bytes] = {}
    threads = [threading.Thread(target=write, daemon=True)]
    for name in ("stdout", "stderr"):
        stream = getattr(proc, name)
        threads.append(threading.Thread(target=lambda n=name, s=stream: outputs.__setitem__(n, s.read()),
                                        daemon=True))
    for thread in threads:
        thread.start()
    try:
        proc.wait(timeout=HANG_S)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        pytest.fail(f"maka-ref {command} - did not answer within {HANG_S} s")
    for thread in threads:
        thread.join(timeout=HANG_S)
    return subprocess.CompletedProcess(proc.args, proc.returncode, outputs["stdout"].decode(),
                                       outputs["stderr"].decode())


def test_stdin_without_a_newline_is_refused_at_the_line_bound() -> None:
    """A pipe may be endless: a line longer than 16 MiB is ``input_line_too_long`` (with its
    line number) instead of being buffered until memory runs out."""
    def endless(pipe: Any) -> None:
        block = b"x" * MIB
        for _ in range(1024):  # 1 GiB, far past the bound and the child's address-space limit
            pipe.write(block)

    error = _error(_from_stdin("resolve", endless))
    assert error["code"] == "input_line_too_long" and error["line"] == 1


def test_stdin_from_dev_zero_is_refused_at_the_line_bound() -> None:
    with open("/dev/zero", "rb") as zero:
        error = _error(_maka_ref("plan", "-", stdin=zero))
    assert error["code"] == "input_line_too_long"


def test_a_ledger_through_a_pipe_still_answers_like_the_file() -> None:
    path = EXAMPLES / "t1-crash-after-dispatch.jsonl"
    data = path.read_bytes()
    for command in ("resolve", "plan", "encode"):
        piped = _from_stdin(command, lambda pipe: pipe.write(data))
        direct = _maka_ref(command, str(path))
        assert piped.returncode == direct.returncode == 0
        assert piped.stdout == direct.stdout


def test_error_precedence_is_unchanged_by_line_by_line_reading(tmp_path: Path) -> None:
    """The first invalid UTF-8 anywhere wins over an earlier line that is not JSON, which wins
    over an earlier line that is not a RuntimeEvent (as when the whole text was decoded, then
    parsed, then decoded)."""
    good = (EXAMPLES / "t1-completed.jsonl").read_text().splitlines()
    not_event = '{"id": "x"}'
    cases = {
        "utf8": ([not_event, "not json", good[0], "\udcff"], "invalid_json", 4, "UTF-8"),
        "json": ([good[0], not_event, good[1], "{torn"], "invalid_json", 4, "not JSON"),
        "event": ([good[0], not_event, *good[1:]], "invalid_runtime_event", 2, "line 2"),
    }
    for name, (lines, code, line, words) in cases.items():
        path = tmp_path / f"{name}.jsonl"
        path.write_bytes("\n".join(lines).encode("utf-8", "surrogateescape") + b"\n")
        for command in ("resolve", "encode"):
            error = _error(_maka_ref(command, str(path)))
            assert (error["code"], error["line"]) == (code, line), (name, command, error)
            assert words in error["message"]


# --------------------------------------------------------------------------- adapter


def _adapter() -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, "-m", "maka_ref.adapter"], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, preexec_fn=_limited())


def _read_line(proc: subprocess.Popen[bytes], timeout: float = HANG_S) -> dict[str, Any]:
    box: list[bytes] = []
    reader = threading.Thread(target=lambda: box.append(proc.stdout.readline()), daemon=True)  # type: ignore[union-attr]
    reader.start()
    reader.join(timeout)
    assert box and box[0], "the adapter did not answer (hung or exited)"
    return json.loads(box[0])


def test_the_adapter_refuses_an_oversized_request_and_keeps_serving() -> None:
    """Protocol §1.3 caps a line at 16 MiB. A 300 MiB request without a newline used to be
    buffered whole. Now it is answered ``request_too_large`` once the cap is passed, the rest
    of the line is dropped as it arrives (the adapter's memory stays far below the request's
    size), and the next request is answered."""
    proc = _adapter()
    watched = psutil.Process(proc.pid)
    peak = {"rss": 0}
    assert proc.stdin is not None
    try:
        proc.stdin.write(b'{"id": 0, "op": "hello", "params": {"protocol": 1}}\n')
        proc.stdin.flush()
        assert _read_line(proc)["ok"] is True
        baseline = watched.memory_info().rss
        first: list[dict[str, Any]] = []

        def send_huge() -> None:
            block = b'{"id": 1, "op": "ledger.resolve", "params": {"events": [' + b" " * (MIB - 60)
            assert proc.stdin is not None
            proc.stdin.write(block)
            for _ in range(299):
                proc.stdin.write(b" " * MIB)
                peak["rss"] = max(peak["rss"], watched.memory_info().rss)
            proc.stdin.write(b"]}}\n")
            proc.stdin.flush()

        sender = threading.Thread(target=send_huge, daemon=True)
        sender.start()
        first.append(_read_line(proc))
        sender.join(HANG_S)
        assert not sender.is_alive(), "the adapter stopped reading the oversized request"
        assert first[0]["ok"] is False and first[0]["id"] is None
        assert first[0]["error"]["code"] == "request_too_large"
        proc.stdin.write(b'{"id": 2, "op": "ledger.resolve", "params": {"events": []}}\n')
        proc.stdin.flush()
        second = _read_line(proc)
        assert second["id"] == 2 and second["ok"] is True, second
        assert peak["rss"] - baseline < 100 * MIB, (peak, baseline)
        proc.stdin.close()
        assert proc.wait(timeout=HANG_S) == 0
    finally:
        proc.kill()
        proc.wait()


# --------------------------------------------------------------------------- streamed answers


_DOCUMENTS: list[Any] = [
    {},
    [],
    {"a": [], "b": {}, "c": [{}], "d": [[]]},
    {"plan": {"runtimeEvents": [{"id": "e1", "args": {"x": float("inf"), "y": [float("-inf"), -0.0]}},
                                {"id": "e2", "text": "\ud83d\ude00 pair and lone \ud800 and \udfff"}]},
     "k\ud800ey": ["\u2028", 2**60, 1.5, None, True, False]},
    [[[[[[["deep"]]]]]]],
    {"resolution": {"decisions": [{"toolCallId": f"c{i}", "status": "unknown"} for i in range(50)]}},
]


@pytest.mark.parametrize("document", _DOCUMENTS)
def test_answer_pieces_concatenate_to_the_whole_text(document: Any) -> None:
    """The streamed writer must print exactly what the whole-document writer printed: same
    key order, surrogate escapes, ``-0`` as ``0``, ±infinity as ``±1e400``."""
    from maka_ref._codec.jsontext import compact_json, iter_answer_json, write_with_infinities

    whole = write_with_infinities(lambda v: compact_json(v, negative_zero="zero"), document)
    for split_depth in range(0, 5):
        assert "".join(iter_answer_json(document, split_depth=split_depth)) == whole


def test_a_document_larger_than_the_hold_is_streamed_with_the_same_bytes(monkeypatch: pytest.MonkeyPatch) -> None:
    """Above the hold (8 MiB by default; here a few bytes) the CLI writes the answer in chunks
    as it is produced; the bytes are those of the whole document."""
    import io

    from maka_ref._cli import main

    ledger = str(EXAMPLES / "t1-crash-after-dispatch.jsonl")
    whole = io.StringIO()
    assert main.run(["plan", ledger], stdout=whole, stderr=io.StringIO()) == 0
    writes: list[str] = []

    class Recording(io.StringIO):
        def write(self, text: str) -> int:
            writes.append(text)
            return super().write(text)

    monkeypatch.setattr(main, "_HOLD_WHOLE", 16)
    monkeypatch.setattr(main, "_WRITE_CHUNK", 16)
    streamed = Recording()
    assert main.run(["plan", ledger], stdout=streamed, stderr=io.StringIO()) == 0
    assert streamed.getvalue() == whole.getvalue()
    assert len(writes) > 3


# --------------------------------------------------------------------------- run --script


@pytest.mark.parametrize("what", ["fifo", "directory", "dev_zero"])
def test_a_script_that_is_not_a_regular_file_is_refused_before_the_run(tmp_path: Path, what: str) -> None:
    """``run --script FIFO`` blocked for ever in ``open``; a directory was ``script_unreadable``
    and ``/dev/zero`` was read up to the size guard. Now all are refused before anything is
    read or the run exists: ``script_not_regular_file``, exit 2, the workspace untouched."""
    script = tmp_path / "script.json"
    if what == "fifo":
        os.mkfifo(script)
    elif what == "directory":
        script.mkdir()
    else:
        script.symlink_to("/dev/zero")
    ws = tmp_path / "ws"
    ws.mkdir()
    error = _error(_maka_ref("run", "--workspace", str(ws), "--script", str(script)))
    assert error["code"] == "script_not_regular_file"
    assert not (ws / "runtime.sqlite").exists()


def test_a_closed_stdin_is_unreadable_input() -> None:
    """``resolve -`` started with descriptor 0 closed: ``unreadable_input``, not an
    ``internal_error`` from a missing ``sys.stdin``."""
    done = subprocess.run([sys.executable, "-m", "maka_ref", "resolve", "-"], capture_output=True, text=True,
                          timeout=HANG_S, stdin=subprocess.DEVNULL, preexec_fn=lambda: os.close(0))
    assert _error(done)["code"] == "unreadable_input"


def test_inspect_refuses_a_snapshot_that_would_not_fit(tmp_path: Path) -> None:
    """A sparse ``-wal`` larger than the free space of the temporary file system (a few bytes
    on disk, terabytes to copy) is refused before the copy starts — ``snapshot_unavailable`` —
    instead of filling that file system; nothing is left behind and the workspace is unchanged."""
    ws = _store(tmp_path / "ws")
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    fs = os.statvfs(tmp)
    wal = ws / "runtime.sqlite-wal"
    with open(wal, "wb") as handle:
        handle.truncate(fs.f_bavail * fs.f_frsize + 1024 * MIB)  # sparse: no block written
    moved = tmp_path.parent / f"{tmp_path.name}-wal-aside"  # outside the tree compared
    wal_stat = (wal.stat().st_size, wal.stat().st_mtime_ns, wal.stat().st_blocks)

    def tree() -> dict[str, Any]:  # the sparse file is too large to hash: compare it by its stat
        wal.rename(moved)
        try:
            return _tree(tmp_path)
        finally:
            moved.rename(wal)

    before = tree()
    error = _error(_maka_ref("inspect", "--workspace", str(ws), env=_tmpdir_env(tmp)))
    assert error["code"] == "snapshot_unavailable"
    assert list(tmp.iterdir()) == []
    assert tree() == before
    assert (wal.stat().st_size, wal.stat().st_mtime_ns, wal.stat().st_blocks) == wal_stat
