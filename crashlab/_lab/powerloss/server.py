"""The power-loss filesystem's own process: ``python -m crashlab._lab.powerloss.server``.

Why a process of its own and not a thread of the harness: libfuse's loop installs signal
handlers and blocks in the kernel; a sweep runs trials on threads and must keep Ctrl-C, and a
filesystem that wedges must be killable without killing the harness. The process is small: it
imports the model and ``mfusepy``, nothing of the harness.

Control: JSON lines (the first line of stdin may carry the directories, see :func:`main`).
On stdout the server says ``{"event": "ready"}`` once the kernel has
mounted it, then answers each request read from stdin with one line:

* ``{"op": "stats"}`` → ``{"ok": true, "stats": {...}}`` (dirty files, pending operations);
* ``{"op": "cut", "after": DIR, "granularity": null | 512 | 4096, "seed": N}`` → the power
  cut (every later filesystem operation fails with ``EIO``), ``{"ok": true, "report": {...}}``;
* ``{"op": "sync_all"}`` → everything durable (what ``syncfs`` would do).

The harness then unmounts (``fusermount3 -u``); the loop ends and the process exits 0. If
stdin closes first (the harness is gone), the server unmounts itself lazily and exits; if it is
killed, ``auto_unmount`` has fusermount3 unmount it.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any, Sequence

__all__ = ["main"]


def _lazy_unmount(mountpoint: str) -> None:
    try:
        subprocess.run(["fusermount3", "-u", "-z", mountpoint], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL, timeout=10, check=False)
    except (OSError, subprocess.TimeoutExpired):
        pass


def main(argv: Sequence[str] | None = None) -> int:
    """Serve one mount. Its directories come as arguments or, without them, as the first
    line of stdin (``{"backing", "state", "mountpoint"}``): a server forked from the crash
    lab's zygote has fixed arguments, so one warm interpreter serves every trial."""
    parser = argparse.ArgumentParser(prog="crashlab-powerloss-server")
    parser.add_argument("--backing")
    parser.add_argument("--state")
    parser.add_argument("--mountpoint")
    args = parser.parse_args(argv)
    if not (args.backing and args.state and args.mountpoint):
        config = json.loads(sys.stdin.readline() or "{}")
        args.backing, args.state, args.mountpoint = config["backing"], config["state"], config["mountpoint"]

    from crashlab._lab.powerloss.fs import PowerLossFS, serve

    out = sys.stdout
    out_lock = threading.Lock()

    def say(message: dict[str, Any]) -> None:
        with out_lock:
            out.write(json.dumps(message) + "\n")
            out.flush()

    fs = PowerLossFS(Path(args.backing), Path(args.state), on_ready=lambda: say({"event": "ready", "pid": os.getpid()}))

    def control() -> None:
        for line in sys.stdin:
            try:
                request = json.loads(line)
                op = request.get("op")
                if op == "stats":
                    say({"ok": True, "stats": fs.stats()})
                elif op == "cut":
                    granularity = request.get("granularity")
                    say({"ok": True, "report": fs.cut(Path(request["after"]), int(granularity) if granularity else None,
                                                      int(request.get("seed", 0)))})
                elif op == "sync_all":
                    fs.sync_all()
                    say({"ok": True})
                else:
                    say({"ok": False, "error": f"unknown op {op!r}"})
            except Exception as exc:  # reported to the harness, which fails the trial with it
                say({"ok": False, "error": f"{type(exc).__name__}: {exc}"})
        _lazy_unmount(args.mountpoint)  # stdin closed: the harness is done or gone

    threading.Thread(target=control, name="powerloss-control", daemon=True).start()
    serve(fs, args.mountpoint)
    return 0


if __name__ == "__main__":
    sys.exit(main())
