"""Shared helpers for the live-runtime tests (``tests/test_runtime_*.py``); not a test module.

Expected values here are written from the specs, not computed by the code under test: the
operation id follows spec 30 §0.3 with its own ``hashlib`` implementation, and events are
labelled by their shape (spec 10 §1.6), not by the runtime's builders.
"""

from __future__ import annotations

import hashlib
import json
import os
import selectors
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Mapping

import psutil

T1 = "t1_after_preflight_v1"
LEGACY = "legacy"
PROTOCOLS = (T1, LEGACY)

#: The crash scripts' one Write call (the spec 30 §0.3 golden arguments).
WRITE_ARGS = {"path": "notes.txt", "content": "after"}
WRITE_HASH = "sha256:763712445cbfb7feebe3bd4ba14e29425f05e40b8cd14aef0896853dca24b4d9"
ONE_WRITE_STEPS: list[dict[str, Any]] = [
    {"toolCalls": [{"id": "call-1", "name": "Write", "args": dict(WRITE_ARGS)}]},
    {"text": "done"},
]


def script(protocol: str = T1, steps: list[dict[str, Any]] | None = None, user: str = "write the notes") -> dict[str, Any]:
    return {"userMessage": user, "protocol": protocol, "steps": steps if steps is not None else ONE_WRITE_STEPS}


def write_script(directory: Path, value: Mapping[str, Any], name: str = "script.json") -> Path:
    path = Path(directory) / name
    path.write_text(json.dumps(value), encoding="utf-8")
    return path


def spec_operation_id(invocation_id: str, call_id: str) -> str:
    """Spec 30 §0.3, independently: sha256 of the JSON array text, first 32 hex."""
    text = json.dumps([invocation_id, call_id], ensure_ascii=False, separators=(",", ":"))
    return "toolop_" + hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]


def label(event: Mapping[str, Any]) -> str:
    """user | call | dispatch | response | text | terminal | other, from the event's shape."""
    content = event.get("content") or {}
    actions = event.get("actions") or {}
    if event.get("status") in ("completed", "failed", "aborted", "cancelled") or actions.get("endInvocation") is True:
        return "terminal"
    if "toolDispatch" in actions:
        return "dispatch"
    kind = content.get("kind")
    if kind == "function_call":
        return "call"
    if kind == "function_response":
        return "response"
    if event.get("role") == "user" and kind == "text":
        return "user"
    if event.get("role") == "model" and kind == "text":
        return "text"
    return "other"


def labels(events: list[Mapping[str, Any]]) -> list[str]:
    return [label(event) for event in events]


def only_run(root: Path) -> tuple[str, str, dict[str, Any]]:
    """(sessionId, runId, header) of the single run stored in ``root`` (raw read-only SQL)."""
    conn = sqlite3.connect(f"file:{Path(root) / 'runtime.sqlite'}?mode=ro", uri=True)
    try:
        rows = conn.execute("SELECT session_id, run_id, header_json FROM agent_runs").fetchall()
    finally:
        conn.close()
    assert len(rows) == 1, rows
    session_id, run_id, header_json = rows[0]
    return session_id, run_id, json.loads(header_json)


def effect_lines(root: Path) -> list[dict[str, Any]]:
    path = Path(root) / ".maka-effects.jsonl"
    if not path.exists():
        return []
    text = path.read_text(encoding="ascii")
    assert text == "" or text.endswith("\n"), "torn effect log"
    return [json.loads(line) for line in text.splitlines()]


# ---------------------------------------------------------------- real `maka-ref` processes
# (additive: used by test_runtime_e2e_matrix, test_runtime_crash_nonloop and
# test_continuation_crash_points)

REPO = Path(__file__).resolve().parents[3]
FLAG_ENV = "MAKA_RUNTIME_SAFE_BOUNDARY_RESUME"
CONTINUATION_FAILPOINT_ENV = "MAKA_RUNTIME_CONTINUATION_FAILPOINT"
FINALLY_MARKER = "child-finally-ran"
READY_DEADLINE_SECONDS = 30.0

