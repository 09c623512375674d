"""Power-loss-only mutants (issue 15 item 3): each is correct under SIGKILL and wrong under a
power cut, so it survives every ``kill`` trial and only the ``powerloss`` faults kill it.

Why they matter: a SIGKILL loses only what the process had not handed to the kernel; the page
cache survives it. A missing ``fsync`` of a file, or of the directory that holds a new or
renamed name, is invisible to every crash clause but the power-loss ones (spec 30 §2.3–§2.4,
§6.5: T1 durable before the side effect, T2 before its result is used). Each mutant needs the
power-loss filesystem (``needs="faults.powerloss"``): where FUSE is missing its clauses are
*not run* and the self-test reports it *not gradable*, neither killed nor survived
(``docs/selftest.md``). Layer ``crash``; docstrings name the killing clauses, found by
``crashlab sweep --fault powerloss`` on each mutant.
"""

from __future__ import annotations

import importlib
import os
import stat
from collections.abc import Callable

from maka_ref.adapter._mutants._patch import replace
from maka_ref.adapter._mutants._registry import mutant

NEEDS = "faults.powerloss"


def _skipping(kind: Callable[[int], bool], original: Callable[[int], None]) -> Callable[[int], None]:
    """A sync that does nothing for descriptors of one kind (regular files or directories)."""

    def sync(fd: int) -> None:
        if kind(fd):
            return  # the mutation: this descriptor's data or entries stay in the page cache
        original(fd)

    return sync


def _is_file(fd: int) -> bool:
    return stat.S_ISREG(os.fstat(fd).st_mode)


def _is_dir(fd: int) -> bool:
    return stat.S_ISDIR(os.fstat(fd).st_mode)


@mutant("crash-t1-synchronous-normal", layer="crash", spec="30 §2.3; 30 §6.5; 30 §1.1",
        family="CRASH-P*-powerloss", keyword="CRASH-P5-prefix-powerloss", needs=NEEDS)
def apply_t1_synchronous_normal() -> None:
    """The store runs SQLite with ``synchronous=NORMAL`` instead of ``FULL``: in WAL mode a
    commit (T1, T2, the terminal) is no longer fsynced, only a checkpoint is.

    Spec 30 §1.1 / §2.3: T1 must be durable before the tool's side effect starts. After a
    SIGKILL the WAL frames are still in the page cache, so every kill trial passes; a power cut
    loses the commits while the effect log (outside the cut) keeps the start. Killed by
    ``CRASH-P5-prefix-powerloss`` (and the other power-loss clauses after T1).
    """
    replace("maka_ref._store.engine.connection", "durability_pragmas", lambda: ("PRAGMA synchronous = NORMAL",))


@mutant("crash-private-directory-not-synced", layer="crash", spec="30 §6.5; 20 §3.12",
        family="CRASH-P*-powerloss", keyword="CRASH-P5-live-powerloss", needs=NEEDS)
def apply_private_directory_not_synced() -> None:
    """The runtime's own directories (``.maka/``, ``.maka/scripts/``, where a continuation's
    script sidecar is stored) are created without fsyncing their parent directory.

    fsync(2): a new entry is durable only once its directory is synced. The sidecar file itself
    is fsynced and renamed with a directory sync, so after a SIGKILL everything is there; after
    a power cut ``.maka/`` is gone and ``resume`` cannot read the script (the bug the first
    power-loss sweep found in the reference). Killed by ``CRASH-P5-live-powerloss`` (``resume``
    answers ``script_unreadable``) and the live power-loss clauses after it.
    """
    beneath = importlib.import_module("maka_ref._runtime.beneath")
    beneath.durable_sync = _skipping(_is_dir, beneath.durable_sync)  # only this module's binding


@mutant("crash-tool-output-not-synced", layer="crash", spec="30 §6.5; 20 §2 P4–P5",
        family="CRASH-P*-live-powerloss", keyword="CRASH-P5-live-powerloss", needs=NEEDS)
def apply_tool_output_not_synced() -> None:
    """The file tools (Write, Edit, Append) no longer fsync the bytes they write: the temporary
    file is renamed over the target (and the directory synced) with its data still only in the
    page cache, and T2 records the tool's success.

    Spec 30 §6.5: T2 is committed after the effect is complete, so a committed outcome must
    describe a durable effect. A SIGKILL keeps the page cache; a power cut leaves the renamed
    target empty while T2 says it was written. Killed by ``CRASH-P5-live-powerloss`` (the
    world at the kill: ``notes.txt`` is not the first line).
    """
    tools = importlib.import_module("maka_ref._runtime.tools")
    tools.durable_sync = _skipping(_is_file, tools.durable_sync)  # only the tools' binding


@mutant("crash-write-rename-not-synced", layer="crash", spec="30 §6.5; 20 §2 P4–P5",
        family="CRASH-P*-live-powerloss", keyword="CRASH-P5-live-powerloss", needs=NEEDS)
def apply_write_rename_not_synced() -> None:
    """The Write and Edit tools rename their fsynced temporary file over the target without
    fsyncing the directory afterwards.

    rename(2)/fsync(2): the new name is durable only once its directory is synced. After a
    SIGKILL the rename is there; after a power cut it is undone (and the temporary file's
    creation with it), so the target is missing while T2 says it was written. Killed by
    ``CRASH-P5-live-powerloss`` (the world at the kill: ``notes.txt`` absent).
    """
    tools = importlib.import_module("maka_ref._runtime.tools")
    tools.durable_sync = _skipping(_is_dir, tools.durable_sync)
    tools._fsync_directory = lambda path: None  # the text fallback's directory sync, too
