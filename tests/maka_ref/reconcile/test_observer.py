"""The file observer on real files (docs/spec-phase3.md §4.1–§4.4, §1.6, §7 scenarios 19–34).

Each test builds a workspace in a tmp dir, writes an evidence record by hand (digests from
``hashlib``), puts the target in one of the generated states of issue 16 (before, expected-after,
diverged, deleted, replaced by a symlink or a directory, unreadable) and checks the observed
state and the row of the observation table. Tests run as root in CI, where ``chmod 000`` does
not stop a read: the permission case drops to ``nobody`` in a forked child there, and the other
unreadable cases use paths (a parent that became a link or a file) that root cannot bypass.
"""

from __future__ import annotations

import errno
import json
import os
import shutil
import stat
import sys
import tempfile
import threading
from pathlib import Path
from typing import Any

import pytest

from maka_ref._reconcile.evidence import MAX_FILE_BYTES, FileEvidence, decode_evidence
from maka_ref._reconcile.observation import ObservedState, classify
from maka_ref._reconcile.observer import OBSERVER_SUPPORTED, observe, observe_evidence
from tests.maka_ref.reconcile.support import ABSENT, args_for, evidence, regular, sha

pytestmark = pytest.mark.skipif(not OBSERVER_SUPPORTED, reason="the observer needs POSIX openat/O_NOFOLLOW (spec-phase3 §1.6)")

TARGET = "dir/f.txt"
OLD, NEW = b"port=3000\n", b"port=4000\n"


def _record(tool: str = "Edit", **kwargs: Any) -> FileEvidence:
    decoded = decode_evidence(evidence(tool, **kwargs))
    assert isinstance(decoded, FileEvidence), decoded
    return decoded


def _put(root: Path, rel: str, data: bytes, mode: int = 0o600) -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    os.chmod(path, mode)
    return path


def _row(root: Path, record: FileEvidence, **kwargs: Any) -> tuple[ObservedState, str]:
    observed = observe_evidence(root, record, **kwargs)
    return observed, classify(record, observed).observation


# --------------------------------------------------------------------------- the rows on real files


def test_before_state_is_prior(tmp_path: Path) -> None:
    """spec-phase3 §4.4 row 3: an Edit that never happened (kill at P2/P3) is matches_prior_state."""
    _put(tmp_path, TARGET, OLD)
    observed, row = _row(tmp_path, _record())
    assert observed == ObservedState.regular(len(OLD), 1, 0o600, sha(OLD))
    assert row == "matches_prior_state"


def test_expected_after_state_is_expected(tmp_path: Path) -> None:
    """spec-phase3 §4.4 row 2: the file holds expectedAfter (kill at P4) → matches_expected_state."""
    _put(tmp_path, TARGET, NEW)
    assert _row(tmp_path, _record())[1] == "matches_expected_state"


def test_new_file_not_yet_written_is_prior(tmp_path: Path) -> None:
    """spec-phase3 §7 scenario 19: Write of a new file killed before the rename; the temp file
    next to it is neither observed nor touched."""
    temp = _put(tmp_path, "dir/.f.txt.op-1.tmp", b"hello", 0o644)
    observed, row = _row(tmp_path, _record("Write"))
    assert observed == ObservedState.of_type("absent") and row == "matches_prior_state"
    assert temp.read_bytes() == b"hello"


def test_missing_parent_directory_is_absent(tmp_path: Path) -> None:
    """spec-phase3 §4.1: a directory on the way that does not exist means nothing is there."""
    observed, row = _row(tmp_path, _record("Write", target="a/b/c.txt", args=args_for("Write", "a/b/c.txt"),
                                           result={"path": "a/b/c.txt", "bytesWritten": 5}))
    assert observed.type == "absent" and row == "matches_prior_state"


def test_outside_write_is_diverged(tmp_path: Path) -> None:
    """spec-phase3 §7 scenario 23: other content → diverged; the outside bytes survive."""
    path = _put(tmp_path, TARGET, b"port=5000\n")
    assert _row(tmp_path, _record())[1] == "diverged"
    assert path.read_bytes() == b"port=5000\n"


def test_deleted_target(tmp_path: Path) -> None:
    """spec-phase3 §4.4: deleted with a regular before → diverged; with an absent before → prior."""
    (tmp_path / "dir").mkdir()
    assert _row(tmp_path, _record())[1] == "diverged"
    assert _row(tmp_path, _record("Write"))[1] == "matches_prior_state"


