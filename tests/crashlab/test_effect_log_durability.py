"""The effect-log line is fsynced before the tool's side effect starts (issue 12 item 8).

Why this is a test of ours and not a clause: protocol §4.3 requires the implementation to
append its ``.maka-effects.jsonl`` line, *flushed and fsynced*, before each real start of a
tool's side effect (spec 30 §6.5: the log is the harness's oracle for "ran twice"). A missing
fsync is invisible to a SIGKILL — the page cache survives the process, so every crash clause
still finds the line — and only a power loss (or a simulated one: the power-loss fault of
issue 15, a filesystem that drops unsynced writes) can tell. Until that fault exists, no clause
can check a third-party implementation for it; for the reference, this test watches the
order of the calls in-process.

How: ``os.fsync`` / ``os.fdatasync`` are wrapped to record which file (device and inode) each
sync reaches and what the effect log held at that moment; a ``sys.addaudithook`` hook records
every Python-level ``open`` for writing / ``os.mkdir`` / ``os.rename`` / ``os.remove`` of the tool's
target (its temporary file included). The first such event is the start of the side effect (a
read-only open, such as the Phase 3 evidence read of the before-state, is not). The
expectation comes from the protocol, not from the runtime: a sync of the effect log holding
the operation's line, and (when the log was just created) a sync of the workspace directory,
both strictly before that start. The last test plants the bug (the line written, no fsync)
and shows the check fails on it, so the check keeps proving something.
"""

from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import pytest

from maka_ref._runtime import effects, run_turn

from tests.maka_ref.runtime.support import LEGACY, T1, effect_lines, script

TARGET = "effect-target.txt"
LOG = ".maka-effects.jsonl"


@dataclass
class _Trace:
    """Ordered record of syncs and target touches during one turn."""

    workspace: Path
    events: list[tuple[str, Any]] = field(default_factory=list)


_ACTIVE: list[_Trace] = []


def _touches_target(args: tuple[Any, ...]) -> str | None:
    """The path among ``args`` that names the tool's target (or its temporary file)."""
    for value in args:
        if isinstance(value, (str, bytes, os.PathLike)):
            text = os.fsdecode(value)
            if TARGET in os.path.basename(text):
                return text
    return None


_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND


def _writes(event: str, args: tuple[Any, ...]) -> bool:
    """Whether the event can change the file: every mkdir/rename/remove/truncate, and an
    ``open`` for writing. Since Phase 3 a writing tool reads its target's before-state for the
    T1 evidence (docs/spec-phase3.md §1) before the effect-log line exists; that read is not
    the start of its side effect."""
    if event != "open":
        return True
    mode, flags = (args + (None, None))[1:3]
    if isinstance(mode, str):
        return any(c in mode for c in "wax+")
    return isinstance(flags, int) and bool(flags & _WRITE_FLAGS)


def _audit(event: str, args: tuple[Any, ...]) -> None:
    """Record the tool's touches of its target, each marked writing or not."""
    if not _ACTIVE or event not in ("open", "os.mkdir", "os.rename", "os.remove", "os.truncate"):
        return
    trace = _ACTIVE[-1]
    path = _touches_target(args[:2] if event == "os.rename" else args[:1])
    if path is not None:
        trace.events.append(("touch", (event, path, _writes(event, args))))


sys.addaudithook(_audit)  # audit hooks cannot be removed; inactive unless a trace is active


def _synced(trace: _Trace, real: Callable[[int], None]) -> Callable[[int], None]:
    def sync(fd: int) -> None:
        st = os.fstat(fd)
        log = trace.workspace / LOG
        held = log.read_bytes() if log.exists() and os.stat(log).st_ino == st.st_ino else None
        trace.events.append(("sync", ((st.st_dev, st.st_ino), held)))
        real(fd)
    return sync


@pytest.fixture
def traced() -> Callable[[Path, dict[str, Any]], _Trace]:
    """Run one turn with syncs and target touches recorded; returns the trace."""

    def run(ws: Path, turn_script: dict[str, Any]) -> _Trace:
        trace = _Trace(ws)
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(os, "fsync", _synced(trace, os.fsync))
            if hasattr(os, "fdatasync"):
                patch.setattr(os, "fdatasync", _synced(trace, os.fdatasync))
            _ACTIVE.append(trace)
            try:
                summary = run_turn(ws, turn_script)
            finally:
                _ACTIVE.remove(trace)
        assert summary.status == "completed", summary
        return trace

    return run


