"""The real tools, workspace confinement and the effect log (issue 4 item 2)."""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any

import pytest

from maka_ref._runtime import TOOLS, ConfinementError, ToolContext, ToolError, confine, run_turn
from maka_ref._runtime.effects import append_effect_start, read_effect_log
from maka_ref._store.engine.failpoints import arm, disarm

from tests.maka_ref.runtime.support import LEGACY, T1, effect_lines, script

OP = "toolop_" + "0" * 32


@pytest.fixture(autouse=True)
def _disarmed() -> Any:
    disarm()
    yield
    disarm()


@pytest.fixture()
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    return Path(os.path.realpath(root))


def _run(ws: Path, tool: str, **args: Any) -> Any:
    TOOLS[tool].preflight(ws, args)
    return TOOLS[tool].run(ToolContext(ws, OP), args)


def test_recovery_modes_are_declared() -> None:
    """Documented in maka_ref/_runtime/tools.py and docs/choices/runtime.md."""
    assert {name: tool.recovery_mode for name, tool in TOOLS.items()} == {
        "Write": "reconcile", "Edit": "never_auto_retry", "Read": "replay_safe", "Append": "never_auto_retry",
    }


def test_write_creates_replaces_and_keeps_mode(ws: Path) -> None:
    assert _run(ws, "Write", path="dir/sub/a.txt", content="héllo") == {"path": "dir/sub/a.txt", "bytesWritten": 6}
    assert (ws / "dir/sub/a.txt").read_text(encoding="utf-8") == "héllo"
    (ws / "dir/sub/a.txt").chmod(0o600)
    assert _run(ws, "Write", path="./dir//sub/a.txt", content="x")["path"] == "dir/sub/a.txt"
    assert (ws / "dir/sub/a.txt").read_text() == "x"
    assert stat.S_IMODE((ws / "dir/sub/a.txt").stat().st_mode) == 0o600
    assert sorted(p.name for p in (ws / "dir/sub").iterdir()) == ["a.txt"]  # no temp file left


def test_write_onto_a_directory_is_a_tool_error(ws: Path) -> None:
    (ws / "d").mkdir()
    with pytest.raises(ToolError) as info:
        _run(ws, "Write", path="d", content="x")
    assert info.value.code == "not_a_file"


def test_edit_replaces_exactly_one_occurrence(ws: Path) -> None:
    (ws / "config.json").write_text('{"port": 3000}', encoding="utf-8")
    assert _run(ws, "Edit", path="config.json", old="3000", new="4000") == {"path": "config.json", "replacements": 1}
    assert (ws / "config.json").read_text() == '{"port": 4000}'


@pytest.mark.parametrize(
    ("content", "old", "code"),
    [("a b a", "a", "edit_target_ambiguous"), ("a b", "c", "edit_target_absent")],
)
def test_edit_absent_or_ambiguous_changes_nothing(ws: Path, content: str, old: str, code: str) -> None:
    (ws / "f.txt").write_text(content)
    with pytest.raises(ToolError) as info:
        _run(ws, "Edit", path="f.txt", old=old, new="z")
    assert info.value.code == code
    assert (ws / "f.txt").read_text() == content
    assert [p.name for p in ws.iterdir()] == ["f.txt"]


def test_edit_missing_file(ws: Path) -> None:
    with pytest.raises(ToolError) as info:
        _run(ws, "Edit", path="nope.txt", old="a", new="b")
    assert info.value.code == "file_not_found"


def test_read(ws: Path) -> None:
    (ws / "r.txt").write_text("line\n", encoding="utf-8")
    assert _run(ws, "Read", path="r.txt") == {"path": "r.txt", "content": "line\n"}
    with pytest.raises(ToolError) as info:
        _run(ws, "Read", path="missing.txt")
    assert info.value.code == "file_not_found"
    (ws / "bin").write_bytes(b"\xff\xfe")
    with pytest.raises(ToolError) as info:
        _run(ws, "Read", path="bin")
    assert info.value.code == "not_utf8"
    (ws / "big").write_bytes(b"a" * (1024 * 1024 + 1))
    with pytest.raises(ToolError) as info:
        _run(ws, "Read", path="big")
    assert info.value.code == "file_too_large"


def test_append(ws: Path) -> None:
    assert _run(ws, "Append", path="log.txt", content="one\n") == {"path": "log.txt", "bytesAppended": 4}
    _run(ws, "Append", path="log.txt", content="two\n")
    assert (ws / "log.txt").read_text() == "one\ntwo\n"