def test_replaced_by_a_symlink_is_diverged_and_not_followed(tmp_path: Path) -> None:
    """spec-phase3 §7 scenario 25: a link to an in-workspace copy of the expected bytes is still
    diverged: the observer never follows the final component."""
    _put(tmp_path, "copy.txt", NEW)
    (tmp_path / "dir").mkdir()
    os.symlink("../copy.txt", tmp_path / TARGET)
    observed, row = _row(tmp_path, _record())
    assert observed == ObservedState.of_type("symlink") and row == "diverged"
    os.unlink(tmp_path / TARGET)
    os.symlink("/etc/passwd", tmp_path / TARGET)  # and never reads outside the workspace
    assert observe(tmp_path, TARGET) == ObservedState.of_type("symlink")


def test_replaced_by_a_directory_is_diverged(tmp_path: Path) -> None:
    """spec-phase3 §7 scenario 26: a directory at the target → diverged."""
    (tmp_path / TARGET).mkdir(parents=True)
    observed, row = _row(tmp_path, _record())
    assert observed == ObservedState.of_type("directory") and row == "diverged"


def test_fifo_is_diverged_and_never_opened(tmp_path: Path) -> None:
    """spec-phase3 §7 scenario 26 / §8 item 7: a FIFO is ``other`` from lstat; opening it for
    reading would block, so the observation must finish promptly."""
    (tmp_path / "dir").mkdir()
    os.mkfifo(tmp_path / TARGET)
    answer: list[ObservedState] = []
    worker = threading.Thread(target=lambda: answer.append(observe(tmp_path, TARGET)), daemon=True)
    worker.start()
    worker.join(10)
    assert answer == [ObservedState.of_type("other")]
    assert classify(_record(), answer[0]).observation == "diverged"


@pytest.mark.parametrize("replacement", ["symlink to a directory", "regular file"])
def test_parent_no_longer_a_directory_is_unreadable(tmp_path: Path, replacement: str) -> None:
    """spec-phase3 §7 scenario 27: a link or a file where the target's directory was is
    ``ancestor_not_directory`` (row 1), never ``absent``."""
    _put(tmp_path, "elsewhere/f.txt", NEW)
    if replacement == "regular file":
        _put(tmp_path, "dir", b"not a directory")
    else:
        os.symlink("elsewhere", tmp_path / "dir")
    observed, row = _row(tmp_path, _record())
    assert observed == ObservedState.unreadable("ancestor_not_directory") and row == "unreadable"
    assert classify(_record(), observed).reason_code == "reconcile_unreadable"