def expect_line_durable_before_effect(trace: _Trace, log_before: bytes | None) -> None:
    """Protocol §4.3: the turn's one new effect-log line is fsynced (and, for a log file the
    turn created, the workspace directory too) before the first touch of the tool's target.

    ``log_before`` is the log's content before the turn (None: no log yet)."""
    ws = trace.workspace
    after = (ws / LOG).read_bytes()
    previous = log_before or b""
    assert after.startswith(previous) and after.count(b"\n") == previous.count(b"\n") + 1, (previous, after)
    line = after[len(previous):]
    assert json.loads(line)["tool"] and line.endswith(b"\n")
    log_id = (os.stat(ws / LOG).st_dev, os.stat(ws / LOG).st_ino)
    dir_id = (os.stat(ws).st_dev, os.stat(ws).st_ino)
    touches = [i for i, (kind, _) in enumerate(trace.events) if kind == "touch"]
    assert touches, f"the tool never touched {TARGET}: {trace.events}"
    writes = [i for i in touches if trace.events[i][1][2]]
    # The effect starts at the first write of the target; a tool that only reads (Read) starts
    # at its first read. Earlier reads of a writing tool are the runtime's own evidence reads.
    touches = writes or touches
    before = [value for kind, value in trace.events[: touches[0]] if kind == "sync"]
    log_syncs = [held for ident, held in before if ident == log_id]
    assert any(held is not None and held.endswith(line) and held.startswith(previous) for held in log_syncs), (
        f"the effect-log line {line!r} was not fsynced before the side effect started "
        f"(first touch {trace.events[touches[0]][1]}); syncs before it: {before}")
    if log_before is None:
        assert any(ident == dir_id for ident, _ in before), (
            "the effect log was created but the workspace directory was not fsynced before the side effect "
            f"started, so the new file's entry may not survive a power loss: {before}")


_CALLS = {
    "Write": {"path": TARGET, "content": "after"},
    "Edit": {"path": TARGET, "old": "before", "new": "after"},
    "Append": {"path": TARGET, "content": "after"},
    "Read": {"path": TARGET},
}


@pytest.mark.parametrize("protocol", [T1, LEGACY])
@pytest.mark.parametrize("tool", sorted(_CALLS))
def test_effect_log_line_is_fsynced_before_the_side_effect(
    tmp_path: Path, traced: Callable[[Path, dict[str, Any]], _Trace], tool: str, protocol: str
) -> None:
    """Protocol §4.3, spec 30 §6.5: for each tool, in a fresh workspace (the log is created by
    this line, so the directory must be synced too) and under both boundary protocols."""
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / TARGET).write_text("before", encoding="utf-8")
    steps = [{"toolCalls": [{"id": "c1", "name": tool, "args": dict(_CALLS[tool])}]}, {"text": "ok"}]
    trace = traced(ws, script(protocol, steps))
    expect_line_durable_before_effect(trace, log_before=None)


def test_a_line_appended_to_an_existing_log_is_fsynced_before_its_effect(
    tmp_path: Path, traced: Callable[[Path, dict[str, Any]], _Trace]
) -> None:
    """The same rule when the log already holds lines of earlier turns."""
    ws = tmp_path / "ws"
    ws.mkdir()
    earlier = {"operationId": "toolop_earlier", "tool": "Write", "argsHash": "sha256:" + "0" * 64, "pid": 1}
    (ws / LOG).write_bytes(json.dumps(earlier, separators=(",", ":")).encode("ascii") + b"\n")
    before = (ws / LOG).read_bytes()
    steps = [{"toolCalls": [{"id": "c1", "name": "Write", "args": dict(_CALLS["Write"])}]}, {"text": "ok"}]
    trace = traced(ws, script(T1, steps))
    expect_line_durable_before_effect(trace, log_before=before)
    assert effect_lines(ws)[0] == earlier


def test_the_check_fails_when_the_line_is_not_fsynced(
    tmp_path: Path, traced: Callable[[Path, dict[str, Any]], _Trace], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The planted bug of issue 12 item 8: the line is written but never fsynced (neither the
    file nor the directory). The check above must reject it, or it proves nothing."""

    def append_without_fsync(workspace: Any, operation_id: str, tool: str, args_hash: str) -> None:
        line = json.dumps({"operationId": operation_id, "tool": tool, "argsHash": args_hash, "pid": os.getpid()},
                          separators=(",", ":")).encode("ascii") + b"\n"
        with open(Path(workspace) / LOG, "ab") as handle:
            handle.write(line)  # the bug: closed (flushed to the page cache), never synced to disk

    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / TARGET).write_text("before", encoding="utf-8")
    monkeypatch.setattr(effects, "append_effect_start", append_without_fsync)
    steps = [{"toolCalls": [{"id": "c1", "name": "Write", "args": dict(_CALLS["Write"])}]}, {"text": "ok"}]
    trace = traced(ws, script(T1, steps))
    assert len(effect_lines(ws)) == 1  # a SIGKILL-only oracle would see the line and be satisfied
    with pytest.raises(AssertionError, match="was not fsynced before the side effect started"):
        expect_line_durable_before_effect(trace, log_before=None)
