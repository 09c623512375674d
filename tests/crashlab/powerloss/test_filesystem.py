"""The power-loss filesystem for real: a FUSE mount, POSIX calls through it, a power cut, and
what the directory holds afterwards (docs/crashlab-powerloss.md, "The model"). Skipped with
the reason where FUSE is not available."""

from __future__ import annotations

import contextlib
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import psutil
import pytest

from crashlab._lab.powerloss.mount import MountError, PowerLossMount, is_mounted

from .support import fsync_dir, mounted, needs_fuse, read, write

pytestmark = needs_fuse


def test_an_unsynced_write_is_lost_and_an_fsynced_one_kept(tmp_path: Path) -> None:
    with mounted(tmp_path) as (mount, ws):
        write(ws / "kept", b"synced", sync=True)
        write(ws / "lost", b"only in the page cache")
        fsync_dir(ws)  # both names durable; only one content
        write(ws / "kept", b"SYN", offset=0)  # an overwrite, not synced
        assert (ws / "kept").read_bytes() == b"SYNced"
        report = mount.lose_power()
    assert read(ws / "kept") == b"synced"
    assert read(ws / "lost") == b""
    lost = {r["path"]: r["lostBytes"] for r in report["reverted"]}
    assert lost == {"kept": 3, "lost": len(b"only in the page cache")}


def test_fdatasync_and_o_sync_o_dsync_writes_survive(tmp_path: Path) -> None:
    with mounted(tmp_path) as (mount, ws):
        for name in ("datasync", "osync", "odsync", "plain"):
            write(ws / name, b"")
        fsync_dir(ws)
        fd = os.open(ws / "datasync", os.O_WRONLY)
        os.write(fd, b"fdatasync")
        os.fdatasync(fd)
        os.close(fd)
        write(ws / "osync", b"O_SYNC write", flags=os.O_SYNC)
        write(ws / "odsync", b"O_DSYNC write", flags=os.O_DSYNC)
        write(ws / "plain", b"plain write")
        syncs = mount.stats()["syncs"]
        mount.lose_power()
    assert (read(ws / "datasync"), read(ws / "osync"), read(ws / "odsync"), read(ws / "plain")) == \
        (b"fdatasync", b"O_SYNC write", b"O_DSYNC write", b"")
    assert syncs["o_sync_writes"] == 2


def test_a_rename_without_a_directory_fsync_is_undone(tmp_path: Path) -> None:
    with mounted(tmp_path) as (mount, ws):
        write(ws / "target", b"old", sync=True)
        fsync_dir(ws)
        write(ws / ".target.tmp", b"new", sync=True)  # data durable, names not
        os.replace(ws / ".target.tmp", ws / "target")
        assert (ws / "target").read_bytes() == b"new"
        report = mount.lose_power()
    assert sorted(os.listdir(ws)) == ["target"]
    assert read(ws / "target") == b"old"
    assert report["undone"] == ["create /.target.tmp", "rename /.target.tmp -> /target"]


def test_a_rename_after_a_directory_fsync_is_kept(tmp_path: Path) -> None:
    with mounted(tmp_path) as (mount, ws):
        write(ws / "target", b"old", sync=True)
        fsync_dir(ws)
        write(ws / ".target.tmp", b"new", sync=True)
        os.replace(ws / ".target.tmp", ws / "target")
        fsync_dir(ws)
        mount.lose_power()
    assert sorted(os.listdir(ws)) == ["target"]
    assert read(ws / "target") == b"new"


def test_an_unlink_is_undone_with_the_durable_content(tmp_path: Path) -> None:
    with mounted(tmp_path) as (mount, ws):
        write(ws / "doomed", b"durable content", sync=True)
        fsync_dir(ws)
        write(ws / "doomed", b"XXXXXXX", offset=0)  # not synced before the unlink
        os.unlink(ws / "doomed")
        assert not (ws / "doomed").exists()
        mount.lose_power()
    assert read(ws / "doomed") == b"durable content"


