"""Self-fuzz target ``cli``: the ``maka-ref`` commands on hostile workspaces (issue 13 item 3).

Why a target of its own: the other targets call the library in-process, so they cannot see what
a user sees when a command meets a hostile world — a traceback on stderr, a second document on
stdout, a hang on a FIFO, a write through a hardlink to a file outside the workspace, a child
left running. This target runs the real console command (``python -m maka_ref``) in a fresh
process group per example, against a workspace built from a real image and then damaged by the
classes of issue 13: store files emptied, truncated, flipped, deleted, replaced by FIFOs,
directories or links (to ``/dev/zero`` and outside the workspace); the runtime's own files
(marker, effect log, script sidecars) garbled or hard-linked outside; tool targets linked outside;
and ledger inputs that are FIFOs, devices, directories or garbage.

Images (built once per run, with the reference's own CLI): ``fresh`` (an empty directory),
``completed`` (one scripted T1 turn that reads, writes and appends ``notes.txt``) and
``interrupted`` (the same turn SIGKILLed at failpoint P6, so the store has a live WAL and the
run needs repair). The oracle, for every example:

* the command ends within :data:`TIMEOUT` seconds (else ``hang``) and leaves no process of its
  group behind (``leak``);
* its exit status is 0, 2 or 3 (``run`` may also exit 1: a run that ended ``failed``);
* stderr holds no ``Traceback``; stdout is JSON documents, one per line — exactly one unless the
  command is a successful ``encode`` (one line per event);
* an exit 2 carries ``{"error": {"code"}}`` with a stable code that is not ``internal_error``;
* nothing outside the workspace changes (a canary directory next to it, linked from inside);
* ``inspect``, ``resolve``, ``plan`` and ``encode`` leave the workspace byte-identical.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time
from typing import Any, Callable

from hypothesis import strategies as st

from conformance._fuzz._selffuzz.targets import Finding, stable_code

__all__ = ["COMMANDS", "DAMAGES", "TIMEOUT", "build_cli_images", "check_cli", "cli_cases"]

#: Seconds a command may take before it counts as hanging (a healthy one takes ≈ 0.3 s).
TIMEOUT = 20.0
#: Commands run against the damaged workspace (``ledger`` commands read a damaged input file).
COMMANDS = ("inspect", "repair", "run", "resume", "resolve", "plan", "encode")
READ_ONLY = frozenset({"inspect", "resolve", "plan", "encode"})
IMAGES = ("fresh", "completed", "interrupted")
STORE_FILES = ("runtime.sqlite", "runtime.sqlite-wal", "runtime.sqlite-shm")
#: What a damage may do, by class (issue 13's attack classes; see the module docstring).
DAMAGES = (
    # store faults
    "empty_main", "one_byte_main", "truncate_main", "flip_main", "flip_wal", "delete_wal", "truncate_wal",
    "garbage_shm",
    # non-regular files where the store expects files
    "wal_dev_zero", "wal_fifo", "main_fifo", "main_dir", "main_symlink_outside", "main_hardlink_outside",
    # the runtime's own files
    "marker_garbage", "marker_hardlink_outside", "effects_garbage", "effects_hardlink_outside",
    "sidecar_dir_symlink_outside", "sidecar_garbage",
    # tool targets
    "notes_hardlink_outside", "notes_symlink_outside", "notes_fifo",
    # the workspace itself
    "workspace_missing", "workspace_is_file",
)
LEDGER_INPUTS = ("example", "fifo", "dev_zero", "directory", "garbage", "missing", "huge_number")

_SCRIPT = {
    "userMessage": "keep notes",
    "protocol": "t1_after_preflight_v1",
    "steps": [
        {"toolCalls": [{"id": "call-1", "name": "Write", "args": {"path": "notes.txt", "content": "one\n"}}]},
        {"toolCalls": [{"id": "call-2", "name": "Read", "args": {"path": "notes.txt"}}]},
        {"toolCalls": [{"id": "call-3", "name": "Append", "args": {"path": "notes.txt", "content": "two\n"}}]},
        {"text": "done"},
    ],
}


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MAKA_REF_FAILPOINT")}
    env.update(extra)
    return env


def _maka_ref(args: list[str], cwd: str, env: dict[str, str], timeout: float) -> tuple[Any, str, str, bool, list[int]]:
    """(returncode | None, stdout, stderr, timed_out, leaked pids) of one command in its own session."""
    proc = subprocess.Popen([sys.executable, "-m", "maka_ref", *args], cwd=cwd, env=env, stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    timed_out = False
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        timed_out = True
        _kill_group(proc.pid)
        out, err = proc.communicate()
    leaked = _group_members(proc.pid)
    if leaked:
        _kill_group(proc.pid)
    return (None if timed_out else proc.returncode, out.decode("utf-8", "replace"), err.decode("utf-8", "replace"),
            timed_out, leaked)


def _kill_group(pgid: int) -> None:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _group_members(pgid: int) -> list[int]:
    import psutil

    found = []
    for proc in psutil.process_iter(["pid"]):
        try:
            if os.getpgid(proc.pid) == pgid and proc.status() != psutil.STATUS_ZOMBIE:
                found.append(proc.pid)
        except (ProcessLookupError, psutil.Error, OSError):
            continue
    return found


# --------------------------------------------------------------------------- images


def build_cli_images(scratch: str) -> dict[str, str]:
    """``{image: directory}`` built with the reference's own CLI (see the module docstring)."""
    root = os.path.join(scratch, "cli-images")
    shutil.rmtree(root, ignore_errors=True)
    os.makedirs(root)
    script = os.path.join(root, "script.json")
    with open(script, "w", encoding="utf-8") as handle:
        json.dump(_SCRIPT, handle)
    images = {name: os.path.join(root, name) for name in IMAGES}
    for where in images.values():
        os.makedirs(where)
    code, out, err, _, _ = _maka_ref(["run", "--workspace", images["completed"], "--script", script], root, _env(),
                                     60.0)
    if code != 0:
        raise RuntimeError(f"building the 'completed' image failed (exit {code}): {err[-500:]}")
    proc = subprocess.Popen([sys.executable, "-m", "maka_ref", "run", "--workspace", images["interrupted"],
                             "--script", script], cwd=root, env=_env(MAKA_REF_FAILPOINT="P6"),
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            start_new_session=True)
    try:
        _wait_for_failpoint(proc, "P6")
    finally:
        _kill_group(proc.pid)
        proc.wait(timeout=30)
        if proc.stderr is not None:
            proc.stderr.close()
    if proc.returncode != -signal.SIGKILL:
        raise RuntimeError(f"the 'interrupted' image's run was not killed at P6 (exit {proc.returncode})")
    return images


