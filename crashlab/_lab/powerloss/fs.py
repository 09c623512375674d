"""The pass-through FUSE filesystem that feeds the durability model, and the power cut itself.

Why pass-through over a real backing directory: the implementation under test must run on a
real filesystem (SQLite's locks, its ``-shm`` mapping, ``O_NOFOLLOW`` opens relative to
directory descriptors, hard links), so every operation is done for real on the backing
directory at once — the backing directory *is* the page cache's view. What the disk would
hold is the model's business (:mod:`.model`): before a write or truncate overwrites bytes that
are durable, the old bytes are read and handed to the model (an undo log, bounded by what is
overwritten, not by the file's size: SQLite's WAL appends cost nothing to remember); a file
whose last name goes away is kept alive by a hard link in a *graveyard* so that an unlink that
never became durable can be undone.

At the cut (:meth:`PowerLossFS.cut`), under the lock that every operation takes and after
which every operation fails with ``EIO``: the last non-durable write is read (torn variant),
every dirty file is truncated to its durable size and its saved bytes are written back, the
torn prefix is written, and the durable tree is rebuilt in a new directory from hard links to
those files (directories are made anew, symlinks copied). The harness then unmounts and puts
that directory in the workspace's place.

The effect log (``.maka-effects.jsonl`` at the mount's root, protocol §4.3) is the harness's
instrument, not the implementation's state: its name is served from a file *outside* the
backing directory, which no cut touches, and it is moved into the rebuilt tree as it is.

This module imports ``mfusepy`` (the ``powerloss`` extra) and runs only inside the server
process (:mod:`.server`); nothing else imports it.
"""

from __future__ import annotations

import ctypes
import errno
import os
import shutil
import stat
import sys
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable

import mfusepy

from crashlab._lab.powerloss.model import Entry, Model

__all__ = ["EFFECT_LOG", "PowerLossFS"]

EFFECT_LOG = ".maka-effects.jsonl"
_EXEMPT = "/" + EFFECT_LOG
#: Flags the backing descriptor never gets: the model plays O_SYNC/O_DSYNC, the kernel has
#: already chosen the offset of an O_APPEND write, O_DIRECT would impose alignment on our
#: buffers, and creation/truncation are done (and recorded) explicitly.
_STRIP = (os.O_SYNC | getattr(os, "O_DSYNC", 0) | os.O_APPEND | getattr(os, "O_DIRECT", 0) | os.O_CREAT
          | os.O_EXCL | os.O_TRUNC | getattr(os, "O_NOCTTY", 0))
_SYNC_FLAGS = os.O_SYNC | getattr(os, "O_DSYNC", 0)
_RENAME_NOREPLACE, _RENAME_EXCHANGE = 1, 2
_STAT_KEYS = ("st_mode", "st_ino", "st_nlink", "st_uid", "st_gid", "st_size", "st_blocks", "st_blksize", "st_rdev")


@dataclass
class _Handle:
    node: int | None  # None: the exempt effect log
    synchronous: bool


def _kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "dir"
    if stat.S_ISLNK(mode):
        return "symlink"
    return "file"


def _attrs(st: os.stat_result) -> dict[str, Any]:
    out = {key: getattr(st, key) for key in _STAT_KEYS}
    out.update(st_atime=st.st_atime_ns, st_mtime=st.st_mtime_ns, st_ctime=st.st_ctime_ns)
    return out