@pytest.mark.parametrize(
    ("path", "code"),
    [
        ("../outside.txt", "path_parent_reference"),
        ("a/../../outside.txt", "path_parent_reference"),
        ("a/..", "path_parent_reference"),
        ("/etc/passwd", "path_absolute"),
        ("C:/x", "path_absolute"),
        ("a\\b", "path_invalid"),
        ("a\x00b", "path_invalid"),
        ("", "path_invalid"),
        (".", "path_invalid"),
        ("runtime.sqlite", "path_reserved"),
        ("runtime.sqlite-wal", "path_reserved"),
        (".maka-effects.jsonl", "path_reserved"),
        (".maka-workspace.json", "path_reserved"),
        ("./.GIT/config", "path_reserved"),
    ],
)
def test_confinement_rules(ws: Path, path: str, code: str) -> None:
    with pytest.raises(ConfinementError) as info:
        confine(ws, path)
    assert info.value.code == code


def test_symlink_escapes(ws: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("s")
    (ws / "file_link").symlink_to(outside / "secret.txt")
    (ws / "dir_link").symlink_to(outside)
    (ws / "db_link").symlink_to(ws / "runtime.sqlite")
    (ws / "inside").mkdir()
    (ws / "ok_link").symlink_to(ws / "inside")
    for path in ("file_link", "dir_link/secret.txt", "dir_link/new.txt"):
        with pytest.raises(ConfinementError) as info:
            confine(ws, path)
        assert info.value.code == "path_symlink_escape", path
    with pytest.raises(ConfinementError) as info:
        confine(ws, "db_link")
    assert info.value.code == "path_reserved"
    assert confine(ws, "ok_link/n.txt") == ws / "inside" / "n.txt"  # a link that stays inside is fine
    with pytest.raises(ConfinementError):  # the tools refuse it too (preflight)
        TOOLS["Write"].preflight(ws, {"path": "dir_link/new.txt", "content": "x"})
    assert sorted(p.name for p in outside.iterdir()) == ["secret.txt"]


def test_implementation_rechecks_confinement(ws: Path, tmp_path: Path) -> None:
    """Preflight passed; a symlink appears before the implementation runs → refused there."""
    outside = tmp_path / "outside2"
    outside.mkdir()
    args = {"path": "later/x.txt", "content": "x"}
    TOOLS["Write"].preflight(ws, args)
    (ws / "later").symlink_to(outside)
    with pytest.raises(ConfinementError):
        TOOLS["Write"].run(ToolContext(ws, OP), args)
    assert list(outside.iterdir()) == []


def test_invalid_arguments_are_refused_in_preflight(ws: Path) -> None:
    for tool, args in (("Write", {"path": "a"}), ("Edit", {"path": "a", "old": "", "new": "b"}),
                       ("Read", {"path": "a", "extra": 1}), ("Append", {"path": 3, "content": "x"})):
        with pytest.raises(ToolError) as info:
            TOOLS[tool].preflight(ws, args)
        assert info.value.code == "invalid_tool_arguments", tool


def test_effect_log_format_and_torn_tail(ws: Path) -> None:
    append_effect_start(ws, OP, "Write", "sha256:" + "a" * 64)
    assert effect_lines(ws) == [{"operationId": OP, "tool": "Write", "argsHash": "sha256:" + "a" * 64, "pid": os.getpid()}]
    with open(ws / ".maka-effects.jsonl", "ab") as handle:
        handle.write(b'{"operationId":')
    contents = read_effect_log(ws)
    assert contents.torn_tail and contents.starts_by_operation() == {OP: 1}


@pytest.mark.parametrize("protocol", [T1, LEGACY])
@pytest.mark.parametrize(
    ("tool", "args", "before"),
    [
        ("Write", {"path": "notes.txt", "content": "after"}, "before"),
        ("Edit", {"path": "notes.txt", "old": "before", "new": "after"}, "before"),
        ("Append", {"path": "notes.txt", "content": "after"}, "before"),
    ],
)
def test_effect_log_line_is_durable_before_the_effect(
    ws: Path, protocol: str, tool: str, args: dict[str, Any], before: str
) -> None:
    """At P3 (effect partially done) the start line is already on disk and the target still
    holds its old content (Write/Edit: before the rename; Append: only half appended)."""
    (ws / "notes.txt").write_text(before)
    seen: dict[str, Any] = {}

    def probe(name: str) -> None:
        seen["lines"] = effect_lines(ws)
        seen["content"] = (ws / "notes.txt").read_text()

    arm("P3", probe)
    summary = run_turn(ws, script(protocol, [{"toolCalls": [{"id": "c1", "name": tool, "args": args}]}, {"text": "ok"}]))
    assert summary.status == "completed"
    operation_id = summary.tool_calls[0].operation_id
    assert [line["operationId"] for line in seen["lines"]] == [operation_id]
    assert seen["lines"][0]["tool"] == tool and seen["lines"][0]["pid"] == os.getpid()
    expected_mid = {"Write": "before", "Edit": "before", "Append": "before" + "af"}[tool]
    assert seen["content"] == expected_mid
    assert (ws / "notes.txt").read_text() == {"Write": "after", "Edit": "after", "Append": "beforeafter"}[tool]
    assert len(effect_lines(ws)) == 1
