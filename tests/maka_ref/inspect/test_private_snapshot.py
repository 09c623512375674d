"""``maka-ref inspect`` never lets SQLite open the workspace's own files (issue 12 item 7).

Why: docs/inspect.md and spec 30 §10 items 8 and 33 ("reading never writes") promise that
inspecting a workspace leaves every file byte-identical and creates nothing. Even a read-only
SQLite connection to a live WAL database writes read marks into ``-shm`` and may create
``-wal``/``-shm``, so the reference copies the files with plain reads and lets SQLite open the
private copy only (``maka_ref._inspect.snapshot``). ``inspect`` is not a protocol operation:
no clause can see a regression to an in-place read, so this test must.

How it sees one, independently of how the connection is spelled: a ``sys.addaudithook`` hook
runs on every ``sqlite3.connect`` made while inspecting and records (1) the database argument
resolved through symlinks and (2) every file descriptor the new connection added that points
at a file of the workspace (``/proc/self/fd``, compared by device and inode, so a path through
an alias directory is caught as well). On top, the workspace tree (listing, bytes, inode,
mtime) must be unchanged, with a writer holding an un-checkpointed WAL open meanwhile. The
last tests plant the bug — ``inspect_sqlite`` reading the live files in place, directly and
through a symlinked alias — and show the watch rejects it.
"""

from __future__ import annotations

import hashlib
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator
from urllib.parse import unquote, urlsplit

import pytest

from maka_ref._inspect import api as inspect_api
from maka_ref._inspect import inspect_workspace
from maka_ref._inspect import sqlite_view
from maka_ref._store import RuntimeStore
from maka_ref.testing import families as fam

from tests.maka_ref.store.support import t1_input, t2_input

_PROC_FD = Path("/proc/self/fd")
_SQLITE_NAMES = ("runtime.sqlite", "runtime.sqlite-wal", "runtime.sqlite-shm", "runtime.sqlite-journal")


@dataclass
class _Watch:
    """What SQLite was asked to open, and which workspace files it held, during one inspect."""

    workspace: Path
    baseline_fds: set[int]
    connects: list[str] = field(default_factory=list)
    opened_in_workspace: list[str] = field(default_factory=list)


_ACTIVE: list[_Watch] = []


def _open_fds() -> dict[int, str]:
    out: dict[int, str] = {}
    if not _PROC_FD.is_dir():
        return out
    for entry in _PROC_FD.iterdir():
        try:
            out[int(entry.name)] = os.readlink(entry)
        except (OSError, ValueError):
            continue
    return out


def _inside(workspace: Path, path: str) -> bool:
    try:
        resolved = Path(os.path.realpath(path))
    except (OSError, ValueError):
        return False
    return resolved == workspace or workspace in resolved.parents


def _database_path(argument: Any) -> str:
    text = os.fsdecode(argument) if isinstance(argument, (str, bytes, os.PathLike)) else str(argument)
    if text.startswith("file:"):
        text = unquote(urlsplit(text).path or text[len("file:"):].split("?", 1)[0])
    return text


def _workspace_ids(workspace: Path) -> set[tuple[int, int]]:
    ids = set()
    for name in _SQLITE_NAMES:
        try:
            st = os.stat(workspace / name)
        except FileNotFoundError:
            continue
        ids.add((st.st_dev, st.st_ino))
    return ids


def _audit(event: str, args: tuple[Any, ...]) -> None:
    """Record a connection to a workspace path, and (once the connection exists, so SQLite has
    opened its main file) every new descriptor on a workspace file, whatever path reached it."""
    if not _ACTIVE or event not in ("sqlite3.connect", "sqlite3.connect/handle"):
        return
    watch = _ACTIVE[-1]
    if event == "sqlite3.connect":
        path = _database_path(args[0]) if args else ""
        watch.connects.append(path)
        if path and path != ":memory:" and _inside(watch.workspace, path):
            watch.opened_in_workspace.append(f"sqlite3.connect({args[0]!r})")
        return
    ids = _workspace_ids(watch.workspace)  # the connection exists: SQLite has opened its main file
    for fd, target in _open_fds().items():
        if fd in watch.baseline_fds:
            continue
        try:
            st = os.stat(f"/proc/self/fd/{fd}")
        except OSError:
            continue
        if (st.st_dev, st.st_ino) in ids or _inside(watch.workspace, target):
            watch.opened_in_workspace.append(f"fd {fd} -> {target}")


sys.addaudithook(_audit)  # audit hooks cannot be removed; inactive unless a watch is active


