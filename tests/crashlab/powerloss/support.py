"""Shared builders of the power-loss tests: a mount over a fresh directory, POSIX writes with and
without syncs, and the skip when FUSE is not here (with its reason, never a silent pass)."""

from __future__ import annotations

import os
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

import psutil
import pytest

from crashlab._lab.powerloss.mount import PowerLossMount, is_mounted, unavailable

__all__ = ["needs_fuse", "mounted", "write", "fsync_dir", "read", "server_tree"]

#: Mark a module or test that needs a real FUSE mount: skipped with the reason otherwise.
needs_fuse = pytest.mark.skipif(unavailable() is not None, reason=f"power-loss filesystem unavailable: {unavailable()}")


@contextmanager
def mounted(tmp_path: Path, name: str = "ws") -> Iterator[tuple[PowerLossMount, Path]]:
    """A power-loss mount over ``tmp_path/name`` (created); always closed, and proven gone:
    not mounted, and no process of its server's tree alive."""
    ws = tmp_path / name
    ws.mkdir(exist_ok=True)
    mount = PowerLossMount.mount(ws, tmp_path / f"{name}-state")
    tree = server_tree(mount)
    try:
        yield mount, Path(os.path.realpath(ws))
    finally:
        leftovers = mount.close()
        assert not is_mounted(ws), f"{ws} still mounted after close"
        assert leftovers == [], f"processes of the power-loss filesystem outlived it: {leftovers}"
        alive = [p.pid for p in tree if _alive(p)]
        assert alive == [], f"server tree still alive: {alive}"


def server_tree(mount: PowerLossMount) -> list[psutil.Process]:
    server = psutil.Process(mount.process.pid)
    return [server, *server.children(recursive=True)]


def _alive(proc: psutil.Process) -> bool:
    try:
        return proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def write(path: Path, data: bytes, *, sync: bool = False, flags: int = 0, offset: int | None = None) -> None:
    """Write ``data`` (at ``offset``, else replacing the content); ``sync``: fsync the file."""
    mode = os.O_WRONLY | os.O_CREAT | flags | (os.O_TRUNC if offset is None else 0)
    fd = os.open(path, mode, 0o644)
    try:
        if offset is None:
            os.write(fd, data)
        else:
            os.pwrite(fd, data, offset)
        if sync:
            os.fsync(fd)
    finally:
        os.close(fd)


def fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def read(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return None