def test_new_directories_need_their_parent_synced(tmp_path: Path) -> None:
    with mounted(tmp_path) as (mount, ws):
        (ws / "kept").mkdir()
        (ws / "lost").mkdir()
        write(ws / "kept" / "f", b"in kept", sync=True)
        fsync_dir(ws / "kept")
        fsync_dir(ws)  # both directories durable now
        write(ws / "lost" / "g", b"in lost", sync=True)  # lost/g's entry never synced
        (ws / "later").mkdir()  # after the last sync of the root
        mount.lose_power()
    assert sorted(os.listdir(ws)) == ["kept", "lost"]
    assert read(ws / "kept" / "f") == b"in kept"
    assert os.listdir(ws / "lost") == []


@pytest.mark.parametrize("granularity", [512, 4096])
def test_a_torn_write_keeps_a_sector_aligned_prefix(tmp_path: Path, granularity: int) -> None:
    base = bytes(range(256)) * 64  # 16 KiB, durable
    new = b"\xee" * 10000
    with mounted(tmp_path) as (mount, ws):
        write(ws / "log", base, sync=True)
        fsync_dir(ws)
        write(ws / "log", new, offset=1000)  # the last write, never synced
        report = mount.lose_power(granularity=granularity, seed=3)
    data = read(ws / "log")
    assert data is not None and len(data) == len(base)
    torn = report["torn"]
    assert (torn["path"], torn["offset"], torn["length"], torn["granularity"]) == ("log", 1000, 10000, granularity)
    keep = torn["kept"]
    assert 0 < keep < len(new) and (1000 + keep) % granularity == 0
    assert data[:1000] == base[:1000]
    assert data[1000:1000 + keep] == new[:keep]
    assert data[1000 + keep:] == base[1000 + keep:]


def test_sqlite_wal_commit_with_synchronous_full_survives(tmp_path: Path) -> None:
    with mounted(tmp_path) as (mount, ws):
        db = sqlite3.connect(ws / "t.sqlite", isolation_level=None)
        assert db.execute("PRAGMA journal_mode=WAL").fetchone() == ("wal",)
        db.execute("PRAGMA synchronous=FULL")
        db.execute("CREATE TABLE t (x)")
        db.execute("INSERT INTO t VALUES ('committed')")
        mount.lose_power()  # the connection is still open: as if its process were killed
        db.close()
    reopened = sqlite3.connect(ws / "t.sqlite")
    try:
        assert reopened.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        assert reopened.execute("SELECT x FROM t").fetchall() == [("committed",)]
    finally:
        reopened.close()


def test_sqlite_wal_commit_with_synchronous_off_is_lost(tmp_path: Path) -> None:
    with mounted(tmp_path) as (mount, ws):
        db = sqlite3.connect(ws / "t.sqlite", isolation_level=None)
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA synchronous=FULL")
        db.execute("CREATE TABLE t (x)")
        db.execute("INSERT INTO t VALUES ('durable')")
        db.execute("PRAGMA synchronous=OFF")  # no fsync of the WAL any more
        db.execute("INSERT INTO t VALUES ('lost')")
        assert db.execute("SELECT count(*) FROM t").fetchone() == (2,)
        report = mount.lose_power()
        db.close()
    reopened = sqlite3.connect(ws / "t.sqlite")
    try:
        assert reopened.execute("SELECT x FROM t").fetchall() == [("durable",)]
    finally:
        reopened.close()
    assert any(r["path"] == "t.sqlite-wal" and r["lostBytes"] > 0 for r in report["reverted"])


WRITER = textwrap.dedent("""
    import os, sys, time
    ws = sys.argv[1]
    fd = os.open(os.path.join(ws, "synced"), os.O_WRONLY | os.O_CREAT, 0o644)
    os.write(fd, b"before the kill, fsynced"); os.fsync(fd); os.close(fd)
    d = os.open(ws, os.O_RDONLY); os.fsync(d); os.close(d)
    fd = os.open(os.path.join(ws, "synced"), os.O_WRONLY | os.O_APPEND)
    os.write(fd, b" + unsynced tail")
    print("ready", flush=True)
    time.sleep(600)
""")