def test_oversize_is_diverged_without_reading(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """spec-phase3 §7 scenario 29 / §8 item 8: a file over MAX_FILE_BYTES is reported by size and
    never read (a sparse file, so the test writes almost nothing)."""
    path = _put(tmp_path, TARGET, b"")
    os.truncate(path, MAX_FILE_BYTES + 1)

    def no_read(fd: int, n: int) -> bytes:
        raise AssertionError("the observer read an oversize file")

    monkeypatch.setattr(os, "read", no_read)
    observed, row = _row(tmp_path, _record())
    assert observed == ObservedState.regular(MAX_FILE_BYTES + 1, 1, 0o600, None) and row == "diverged"


def test_largest_observable_file_is_read(tmp_path: Path) -> None:
    """spec-phase3 §4.1: exactly MAX_FILE_BYTES is still read and digested."""
    data = b"x" * MAX_FILE_BYTES
    _put(tmp_path, TARGET, data)
    assert observe(tmp_path, TARGET).content_digest == sha(data)


def test_second_hard_link_is_diverged(tmp_path: Path) -> None:
    """spec-phase3 §7 scenario 30 / §8 item 16: the expected bytes with a second name → diverged."""
    path = _put(tmp_path, TARGET, NEW)
    os.link(path, tmp_path / "other-name")
    observed, row = _row(tmp_path, _record())
    assert observed.links == 2 and row == "diverged"


def test_mode_change_is_diverged_only_when_bound(tmp_path: Path) -> None:
    """spec-phase3 §7 scenario 31: a chmod by the user diverges a state that binds the mode."""
    _put(tmp_path, TARGET, NEW, 0o644)
    assert _row(tmp_path, _record())[1] == "diverged"  # the support record binds 0o600
    unbound = _record(before=regular(OLD), after=regular(NEW))
    assert _row(tmp_path, unbound)[1] == "matches_expected_state"


def test_permission_denied_is_unreadable() -> None:
    """spec-phase3 §7 scenario 28: a file the observer may not read is ``permission_denied``.
    As root (CI) the observation runs in a forked child that dropped to uid/gid 65534; the
    workspace lives in a world-traversable directory so only the file's own mode stops it."""
    root = Path(tempfile.mkdtemp(prefix="maka-reconcile-perm-"))
    try:
        os.chmod(root, 0o755)
        (root / "dir").mkdir(mode=0o755)
        os.chmod(root / "dir", 0o755)
        _put(root, TARGET, NEW, 0o000)
        observed = _observe_as_nobody(root, TARGET) if os.geteuid() == 0 else observe(root, TARGET)
        assert observed == ObservedState.unreadable("permission_denied")
        assert classify(_record(), observed).observation == "unreadable"
        assert (root / TARGET).stat().st_mode & 0o777 == 0
    finally:
        shutil.rmtree(root)


def _observe_as_nobody(root: Path, target: str) -> ObservedState:
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - child
        code = 1
        try:
            os.close(read_end)
            os.setgroups([])
            os.setgid(65534)
            os.setuid(65534)
            os.write(write_end, json.dumps(observe(root, target).to_json()).encode())
            code = 0
        finally:
            os._exit(code)
    os.close(write_end)
    with os.fdopen(read_end, "rb") as pipe:
        payload = pipe.read()
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    found = json.loads(payload)
    return ObservedState.unreadable(found["reason"]) if found["type"] == "unreadable" else ObservedState(found["type"])


def test_change_during_the_read_is_unreadable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """spec-phase3 §4.2 step 4: a writer appending while the observer reads is caught by the
    size/mtime check (``changed_during_observation``), never digested as a state."""
    path = _put(tmp_path, TARGET, NEW)
    real_read = os.read

    def read_while_written(fd: int, n: int) -> bytes:
        with open(path, "ab") as writer:
            writer.write(b"more")
        monkeypatch.setattr(os, "read", real_read)
        return real_read(fd, n)

    monkeypatch.setattr(os, "read", read_while_written)
    observed, row = _row(tmp_path, _record())
    assert observed == ObservedState.unreadable("changed_during_observation") and row == "unreadable"


def test_file_swapped_after_lstat_is_unreadable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """spec-phase3 §4.2 step 4: the descriptor must be the file ``lstat`` saw (device, inode)."""
    _put(tmp_path, TARGET, NEW)
    real_stat = os.stat

    def stat_then_swap(*args: Any, **kwargs: Any) -> os.stat_result:
        info = real_stat(*args, **kwargs)
        if args and args[0] == "f.txt":
            _put(tmp_path, "dir/swap", NEW)
            os.replace(tmp_path / "dir/swap", tmp_path / TARGET)
        return info

    monkeypatch.setattr(os, "stat", stat_then_swap)
    assert observe(tmp_path, TARGET) == ObservedState.unreadable("changed_during_observation")


def test_resource_exhaustion_is_transient(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """spec-phase3 §7 scenario 33: EMFILE is about the observer, not the file → transient."""
    _put(tmp_path, TARGET, NEW)
    real_open = os.open

    def open_without_descriptors(path: Any, flags: int, *args: Any, **kwargs: Any) -> int:
        if path == "f.txt":
            raise OSError(errno.EMFILE, "Too many open files")
        return real_open(path, flags, *args, **kwargs)

    monkeypatch.setattr(os, "open", open_without_descriptors)
    observed = observe(tmp_path, TARGET)
    assert observed == ObservedState.unreadable("resource_exhausted")
    found = classify(_record(), observed)
    assert found.observation == "unreadable" and found.transient


def test_durable_observation_syncs_file_and_directory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """spec-phase3 §4.2 / §8 item 14: ``durable=True`` fsyncs the file and its directory; a
    failed file fsync is the transient ``sync_failed``."""
    _put(tmp_path, TARGET, NEW)
    synced: list[tuple[int, int]] = []
    real_fsync = os.fsync

    def recording_fsync(fd: int) -> None:
        info = os.fstat(fd)
        synced.append((info.st_dev, info.st_ino))
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", recording_fsync)
    assert _row(tmp_path, _record(), durable=True)[1] == "matches_expected_state"
    file_info, dir_info = os.stat(tmp_path / TARGET), os.stat(tmp_path / "dir")
    assert synced == [(file_info.st_dev, file_info.st_ino), (dir_info.st_dev, dir_info.st_ino)]

    def failing_fsync(fd: int) -> None:
        raise OSError(errno.EIO, "I/O error")

    monkeypatch.setattr(os, "fsync", failing_fsync)
    observed = observe(tmp_path, TARGET, durable=True)
    assert observed == ObservedState.unreadable("sync_failed") and observed.transient


@pytest.mark.parametrize("target", ["../x", "runtime.sqlite", ".maka/x", "a//b", "/etc/passwd", ""])
def test_invalid_or_reserved_target_is_refused_unread(tmp_path: Path, target: str) -> None:
    """spec-phase3 §4.2 step 1: the observer never reads the runtime's own files."""
    _put(tmp_path, "runtime.sqlite", b"SQLite format 3\x00")
    assert observe(tmp_path, target) == ObservedState.unreadable("target_invalid")


def test_unreachable_workspace(tmp_path: Path) -> None:
    """spec-phase3 §4.3: a root that is missing, a file, or not a path → workspace_unreachable."""
    _put(tmp_path, "file", b"x")
    for root in (tmp_path / "missing", tmp_path / "file", "bad\x00root", 42):
        assert observe(root, TARGET) == ObservedState.unreadable("workspace_unreachable")  # type: ignore[arg-type]


# --------------------------------------------------------------------------- the real tools


@pytest.mark.parametrize("tool", ["Write", "Edit", "Append"])
def test_what_the_reference_tools_produce_is_expected(tmp_path: Path, tool: str) -> None:
    """spec-phase3 §1.4 against maka_ref's real tools: a record written by hand from the
    transform table classifies the tools' own result as ``matches_expected_state``, and the
    untouched file as ``matches_prior_state``."""
    from maka_ref._runtime.tools import TOOLS, ToolContext

    before = {"Write": None, "Edit": OLD, "Append": b"abc"}[tool]
    if before is not None:
        _put(tmp_path, TARGET, before, 0o644)
    else:
        (tmp_path / "dir").mkdir()
    args = args_for(tool, TARGET)
    after = {"Write": b"hello", "Edit": NEW, "Append": b"abchello"}[tool]
    record = _record(tool, before=ABSENT if before is None else regular(before), after=regular(after), args=args)
    assert _row(tmp_path, record)[1] == "matches_prior_state"
    result = TOOLS[tool].run(ToolContext(tmp_path, "op-1"), args)
    assert json.dumps(result, sort_keys=True) == json.dumps(dict(record.result), sort_keys=True)
    assert _row(tmp_path, record)[1] == "matches_expected_state"


# --------------------------------------------------------------------------- reading never writes


def _snapshot(root: Path) -> dict[str, Any]:
    """Every entry's bytes (regular files, read with O_NOATIME where allowed) and metadata."""
    out: dict[str, Any] = {}
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        for name in dirnames + filenames:
            path = os.path.join(dirpath, name)
            info = os.lstat(path)
            data = None
            if stat.S_ISREG(info.st_mode):
                fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOATIME", 0))
                try:
                    data = b"".join(iter(lambda fd=fd: os.read(fd, 1 << 20), b""))
                finally:
                    os.close(fd)
            # atime only for regular files: walking the tree itself reads directories and links.
            stamps = (info.st_mtime_ns, info.st_ctime_ns)
            if data is not None and sys.platform == "linux":
                stamps += (info.st_atime_ns,)
            out[os.path.relpath(path, root)] = (stat.S_IFMT(info.st_mode), info.st_mode, info.st_nlink, info.st_ino,
                                                info.st_size, stamps, data)
    return out


def _open_descriptors() -> int:
    return len(os.listdir("/proc/self/fd")) if os.path.isdir("/proc/self/fd") else -1


def test_observing_leaves_every_file_identical(tmp_path: Path) -> None:
    """spec-phase3 §4.2 step 5 / §7 scenario 34: after observing every kind of entry, with and
    without ``durable``, every file is byte-identical with the same mtime and ctime (and, for
    regular files on Linux, atime: ``O_NOATIME``), nothing was created or removed, and no
    descriptor is left open."""
    _put(tmp_path, "a/regular.txt", NEW)
    _put(tmp_path, "a/empty", b"")
    _put(tmp_path, "a/secret", OLD, 0o000)
    big = _put(tmp_path, "a/big", b"")
    os.truncate(big, MAX_FILE_BYTES + 1)
    os.link(tmp_path / "a/regular.txt", tmp_path / "a/linked")
    os.mkfifo(tmp_path / "a/fifo")
    os.symlink("regular.txt", tmp_path / "a/link")
    (tmp_path / "a/sub").mkdir()
    _put(tmp_path, "b", b"a file where a directory is expected")
    os.symlink("a", tmp_path / "c")
    targets = ["a/regular.txt", "a/empty", "a/secret", "a/big", "a/linked", "a/fifo", "a/link", "a/sub",
               "a/missing", "b/x", "c/regular.txt", "missing/x", "runtime.sqlite"]
    before, descriptors = _snapshot(tmp_path), _open_descriptors()
    for durable in (False, True):
        for target in targets:
            observe(tmp_path, target, durable=durable)
    assert _snapshot(tmp_path) == before
    assert _open_descriptors() == descriptors
