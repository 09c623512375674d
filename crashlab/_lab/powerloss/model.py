"""The durability model of the power-loss filesystem: what a power cut keeps, and nothing else.

Why a pure model apart from the FUSE layer: what survives a cut is the whole point of the
``powerloss`` fault, and it must be checkable without a mount (unit tests, a machine without
FUSE) and readable as the promise it encodes. The FUSE layer (:mod:`.fs`) tells this model
what happened (a write, a truncate, an fsync, a namespace change) and hands it the bytes it
asks for; the model decides what must be remembered and, at the cut, what the disk holds.
No I/O, no clock, no randomness here (the torn variant's choice is a function of a seed).

The promise modelled (sources and limits in docs/crashlab-powerloss.md):

* **File data and size** (fsync(2), open(2) ``O_SYNC``/``O_DSYNC``, ext4 ``data=ordered``):
  a write or truncate reaches the disk only when the file is synced — ``fsync``/``fdatasync``
  on any descriptor of it, or the write went through a descriptor opened ``O_SYNC`` or
  ``O_DSYNC``. A cut reverts every file to its content at its last sync (the content at mount
  time counts as synced). ``sync_file_range`` makes nothing durable (its man page: "there are
  no guarantees that the data will be available after a crash").
* **Directory entries** (fsync(2): "Calling fsync() does not necessarily ensure that the
  entry in the directory containing the file has also reached disk. For that an explicit
  fsync() on a file descriptor for the directory is also needed."): a create, link, unlink,
  mkdir, rmdir, symlink or rename is durable once a directory it changed is fsynced. One
  operation is one unit (a rename across two directories is atomic: syncing either directory
  commits both halves, as ext4 journals them in one handle), and committing an operation first
  commits the earlier pending operations on the same objects, so an object never lands in a
  place its own history has not reached (a directory never appears twice).
* **Torn write** (the ``powerloss-torn`` variant): of the last write that is not durable, a
  prefix survives: its first *k* sectors (512 bytes or 4 KiB, aligned to the file offset, *k*
  chosen from the seed, strictly fewer than all of them when the write spans more than one).
  "The last write" is the newest run of contiguous writes to one file with no other operation
  in between (the kernel hands a large ``write(2)`` down in page-sized pieces), never a
  writeback of mapped pages.

Identities: the FUSE layer names every file and directory by a **node** id it assigns (a
backing inode number can be reused once freed; a node id never is).
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Iterator, Mapping, Sequence

__all__ = ["CutPlan", "Entry", "FileRevert", "Model", "TornWrite", "sectors", "torn_keep"]

#: Sector sizes a torn write is cut at: a disk sector, and a 4 KiB page / advanced-format sector.
GRANULARITIES: tuple[int, ...] = (512, 4096)


@dataclass(frozen=True)
class Entry:
    """A directory entry's target: a node and its kind (``file``, ``dir``, ``symlink``)."""

    node: int
    kind: str


@dataclass
class _File:
    """A file with changes that are not durable: its durable size and the durable bytes that
    were overwritten or truncated away since its last sync (an undo log, kept per range)."""

    durable_size: int
    saved: dict[int, bytes] = field(default_factory=dict)  # offset -> original bytes (< durable_size)
    covered: list[tuple[int, int]] = field(default_factory=list)  # sorted, merged [start, end) of ``saved``
    last_write: tuple[int, int, int] | None = None  # (sequence, offset, length) of its newest write

    def missing(self, start: int, end: int) -> list[tuple[int, int]]:
        """Sub-ranges of ``[start, end)`` (clipped to the durable size) not saved yet."""
        end = min(end, self.durable_size)
        out: list[tuple[int, int]] = []
        cursor = start
        for a, b in self.covered:
            if b <= cursor:
                continue
            if a >= end:
                break
            if a > cursor:
                out.append((cursor, min(a, end)))
            cursor = max(cursor, b)
            if cursor >= end:
                break
        if cursor < end:
            out.append((cursor, end))
        return [(a, b) for a, b in out if a < b]

    def save(self, offset: int, data: bytes) -> None:
        if not data:
            return
        self.saved[offset] = bytes(data)
        spans = sorted([*self.covered, (offset, offset + len(data))])
        merged: list[tuple[int, int]] = []
        for a, b in spans:
            if merged and a <= merged[-1][1]:
                merged[-1] = (merged[-1][0], max(merged[-1][1], b))
            else:
                merged.append((a, b))
        self.covered = merged


@dataclass(frozen=True)
class _Op:
    """One namespace operation: its changes ``(dir node, name, entry or None)`` in order."""

    seq: int
    changes: tuple[tuple[int, str, Entry | None], ...]
    nodes: frozenset[int]  # every node it places or removes
    label: str = ""  # what it was, for reports ("rename /a -> /b")

    @property
    def dirs(self) -> frozenset[int]:
        return frozenset(d for d, _, _ in self.changes)