class PowerLossFS(mfusepy.Operations):
    """FUSE operations over ``backing``; ``state`` holds the graveyard, the exempt effect log
    and the rebuilt tree after a cut. ``on_ready`` is called once the kernel has mounted us."""

    use_ns = True
    flag_nopath = True
    flag_nullpath_ok = True

    def __init__(self, backing: Path, state: Path, on_ready: Callable[[], None] = lambda: None) -> None:
        self.backing = Path(backing)
        self.state = Path(state)
        self.grave = self.state / "graveyard"
        self.grave.mkdir(parents=True, exist_ok=True)
        self.outside = self.state / "outside"
        self.outside.mkdir(parents=True, exist_ok=True)
        self.on_ready = on_ready
        self._mutex = threading.RLock()
        self.frozen = False
        self._next = 0
        self.node_of: dict[int, int] = {}  # live backing inode -> node
        self.ino_of: dict[int, int] = {}  # node -> backing inode
        self.handles: dict[int, _Handle] = {}
        self.ops = 0
        self.op_counts: dict[str, int] = {}
        if os.path.lexists(self.backing / EFFECT_LOG):  # an effect log from before the mount goes on outside
            os.rename(self.backing / EFFECT_LOG, self.outside / EFFECT_LOG)
        root = os.lstat(self.backing)
        self.model = Model(self._node(root.st_ino))
        self.model.modes[self.model.root] = stat.S_IMODE(root.st_mode)
        self._scan()

    # -- identities --------------------------------------------------------------------------

    def _node(self, ino: int, fresh: bool = False) -> int:
        if not fresh and ino in self.node_of:
            return self.node_of[ino]
        self._next += 1
        self.node_of[ino] = self._next
        self.ino_of[self._next] = ino
        return self._next

    def _scan(self) -> None:
        """The tree the mount is made over: all of it durable."""
        for dirpath, dirnames, filenames in os.walk(self.backing):
            parent = self._node(os.lstat(dirpath).st_ino)
            for name in sorted(dirnames + filenames):
                st = os.lstat(os.path.join(dirpath, name))
                self.model.existing(parent, name, Entry(self._node(st.st_ino), _kind(st.st_mode)),
                                    stat.S_IMODE(st.st_mode))

    def _real(self, path: str) -> str:
        if path == _EXEMPT:
            return str(self.outside / EFFECT_LOG)
        return str(self.backing) + path if path != "/" else str(self.backing)

    def _parent(self, path: str) -> tuple[int, str]:
        head, _, name = path.rpartition("/")
        return self._node(os.lstat(self._real(head or "/")).st_ino), name

    def _op(self) -> None:
        if self.frozen:
            raise mfusepy.FuseOSError(errno.EIO)
        self.ops += 1
        name = sys._getframe(1).f_code.co_name  # the operation (for stats: where the round trips go)
        self.op_counts[name] = self.op_counts.get(name, 0) + 1

    # -- lifecycle ---------------------------------------------------------------------------

    def init(self, path: str) -> None:
        self.on_ready()

    # -- attributes and reads (pass-through) -------------------------------------------------

    def getattr(self, path: str, fh: int | None = None) -> dict[str, Any]:
        with self._mutex:
            self._op()
            if fh is not None and fh in self.handles:
                return _attrs(os.fstat(fh))
            return _attrs(os.lstat(self._real(path)))

    def access(self, path: str, amode: int) -> int:
        with self._mutex:
            self._op()
            if not os.access(self._real(path), amode, follow_symlinks=False):
                raise mfusepy.FuseOSError(errno.EACCES)
            return 0

    def readlink(self, path: str) -> str:
        with self._mutex:
            self._op()
            return os.readlink(self._real(path))

    def opendir(self, path: str) -> int:
        with self._mutex:
            self._op()
            return os.open(self._real(path), os.O_RDONLY | os.O_DIRECTORY)

    def readdir(self, path: str, fh: int) -> Iterable[tuple[str, dict[str, int], int]]:
        with self._mutex:
            self._op()
            here = os.fstat(fh)
            try:
                up = os.stat("..", dir_fd=fh).st_ino
            except OSError:
                up = here.st_ino
            out = [(".", {"st_ino": here.st_ino, "st_mode": here.st_mode}, 0), ("..", {"st_ino": up, "st_mode": stat.S_IFDIR}, 0)]
            with os.scandir(fh) as entries:  # the inode number too: an entry without one is skipped
                for entry in entries:
                    kind = stat.S_IFDIR if entry.is_dir(follow_symlinks=False) else (
                        stat.S_IFLNK if entry.is_symlink() else stat.S_IFREG)
                    out.append((entry.name, {"st_ino": entry.inode(), "st_mode": kind}, 0))
            log = self.outside / EFFECT_LOG
            if here.st_ino == self.ino_of[self.model.root] and log.exists():
                out.append((EFFECT_LOG, {"st_ino": log.stat().st_ino, "st_mode": stat.S_IFREG}, 0))
            return out

    def releasedir(self, path: str, fh: int) -> int:
        with self._mutex:
            try:
                os.close(fh)
            except OSError:
                pass
            return 0

    def statfs(self, path: str) -> dict[str, int]:
        with self._mutex:
            self._op()
            sv = os.statvfs(self.backing)
            return {key: getattr(sv, key) for key in ("f_bavail", "f_bfree", "f_blocks", "f_bsize", "f_favail",
                                                      "f_ffree", "f_files", "f_flag", "f_frsize", "f_namemax")}

    def read(self, path: str, size: int, offset: int, fh: int) -> bytes:
        with self._mutex:
            self._op()
            return os.pread(fh, size, offset)

    # -- metadata not modelled (see the document's limits) ---------------------------------

    def chmod(self, path: str, mode: int) -> int:
        with self._mutex:
            self._op()
            real = self._real(path)
            if not os.path.islink(real):  # a symlink's mode means nothing on Linux
                os.chmod(real, mode)
            return 0

    def chown(self, path: str, uid: int, gid: int) -> int:
        with self._mutex:
            self._op()
            os.chown(self._real(path), uid, gid, follow_symlinks=False)
            return 0

    def utimens(self, path: str, times: tuple[int, int] | None = None) -> int:
        with self._mutex:
            self._op()
            if times is None:
                os.utime(self._real(path), follow_symlinks=False)
            else:
                os.utime(self._real(path), ns=times, follow_symlinks=False)
            return 0

    # -- files -------------------------------------------------------------------------------

    def _open_backing(self, real: str, flags: int, mode: int = 0o644) -> int:
        base = flags & ~_STRIP
        if base & os.O_ACCMODE == os.O_WRONLY:  # the undo log must read what a write overwrites
            try:
                return os.open(real, (base & ~os.O_ACCMODE) | os.O_RDWR | (flags & (os.O_CREAT | os.O_EXCL)), mode)
            except PermissionError:
                pass
        return os.open(real, base | (flags & (os.O_CREAT | os.O_EXCL)), mode)

    def open(self, path: str, flags: int) -> int:
        with self._mutex:
            self._op()
            fd = self._open_backing(self._real(path), flags)
            node = None if path == _EXEMPT else self._node(os.fstat(fd).st_ino)
            self.handles[fd] = _Handle(node, bool(flags & _SYNC_FLAGS))
            if flags & os.O_TRUNC:
                self._truncate(fd, node, 0)
            return fd

    def create(self, path: str, mode: int, flags: int = os.O_RDWR) -> int:
        with self._mutex:
            self._op()
            real = self._real(path)
            fd = self._open_backing(real, flags | os.O_CREAT, mode)
            st = os.fstat(fd)
            if path == _EXEMPT:
                self.handles[fd] = _Handle(None, bool(flags & _SYNC_FLAGS))
                return fd
            parent, name = self._parent(path)
            node = self._node(st.st_ino, fresh=True)
            self.model.created(node, "file", stat.S_IMODE(st.st_mode))
            self.model.changed([(parent, name, Entry(node, "file"))], label=f"create {path}")
            self.handles[fd] = _Handle(node, bool(flags & _SYNC_FLAGS))
            if flags & os.O_TRUNC:
                self._truncate(fd, node, 0)
            return fd

    def _save(self, fd: int, node: int, ranges: list[tuple[int, int]]) -> None:
        for start, end in ranges:
            try:
                data = os.pread(fd, end - start, start)
            except OSError:  # a descriptor that cannot read (a write-only file of another user)
                reader = os.open(f"/proc/self/fd/{fd}", os.O_RDONLY)
                try:
                    data = os.pread(reader, end - start, start)
                finally:
                    os.close(reader)
            self.model.save(node, start, data)

    def write(self, path: str, data: bytes, offset: int, fh: int, writeback: bool = False) -> int:
        """``writeback``: the kernel writing back pages of a shared mapping (libfuse's
        ``writepage``), not a ``write`` call of the program."""
        with self._mutex:
            self._op()
            handle = self.handles[fh]
            if handle.node is None:
                return os.pwrite(fh, data, offset)
            size = os.fstat(fh).st_size
            self._save(fh, handle.node, self.model.before_write(handle.node, offset, len(data), size))
            written = os.pwrite(fh, data, offset)
            self.model.wrote(handle.node, offset, written, handle.synchronous, writeback=writeback)
            if handle.synchronous:
                os.fdatasync(fh)
            return written

    def _truncate(self, fd: int, node: int | None, length: int) -> None:
        if node is not None:
            size = os.fstat(fd).st_size
            self._save(fd, node, self.model.before_truncate(node, length, size))
        os.ftruncate(fd, length)

    def truncate(self, path: str, length: int, fh: int | None = None) -> int:
        with self._mutex:
            self._op()
            if fh is not None and fh in self.handles:
                self._truncate(fh, self.handles[fh].node, length)
                return 0
            fd = self._open_backing(self._real(path), os.O_RDWR)
            try:
                node = None if path == _EXEMPT else self._node(os.fstat(fd).st_ino)
                self._truncate(fd, node, length)
            finally:
                os.close(fd)
            return 0

    def fsync(self, path: str, datasync: int, fh: int) -> int:
        with self._mutex:
            self._op()
            handle = self.handles.get(fh)
            (os.fdatasync if datasync else os.fsync)(fh)
            if handle is not None and handle.node is not None:
                self.model.sync_file(handle.node)
            return 0

    def flush(self, path: str, fh: int) -> int:
        return 0

    def release(self, path: str, fh: int) -> int:
        with self._mutex:  # never EIO: a killed process's descriptors are released after the cut
            self.handles.pop(fh, None)
            try:
                os.close(fh)
            except OSError:
                pass
            return 0

    def fsyncdir(self, path: str, datasync: int, fh: int) -> int:
        with self._mutex:
            self._op()
            os.fsync(fh)
            self.model.sync_dir(self._node(os.fstat(fh).st_ino))
            return 0

    # -- the namespace -----------------------------------------------------------------------

    def _bury(self, real: str, node: int) -> None:
        """Keep a file's inode alive (a hard link in the graveyard) before a name of it goes."""
        grave = self.grave / str(node)
        if not os.path.lexists(grave):
            os.link(real, grave, follow_symlinks=False)

    def mknod(self, path: str, mode: int, dev: int) -> int:
        with self._mutex:
            self._op()
            if path == _EXEMPT:
                os.mknod(self._real(path), mode, dev)
                return 0
            real = self._real(path)
            os.mknod(real, mode, dev)
            parent, name = self._parent(path)
            node = self._node(os.lstat(real).st_ino, fresh=True)
            self.model.created(node, "file", stat.S_IMODE(mode))
            self.model.changed([(parent, name, Entry(node, "file"))], label=f"mknod {path}")
            return 0

    def mkdir(self, path: str, mode: int) -> int:
        with self._mutex:
            self._op()
            real = self._real(path)
            os.mkdir(real, mode)
            parent, name = self._parent(path)
            st = os.lstat(real)
            node = self._node(st.st_ino, fresh=True)
            self.model.created(node, "dir", stat.S_IMODE(st.st_mode))
            self.model.changed([(parent, name, Entry(node, "dir"))], label=f"mkdir {path}")
            return 0

    def symlink(self, target: str, source: str) -> int:
        with self._mutex:
            self._op()
            real = self._real(target)
            os.symlink(source, real)
            parent, name = self._parent(target)
            node = self._node(os.lstat(real).st_ino, fresh=True)
            self.model.created(node, "symlink", 0o777)
            self.model.changed([(parent, name, Entry(node, "symlink"))], label=f"symlink {target}")
            return 0

    def link(self, target: str, source: str) -> int:
        with self._mutex:
            self._op()
            if _EXEMPT in (target, source):
                raise mfusepy.FuseOSError(errno.EXDEV)
            real = self._real(target)
            os.link(self._real(source), real, follow_symlinks=False)
            parent, name = self._parent(target)
            st = os.lstat(real)
            self.model.changed([(parent, name, Entry(self._node(st.st_ino), _kind(st.st_mode)))], label=f"link {target}")
            return 0

    def unlink(self, path: str) -> int:
        with self._mutex:
            self._op()
            real = self._real(path)
            if path == _EXEMPT:
                os.unlink(real)
                return 0
            st = os.lstat(real)
            node = self._node(st.st_ino)
            self._bury(real, node)
            parent, name = self._parent(path)
            os.unlink(real)
            self.model.changed([(parent, name, None)], removed=[node], label=f"unlink {path}")
            return 0

    def rmdir(self, path: str) -> int:
        with self._mutex:
            self._op()
            real = self._real(path)
            st = os.lstat(real)
            node = self._node(st.st_ino)
            parent, name = self._parent(path)
            os.rmdir(real)
            self.node_of.pop(st.st_ino, None)  # the inode number may now be reused
            self.model.changed([(parent, name, None)], removed=[node], label=f"rmdir {path}")
            return 0

    def rename(self, old: str, new: str, flags: int = 0) -> int:
        with self._mutex:
            self._op()
            if _EXEMPT in (old, new):
                raise mfusepy.FuseOSError(errno.EXDEV)
            if flags & _RENAME_EXCHANGE or flags & ~(_RENAME_NOREPLACE | _RENAME_EXCHANGE):
                raise mfusepy.FuseOSError(errno.EINVAL)
            real_old, real_new = self._real(old), self._real(new)
            if flags & _RENAME_NOREPLACE and os.path.lexists(real_new):
                raise mfusepy.FuseOSError(errno.EEXIST)
            st = os.lstat(real_old)
            node = self._node(st.st_ino)
            removed = []
            replaced_dir_ino = None
            if os.path.lexists(real_new):
                gone = os.lstat(real_new)
                if gone.st_ino != st.st_ino:
                    gone_node = self._node(gone.st_ino)
                    removed.append(gone_node)
                    if stat.S_ISDIR(gone.st_mode):
                        replaced_dir_ino = gone.st_ino
                    else:
                        self._bury(real_new, gone_node)
            old_parent, old_name = self._parent(old)
            new_parent, new_name = self._parent(new)
            os.rename(real_old, real_new)
            if replaced_dir_ino is not None:
                self.node_of.pop(replaced_dir_ino, None)
            if (old_parent, old_name) != (new_parent, new_name):
                self.model.changed([(old_parent, old_name, None), (new_parent, new_name, Entry(node, _kind(st.st_mode)))],
                                   removed=removed, label=f"rename {old} -> {new}")
            return 0

    # -- the cut -----------------------------------------------------------------------------

    def _locate(self) -> dict[int, str]:
        """node -> a current path of its inode (backing tree first, then the graveyard)."""
        by_ino: dict[int, str] = {}
        for dirpath, dirnames, filenames in os.walk(self.backing):
            for name in filenames + dirnames:
                full = os.path.join(dirpath, name)
                try:
                    by_ino.setdefault(os.lstat(full).st_ino, full)
                except FileNotFoundError:
                    pass
        out: dict[int, str] = {}
        for node, ino in self.ino_of.items():
            if ino in by_ino and self.node_of.get(ino) == node:
                out[node] = by_ino[ino]
        for grave in self.grave.iterdir():
            out.setdefault(int(grave.name), str(grave))
        return out

    def stats(self) -> dict[str, Any]:
        """The model as it stands (for tests and evidence): dirty files, pending operations."""
        with self._mutex:
            where = self._locate()
            return {"ops": self.ops, "dirty": {where.get(n, f"node {n}"): size for n, size in self.model.dirty().items()},
                    "pending": [op.label for op in self.model.pending], "syncs": dict(self.model.syncs),
                    "opCounts": dict(self.op_counts)}

    def sync_all(self) -> None:
        """Everything durable, as ``syncfs`` would make it (a control request; the kernel does
        not forward ``syncfs`` to this filesystem)."""
        with self._mutex:
            self.model.sync_all()

    def cut(self, after: Path, granularity: int | None, seed: int) -> dict[str, Any]:
        """Lose power: freeze, revert, rebuild the durable tree at ``after``; a report."""
        with self._mutex:
            self.frozen = True
            where = self._locate()
            rel = {n: os.path.relpath(p, self.backing) if not p.startswith(str(self.grave)) else f"(unlinked) node {n}"
                   for n, p in where.items()}
            sizes = {n: os.lstat(where[n]).st_size for n in self.model.dirty() if n in where}
            plan = self.model.cut(current_sizes=sizes, torn_granularity=granularity, seed=seed)
            torn_data = b""
            if plan.torn is not None and plan.torn.node in where:
                with open(where[plan.torn.node], "rb") as fh:
                    fh.seek(plan.torn.offset)
                    torn_data = fh.read(plan.torn.keep)
            problems = []
            for revert in plan.reverts:
                path = where.get(revert.node)
                if path is None:
                    problems.append(f"node {revert.node}: no inode to revert")
                    continue
                fd = os.open(path, os.O_WRONLY)
                try:
                    os.ftruncate(fd, revert.size)
                    for offset, data in revert.restore:
                        os.pwrite(fd, data, offset)
                    if plan.torn is not None and plan.torn.node == revert.node and torn_data:
                        os.pwrite(fd, torn_data, plan.torn.offset)
                finally:
                    os.close(fd)
            if after.exists():
                shutil.rmtree(after)
            after.mkdir()
            os.chmod(after, self.model.modes.get(self.model.root, 0o755))
            for path, entry, mode in plan.tree:
                target = after / path
                if entry.kind == "dir":
                    target.mkdir()
                    os.chmod(target, mode)
                    continue
                source = where.get(entry.node)
                if source is None:
                    problems.append(f"{path}: node {entry.node} has no inode")
                    continue
                if entry.kind == "symlink":
                    os.symlink(os.readlink(source), target)
                else:
                    os.link(source, target)
            log = self.outside / EFFECT_LOG
            if log.exists():  # moved, not linked: a store may refuse files with several names
                os.rename(log, after / EFFECT_LOG)
            return {
                "granularity": granularity,
                "reverted": [{"path": rel.get(r.node, f"node {r.node}"), "durableSize": r.size,
                              "sizeAtCut": sizes.get(r.node), "lostBytes": r.lost_bytes} for r in plan.reverts],
                "torn": None if plan.torn is None else {
                    "path": rel.get(plan.torn.node, f"node {plan.torn.node}"), "offset": plan.torn.offset,
                    "length": plan.torn.length, "kept": plan.torn.keep, "granularity": plan.torn.granularity},
                "undone": list(plan.undone),
                "durableEntries": len(plan.tree),
                "syncs": dict(self.model.syncs),
                "ops": self.ops,
                "problems": problems,
            }