def _wait_for_failpoint(proc: subprocess.Popen[bytes], name: str) -> None:
    assert proc.stderr is not None
    deadline = time.monotonic() + 60
    seen = b""
    while time.monotonic() < deadline:
        chunk = os.read(proc.stderr.fileno(), 4096)
        if not chunk:
            break
        seen += chunk
        if f"MAKA_FAILPOINT {name}".encode() in seen:
            return
    raise RuntimeError(f"failpoint {name} never announced: {seen[-300:]!r}")


# --------------------------------------------------------------------------- cases


def cli_cases() -> st.SearchStrategy[dict[str, Any]]:
    """``{"image", "damages": [...], "command", "input", "seed"}``."""
    return st.fixed_dictionaries({
        "image": st.sampled_from(IMAGES),
        "damages": st.lists(st.sampled_from(DAMAGES), max_size=3, unique=True),
        "command": st.sampled_from(COMMANDS),
        "input": st.sampled_from(LEDGER_INPUTS),
        "seed": st.integers(0, 2**16),
    })


def _link_outside(path: str, outside: str, name: str, hard: bool) -> None:
    target = os.path.join(outside, name)
    if not os.path.exists(target):
        with open(target, "wb") as handle:
            handle.write(b"outside: must never change\n")
    if os.path.lexists(path):
        os.unlink(path) if not os.path.isdir(path) or os.path.islink(path) else shutil.rmtree(path)
    if hard:
        os.link(target, path)
    else:
        os.symlink(target, path)


def _flip(path: str, seed: int) -> None:
    if not os.path.isfile(path) or os.path.islink(path):
        return
    size = os.path.getsize(path)
    if size == 0:
        return
    with open(path, "r+b") as handle:
        offset = (seed * 7919) % size
        handle.seek(offset)
        byte = handle.read(1)
        handle.seek(offset)
        handle.write(bytes([byte[0] ^ (1 << (seed % 8))]))


def _truncate(path: str, keep: float) -> None:
    if os.path.isfile(path) and not os.path.islink(path):
        os.truncate(path, int(os.path.getsize(path) * keep))


def _replace(path: str, make: Callable[[str], None]) -> None:
    if os.path.lexists(path):
        if os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path)
        else:
            os.unlink(path)
    make(path)


def _write(data: bytes) -> Callable[[str], None]:
    def make(path: str) -> None:
        with open(path, "wb") as handle:
            handle.write(data)
    return make


