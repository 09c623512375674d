"""Issue 13 item 4: confinement without holes — no tool and no runtime write leaves the workspace.

Why here: each test is one attack a hostile or careless user can mount with ordinary file
operations (a hard link, a symlink, an empty argument, a path swapped while the runtime works).
Every test runs the real runtime on real files and a real SQLite store (in-process where the
attack needs many calls, through the console script or the adapter process where what a user
sees is the point) and asserts on the bytes outside the workspace, never on what the code
under test computes.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any, Iterator

import psutil
import pytest

from maka_ref._runtime import run_turn
from maka_ref._runtime.paths import ConfinementError
from maka_ref._runtime.tools import TOOLS, ToolContext
from tests.maka_ref.runtime.support import T1, clean_env, effect_lines, script, write_script

OUTSIDE_TEXT = "outside-secret\n"


def _calls(steps: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [*steps, {"text": "done"}]


def _one_call(name: str, args: dict[str, Any], call_id: str = "call-1") -> list[dict[str, Any]]:
    return _calls([{"toolCalls": [{"id": call_id, "name": name, "args": args}]}])


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture
def places(tmp_path: Path) -> tuple[Path, Path]:
    """(workspace, outside): two sibling directories on the same file system."""
    ws, outside = tmp_path / "ws", tmp_path / "outside"
    ws.mkdir()
    outside.mkdir()
    return Path(os.path.realpath(ws)), Path(os.path.realpath(outside))


# --------------------------------------------------------------------------- 1. hard links


_IN_PLACE = {
    "Read": {"path": "link"},
    "Append": {"path": "link", "content": "appended by the tool\n"},
    "Edit": {"path": "link", "old": "outside", "new": "EDITED"},
    "Write": {"path": "link", "content": "written by the tool\n"},
}


@pytest.mark.parametrize("tool", sorted(_IN_PLACE))
def test_a_hardlink_to_an_outside_file_is_refused_by_every_in_place_tool(places: tuple[Path, Path], tool: str) -> None:
    """``ws/link`` is a second name of ``outside/secret``: Read must not return it, Append/Edit/
    Write must not change it or break the link; the refusal is an error *result* and the run
    completes."""
    ws, outside = places
    secret = outside / "secret"
    secret.write_text(OUTSIDE_TEXT)
    os.link(secret, ws / "link")
    inode = secret.stat().st_ino
    summary = run_turn(ws, script(T1, _one_call(tool, _IN_PLACE[tool]))).to_json()
    assert summary["status"] == "completed", summary
    [call] = summary["toolCalls"]
    assert call["isError"] is True, call
    assert call["result"]["code"] == "path_hardlinked", call
    assert "outside-secret" not in json.dumps(call)
    assert secret.read_text() == OUTSIDE_TEXT
    assert (ws / "link").stat().st_ino == inode and secret.stat().st_nlink == 2


def test_a_hardlink_to_the_effect_log_or_the_marker_cannot_be_written_through(places: tuple[Path, Path]) -> None:
    """After one run the workspace holds the effect log and the identity marker; hard links to
    them must not let Append forge an effect-log line or corrupt the marker (which would break
    every later run)."""
    ws, _ = places
    first = run_turn(ws, script(T1)).to_json()
    assert first["status"] == "completed", first
    os.link(ws / ".maka-effects.jsonl", ws / "log")
    os.link(ws / ".maka-workspace.json", ws / "mark")
    marker = (ws / ".maka-workspace.json").read_bytes()
    forged = json.dumps({"operationId": "toolop_forged", "tool": "Write", "argsHash": "x", "pid": 1}) + "\n"
    steps = _calls([{"toolCalls": [
        {"id": "call-a", "name": "Append", "args": {"path": "log", "content": forged}},
        {"id": "call-b", "name": "Append", "args": {"path": "mark", "content": "garbage"}},
    ]}])
    summary = run_turn(ws, script(T1, steps)).to_json()
    assert [call["result"].get("code") for call in summary["toolCalls"]] == ["path_hardlinked"] * 2, summary
    assert all(line["operationId"] != "toolop_forged" for line in effect_lines(ws))
    assert (ws / ".maka-workspace.json").read_bytes() == marker
    later = run_turn(ws, script(T1)).to_json()
    assert later["status"] == "completed", later


@pytest.mark.parametrize("how", ["hardlink", "symlink"])
def test_the_runtime_never_appends_to_an_effect_log_that_is_another_file(places: tuple[Path, Path], how: str) -> None:
    """``.maka-effects.jsonl`` planted as a second name (or a symlink) of an outside file: the
    runtime's own append must refuse it (``effect_log_unavailable``: the tool does not start)
    rather than write its line into the outside file."""
    ws, outside = places
    victim = outside / "victim"
    victim.write_text(OUTSIDE_TEXT)
    (os.link if how == "hardlink" else os.symlink)(victim, ws / ".maka-effects.jsonl")
    summary = run_turn(ws, script(T1)).to_json()
    [call] = summary["toolCalls"]
    assert call["result"]["code"] == "effect_log_unavailable", call
    assert call["implementationStarted"] is False
    assert victim.read_text() == OUTSIDE_TEXT
    assert not (ws / "notes.txt").exists()


# --------------------------------------------------------------------------- 3. the script sidecar


def _maka_ref(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "maka_ref", *args], capture_output=True, text=True, timeout=120,
                          env=clean_env(), cwd=cwd, stdin=subprocess.DEVNULL)


@pytest.mark.parametrize("link", [".maka", ".maka/scripts"])
def test_the_script_sidecar_does_not_follow_a_symlink_out_of_the_workspace(places: tuple[Path, Path], link: str) -> None:
    """``maka-ref run`` copies the script to ``.maka/scripts/<runId>.json`` before the run; with
    ``.maka`` (or ``.maka/scripts``) a symlink to an outside directory it must refuse (exit 2,
    ``runtime_file_unsafe``) and create nothing outside."""
    ws, outside = places
    if link == ".maka/scripts":
        (ws / ".maka").mkdir()
    os.symlink(outside, ws / link)
    path = write_script(ws.parent, script(T1))
    done = _maka_ref("run", "--workspace", str(ws), "--script", str(path))
    assert "Traceback" not in done.stderr, done.stderr
    assert done.returncode == 2, (done.returncode, done.stdout, done.stderr)
    assert json.loads(done.stdout)["error"]["code"] == "runtime_file_unsafe"
    assert list(outside.iterdir()) == []
    assert not (ws / "notes.txt").exists()


# --------------------------------------------------------------------------- 4. empty --workspace


@pytest.mark.parametrize("command", ["run", "inspect", "repair", "resume"])
def test_an_empty_workspace_argument_is_a_usage_error(tmp_path: Path, command: str) -> None:
    """``--workspace ""`` used to mean the current directory; it is a usage error and the current
    directory is left untouched."""
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    path = write_script(tmp_path, script(T1))
    extra = ["--script", str(path)] if command == "run" else []
    done = _maka_ref(command, "--workspace", "", *extra, cwd=cwd)
    assert "Traceback" not in done.stderr, done.stderr
    assert done.returncode == 2, (done.returncode, done.stdout, done.stderr)
    error = json.loads(done.stdout)["error"]
    assert error["code"] == "usage" and "--workspace" in error["message"], error
    assert list(cwd.iterdir()) == []


# --------------------------------------------------------------------------- 5. adapter store.open


class _Adapter:
    """``python -m maka_ref.adapter`` over pipes, one request at a time (enough for these checks)."""

    def __init__(self, cwd: Path) -> None:
        env = dict(os.environ, MAKA_CONFORMANCE="1")
        env.pop("MAKA_REF_FAILPOINT", None)
        self.proc = subprocess.Popen([sys.executable, "-m", "maka_ref.adapter"], cwd=cwd, stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env)
        self.next_id = 0
        self.call("hello", {"protocol": 1, "harness": {"name": "tests", "version": "0"}})

    def call(self, op: str, params: dict[str, Any]) -> dict[str, Any]:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.next_id += 1
        self.proc.stdin.write((json.dumps({"id": self.next_id, "op": op, "params": params}) + "\n").encode())
        self.proc.stdin.flush()
        response = json.loads(self.proc.stdout.readline())
        assert response["id"] == self.next_id, response
        return response

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        assert self.proc.wait(timeout=30) == 0


@pytest.fixture
def adapter(tmp_path: Path) -> Iterator[_Adapter]:
    proc = _Adapter(tmp_path)
    try:
        yield proc
    finally:
        if proc.proc.poll() is None:
            proc.proc.kill()
            proc.proc.wait(timeout=30)


def test_the_adapter_never_creates_a_workspace(adapter: _Adapter, tmp_path: Path) -> None:
    missing = tmp_path / "missing" / "ws"
    for read_only in (False, True):
        reply = adapter.call("store.open", {"workspace": str(missing), "readOnly": read_only})
        assert reply["ok"] is False and reply["error"]["code"] == "workspace_invalid", reply
    reply = adapter.call("runtime.run_turn", {"workspace": str(missing), "script": script(T1)})
    assert reply["ok"] is False and reply["error"]["code"] == "workspace_invalid", reply
    assert not (tmp_path / "missing").exists()
    adapter.close()


def test_the_adapter_refuses_a_regular_file_as_workspace(adapter: _Adapter, tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    plain.write_text("not a directory")
    reply = adapter.call("store.open", {"workspace": str(plain)})
    assert reply["ok"] is False and reply["error"]["code"] == "workspace_invalid", reply
    assert plain.read_text() == "not a directory" and sorted(p.name for p in tmp_path.iterdir()) == ["plain"]
    adapter.close()


@pytest.mark.parametrize("system", ["/", "/etc", "/usr", "/proc/self", "/dev", "~"])
def test_the_adapter_refuses_a_system_directory_as_workspace(adapter: _Adapter, system: str) -> None:
    """A directory the implementation may not own (docs/spec-choices.md): the file-system root,
    the standard system directories, anything inside the pseudo file systems, the home directory
    itself. Nothing is created there."""
    path = os.path.expanduser(system)
    before = set(os.listdir(path))
    try:
        reply = adapter.call("store.open", {"workspace": path})
        adapter.close()
        after = set(os.listdir(path))
    finally:  # a runtime that does create its store there must not leave it behind
        if adapter.proc.poll() is None:
            adapter.proc.kill()
            adapter.proc.wait(timeout=30)
        for name in set(os.listdir(path)) - before:
            if name.startswith("runtime.sqlite"):
                os.unlink(os.path.join(path, name))
    assert reply["ok"] is False and reply["error"]["code"] == "workspace_invalid", reply
    assert after == before


# --------------------------------------------------------------------------- 6. the swap race

_SWAPPER = textwrap.dedent(
    """
    import ctypes, os, sys
    ws, outside = sys.argv[1], sys.argv[2]
    real, link = os.path.join(ws, "d"), os.path.join(ws, "d.link")
    os.symlink(outside, link)
    libc = ctypes.CDLL(None, use_errno=True)
    AT_FDCWD, RENAME_EXCHANGE = -100, 2
    a, b = os.fsencode(real), os.fsencode(link)
    if libc.renameat2(AT_FDCWD, a, AT_FDCWD, b, RENAME_EXCHANGE) != 0:
        sys.stdout.write("no-exchange %d\\n" % ctypes.get_errno()); sys.stdout.flush(); sys.exit(0)
    sys.stdout.write("ready\\n"); sys.stdout.flush()
    while True:  # d is a directory, then a symlink to outside, then the directory again ... never absent
        libc.renameat2(AT_FDCWD, a, AT_FDCWD, b, RENAME_EXCHANGE)
    """
)

RACE_CALLS = 10_000


@pytest.fixture
def swapper(places: tuple[Path, Path]) -> Iterator[tuple[Path, Path]]:
    """A process that swaps ``ws/d`` between a real directory and a symlink to ``outside`` in
    a tight loop; killed (and proved gone) afterwards."""
    ws, outside = places
    (ws / "d").mkdir()
    (ws / "d" / "f.txt").write_text("inside\n")
    (outside / "f.txt").write_text(OUTSIDE_TEXT)
    proc = subprocess.Popen([sys.executable, "-c", _SWAPPER, str(ws), str(outside)], stdout=subprocess.PIPE)
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        if line != b"ready\n":
            pytest.skip(f"renameat2(RENAME_EXCHANGE) is not available here: {line!r}")
        yield ws, outside
    finally:
        proc.kill()
        proc.wait(timeout=30)
        assert not psutil.pid_exists(proc.pid) or psutil.Process(proc.pid).status() == psutil.STATUS_ZOMBIE


def test_the_symlink_swap_race_never_escapes_in_10000_calls(swapper: tuple[Path, Path]) -> None:
    """Each call passes the preflight and runs the implementation while ``d`` flips between a
    directory and a symlink to outside. Reads alternate with appends; an escape is a Read that
    returns the outside text or any change to the outside directory. Calls may fail (the path
    is not there for a moment), they may never escape."""
    ws, outside = swapper
    read, append = TOOLS["Read"], TOOLS["Append"]
    ctx = ToolContext(ws, "toolop_" + "0" * 32)
    escapes = results = 0
    for index in range(RACE_CALLS):
        if index % 2 == 0:
            try:
                value = read.run(ctx, {"path": "d/f.txt"})
            except Exception:  # noqa: BLE001 - a refusal or a vanished path is a correct outcome here
                continue
            results += 1
            escapes += value["content"] == OUTSIDE_TEXT
        else:
            try:
                append.run(ctx, {"path": "d/new.txt", "content": "x"})
            except Exception:  # noqa: BLE001
                continue
            results += 1
    outside_now = {p.name: p.read_text() for p in outside.iterdir()}
    appended = outside_now.get("new.txt", "")
    assert (escapes, len(appended)) == (0, 0), (
        f"{escapes} Reads returned the outside file and {len(appended)} Appends wrote outside "
        f"in {RACE_CALLS} calls")
    assert outside_now == {"f.txt": OUTSIDE_TEXT}
    assert results > 0  # the race did not simply refuse everything


def test_the_preflight_answers_a_code_under_the_swap_race(swapper: tuple[Path, Path]) -> None:
    """The preflight's ``realpath`` meets ``d`` as a symlink in ``lstat`` and as a directory in
    ``readlink`` (``EINVAL``): that must be a confinement refusal with a code, never a raw
    ``OSError`` that would stop the turn as a crash."""
    ws, _ = swapper
    read = TOOLS["Read"]
    raw: list[str] = []
    codes: set[str] = set()
    for _ in range(RACE_CALLS):
        try:
            read.preflight(ws, {"path": "d/f.txt"})
        except ConfinementError as exc:
            codes.add(exc.code)
        except Exception as exc:  # noqa: BLE001 - what this test looks for
            raw.append(f"{type(exc).__name__}: {exc}")
    assert raw == [], f"{len(raw)} raw exceptions, e.g. {raw[:3]}"
    assert codes <= {"path_symlink_escape", "path_changed"}, codes


def test_the_descent_resolves_links_inside_as_the_text_rule_does(tmp_path: Path) -> None:
    """The descent (what the tools use) agrees with the preflight's ``realpath`` rule on every
    path the rule accepts and resolves to an existing directory; it refuses with the same code
    whatever the rule refuses; the rest are I/O errors the tool reports (a file or a loop on the
    way, a missing directory when nothing may be created)."""
    from maka_ref._runtime.beneath import descend
    from maka_ref._runtime.paths import confined_text, is_reserved, path_parts

    base = Path(os.path.realpath(tmp_path))
    root = base / "ws"
    (root / "dir" / "sub").mkdir(parents=True)
    (root / "file.txt").write_text("x")
    (base / "outside").mkdir()
    os.symlink(root / "dir", root / "link_abs_in")
    os.symlink("dir/sub", root / "link_rel_in")
    os.symlink("../ws/dir", root / "link_out_and_back")
    os.symlink(base / "outside", root / "link_out")
    os.symlink("..", root / "dir" / "up")
    os.symlink("../..", root / "dir" / "up2")
    os.symlink("runtime.sqlite", root / "link_reserved")
    os.symlink("../.maka-effects.jsonl", root / "dir" / "link_reserved_up")
    os.symlink("missing", root / "dangling")
    os.symlink("loop_b", root / "loop_a")
    os.symlink("loop_a", root / "loop_b")
    os.symlink(".", root / "self")

    def descent(path: str) -> tuple[str, str]:
        try:
            with descend(str(root), path_parts(path), create_dirs=False, reserved=is_reserved, shown=path) as where:
                return ("ok", os.path.join(os.path.realpath(where.dir_text), where.name))
        except ConfinementError as exc:
            return ("error", exc.code)
        except OSError as exc:
            return ("oserror", str(exc.errno))

    def rule(path: str) -> tuple[str, str]:
        try:
            return ("ok", confined_text(str(root), path))
        except ConfinementError as exc:
            return ("error", exc.code)

    io_errors = {"file.txt/below", "dangling/x", "loop_a/x", "new/deep/file", "DIR/x"}
    paths = ["a.txt", "dir/x", "dir/sub/y", "link_abs_in/x", "link_abs_in", "link_rel_in/z",
             "link_out/x", "link_out", "dir/up/file.txt", "dir/up2/x", "link_reserved", "dir/link_reserved_up",
             "dangling", "self/dir/x", "self/runtime.sqlite", "self", *sorted(io_errors)]
    # Stricter by design (as openat2's RESOLVE_BENEATH): a relative link may not pass through a
    # directory above the root even to come back, since that directory is not ours to trust.
    assert descent("link_out_and_back/x") == ("error", "path_symlink_escape")
    assert rule("link_out_and_back/x") == ("ok", str(root / "dir" / "x"))
    for path in paths:
        got, expected = descent(path), rule(path)
        if path in io_errors:
            assert got[0] == "oserror", (path, got, expected)
        else:
            assert got == expected, (path, got, expected)


@pytest.mark.parametrize("kind", ["symlink", "fifo"])
def test_reading_the_effect_log_never_follows_a_link_or_blocks_on_a_fifo(places: tuple[Path, Path], kind: str) -> None:
    """``read_effect_log`` (resume's check that the store is not behind the log) opens the log
    like the writer does: a symlink to an outside file is not read as the oracle, a FIFO does
    not hang the reader (a child process, so a hang fails the test instead of the suite)."""
    ws, outside = places
    if kind == "symlink":
        line = {"operationId": "toolop_outside", "tool": "Write", "argsHash": "x", "pid": 1}
        (outside / "log").write_text(json.dumps(line) + "\n")
        os.symlink(outside / "log", ws / ".maka-effects.jsonl")
    else:
        os.mkfifo(ws / ".maka-effects.jsonl")
    code = ("import sys\nfrom maka_ref._runtime.effects import read_effect_log\n"
            "try:\n    print(read_effect_log(sys.argv[1]))\nexcept OSError as exc:\n    print('OSError', exc.errno)\n")
    try:
        done = subprocess.run([sys.executable, "-c", code, str(ws)], capture_output=True, text=True, timeout=30,
                              env=clean_env())
    except subprocess.TimeoutExpired:
        pytest.fail("read_effect_log blocked on a FIFO")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("OSError"), done.stdout


def test_the_lifecycle_log_does_not_follow_a_symlinked_maka_dir(places: tuple[Path, Path]) -> None:
    """``resume`` appends its lifecycle events (spec 20 §7) to ``.maka/lifecycle.jsonl``; with
    ``.maka`` a symlink to an outside directory nothing may be written there. The sink is best
    effort, so the command still answers (here: parked, nothing to resume)."""
    ws, outside = places
    assert run_turn(ws, script(T1)).to_json()["status"] == "completed"
    (outside / "maka-dir").mkdir()
    os.symlink(outside / "maka-dir", ws / ".maka")
    done = subprocess.run([sys.executable, "-m", "maka_ref", "resume", "--workspace", str(ws)], capture_output=True,
                          text=True, timeout=120, env=clean_env(flag=True), stdin=subprocess.DEVNULL)
    assert "Traceback" not in done.stderr, done.stderr
    assert done.returncode == 3, (done.returncode, done.stdout, done.stderr)
    assert json.loads(done.stdout)["parked"] is True
    assert list((outside / "maka-dir").iterdir()) == []
