"""Workspace confinement of tool paths.

Why: the tools act on the real filesystem, and the workspace also holds the runtime's own
durable state (``runtime.sqlite`` and its WAL, the identity marker, the effect log). A tool
path must therefore (1) be a relative path inside the workspace, (2) stay inside it after
every symlink is resolved, and (3) never name the runtime's own files. A violation is a
:class:`ConfinementError`, which the runtime turns into a tool **error result** (``isError``)
— never a crash.

Rules (checked in this order; the first failure wins):

1. the path is a non-empty string without NUL and without ``\\`` (one separator on every
   platform, so a Windows-style path cannot smuggle ``..``);
2. it is not absolute (``/x``; also ``C:...`` drive forms);
3. no component is ``..`` (``.`` and empty components are dropped; nothing may remain empty);
4. the first component is not reserved (case-insensitively): ``runtime.sqlite`` and its
   ``-wal``/``-shm``/``-journal`` files, ``.maka-workspace.json``, ``.maka-effects.jsonl``,
   ``.maka`` and ``.git``;
5. after ``os.path.realpath`` (every symlink of the existing prefix resolved) the target is
   strictly inside the canonical workspace root, and its first component relative to the
   root is not reserved either (a symlink *inside* the workspace must not reach
   ``runtime.sqlite``).

6. an existing file the tool would read or write in place has exactly one link
   (``st_nlink == 1``): a hard link inside the workspace is a second name of a file that may
   live outside it (or be the effect log, or the marker), and no path check can tell
   (``path_hardlinked``).

Preflight runs these checks on the path text (rules 1–4), with ``realpath`` (rule 5) and
``lstat`` (rule 6) before T1. The implementation does not trust that answer: it resolves the
same path again with an ``openat``-style descent (:mod:`maka_ref._runtime.beneath`: one
``O_NOFOLLOW`` component at a time below a directory descriptor, symlinks resolved by these
rules, never by the kernel) and checks rule 6 on the descriptor it then uses (``fstat``), so a
component swapped for a symlink at any moment cannot redirect the effect outside the
workspace (``tests/hostile/test_confinement.py``: 0 escapes in 10,000 raced calls).
"""

from __future__ import annotations

import os
import re
import stat
from functools import lru_cache
from pathlib import Path
from typing import Any, Final

from maka_ref._runtime.errors import RuntimeLoopError

__all__ = [
    "RESERVED_NAMES",
    "ConfinementError",
    "confine",
    "confined_text",
    "is_reserved",
    "path_parts",
    "refuse_hardlinked",
]

RESERVED_NAMES: Final = frozenset(
    {
        "runtime.sqlite",
        "runtime.sqlite-wal",
        "runtime.sqlite-shm",
        "runtime.sqlite-journal",
        ".maka-workspace.json",
        ".maka-effects.jsonl",
        ".maka",
        ".git",
    }
)
_DRIVE: Final = re.compile(r"[A-Za-z]:")


class ConfinementError(RuntimeLoopError):
    """A tool path is not confined to the workspace; ``code`` names the rule."""

    code = "path_not_confined"


def _reserved(component: str) -> bool:
    return component.casefold() in RESERVED_NAMES


def is_reserved(component: str) -> bool:
    """Rule 4: ``component`` (at the workspace's top level) names a runtime file. (Looks up
    ``_reserved`` at call time: the self-test's mutant replaces that one name everywhere.)"""
    return _reserved(component)


def refuse_hardlinked(info: os.stat_result, shown: str) -> None:
    """Rule 6 on a file's status (``lstat`` in preflight, ``fstat`` on the descriptor used)."""
    if stat.S_ISREG(info.st_mode) and info.st_nlink > 1:
        raise ConfinementError(
            f"{shown} has {info.st_nlink} hard links; a tool only touches a file with one name",
            code="path_hardlinked",
        )


def confine(root: str | os.PathLike[str], path: Any) -> Path:
    """The resolved absolute path of ``path`` inside the workspace ``root`` (already canonical:
    ``os.path.realpath`` of an existing directory), or :class:`ConfinementError`."""
    return Path(confined_text(root, path))