class _FUSE(mfusepy.FUSE):
    """mfusepy's FUSE with three libfuse 3 arguments it drops passed on: ``rename``'s flags
    (``RENAME_NOREPLACE`` must not silently replace), ``truncate``'s open file (an
    ``ftruncate`` of an unlinked file has no path) and ``write``'s ``writepage`` bit (a
    writeback of mapped pages is no write in flight of the program: never the torn one)."""

    def write(self, path: bytes | None, buf: Any, size: int, offset: int, fip: Any) -> int:
        info = fip.contents
        return self.operations.write(None if path is None else path.decode(self.encoding, self.errors),
                                     ctypes.string_at(buf, size), offset, info.fh, writeback=bool(info.writepage))

    def rename_fuse_3(self, old: bytes, new: bytes, flags: int) -> int:
        return self.operations.rename(old.decode(self.encoding, self.errors), new.decode(self.encoding, self.errors),
                                      flags)

    def truncate_fuse_3(self, path: bytes | None, length: int, fip: Any) -> int:
        fh = fip.contents.fh if fip else None
        return self.operations.truncate(None if path is None else path.decode(self.encoding, self.errors), length, fh)


def serve(fs: PowerLossFS, mountpoint: str) -> None:
    """Mount ``fs`` at ``mountpoint`` and serve until unmounted (single-threaded: the model
    sees operations in the kernel's order; ``auto_unmount``: fusermount3 unmounts if this
    process dies)."""
    _FUSE(fs, mountpoint, foreground=True, nothreads=True, use_ino=True, hard_remove=True, auto_unmount=True,
          default_permissions=True, fsname="crashlab-powerloss", subtype="crashlab-powerloss")
