"""A minimal adapter and deliberately misbehaving ones: ``python -m crashlab.testing.bad_adapter MODE [MARKER]``.

Why it ships with the product: every verdict of protocol §7 must be provoked for real (a real
hang, a real escaped grandchild, a real 16 MiB line) to prove the client never hangs and never
leaves a process behind; third-party harness code can reuse the same zoo. ``MARKER`` is
ignored except that it appears in the command line of this process and of any process it
spawns, so a test can look for leftovers by it.

The ``good`` adapter speaks protocol v1 with three operations besides ``hello``: ``echo``
(result ``{"params": …}``), ``faults.arm`` (ids ``FP1``, ``FP2``, ``FP3``) and ``work``
(params ``{"through": [ids]}``: passes each point in order; an armed one is announced with
``{"failpoint": id}`` and the process blocks until killed). ``EXPECTED`` maps every mode to
the verdict a correct client gives; ``deaf`` stops reading stdin after ``hello`` (a large
request must time out, not block the writer), ``orphan`` leaves a sleeper whose parent exited
before the first reply (found only by the session token). Every mode writes
``bad_adapter[MODE]`` lines to stderr before it misbehaves, so the stderr tail can be checked.
``BAD_ADAPTER_CLAIMS`` (comma-separated capabilities) adds claims to the handshake, so a
conformance run sends this adapter real clauses. Only the standard library is used.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Mapping

__all__ = ["EXPECTED", "MODES", "command", "environment"]

#: mode → the verdict a correct client gives (``None``: no verdict, the session is fine).
EXPECTED: dict[str, str | None] = {
    "good": None,
    "hang": "timeout",
    "hang_hello": "timeout",
    "deaf": "timeout",
    "garbage": "protocol_violation",
    "partial": "exited",
    "exit_early": "exited",
    "wrong_id": "protocol_violation",
    "flood": "output_flood",
    "grandchild": "survivors",
    "orphan": "survivors",
    "ignore_sigterm": "shutdown_timeout",
    "stderr_spam": None,
    "double_response": "protocol_violation",
    "announce_unarmed": "unexpected_failpoint",
    "old_protocol": "handshake_failed",
}
MODES = tuple(EXPECTED)

FAILPOINTS = ("FP1", "FP2", "FP3")
PARTIAL_EXIT_STATUS = 5
EARLY_EXIT_STATUS = 3
STDERR_END = "bad_adapter: end of stderr spam"

_ROOT = str(Path(__file__).resolve().parents[2])


def command(mode: str, marker: str | None = None) -> list[str]:
    """The argv that runs ``mode`` with this interpreter."""
    if mode not in EXPECTED:
        raise ValueError(f"unknown mode {mode!r}")
    return [sys.executable, "-m", "crashlab.testing.bad_adapter", mode, *([marker] if marker else [])]


def environment(base: Mapping[str, str] | None = None) -> dict[str, str]:
    """``base`` (default: ``os.environ``) with this package importable by the child."""
    env = dict(os.environ if base is None else base)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (_ROOT, env.get("PYTHONPATH", "")) if p)
    return env


# ---------------------------------------------------------------------- the adapter


def _log(mode: str, text: str) -> None:
    sys.stderr.write(f"bad_adapter[{mode}] {text}\n")
    sys.stderr.flush()


def _send(obj: Any) -> None:
    sys.stdout.buffer.write(json.dumps(obj).encode() + b"\n")
    sys.stdout.buffer.flush()


def _block_forever() -> None:
    while True:
        time.sleep(3600)


def _sleeper_argv(marker: str) -> list[str]:
    return [sys.executable, "-c", "import time; time.sleep(600)", "bad_adapter-sleeper", marker]


def _spawn_escapee(mode: str, marker: str) -> None:
    """Start a ``sleep 600`` in a new session, directly (``grandchild``) or via a parent that
    exits at once, so it is reparented before any snapshot could see it (``orphan``)."""
    quiet = {"stdin": subprocess.DEVNULL, "stdout": subprocess.DEVNULL}
    if mode == "grandchild":
        subprocess.Popen(_sleeper_argv(marker), start_new_session=True, **quiet)
        return
    code = (
        "import subprocess, sys; subprocess.Popen(sys.argv[1:], start_new_session=True,"
        " stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL)"
    )
    subprocess.run([sys.executable, "-c", code, *_sleeper_argv(marker)], check=True, **quiet)


def _extra_claims() -> list[str]:
    """``BAD_ADAPTER_CLAIMS=ledger.codec,store``: claim more, so that a conformance run sends
    this adapter real clauses and meets its misbehaviour there (every unknown op then gets
    the mode's behaviour or ``unknown_op``)."""
    return [c for c in os.environ.get("BAD_ADAPTER_CLAIMS", "").split(",") if c]


def _hello(mode: str, request: Mapping[str, Any]) -> dict[str, Any]:
    params = request.get("params") or {}
    if mode == "old_protocol" or params.get("protocol") != 1:
        error = {"code": "protocol_version_unsupported", "message": "this adapter speaks protocol 0"}
        return {"id": request["id"], "ok": False, "error": error}
    result = {
        "protocol": 1,
        "implementation": {"name": "bad-adapter", "version": mode},
        "capabilities": ["faults", "test.echo", *_extra_claims()],
        "failpoints": list(FAILPOINTS),
    }
    return {"id": request["id"], "ok": True, "result": result}


def _answer(request: Mapping[str, Any], armed: set[str]) -> dict[str, Any]:
    op, params, rid = request.get("op"), request.get("params") or {}, request.get("id")
    if op == "echo":
        return {"id": rid, "ok": True, "result": {"params": params}}
    if op == "environ":  # what the process sees (a pre-forked child's /proc environ is its zygote's)
        return {"id": rid, "ok": True, "result": {"environ": dict(os.environ), "cwd": os.getcwd()}}
    if op == "faults.arm":
        point = params.get("failpoint")
        if point not in FAILPOINTS:
            return {"id": rid, "ok": False, "error": {"code": "unknown_failpoint", "message": str(point)}}
        armed.add(point)
        return {"id": rid, "ok": True, "result": {"armed": point}}
    if op == "work":
        passed = []
        for point in params.get("through", []):
            if point in armed:
                _send({"failpoint": point})
                _block_forever()
            passed.append(point)
        return {"id": rid, "ok": True, "result": {"passed": passed}}
    return {"id": rid, "ok": False, "error": {"code": "unknown_op", "message": f"no operation {op}"}}


def _misbehave(mode: str, request: Mapping[str, Any]) -> bool:
    """Misbehave on a non-hello request; ``True`` if the request is dealt with."""
    rid = request.get("id")
    if mode == "hang":
        return True
    if mode == "garbage":
        sys.stdout.buffer.write(b"this is not JSON {\n")
    elif mode == "partial":
        sys.stdout.buffer.write(b'{"id": %d, "ok": tr' % rid)
        sys.stdout.buffer.flush()
        os._exit(PARTIAL_EXIT_STATUS)
    elif mode == "wrong_id":
        _send({"id": rid + 7, "ok": True, "result": {}})
    elif mode == "flood":
        chunk = b"x" * (1 << 20)
        while True:
            sys.stdout.buffer.write(chunk)
    elif mode == "announce_unarmed":
        _send({"failpoint": "FP3"})
        _block_forever()
    elif mode == "stderr_spam":
        for i in range(20000):  # about 1 MiB, far more than the 64 KiB tail
            sys.stderr.write(f"bad_adapter[{mode}] spam line {i:06d} ..........................\n")
        sys.stderr.write(STDERR_END + "\n")
        sys.stderr.flush()
        return False
    else:
        return False
    sys.stdout.buffer.flush()
    return True


def main(argv: list[str]) -> int:
    mode = argv[0] if argv else "good"
    marker = argv[1] if len(argv) > 1 else "no-marker"
    if mode not in EXPECTED:
        print(f"unknown mode {mode!r}; modes: {', '.join(MODES)}", file=sys.stderr)
        return 2
    _log(mode, f"pid {os.getpid()} starting")
    if mode == "ignore_sigterm":
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    armed: set[str] = set()
    for raw in sys.stdin.buffer:
        request = json.loads(raw)
        if request.get("op") == "hello":
            if mode == "hang_hello":
                _log(mode, "misbehaving now: never answering hello")
                continue
            if mode in ("grandchild", "orphan"):
                _spawn_escapee(mode, marker)
                _log(mode, "misbehaving now: left an escaped sleeper behind")
            _send(_hello(mode, request))
            if mode == "deaf":
                _log(mode, "misbehaving now: never reading stdin again")
                _block_forever()
            if mode == "exit_early":
                _log(mode, f"misbehaving now: exit {EARLY_EXIT_STATUS} after hello")
                return EARLY_EXIT_STATUS
            continue
        if mode not in ("good", "grandchild", "orphan", "ignore_sigterm", "double_response"):
            _log(mode, f"misbehaving now on {request.get('op')}")
        if _misbehave(mode, request):
            continue
        reply = _answer(request, armed)
        _send(reply)
        if mode == "double_response":
            _log(mode, "misbehaving now: second response")
            _send(reply)
    if mode == "ignore_sigterm":
        _log(mode, "misbehaving now: ignoring end of stdin")
        _block_forever()
    _log(mode, "stdin closed, exiting 0")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