#: ``python -c`` wrapper: the CLI inside a ``try/finally`` that writes a marker file, so a test
#: can prove the child was really killed (spec 20 §2 harness step 3: the ``finally`` never ran).
_FINALLY_WRAPPER = (
    "import sys\n"
    "marker = sys.argv[1]\n"
    "try:\n"
    "    from maka_ref._cli.main import main\n"
    "    main(sys.argv[2:])\n"
    "finally:\n"
    "    open(marker, 'w').write('child-finally-ran')\n"
)


def clean_env(*, flag: bool = False, **extra: str) -> dict[str, str]:
    """The environment of a child ``maka-ref``: no inherited failpoints, flag only if asked."""
    env = dict(os.environ, PYTHONPATH=str(REPO))
    for name in ("MAKA_REF_FAILPOINT", CONTINUATION_FAILPOINT_ENV, FLAG_ENV):
        env.pop(name, None)
    if flag:
        env[FLAG_ENV] = "1"
    env.update(extra)
    return env


def cli(*args: str, flag: bool = False, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """Run ``python -m maka_ref ARGS`` to completion in a fresh process (no failpoint armed)."""
    return subprocess.run(
        [sys.executable, "-m", "maka_ref", *args], env=clean_env(flag=flag), cwd=str(REPO),
        stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=timeout,
    )


def spawn_until_failpoint(
    args: list[str], marker_dir: Path, announced: str, *, flag: bool = False, **env: str
) -> subprocess.Popen[bytes]:
    """Start ``maka-ref ARGS`` (inside the ``finally`` wrapper, marker in ``marker_dir``) with
    ``env`` (e.g. ``MAKA_REF_FAILPOINT``); return once stderr showed ``MAKA_FAILPOINT
    <announced>`` (the child then blocks until killed). Kills the child and fails on exit or
    deadline."""
    child = subprocess.Popen(
        [sys.executable, "-c", _FINALLY_WRAPPER, str(Path(marker_dir) / FINALLY_MARKER), *args],
        env=clean_env(flag=flag, **env), cwd=str(REPO),
        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )
    return wait_for_announcement(child, announced)


def wait_for_announcement(child: subprocess.Popen[bytes], point: str) -> subprocess.Popen[bytes]:
    """Wait for the store hooks' announcement ``MAKA_FAILPOINT <point>`` on the child's stderr."""
    return wait_for_stderr(child, f"MAKA_FAILPOINT {point}\n".encode(), point)


def wait_for_stderr(child: subprocess.Popen[bytes], token: bytes, what: str,
                    seconds: float = READY_DEADLINE_SECONDS) -> subprocess.Popen[bytes]:
    """Read the child's stderr until ``token`` appears (a substring of the accumulated stream),
    within ``seconds``; a child that exits first or never gets there is killed and the test
    fails with what it printed."""
    assert child.stderr is not None
    selector = selectors.DefaultSelector()
    selector.register(child.stderr, selectors.EVENT_READ)
    seen = b""
    deadline = time.monotonic() + seconds
    try:
        while token not in seen:
            remaining = deadline - time.monotonic()
            if remaining <= 0 or not selector.select(remaining):
                raise AssertionError(f"child never reached {what}; stderr so far: {seen!r}")
            chunk = os.read(child.stderr.fileno(), 4096)
            if not chunk:
                out = child.stdout.read() if child.stdout else b""
                raise AssertionError(f"child exited before {what}: rc={child.wait()} stderr={seen!r} stdout={out!r}")
            seen += chunk
    except BaseException:
        child.kill()
        child.wait()
        raise
    finally:
        selector.close()
    return child


def sigkill_and_prove(child: subprocess.Popen[bytes], marker_dir: Path) -> bytes:
    """SIGKILL the blocked child and prove the kill was real: return code ``-SIGKILL``, the
    ``finally`` marker absent, the process reaped and no descendant left. Returns its stdout."""
    import psutil

    assert child.poll() is None  # still blocked at the failpoint
    pid = child.pid
    child.send_signal(signal.SIGKILL)
    assert child.wait(timeout=30) == -signal.SIGKILL
    stdout = child.stdout.read() if child.stdout is not None else b""
    for stream in (child.stdout, child.stderr):
        if stream is not None:
            stream.close()
    assert not (Path(marker_dir) / FINALLY_MARKER).exists()  # no graceful path ran
    assert pid not in {p.pid for p in psutil.Process().children(recursive=True)}
    assert not psutil.pid_exists(pid) or psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    return stdout


def db_file_digests(root: Path) -> dict[str, str]:
    """sha256 of every ``runtime.sqlite*`` file (db, -wal, -shm) under ``root``."""
    return {
        path.name: hashlib.sha256(path.read_bytes()).hexdigest()
        for path in sorted(Path(root).glob("runtime.sqlite*"))
    }


def effect_starts_by_operation(root: Path) -> dict[str, int]:
    """operationId → number of effect starts in ``.maka-effects.jsonl``."""
    counts: dict[str, int] = {}
    for line in effect_lines(root):
        counts[line["operationId"]] = counts.get(line["operationId"], 0) + 1
    return counts


def run_with_finally_marker(args: list[str], marker_dir: Path, **env: str) -> subprocess.CompletedProcess[bytes]:
    """``maka-ref ARGS`` to completion inside the same ``finally`` wrapper (the control case:
    on a normal exit the marker *is* written)."""
    return subprocess.run(
        [sys.executable, "-c", _FINALLY_WRAPPER, str(Path(marker_dir) / FINALLY_MARKER), *args],
        env=clean_env(**env), cwd=str(REPO), stdin=subprocess.DEVNULL, capture_output=True, timeout=120,
    )


def crash_source_at(tmp_path: Path, point: str = "P7", protocol: str = T1) -> tuple[Path, str, str]:
    """A workspace whose one run (``script(protocol)``) was SIGKILLed at ``point``:
    ``(workspace, sessionId, runId)``. Not repaired."""
    ws = Path(tmp_path) / "ws"
    ws.mkdir()
    script_path = write_script(tmp_path, script(protocol))
    child = spawn_until_failpoint(
        ["run", "--workspace", str(ws), "--script", str(script_path)], tmp_path, point, MAKA_REF_FAILPOINT=point
    )
    sigkill_and_prove(child, tmp_path)
    session_id, run_id, _ = only_run(ws)
    return ws, session_id, run_id


def plan_source(root: Path, session_id: str, source_run_id: str) -> Any:
    """``plan_authoritative`` (flag on) for ``source_run_id`` over read-only stores (spec 20
    §3.2): the "re-plan" of the §4.9 crash matrix. Writes nothing."""
    from maka_ref._continuation import StoreWorld
    from maka_ref._plan.continuation import plan_authoritative
    from maka_ref._store.agent_runs.store import AgentRunStore
    from maka_ref._store.runtime_store import RuntimeStore

    ids = iter(("invocation_replan", "run_replan", "turn_replan", "claim_replan"))
    with RuntimeStore.open_read_only(root) as store, AgentRunStore.open_read_only(root) as runs:
        world = StoreWorld(Path(os.path.realpath(root)), store, runs)
        return plan_authoritative(world, ids, session_id, source_run_id, feature_enabled=True)


def run_until_failpoint(workspace: Path, script_path: Path, point: str, announced: str | None = None) -> subprocess.Popen[bytes]:
    """Start ``maka-ref run`` armed at ``point``; return once it announced the failpoint on
    stderr (it then blocks until killed). Fails (and kills the child) on exit or deadline."""
    env = dict(os.environ, MAKA_REF_FAILPOINT=point, PYTHONPATH=str(REPO))
    child = subprocess.Popen(
        [sys.executable, "-m", "maka_ref", "run", "--workspace", str(workspace), "--script", str(script_path)],
        env=env, cwd=str(REPO), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )
    return wait_for_announcement(child, announced or point)


def kill_and_reap(child: subprocess.Popen[bytes]) -> None:
    """SIGKILL, prove it was a real kill (-9), close the pipes, and prove nothing is left."""
    assert child.poll() is None  # still blocked at the failpoint
    pid = child.pid
    child.send_signal(signal.SIGKILL)
    assert child.wait(timeout=30) == -signal.SIGKILL
    for stream in (child.stdout, child.stderr):
        if stream is not None:
            stream.close()
    assert pid not in {p.pid for p in psutil.Process().children(recursive=True)}
    assert not psutil.pid_exists(pid) or psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