def tree_state(root: Path) -> tuple[list[str], dict[str, tuple[str, int, int]]]:
    """Listing, and per file (sha256, inode, mtime_ns): creation, rewrite and replacement show."""
    listing = sorted(str(p.relative_to(root)) for p in root.rglob("*"))
    files = {str(p.relative_to(root)): (hashlib.sha256(p.read_bytes()).hexdigest(), p.stat().st_ino,
                                        p.stat().st_mtime_ns)
             for p in root.rglob("*") if p.is_file()}
    return listing, files


def watched_inspect(workspace: Path) -> tuple[Any, _Watch, bool]:
    """Inspect ``workspace`` under the watch: (document or the raised error, watch, tree unchanged)."""
    root = workspace.resolve()
    before = tree_state(root)
    watch = _Watch(root, set(_open_fds()))
    _ACTIVE.append(watch)
    try:
        try:
            outcome: Any = inspect_workspace(workspace)
        except Exception as error:  # noqa: BLE001 - an in-place read may fail; the watch decides
            outcome = error
    finally:
        _ACTIVE.remove(watch)
    return outcome, watch, tree_state(root) == before


def expect_private_snapshot_only(workspace: Path) -> dict[str, Any]:
    """The promise: SQLite connected only outside the workspace, held none of its files, and
    the tree is unchanged. Returns the document."""
    outcome, watch, unchanged = watched_inspect(workspace)
    assert not watch.opened_in_workspace, (
        f"inspect let SQLite open the workspace's own files instead of a private copy: {watch.opened_in_workspace}")
    assert watch.connects, "inspect of a SQLite workspace made no SQLite connection at all (the watch saw nothing)"
    assert unchanged, "inspect changed, replaced or created a file of the workspace"
    assert isinstance(outcome, dict), outcome
    return outcome


@pytest.fixture
def closed_store(tmp_path: Path) -> Path:
    """A workspace whose store was written and closed (T1 + T2 of the W family)."""
    ws = tmp_path / "closed"
    ws.mkdir()
    with RuntimeStore.open(ws) as store:
        store.append(fam.w_marker())
        store.commit_tool_prepared(t1_input())
        store.commit_tool_outcome(t2_input())
    return ws


@pytest.fixture
def live_store(tmp_path: Path) -> Iterator[Path]:
    """A workspace whose writer stays open with committed frames only in the ``-wal``."""
    ws = tmp_path / "live"
    ws.mkdir()
    store = RuntimeStore.open(ws)
    try:
        store.connection.execute("PRAGMA wal_autocheckpoint = 0")
        store.append(fam.w_marker())
        store.commit_tool_prepared(t1_input())
        assert (ws / "runtime.sqlite-wal").stat().st_size > 0
        yield ws
        store.commit_tool_outcome(t2_input())  # the writer carries on after the inspection
    finally:
        store.close()


@pytest.mark.parametrize("kind", ["closed_store", "live_store"])
def test_inspect_opens_only_a_private_copy(kind: str, request: pytest.FixtureRequest) -> None:
    """docs/inspect.md, spec 30 §10 items 8 and 33: for a closed store and for one whose writer
    holds an un-checkpointed WAL, SQLite never opens a workspace file and nothing changes."""
    ws: Path = request.getfixturevalue(kind)
    document = expect_private_snapshot_only(ws)
    assert [e["id"] for e in document["runs"][0]["events"]][:3] == ["initial-1", "call-event-1", "dispatch-event-1"]


def _in_place(alias: Callable[[Path], Path]) -> Callable[[Path], dict[str, Any]]:
    """The planted bug: ``inspect_sqlite`` without the snapshot step, reading the live files
    (through ``alias(workspace)``, which may be a symlinked directory)."""

    def inspect_sqlite(workspace: Path) -> dict[str, Any]:
        files = sorted(p.name for p in workspace.iterdir() if p.name in _SQLITE_NAMES)
        return sqlite_view._read_snapshot(alias(workspace), files)

    return inspect_sqlite


@pytest.mark.parametrize("kind", ["closed_store", "live_store"])
@pytest.mark.parametrize("through", ["direct", "alias"])
def test_the_watch_catches_an_in_place_read(kind: str, through: str, request: pytest.FixtureRequest,
                                            monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Issue 12 item 7: with ``inspect`` reading the workspace's files in place (directly, or
    through a symlinked alias directory outside the workspace), the check above fails."""
    ws: Path = request.getfixturevalue(kind)

    def alias(workspace: Path) -> Path:
        if through == "direct":
            return workspace
        link = tmp_path / f"alias-{kind}"
        if not link.exists():
            link.symlink_to(workspace, target_is_directory=True)
        return link

    monkeypatch.setattr(inspect_api, "inspect_sqlite", _in_place(alias))
    with pytest.raises(AssertionError, match="instead of a private copy"):
        expect_private_snapshot_only(ws)