def _sidecars(ws: str) -> list[str]:
    found = []
    for base, _, files in os.walk(os.path.join(ws, ".maka")):
        found += [os.path.join(base, f) for f in files]
    return found


def apply_damage(ws: str, outside: str, damage: str, seed: int) -> None:
    """One damage of :data:`DAMAGES` to workspace ``ws`` (links point into ``outside``)."""
    if not os.path.isdir(ws) or os.path.islink(ws):
        return  # the workspace itself is already gone or replaced: nothing inside it to damage
    main, wal = os.path.join(ws, "runtime.sqlite"), os.path.join(ws, "runtime.sqlite-wal")
    if damage == "empty_main":
        _truncate(main, 0)
    elif damage == "one_byte_main":
        _truncate(main, 0)
        if os.path.isfile(main):
            _write(b"S")(main)
    elif damage == "truncate_main":
        _truncate(main, 0.5)
    elif damage == "flip_main":
        _flip(main, seed)
    elif damage == "flip_wal":
        _flip(wal, seed)
    elif damage == "delete_wal":
        if os.path.lexists(wal):
            os.unlink(wal)
    elif damage == "truncate_wal":
        _truncate(wal, 0.5)
    elif damage == "garbage_shm":
        _replace(os.path.join(ws, "runtime.sqlite-shm"), _write(bytes(range(256)) * 64))
    elif damage == "wal_dev_zero":
        _replace(wal, lambda p: os.symlink("/dev/zero", p))
    elif damage == "wal_fifo":
        _replace(wal, os.mkfifo)
    elif damage == "main_fifo":
        _replace(main, os.mkfifo)
    elif damage == "main_dir":
        _replace(main, os.mkdir)
    elif damage in ("main_symlink_outside", "main_hardlink_outside"):
        if os.path.isfile(main) and not os.path.lexists(os.path.join(outside, "runtime.sqlite")):
            shutil.copyfile(main, os.path.join(outside, "runtime.sqlite"))
        _link_outside(main, outside, "runtime.sqlite", hard=damage.endswith("hardlink_outside"))
    elif damage == "marker_garbage":
        _replace(os.path.join(ws, ".maka-workspace.json"), _write(b"{not json"))
    elif damage == "marker_hardlink_outside":
        _link_outside(os.path.join(ws, ".maka-workspace.json"), outside, "marker.json", hard=True)
    elif damage == "effects_garbage":
        with open(os.path.join(ws, ".maka-effects.jsonl"), "ab") as handle:
            handle.write(b'{"torn": \n\xff\xfe garbage\n')
    elif damage == "effects_hardlink_outside":
        _link_outside(os.path.join(ws, ".maka-effects.jsonl"), outside, "effects.jsonl", hard=True)
    elif damage == "sidecar_dir_symlink_outside":
        os.makedirs(os.path.join(outside, "maka-dir"), exist_ok=True)
        _replace(os.path.join(ws, ".maka"), lambda p: os.symlink(os.path.join(outside, "maka-dir"), p))
    elif damage == "sidecar_garbage":
        for path in _sidecars(ws):
            _write(b"\x00\x01 not a script")(path)
    elif damage == "notes_hardlink_outside":
        _link_outside(os.path.join(ws, "notes.txt"), outside, "notes.txt", hard=True)
    elif damage == "notes_symlink_outside":
        _link_outside(os.path.join(ws, "notes.txt"), outside, "notes.txt", hard=False)
    elif damage == "notes_fifo":
        _replace(os.path.join(ws, "notes.txt"), os.mkfifo)
    elif damage == "workspace_missing":
        shutil.rmtree(ws)
    elif damage == "workspace_is_file":
        shutil.rmtree(ws)
        _write(b"not a directory\n")(ws)


def _ledger_input(kind: str, scratch: str, ws: str) -> str:
    from importlib import resources

    example = str(resources.files("maka_ref").joinpath("examples", "t1-crash-after-dispatch.jsonl"))
    path = os.path.join(scratch, f"ledger-{kind}")
    if kind == "example":
        return example
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "dev_zero":
        os.symlink("/dev/zero", path)
    elif kind == "directory":
        os.mkdir(path)
    elif kind == "garbage":
        _write(b"\xff\xfe{\n\x00\n")(path)
    elif kind == "huge_number":
        with open(example, encoding="utf-8") as handle:
            text = handle.read()
        _write(text.replace('"content":"after"', '"content":1e400').encode())(path)
    return path  # "missing": never created


