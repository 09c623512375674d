"""A harness killed with SIGKILL in the middle of a power-loss trial leaves no mount and no
process behind: the server is the zygote's child (it dies with it, which dies with the
harness) and mounts with ``auto_unmount`` (fusermount3 unmounts when the server is gone)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil

from .support import needs_fuse

pytestmark = needs_fuse


def _powerloss_mounts(under: Path) -> list[str]:
    out = []
    with open("/proc/self/mountinfo", encoding="utf-8", errors="replace") as fh:
        for line in fh:
            fields = line.split()
            point = fields[4].encode().decode("unicode_escape")
            if "crashlab-powerloss" in line and point.startswith(str(under)):
                out.append(point)
    return out


def _alive(tree: list[psutil.Process]) -> list[int]:
    out = []
    for proc in tree:
        try:
            if proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE:
                out.append(proc.pid)
        except psutil.Error:
            pass
    return out


def test_a_sweep_killed_while_mounted_leaves_no_mount_and_no_process(tmp_path: Path) -> None:
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    env = dict(os.environ, TMPDIR=str(tmp))
    sweep = subprocess.Popen([sys.executable, "-m", "crashlab", "sweep", "--fault", "powerloss", "--points", "P11",
                              "--mode", "live", "--trials", "20", "--report-dir", str(tmp_path / "report")],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env, start_new_session=True)
    tree: list[psutil.Process] = []
    names: set[str] = set()
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and sweep.poll() is None:
            if _powerloss_mounts(tmp):
                tree = psutil.Process(sweep.pid).children(recursive=True)
                names = set()
                for proc in tree:
                    try:
                        names.add(proc.name())
                    except psutil.Error:
                        pass
                if _powerloss_mounts(tmp):  # still mounted once the tree is known
                    break
            time.sleep(0.005)
        assert tree and sweep.poll() is None, "the sweep never held a power-loss mount"
        assert "fusermount3" in names, f"the snapshot missed the mount's helper: {names}"
        os.kill(sweep.pid, signal.SIGKILL)
        sweep.wait(10)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            if not _alive(tree) and not _powerloss_mounts(tmp):
                break
            time.sleep(0.1)
        assert not _powerloss_mounts(tmp), "a power-loss mount outlived its harness"
        assert not _alive(tree), "processes of the sweep outlived it"
    finally:
        if sweep.poll() is None:
            os.killpg(sweep.pid, signal.SIGKILL)
            sweep.wait(10)
        for point in _powerloss_mounts(tmp):
            subprocess.run(["fusermount3", "-u", "-z", point], check=False, timeout=10)
