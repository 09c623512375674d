"""``maka_ref._durable``: what "durable" is on each platform (issue 15 item 4). On macOS
``fsync`` stops at the drive's volatile cache, so every sync of the reference must be
``fcntl(fd, F_FULLFSYNC)`` there; on Linux ``fsync``. The darwin branch is exercised here on
Linux by setting ``sys.platform`` and recording the calls actually issued."""

from __future__ import annotations

import ast
import errno
import fcntl
import os
import stat
from pathlib import Path

import pytest

import maka_ref
from maka_ref import _durable
from maka_ref._runtime.beneath import open_private_dir
from maka_ref._runtime.effects import append_effect_start


class Recorder:
    """Records ``fcntl.fcntl`` and ``os.fsync`` calls: (call, descriptor, kind of file)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, *, fcntl_error: int | None = None) -> None:
        self.calls: list[tuple[str, str, int | None]] = []
        real_fsync = os.fsync

        def fake_fcntl(fd: int, cmd: int, *rest: object) -> int:
            self.calls.append(("fcntl", _kind(fd), cmd))
            if fcntl_error is not None:
                raise OSError(fcntl_error, os.strerror(fcntl_error))
            return 0

        def recording_fsync(fd: int) -> None:
            self.calls.append(("fsync", _kind(fd), None))
            real_fsync(fd)

        monkeypatch.setattr(fcntl, "fcntl", fake_fcntl)
        monkeypatch.setattr(os, "fsync", recording_fsync)


def _kind(fd: int) -> str:
    mode = os.fstat(fd).st_mode
    return "dir" if stat.S_ISDIR(mode) else "file" if stat.S_ISREG(mode) else "other"


def test_on_darwin_sync_is_f_fullfsync_and_never_plain_fsync(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("sys.platform", "darwin")
    rec = Recorder(monkeypatch)
    fd = os.open(tmp_path / "f", os.O_WRONLY | os.O_CREAT, 0o644)
    try:
        _durable.write_all(fd, b"x" * 10, sync=True)
    finally:
        os.close(fd)
    assert rec.calls == [("fcntl", "file", 51)]  # F_FULLFSYNC of <sys/fcntl.h>
    assert _durable.sync_call() == "F_FULLFSYNC"


def test_on_darwin_a_file_system_without_full_fsync_falls_back_to_fsync(tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("sys.platform", "darwin")
    rec = Recorder(monkeypatch, fcntl_error=errno.ENOTSUP)
    fd = os.open(tmp_path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        _durable.sync(fd)
    finally:
        os.close(fd)
    assert rec.calls == [("fcntl", "dir", 51), ("fsync", "dir", None)]


def test_on_darwin_a_real_full_fsync_failure_is_raised(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("sys.platform", "darwin")
    rec = Recorder(monkeypatch, fcntl_error=errno.EIO)
    fd = os.open(tmp_path / "f", os.O_WRONLY | os.O_CREAT, 0o644)
    try:
        with pytest.raises(OSError) as caught:
            _durable.sync(fd)
    finally:
        os.close(fd)
    assert caught.value.errno == errno.EIO and rec.calls == [("fcntl", "file", 51)]


def test_on_linux_sync_is_fsync(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("sys.platform", "linux")
    rec = Recorder(monkeypatch)
    fd = os.open(tmp_path / "f", os.O_WRONLY | os.O_CREAT, 0o644)
    try:
        _durable.write_all(fd, b"y", sync=True)
    finally:
        os.close(fd)
    assert rec.calls == [("fsync", "file", None)] and _durable.sync_call() == "fsync"


def test_on_darwin_the_effect_log_and_a_private_directory_are_fully_synced(tmp_path: Path,
                                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """The runtime's own paths, not only the helper: the effect log line and its new directory
    entry, and a ``.maka/scripts`` directory made durable in its parents."""
    monkeypatch.setattr("sys.platform", "darwin")
    rec = Recorder(monkeypatch)
    append_effect_start(tmp_path, "op-1", "Write", "sha256:0")
    assert rec.calls == [("fcntl", "file", 51), ("fcntl", "dir", 51)]
    rec.calls.clear()
    os.close(open_private_dir(tmp_path, [".maka", "scripts"], create=True))
    assert rec.calls == [("fcntl", "dir", 51), ("fcntl", "dir", 51)]  # each mkdir's parent


def test_no_module_of_the_reference_calls_fsync_directly() -> None:
    """Every sync goes through ``maka_ref._durable.sync`` (else macOS would get a plain fsync)."""
    root = Path(maka_ref.__file__).parent
    offenders = []
    for path in sorted(root.rglob("*.py")):
        if path == root / "_durable.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Attribute) and node.attr in ("fsync", "fdatasync") \
                    and isinstance(node.value, ast.Name) and node.value.id == "os":
                offenders.append(f"{path.relative_to(root)}:{node.lineno}")
    assert offenders == []


@pytest.mark.parametrize("platform, sync, pragmas", [("darwin", "F_FULLFSYNC", True), ("linux", "fsync", False)])
def test_the_adapter_declares_the_sync_it_uses(platform: str, sync: str, pragmas: bool) -> None:
    """The handshake's ``durability`` follows the platform (protocol §3): a fresh interpreter
    that believes it runs on ``platform`` before the adapter is imported."""
    import json
    import subprocess
    import sys

    code = (f"import sys; sys.platform = {platform!r}; import json; "
            "from maka_ref.adapter._dispatch import DURABILITY; print(json.dumps(DURABILITY))")
    declared = json.loads(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                                         timeout=60).stdout)
    assert declared["sync"] == sync and declared["directorySync"] is True
    assert ("fullfsync=ON" in declared["details"]) is pragmas