def _snapshot(root: str) -> dict[str, Any]:
    """Every entry below ``root`` (without following links): kind, mode and content digest."""
    out: dict[str, Any] = {}
    if not os.path.lexists(root):
        return out
    if not os.path.isdir(root) or os.path.islink(root):
        return {".": _entry(root)}
    for base, dirs, files in os.walk(root, followlinks=False):
        for name in sorted(dirs + files):
            path = os.path.join(base, name)
            out[os.path.relpath(path, root)] = _entry(path)
    return out


def _entry(path: str) -> Any:
    info = os.lstat(path)
    if stat.S_ISLNK(info.st_mode):
        return ("link", os.readlink(path))
    if stat.S_ISREG(info.st_mode):
        with open(path, "rb") as handle:
            return ("file", hashlib.sha256(handle.read()).hexdigest())
    return (stat.S_IFMT(info.st_mode), None)


# --------------------------------------------------------------------------- the check


def check_cli(case: dict[str, Any], images: dict[str, str], scratch: str) -> None:
    example_dir = tempfile.mkdtemp(prefix="cli-", dir=scratch)
    try:
        _check(case, images, example_dir)
    finally:
        for base, dirs, _ in os.walk(example_dir):  # a damaged tree may hold read-only directories
            for name in dirs:
                path = os.path.join(base, name)
                if not os.path.islink(path):
                    try:
                        os.chmod(path, 0o755)
                    except OSError:
                        pass
        shutil.rmtree(example_dir, ignore_errors=True)


def _check(case: dict[str, Any], images: dict[str, str], example_dir: str) -> None:
    ws, outside = os.path.join(example_dir, "ws"), os.path.join(example_dir, "outside")
    shutil.copytree(images[case["image"]], ws, symlinks=True)
    os.makedirs(outside)
    _write(b"outside: must never change\n")(os.path.join(outside, "canary.txt"))
    # damages to the workspace itself come last: after them there is nothing inside to damage
    for damage in sorted(case["damages"], key=lambda d: d.startswith("workspace_")):
        apply_damage(ws, outside, damage, case["seed"])
    command = case["command"]
    if command in ("resolve", "plan", "encode"):
        args = [command, _ledger_input(case["input"], example_dir, ws)]
    elif command == "run":
        script = os.path.join(example_dir, "script.json")
        _write(json.dumps(_SCRIPT).encode())(script)
        args = ["run", "--workspace", ws, "--script", script]
    else:
        args = [command, "--workspace", ws]
    env = _env(MAKA_RUNTIME_SAFE_BOUNDARY_RESUME="1") if command == "resume" else _env()
    outside_before, ws_before = _snapshot(outside), _snapshot(ws)
    code, out, err, timed_out, leaked = _maka_ref(args, example_dir, env, TIMEOUT)
    t = "cli"
    label = f"{command}"
    if timed_out:
        raise Finding(t, f"{label}:hang", case, f"no answer within {TIMEOUT:g} s; stderr: {err[-300:]}")
    if leaked:
        raise Finding(t, f"{label}:leak", case, f"processes left in the command's group: {leaked}")
    if "Traceback (most recent call last)" in err:
        raise Finding(t, f"{label}:traceback", case, err[-1500:])
    allowed = {0, 1, 2, 3} if command == "run" else {0, 2, 3}
    if code not in allowed:
        raise Finding(t, f"{label}:exit", case, f"exit {code}; stderr: {err[-500:]}")
    lines = out.splitlines()
    documents = []
    for line in lines:
        try:
            documents.append(json.loads(line))
        except ValueError:
            raise Finding(t, f"{label}:stdout", case, f"stdout line is not JSON: {line[:200]!r}") from None
    if len(documents) != 1 and not (command == "encode" and code == 0):
        raise Finding(t, f"{label}:stdout", case, f"{len(documents)} documents on stdout (exit {code})")
    if code == 2:
        error = documents[0].get("error") if documents and isinstance(documents[0], dict) else None
        error_code = error.get("code") if isinstance(error, dict) else None
        if error_code == "internal_error" or not stable_code(error_code):
            raise Finding(t, f"{label}:{error_code}", case, str((error or {}).get("message"))[:500])
    if _snapshot(outside) != outside_before:
        raise Finding(t, f"{label}:escape", case, "a file outside the workspace changed")
    if command in READ_ONLY and _snapshot(ws) != ws_before:
        changed = sorted(k for k in set(ws_before) | set(_snapshot(ws)) if ws_before.get(k) != _snapshot(ws).get(k))
        raise Finding(t, f"{label}:read-wrote", case, f"a read changed the workspace: {changed[:5]}")
