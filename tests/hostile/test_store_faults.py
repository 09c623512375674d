"""Issue 13 item 1: every store fault fails closed, with a stable code, and writes nothing.

Why here: these are the damaged, locked, read-only, full and redirected stores a careless or
hostile world produces. Each attack is run through the real console script (or the real
adapter process) against real SQLite files, and what is asserted is what a user sees — the
exit status, the one JSON document, no traceback — and what is left on disk: the store's
files byte-identical after a refusal. Expected codes are the documented contract
(docs/storage.md "Store faults"), never computed by the code under test.
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any, Iterator

import psutil
import pytest

from tests.maka_ref.runtime.support import (
    REPO,
    clean_env,
    cli,
    crash_source_at,
    effect_lines,
    script,
    sigkill_and_prove,
    spawn_until_failpoint,
    write_script,
)

DB = "runtime.sqlite"
ONE_TEXT_STEP = [{"text": "done"}]


# ------------------------------------------------------------------------------ helpers


def _digests(ws: Path) -> dict[str, str]:
    """sha256 of every ``runtime.sqlite*`` file that exists (main, -wal, -shm, -journal)."""
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(ws.glob(DB + "*")) if not p.is_symlink()}


def _error(done: subprocess.CompletedProcess[str]) -> str:
    """The error code of a refused command: exit 2, one JSON document, no traceback."""
    assert "Traceback" not in done.stderr, done.stderr
    assert done.returncode == 2, (done.returncode, done.stdout, done.stderr)
    assert done.stdout.count("\n") == 1, done.stdout
    return str(json.loads(done.stdout)["error"]["code"])


def _text_script(tmp: Path) -> Path:
    return write_script(tmp, script(steps=ONE_TEXT_STEP), name="text-script.json")


def _command(kind: str, ws: Path, tmp: Path) -> subprocess.CompletedProcess[str]:
    if kind == "run":
        return cli("run", "--workspace", str(ws), "--script", str(_text_script(tmp)))
    if kind == "resume":
        return cli("resume", "--workspace", str(ws), flag=True)
    return cli(kind, "--workspace", str(ws))


def _adapter(requests: list[dict[str, Any]], cwd: Path) -> list[dict[str, Any]]:
    """Run the real adapter on ``hello`` + ``requests`` (stdin closed after them) and return
    the responses to ``requests``; the process must exit by itself."""
    lines = [{"id": 0, "op": "hello", "params": {"protocol": 1, "harness": {"name": "tests", "version": "0"}}}]
    lines += [{"id": n, **request} for n, request in enumerate(requests, start=1)]
    env = dict(clean_env(), MAKA_CONFORMANCE="1")
    done = subprocess.run([sys.executable, "-m", "maka_ref.adapter"], cwd=cwd, env=env, capture_output=True,
                          input="".join(json.dumps(line) + "\n" for line in lines), text=True, timeout=120)
    assert "Traceback" not in done.stderr, done.stderr
    responses = [json.loads(line) for line in done.stdout.splitlines()]
    return [r for r in responses if isinstance(r, dict) and r.get("id", 0) != 0]


def _adapter_open_error(ws: Path, tmp: Path) -> str:
    [response] = _adapter([{"op": "store.open", "params": {"workspace": str(ws)}}], tmp)
    assert response["ok"] is False, response
    return str(response["error"]["code"])


@pytest.fixture(scope="module")
def crashed_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A workspace whose run was SIGKILLed at P7: its committed history lives in the WAL."""
    ws, _, _ = crash_source_at(tmp_path_factory.mktemp("crashed"))
    assert (ws / f"{DB}-wal").stat().st_size > 0
    return ws