def test_a_process_killed_for_real_loses_what_it_did_not_sync(tmp_path: Path) -> None:
    """SIGKILL, proved real (killed by the signal, nothing of it left), then the cut."""
    with mounted(tmp_path) as (mount, ws):
        child = subprocess.Popen([sys.executable, "-c", WRITER, str(ws)], stdout=subprocess.PIPE, text=True,
                                 start_new_session=True)
        try:
            assert child.stdout is not None and child.stdout.readline().strip() == "ready"
            assert (ws / "synced").read_bytes() == b"before the kill, fsynced + unsynced tail"
            os.killpg(child.pid, signal.SIGKILL)
            assert child.wait(10) == -signal.SIGKILL
        finally:
            if child.poll() is None:
                child.kill()
                child.wait(10)
        assert not psutil.pid_exists(child.pid) or psutil.Process(child.pid).status() == psutil.STATUS_ZOMBIE
        mount.lose_power()
    assert read(ws / "synced") == b"before the kill, fsynced"


def test_the_effect_log_is_outside_the_cut(tmp_path: Path) -> None:
    with mounted(tmp_path) as (mount, ws):
        fd = os.open(ws / ".maka-effects.jsonl", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        os.write(fd, b'{"operationId": "op-1"}\n')  # never synced, and neither is the root
        os.close(fd)
        assert ".maka-effects.jsonl" in os.listdir(ws)
        mount.lose_power()
    assert read(ws / ".maka-effects.jsonl") == b'{"operationId": "op-1"}\n'
    assert os.stat(ws / ".maka-effects.jsonl").st_nlink == 1


def test_an_open_file_does_not_stop_the_unmount(tmp_path: Path) -> None:
    """``fusermount3 -u`` fails (busy); the lazy unmount takes over, within its deadline."""
    with mounted(tmp_path) as (mount, ws):
        write(ws / "f", b"x", sync=True)
        held = open(ws / "f", "rb")
        try:
            started = time.monotonic()
            mount.lose_power()
            assert time.monotonic() - started < 15
            assert not is_mounted(ws)
        finally:
            with contextlib.suppress(OSError):  # its filesystem is gone: ENOTCONN on the last flush
                held.close()
            assert held.closed


def test_a_killed_server_is_cleaned_up(tmp_path: Path) -> None:
    with mounted(tmp_path) as (mount, ws):
        os.killpg(mount.process.pid, signal.SIGKILL)
        with pytest.raises(OSError):  # the mount is dead: every access fails, none hangs
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline:
                os.listdir(ws)
                time.sleep(0.05)
        with pytest.raises(MountError):
            mount.stats()


def test_a_server_that_never_mounts_times_out_and_leaves_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import crashlab._lab.powerloss.mount as mount_module

    def sleeper(cwd: Path) -> subprocess.Popen[bytes]:
        return subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"], stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)

    monkeypatch.setattr(mount_module, "_start_server", sleeper)
    (tmp_path / "ws").mkdir()
    mount = PowerLossMount(tmp_path / "ws", tmp_path / "state").launch()
    pid = mount.process.pid
    started = time.monotonic()
    with pytest.raises(MountError, match="did not mount within 1 s"):
        mount.wait_ready(timeout=1.0)
    assert time.monotonic() - started < 10
    assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    assert (tmp_path / "ws").is_dir() and not is_mounted(tmp_path / "ws")


def test_an_effect_log_from_before_the_mount_keeps_every_line(tmp_path: Path) -> None:
    (tmp_path / "ws").mkdir()
    (tmp_path / "ws" / ".maka-effects.jsonl").write_bytes(b'{"operationId": "before"}\n')
    with mounted(tmp_path) as (mount, ws):
        with open(ws / ".maka-effects.jsonl", "ab") as log:
            log.write(b'{"operationId": "during"}\n')
        mount.lose_power()
    assert read(ws / ".maka-effects.jsonl") == b'{"operationId": "before"}\n{"operationId": "during"}\n'