@dataclass(frozen=True)
class FileRevert:
    """At the cut: set ``node``'s size to ``size``, then write each ``(offset, bytes)`` back."""

    node: int
    size: int
    restore: tuple[tuple[int, bytes], ...]
    lost_bytes: int  # bytes of non-durable writes this revert undoes (for the report)


@dataclass(frozen=True)
class TornWrite:
    """At the cut, after the reverts: ``keep`` bytes of the last non-durable write (at
    ``offset`` of ``node``, ``length`` long) survive; read them before reverting."""

    node: int
    offset: int
    length: int
    keep: int
    granularity: int


@dataclass(frozen=True)
class CutPlan:
    """Everything the disk holds after a cut: file reverts, the torn write (if any) and the
    durable tree (``(relative path, entry, mode)`` in parent-before-child order)."""

    reverts: tuple[FileRevert, ...]
    torn: TornWrite | None
    tree: tuple[tuple[str, Entry, int], ...]
    undone: tuple[str, ...]  # namespace operations not durable at the cut (for the report)


def sectors(offset: int, length: int, granularity: int) -> list[tuple[int, int]]:
    """``[offset, offset + length)`` split at multiples of ``granularity`` (file offsets)."""
    out = []
    start, end = offset, offset + length
    while start < end:
        stop = min(end, (start // granularity + 1) * granularity)
        out.append((start, stop))
        start = stop
    return out


def torn_keep(offset: int, length: int, granularity: int, seed: int) -> int:
    """How many bytes of a torn write survive: the first *k* of its sectors, *k* drawn from
    ``seed``; strictly fewer than all of them when it spans several (otherwise it would not be
    torn), the whole write when it fits in one sector (a sector is written atomically)."""
    parts = sectors(offset, length, granularity)
    if len(parts) <= 1:
        return length
    k = random.Random(f"torn-{seed}-{offset}-{length}-{granularity}").randint(1, len(parts) - 1)
    return parts[k - 1][1] - offset


class Model:
    """The durable state next to the current one. Starts with everything durable (the tree the
    mount was made over), then learns every change from the FUSE layer."""

    def __init__(self, root: int) -> None:
        self.root = root
        self.durable: dict[int, dict[str, Entry]] = {root: {}}  # dir node -> its durable entries
        self.modes: dict[int, int] = {root: 0o755}
        self.files: dict[int, _File] = {}  # nodes with non-durable data; absent = durable as it is
        self.pending: list[_Op] = []
        self._seq = 0
        self.syncs = {"file": 0, "dir": 0, "o_sync_writes": 0}

    # -- the tree at mount time ------------------------------------------------------------

    def existing(self, parent: int, name: str, entry: Entry, mode: int) -> None:
        """An entry that existed when the mount was made (durable)."""
        self.durable.setdefault(parent, {})[name] = entry
        if entry.kind == "dir":
            self.durable.setdefault(entry.node, {})
        self.modes[entry.node] = mode

    # -- data --------------------------------------------------------------------------------

    def created(self, node: int, kind: str, mode: int) -> None:
        """A new file (durable content: empty) or directory (durable entries: none)."""
        self.modes[node] = mode
        if kind == "file":
            self.files[node] = _File(durable_size=0)
        elif kind == "dir":
            self.durable[node] = {}

    def _track(self, node: int, current_size: int) -> _File:
        state = self.files.get(node)
        if state is None:  # untracked: what the file holds now is what the disk holds
            state = self.files[node] = _File(durable_size=current_size)
        return state

    def before_write(self, node: int, offset: int, length: int, current_size: int) -> list[tuple[int, int]]:
        """The durable ranges a write of ``length`` bytes at ``offset`` will overwrite and that
        are not saved yet: the caller reads them and hands them to :meth:`save`."""
        state = self._track(node, current_size)
        return state.missing(offset, offset + length)

    def before_truncate(self, node: int, new_size: int, current_size: int) -> list[tuple[int, int]]:
        """The durable ranges a truncate to ``new_size`` will discard (caller saves them)."""
        state = self._track(node, current_size)
        return state.missing(new_size, current_size) if new_size < current_size else []

    def save(self, node: int, offset: int, data: bytes) -> None:
        self.files[node].save(offset, data)

    def wrote(self, node: int, offset: int, length: int, synchronous: bool, writeback: bool = False) -> None:
        """A write happened; ``synchronous``: through an ``O_SYNC``/``O_DSYNC`` descriptor;
        ``writeback``: the kernel writing back pages of a shared mapping (not a write call of
        the program, so never the torn one: a program's write in flight is)."""
        if synchronous:
            self.syncs["o_sync_writes"] += 1
            self.files.pop(node, None)
            return
        self._seq += 1
        state = self.files.get(node)
        if state is None or writeback:
            return
        last = state.last_write
        if last is not None and last[0] == self._seq - 1 and last[1] + last[2] == offset:
            # the kernel hands one large write(2) down in page-sized pieces: a run of
            # contiguous writes to the file, with nothing in between, is one write
            state.last_write = (self._seq, last[1], last[2] + length)
        else:
            state.last_write = (self._seq, offset, length)

    def sync_file(self, node: int) -> None:
        """fsync / fdatasync: the file's data and size are durable (its name is not)."""
        self.syncs["file"] += 1
        self.files.pop(node, None)

    # -- namespace ---------------------------------------------------------------------------

    def changed(self, changes: Sequence[tuple[int, str, Entry | None]], removed: Sequence[int] = (),
                label: str = "") -> None:
        """A namespace operation: ``changes`` are ``(dir node, name, new entry or None)``;
        ``removed`` the nodes it unlinked or replaced; ``label`` says what it was."""
        self._seq += 1
        nodes = frozenset({e.node for _, _, e in changes if e is not None} | set(removed))
        self.pending.append(_Op(self._seq, tuple(changes), nodes, label))

    def sync_dir(self, node: int) -> None:
        """fsync on a directory: every pending operation that changed it becomes durable, each
        after the earlier pending operations on the same objects."""
        self.syncs["dir"] += 1
        chosen: set[int] = set()
        for index in range(len(self.pending) - 1, -1, -1):
            if node in self.pending[index].dirs:
                self._close_over(index, chosen)
        if not chosen:
            return
        keep = []
        for index, op in enumerate(self.pending):
            if index in chosen:
                for parent, name, entry in op.changes:
                    entries = self.durable.setdefault(parent, {})
                    if entry is None:
                        entries.pop(name, None)
                    else:
                        entries[name] = entry
            else:
                keep.append(op)
        self.pending = keep

    def _close_over(self, index: int, chosen: set[int]) -> None:
        stack = [index]
        while stack:
            i = stack.pop()
            if i in chosen:
                continue
            chosen.add(i)
            op = self.pending[i]
            for j in range(i):
                if j not in chosen and self.pending[j].nodes & op.nodes:
                    stack.append(j)

    def sync_all(self) -> None:
        """Everything durable (``syncfs``/``sync``; also what a clean unmount would do)."""
        for op in list(self.pending):
            for parent, name, entry in op.changes:
                entries = self.durable.setdefault(parent, {})
                if entry is None:
                    entries.pop(name, None)
                else:
                    entries[name] = entry
        self.pending = []
        self.files.clear()

    # -- the cut -----------------------------------------------------------------------------

    def dirty(self) -> Mapping[int, int]:
        """Nodes with non-durable data → their durable size (for reports and tests)."""
        return {n: s.durable_size for n, s in self.files.items()}

    def durable_tree(self) -> Iterator[tuple[str, Entry, int]]:
        """The durable namespace from the root, parents before children; a directory reached a
        second time (impossible by construction, kept as a guard) is not entered again."""
        seen = {self.root}
        stack: list[tuple[str, int]] = [("", self.root)]
        while stack:
            prefix, dir_node = stack.pop()
            for name in sorted(self.durable.get(dir_node, {})):
                entry = self.durable[dir_node][name]
                path = f"{prefix}{name}"
                if entry.kind == "dir":
                    if entry.node in seen:
                        continue
                    seen.add(entry.node)
                    yield path, entry, self.modes.get(entry.node, 0o755)
                    stack.append((path + "/", entry.node))
                else:
                    yield path, entry, self.modes.get(entry.node, 0o644)

    def last_unsynced_write(self) -> tuple[int, int, int] | None:
        """``(node, offset, length)`` of the newest write that is not durable, if any."""
        best: tuple[int, int, int, int] | None = None
        for node, state in self.files.items():
            if state.last_write is not None and (best is None or state.last_write[0] > best[0]):
                best = (state.last_write[0], node, state.last_write[1], state.last_write[2])
        return None if best is None else best[1:]

    def cut(self, *, current_sizes: Mapping[int, int], torn_granularity: int | None = None,
            seed: int = 0) -> CutPlan:
        """What the disk holds after a power cut now. ``current_sizes``: the size each dirty
        node has now (to count the bytes lost); ``torn_granularity``: keep a prefix of the last
        non-durable write at that sector size (``None``: plain power loss)."""
        reverts = []
        for node, state in sorted(self.files.items()):
            now = current_sizes.get(node, state.durable_size)
            lost = max(0, now - state.durable_size) + sum(len(b) for b in state.saved.values())
            reverts.append(FileRevert(node, state.durable_size, tuple(sorted(state.saved.items())), lost))
        torn = None
        last = self.last_unsynced_write()
        if torn_granularity is not None and last is not None:
            node, offset, length = last
            torn = TornWrite(node, offset, length, torn_keep(offset, length, torn_granularity, seed), torn_granularity)
        undone = tuple(_describe(op) for op in self.pending)
        return CutPlan(tuple(reverts), torn, tuple(self.durable_tree()), undone)


def _describe(op: _Op) -> str:
    if op.label:
        return op.label
    parts = [f"{'+' if e is not None else '-'}{d}/{n}" for d, n, e in op.changes]
    return " ".join(parts)