@pytest.fixture(scope="module")
def completed_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A workspace with one completed Write run, checkpointed (no WAL)."""
    tmp = tmp_path_factory.mktemp("completed")
    ws = tmp / "ws"
    ws.mkdir()
    done = cli("run", "--workspace", str(ws), "--script", str(write_script(tmp, script())))
    assert done.returncode == 0, done.stderr
    assert not (ws / f"{DB}-wal").exists()
    return ws


def _copy(template: Path, tmp: Path) -> Path:
    ws = tmp / "ws"
    shutil.copytree(template, ws, symlinks=True)
    return ws


# ----------------------------------------------------- 1. empty main file beside a WAL


@pytest.mark.parametrize("kind", ["run", "resume", "repair", "adapter"])
def test_an_empty_main_file_beside_its_wal_is_refused_on_every_path(
    kind: str, crashed_template: Path, tmp_path: Path
) -> None:
    """SQLite deletes the WAL of a zero-length database on open: the whole history. Every
    writer path refuses it as ``database_corrupt`` and leaves both files as they were."""
    ws = _copy(crashed_template, tmp_path)
    os.truncate(ws / DB, 0)
    before = _digests(ws)
    assert f"{DB}-wal" in before
    code = _adapter_open_error(ws, tmp_path) if kind == "adapter" else _error(_command(kind, ws, tmp_path))
    assert code == "database_corrupt"
    assert _digests(ws) == before


# ---------------------------------------------------------- 2. a flipped index byte


def _flip_index_key_byte(db: Path, index: str = "runtime_events_by_run") -> None:
    """Flip one bit of the run id inside the *last* key (the highest ``event_seq``: the run's
    terminal) of ``index``'s root page, found through ``sqlite_master.rootpage``. The file
    stays a structurally valid B-tree; only an index entry no longer matches its row."""
    with sqlite3.connect(f"file:{db}?mode=ro&immutable=1", uri=True) as conn:
        page_size = conn.execute("PRAGMA page_size").fetchone()[0]
        [(rootpage,)] = conn.execute("SELECT rootpage FROM sqlite_master WHERE name = ?", (index,)).fetchall()
    conn.close()
    data = bytearray(db.read_bytes())
    base = (rootpage - 1) * page_size
    page = data[base : base + page_size]
    assert page[0] == 0x0A, "expected a leaf index page (the store is small)"
    cells = int.from_bytes(page[3:5], "big")
    last_cell = int.from_bytes(page[8 + 2 * (cells - 1) : 10 + 2 * (cells - 1)], "big")
    offset = page.index(b"run_", last_cell) + 10
    data[base + offset] ^= 0x01
    db.write_bytes(bytes(data))
    with sqlite3.connect(f"file:{db}?mode=ro&immutable=1", uri=True) as check:  # the attack as issued
        assert check.execute("PRAGMA quick_check").fetchall() == [("ok",)]
        assert check.execute("PRAGMA integrity_check").fetchall() != [("ok",)]
    check.close()


@pytest.mark.parametrize("kind", ["run", "resume", "repair", "adapter"])
def test_a_flipped_index_byte_refuses_every_writer(kind: str, completed_template: Path, tmp_path: Path) -> None:
    """``quick_check`` misses an index entry that no longer matches its row; reads through
    that index then lose the run's terminal and ``repair`` appends a second one. Every
    writer runs ``integrity_check`` first: ``database_corrupt``, nothing written."""
    ws = _copy(completed_template, tmp_path)
    _flip_index_key_byte(ws / DB)
    before = _digests(ws)
    code = _adapter_open_error(ws, tmp_path) if kind == "adapter" else _error(_command(kind, ws, tmp_path))
    assert code == "database_corrupt"
    assert _digests(ws) == before


def test_inspect_reports_a_flipped_index_byte_in_its_health(completed_template: Path, tmp_path: Path) -> None:
    ws = _copy(completed_template, tmp_path)
    _flip_index_key_byte(ws / DB)
    before = _digests(ws)
    done = cli("inspect", "--workspace", str(ws))
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    health = json.loads(done.stdout)["health"]
    assert health["status"] == "unreadable" and health["code"] == "database_corrupt", health
    assert _digests(ws) == before


# ------------------------------------------- 3. a deleted WAL and the effect log


TWO_TOOL_STEPS = [
    {"toolCalls": [{"id": "call-1", "name": "Write", "args": {"path": "notes.txt", "content": "a\n"}}]},
    {"toolCalls": [{"id": "call-2", "name": "Append", "args": {"path": "notes.txt", "content": "b\n"}}]},
    {"text": "done"},
]

_SNAPSHOT_HOLDER = (
    "import sqlite3, sys, time\n"
    "conn = sqlite3.connect(sys.argv[1], isolation_level=None)\n"
    "conn.execute('BEGIN')\n"
    "conn.execute('SELECT count(*) FROM runtime_events').fetchone()\n"
    "print('ready', flush=True)\n"
    "time.sleep(600)\n"
)


def test_resume_never_reruns_an_operation_the_effect_log_shows_started(tmp_path: Path) -> None:
    """The store loses the resume's commits (its WAL is deleted: SQLite rolls back silently);
    the effect log still shows the Append started. A second resume must refuse
    (``store_behind_effect_log``) instead of appending again."""
    ws = tmp_path / "ws"
    ws.mkdir()
    script_path = write_script(tmp_path, script(steps=TWO_TOOL_STEPS))
    child = spawn_until_failpoint(["run", "--workspace", str(ws), "--script", str(script_path)], tmp_path, "P7",
                                  MAKA_REF_FAILPOINT="P7")  # killed after the Write, before the Append
    sigkill_and_prove(child, tmp_path)
    assert cli("repair", "--workspace", str(ws)).returncode == 0
    # A reader holding an old snapshot keeps the resume's commits in the WAL (no checkpoint
    # can pass it); it is then killed, so nobody checkpoints on close.
    holder = subprocess.Popen([sys.executable, "-c", _SNAPSHOT_HOLDER, str(ws / DB)], stdout=subprocess.PIPE)
    try:
        assert holder.stdout is not None and holder.stdout.readline() == b"ready\n"
        first = cli("resume", "--workspace", str(ws), flag=True)
        assert first.returncode == 0, (first.stdout, first.stderr)
        assert json.loads(first.stdout)["status"] == "completed"
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait(timeout=30)
    assert (ws / f"{DB}-wal").stat().st_size > 0
    (ws / f"{DB}-wal").unlink()  # the attack: the WAL is gone, the store is back before the resume
    (ws / f"{DB}-shm").unlink()
    assert (ws / "notes.txt").read_text() == "a\nb\n"
    starts = effect_lines(ws)
    assert [line["tool"] for line in starts] == ["Write", "Append"]

    second = cli("resume", "--workspace", str(ws), flag=True)
    assert _error(second) == "store_behind_effect_log"
    assert effect_lines(ws) == starts  # nothing started again
    assert (ws / "notes.txt").read_text() == "a\nb\n"
    assert not psutil.pid_exists(holder.pid) or psutil.Process(holder.pid).status() == psutil.STATUS_ZOMBIE


def test_resume_of_an_intact_store_is_not_refused_by_its_effect_log(tmp_path: Path) -> None:
    """The control: the same workspace without the lost WAL resumes (the guard never fires on
    a store that knows every started call)."""
    ws = tmp_path / "ws"
    ws.mkdir()
    script_path = write_script(tmp_path, script(steps=TWO_TOOL_STEPS))
    child = spawn_until_failpoint(["run", "--workspace", str(ws), "--script", str(script_path)], tmp_path, "P7",
                                  MAKA_REF_FAILPOINT="P7")
    sigkill_and_prove(child, tmp_path)
    assert cli("repair", "--workspace", str(ws)).returncode == 0
    resumed = cli("resume", "--workspace", str(ws), flag=True)
    assert resumed.returncode == 0, (resumed.stdout, resumed.stderr)
    assert [line["tool"] for line in effect_lines(ws)] == ["Write", "Append"]
    again = cli("resume", "--workspace", str(ws), flag=True)  # nothing left to resume: a park, not a refusal
    assert again.returncode == 3, (again.stdout, again.stderr)


# ------------------------------------------------------------------------ 4. busy


@pytest.fixture
def held_write_lock(crashed_template: Path, tmp_path: Path) -> Iterator[Path]:
    """A workspace with a run to repair whose write lock another process holds (``BEGIN
    IMMEDIATE``, never ends)."""
    ws = _copy(crashed_template, tmp_path)
    holder = subprocess.Popen(
        [sys.executable, "-c",
         "import sqlite3, sys, time\nc = sqlite3.connect(sys.argv[1], isolation_level=None)\n"
         "c.execute('PRAGMA journal_mode=WAL'); c.execute('BEGIN IMMEDIATE')\nprint('locked', flush=True)\n"
         "time.sleep(600)\n", str(ws / DB)],
        stdout=subprocess.PIPE,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline() == b"locked\n"
        yield ws
    finally:
        holder.kill()
        holder.wait(timeout=30)


@pytest.mark.parametrize("kind", ["run", "repair"])
def test_a_second_writer_gets_store_busy_after_the_bounded_wait(kind: str, held_write_lock: Path,
                                                                 tmp_path: Path) -> None:
    done = _command(kind, held_write_lock, tmp_path)
    assert _error(done) == "store_busy"
    assert "5 s" in json.loads(done.stdout)["error"]["message"]  # the bound is stated


def test_the_adapter_answers_store_busy(held_write_lock: Path, tmp_path: Path) -> None:
    responses = _adapter([
        {"op": "store.open", "params": {"workspace": str(held_write_lock)}},
        {"op": "store.create_run", "params": {"workspace": str(held_write_lock), "header": {
            "runId": "run-1", "sessionId": "session-1", "turnId": "turn-1", "status": "running", "backendKind": "fake",
            "llmConnectionSlug": "fake", "modelId": "fake-model", "cwd": "/workspace", "permissionMode": "ask",
            "createdAt": 1, "updatedAt": 2}}},
    ], tmp_path)
    codes = [r["error"]["code"] for r in responses if not r["ok"]]
    assert "store_busy" in codes, responses
    assert "internal_error" not in codes, responses


# ------------------------------------------------------------------- 5. read-only


def _read_only_bind(source: Path, target: Path) -> bool:
    target.mkdir()
    if subprocess.run(["mount", "--bind", str(source), str(target)], capture_output=True).returncode != 0:
        return False
    if subprocess.run(["mount", "-o", "remount,ro,bind", str(target)], capture_output=True).returncode != 0:
        subprocess.run(["umount", str(target)], capture_output=True)
        return False
    return True


@pytest.mark.parametrize("kind", ["run", "repair"])
def test_a_read_only_workspace_is_store_read_only(kind: str, completed_template: Path, tmp_path: Path) -> None:
    ws = _copy(completed_template, tmp_path)
    if kind == "repair":  # something to repair: a run left `running` by a kill
        shutil.rmtree(ws)
        (tmp_path / "crash").mkdir()
        ws, _, _ = crash_source_at(tmp_path / "crash")
    mounted = tmp_path / "ro"
    if not _read_only_bind(ws, mounted):
        pytest.skip("a read-only bind mount is not permitted here (needs root and mount rights); "
                    "test_sqlite_readonly_maps_to_store_read_only covers the mapping")
    try:
        before = _digests(mounted)
        assert _error(_command(kind, mounted, tmp_path)) == "store_read_only"
        assert _digests(mounted) == before
    finally:
        subprocess.run(["umount", str(mounted)], capture_output=True)


def test_sqlite_readonly_maps_to_store_read_only(completed_template: Path, tmp_path: Path) -> None:
    """SQLite's own ``SQLITE_READONLY`` (a write through a ``mode=ro`` handle) is the code."""
    from maka_ref._store.engine.faults import fault_of

    ws = _copy(completed_template, tmp_path)
    conn = sqlite3.connect(f"file:{ws / DB}?mode=ro", uri=True)
    try:
        with pytest.raises(sqlite3.OperationalError) as raised:
            conn.execute("CREATE TABLE intruder (x)")
    finally:
        conn.close()
    fault = fault_of(raised.value)
    assert fault is not None and fault.code == "store_read_only"