def confined_text(root: str | os.PathLike[str], path: Any) -> str:
    """:func:`confine` without building the :class:`~pathlib.Path` (preflight needs only the check)."""
    parts = path_parts(path)
    root_text = os.fspath(root)
    prefixes = _root_prefixes(root_text) if isinstance(root_text, str) else None
    if prefixes is not None and _no_symlink_on_the_way(prefixes, root_text, parts):
        # Rule 5 without any symlink: realpath is the join itself, strictly inside the root,
        # and its first component relative to the root is parts[0] (checked above).
        return root_text + "/" + "/".join(parts) if root_text != "/" else "/" + "/".join(parts)
    try:
        resolved = os.path.realpath(os.path.join(root_text, *parts))
    except OSError as exc:  # a component renamed while realpath walked it (EINVAL from readlink)
        raise ConfinementError(f"Tool path changed while it was resolved: {path!r} ({exc.strerror or exc})",
                               code="path_changed") from None
    try:
        inside = os.path.commonpath([root_text, resolved]) == root_text and resolved != root_text
    except ValueError:  # different drives (Windows)
        inside = False
    if not inside:
        raise ConfinementError(f"Tool path escapes the workspace through a symlink: {path!r}", code="path_symlink_escape")
    relative = os.path.relpath(resolved, root_text).split(os.sep)
    if _reserved(relative[0]):
        raise ConfinementError(f"Tool path resolves to a reserved runtime file: {path!r}", code="path_reserved")
    return resolved


def path_parts(path: Any) -> list[str]:
    """Rules 1–4 on the text alone: the path's components (``.`` and empty ones dropped)."""
    if not isinstance(path, str) or not path:
        raise ConfinementError("Tool path must be a non-empty string", code="path_invalid")
    if "\x00" in path or "\\" in path:
        raise ConfinementError("Tool path must not contain NUL or backslash characters", code="path_invalid")
    if path.startswith("/") or os.path.isabs(path) or _DRIVE.match(path):
        raise ConfinementError(f"Tool path must be relative to the workspace: {path!r}", code="path_absolute")
    parts = [part for part in path.split("/") if part not in ("", ".")]
    if any(part == ".." for part in parts):
        raise ConfinementError(f"Tool path must not contain '..': {path!r}", code="path_parent_reference")
    if not parts:
        raise ConfinementError(f"Tool path names the workspace itself: {path!r}", code="path_invalid")
    if _reserved(parts[0]):
        raise ConfinementError(f"Tool path names a reserved runtime file: {path!r}", code="path_reserved")
    return parts


# --------------------------------------------------------------------------- fast path
#
# ``os.path.realpath`` walks the path one component at a time: it ``lstat``s every prefix and
# resolves a prefix only when it is a symlink (an ``lstat`` error counts as "not a link";
# ``strict=False``). So when the root is canonical text (absolute, normalised, no ``//``)
# and *no* prefix of ``root/parts…`` is a symlink, realpath returns exactly the joined text.
# The fast path performs the same ``lstat`` calls, in the same order, and falls back to the
# full rule 5 (realpath, commonpath, relpath) as soon as any prefix is a symlink; it only
# saves realpath's per-component Python work and the two path comparisons, which cost about
# as much again as the ``lstat`` calls (issue 4). Nothing is cached about the filesystem:
# every call ``lstat``s every prefix again (preflight and the re-check before the effect).


@lru_cache(maxsize=64)
def _root_prefixes(root_text: str) -> tuple[str, ...] | None:
    """The prefixes realpath ``lstat``s for the root part (``/a``, ``/a/b``, …), or None when
    ``root_text`` is not canonical text (then the full rule 5 runs). A pure function of the text."""
    if os.name != "posix":
        return None
    if not root_text.startswith("/") or root_text.startswith("//") or os.path.normpath(root_text) != root_text:
        return None
    names = [name for name in root_text.split("/") if name]
    return tuple("/" + "/".join(names[: index + 1]) for index in range(len(names)))


def _no_symlink_on_the_way(prefixes: tuple[str, ...], root_text: str, parts: list[str]) -> bool:
    """True when ``lstat`` finds no symlink at any prefix of ``root/parts…`` (see above)."""
    lstat, is_link = os.lstat, stat.S_ISLNK
    for prefix in prefixes:
        try:
            if is_link(lstat(prefix).st_mode):
                return False
        except OSError:
            pass
    current = root_text if root_text != "/" else ""
    for part in parts:
        current = current + "/" + part
        try:
            if is_link(lstat(current).st_mode):
                return False
        except OSError:
            pass
    return True