# ------------------------------------------------------------------- 6. disk full


def test_a_full_disk_before_the_run_header_is_storage_full(tmp_path: Path) -> None:
    mounted = tmp_path / "small"
    mounted.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=96k", "tmpfs", str(mounted)],
                      capture_output=True).returncode != 0:
        pytest.skip("mounting a small tmpfs is not permitted here (needs root and mount rights)")
    try:
        ws = mounted / "ws"
        ws.mkdir()
        fd = os.open(mounted / "filler", os.O_WRONLY | os.O_CREAT)  # leave nothing: no store can be created
        try:
            while True:
                os.write(fd, b"\0" * 512)
        except OSError as exc:
            assert exc.errno == errno.ENOSPC
        finally:
            os.close(fd)
        assert _error(_command("run", ws, tmp_path)) == "storage_full"
    finally:
        subprocess.run(["umount", str(mounted)], capture_output=True)


def test_sqlite_full_maps_to_storage_full(tmp_path: Path) -> None:
    """SQLite's own ``SQLITE_FULL`` (a database capped by ``max_page_count``) is the code, so
    the mapping is covered where no small file system can be mounted."""
    from maka_ref._store.engine.faults import fault_of

    conn = sqlite3.connect(tmp_path / "capped.sqlite")
    try:
        conn.execute("CREATE TABLE t (x)")
        conn.execute("PRAGMA max_page_count = 3")
        with pytest.raises(sqlite3.OperationalError) as raised:
            for _ in range(100):
                conn.execute("INSERT INTO t VALUES (?)", (b"\0" * 4096,))
    finally:
        conn.close()
    fault = fault_of(raised.value)
    assert fault is not None and fault.code == "storage_full"


# ------------------------------------------------------------- 7. truncated main file


@pytest.mark.parametrize("kind", ["run", "resume", "repair", "adapter"])
def test_a_truncated_main_database_is_database_corrupt(kind: str, completed_template: Path, tmp_path: Path) -> None:
    ws = _copy(completed_template, tmp_path)
    size = (ws / DB).stat().st_size
    os.truncate(ws / DB, size // 2)
    before = _digests(ws)
    code = _adapter_open_error(ws, tmp_path) if kind == "adapter" else _error(_command(kind, ws, tmp_path))
    assert code == "database_corrupt"
    assert _digests(ws) == before


# ------------------------------------------------------------------ 8. symlinks


@pytest.mark.parametrize("kind", ["run", "resume", "repair", "adapter"])
@pytest.mark.parametrize("which", [DB, f"{DB}-wal"])
def test_a_store_file_that_is_a_symlink_is_refused(kind: str, which: str, crashed_template: Path,
                                                   completed_template: Path, tmp_path: Path) -> None:
    """SQLite follows links: ``runtime.sqlite`` as a link puts the store outside the
    workspace (a complete store: it would be read and written there), a ``-wal`` link makes
    SQLite read and write the WAL of a killed run elsewhere. Refused, nothing written on
    either side of the link."""
    ws = _copy(completed_template if which == DB else crashed_template, tmp_path)
    outside = tmp_path / "outside"
    outside.mkdir()
    target = outside / which
    os.replace(ws / which, target)
    os.symlink(target, ws / which)
    before = (_digests(ws), hashlib.sha256(target.read_bytes()).hexdigest(), sorted(os.listdir(outside)))
    code = _adapter_open_error(ws, tmp_path) if kind == "adapter" else _error(_command(kind, ws, tmp_path))
    assert code == "store_file_symlink"
    assert (_digests(ws), hashlib.sha256(target.read_bytes()).hexdigest(), sorted(os.listdir(outside))) == before



@pytest.mark.parametrize("kind", ["run", "repair", "adapter"])
def test_a_store_file_that_is_a_fifo_is_refused_without_hanging(kind: str, completed_template: Path,
                                                                 tmp_path: Path) -> None:
    """A FIFO as ``runtime.sqlite-wal``: SQLite would block reading it (nobody writes the
    other end). Refused before SQLite opens anything, within the command's own time."""
    ws = _copy(completed_template, tmp_path)
    os.mkfifo(ws / f"{DB}-wal")
    before = hashlib.sha256((ws / DB).read_bytes()).hexdigest()
    code = _adapter_open_error(ws, tmp_path) if kind == "adapter" else _error(_command(kind, ws, tmp_path))
    assert code == "store_file_not_regular"
    assert hashlib.sha256((ws / DB).read_bytes()).hexdigest() == before


@pytest.mark.parametrize("kind", ["run", "resume", "repair", "adapter"])
def test_a_directory_as_the_main_database_is_refused(kind: str, completed_template: Path, tmp_path: Path) -> None:
    ws = _copy(completed_template, tmp_path)
    (ws / DB).unlink()
    (ws / DB).mkdir()
    code = _adapter_open_error(ws, tmp_path) if kind == "adapter" else _error(_command(kind, ws, tmp_path))
    assert code == "store_file_not_regular"
    assert (ws / DB).is_dir() and list((ws / DB).iterdir()) == []


@pytest.mark.parametrize("kind", ["run", "resume", "repair", "adapter"])
def test_a_hard_linked_main_database_is_refused(kind: str, completed_template: Path, tmp_path: Path) -> None:
    """A second name for ``runtime.sqlite`` outside the workspace sees every write the store
    makes: the store's own files have exactly one name."""
    ws = _copy(completed_template, tmp_path)
    outside = tmp_path / "outside"
    outside.mkdir()
    os.link(ws / DB, outside / DB)
    before = _digests(ws)
    code = _adapter_open_error(ws, tmp_path) if kind == "adapter" else _error(_command(kind, ws, tmp_path))
    assert code == "store_file_hardlinked"
    assert _digests(ws) == before and sorted(os.listdir(outside)) == [DB]
