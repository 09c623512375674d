"""Descend to a path *beneath* an open directory, one component at a time, never following a
symlink the kernel resolves for us.

Why: a check-then-use confinement (``realpath`` says "inside", then ``open(path)``) loses to
anyone who swaps a directory component for a symlink in between — measured: hundreds of
escapes in 10,000 calls (``tests/hostile/test_confinement.py``). Here every directory is
opened relative to the descriptor of its parent with ``O_NOFOLLOW | O_DIRECTORY``, so what we
hold is the directory we checked; a component that is a symlink makes that ``open`` fail, and
only then do we read the link and resolve its target *ourselves*, by the same rules the text
check applies (``..`` may not climb above the root, an absolute target must lie under the
root's text, nothing may resolve to a reserved name at the root's level). This is what
``openat2(RESOLVE_BENEATH)`` does in the kernel, written portably over ``dir_fd`` (POSIX
``openat``/``mkdirat``/``readlinkat``), which Python exposes on every POSIX platform.

The caller receives an open descriptor of the final component's *directory* plus the final
name, and performs its own ``open``/``rename``/``unlink`` relative to that descriptor with
``O_NOFOLLOW``: the last step cannot be redirected either. Where ``dir_fd`` is unsupported
(not POSIX), :func:`descend` falls back to the text check of :mod:`~maka_ref._runtime.paths`
and plain paths (documented as undefended there).
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Final

from maka_ref._durable import sync as durable_sync
from maka_ref._runtime.paths import ConfinementError, confined_text

__all__ = ["DIR_FD_SUPPORTED", "MAX_SYMLINKS", "Beneath", "descend"]

_O_NOFOLLOW: Final = getattr(os, "O_NOFOLLOW", 0)
_O_DIRECTORY: Final = getattr(os, "O_DIRECTORY", 0)
_O_CLOEXEC: Final = getattr(os, "O_CLOEXEC", 0)
_DIR_FLAGS: Final = os.O_RDONLY | _O_DIRECTORY | _O_NOFOLLOW | _O_CLOEXEC

#: Symlinks followed in one resolution before giving up with ``ELOOP`` (Linux uses 40).
MAX_SYMLINKS: Final = 40
#: A component that is a symlink for ``open`` and not one for ``readlink`` was swapped in
#: between; retried this often before the call gives up (``path_changed``).
_SWAP_RETRIES: Final = 8

DIR_FD_SUPPORTED: Final = (
    os.name == "posix"
    and _O_DIRECTORY != 0
    and _O_NOFOLLOW != 0
    and {os.open, os.mkdir, os.readlink, os.stat, os.rename, os.unlink} <= os.supports_dir_fd
)


@dataclass
class Beneath:
    """The directory holding the final component (``dir_fd``, owned: :meth:`close` it) and the
    final ``name`` in it; ``text`` is the resolved absolute path, for messages only.

    ``at(name)`` is what to pass to an ``os`` call together with ``dir_fd=self.dir_fd``: the bare
    name where descriptors are supported, the joined path in the text fallback (``dir_fd`` None).
    """

    dir_fd: int | None
    dir_text: str
    name: str
    _closed: bool = field(default=False, repr=False)

    @property
    def text(self) -> str:
        return os.path.join(self.dir_text, self.name)

    def at(self, name: str) -> str:
        return name if self.dir_fd is not None else os.path.join(self.dir_text, name)

    def close(self) -> None:
        if self.dir_fd is not None and not self._closed:
            self._closed = True
            os.close(self.dir_fd)

    def __enter__(self) -> "Beneath":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def descend(
    root: str | os.PathLike[str],
    parts: list[str],
    *,
    create_dirs: bool,
    reserved: Callable[[str], bool],
    shown: str,
) -> Beneath:
    """Resolve ``parts`` (text-checked already: no ``..``, no empty or ``.`` part, not
    reserved at the front) beneath the directory ``root``.

    ``create_dirs``: missing directories on the way are created (``mkdirat``, then opened like
    any other); otherwise a missing directory raises ``FileNotFoundError``. A symlink on the way
    is resolved by the rules above; one that leaves the root raises :class:`ConfinementError`
    (``path_symlink_escape``), one that reaches a reserved name at the root's level
    ``path_reserved``. The final component is resolved too when it is a symlink (a ``Write`` to
    a link inside the workspace writes its target, as the text check allows), but it is never
    opened here.
    """
    root_text = os.fspath(root)
    if not DIR_FD_SUPPORTED:  # pragma: no cover - non-POSIX: the text check only
        resolved = confined_text(root_text, "/".join(parts))
        return Beneath(None, os.path.dirname(resolved), os.path.basename(resolved))
    root_fd = os.open(root_text, os.O_RDONLY | _O_DIRECTORY | _O_CLOEXEC)
    stack: list[tuple[int, str]] = [(root_fd, root_text)]  # (descriptor, absolute text) per level
    try:
        pending = list(parts)
        links = 0
        retries = 0
        while True:
            name = pending.pop(0)
            if name in ("", "."):
                if not pending:
                    raise ConfinementError(f"Tool path names a directory, not a file: {shown!r}", code="path_invalid")
                continue
            if name == "..":
                if len(stack) == 1:
                    raise _escape(shown)
                os.close(stack.pop()[0])
                if not pending:
                    raise ConfinementError(f"Tool path names a directory, not a file: {shown!r}", code="path_invalid")
                continue
            if len(stack) == 1 and reserved(name):
                raise ConfinementError(f"Tool path resolves to a reserved runtime file: {shown!r}", code="path_reserved")
            parent_fd, parent_text = stack[-1]
            if not pending:  # the final component: resolve it if it is a symlink, never open it
                target = _readlink(name, parent_fd)
                if target is None:
                    out = Beneath(parent_fd, parent_text, name)
                    stack.pop()
                    return out
                links += 1
                if links > MAX_SYMLINKS:
                    raise OSError(errno.ELOOP, "Too many levels of symbolic links")
                pending = _expand(target, root_text, stack, shown) + pending
                if not pending:
                    raise _escape(shown)  # the link names the root itself
                continue
            try:
                fd = os.open(name, _DIR_FLAGS, dir_fd=parent_fd)
            except FileNotFoundError:
                if not create_dirs:
                    raise
                try:
                    os.mkdir(name, 0o777, dir_fd=parent_fd)
                except FileExistsError:  # created meanwhile (or a dangling symlink): look again
                    retries += 1
                    if retries > _SWAP_RETRIES:
                        raise ConfinementError(f"Tool path kept changing while it was resolved: {shown!r}",
                                               code="path_changed") from None
                pending.insert(0, name)
                continue
            except OSError as exc:
                if exc.errno not in (errno.ELOOP, errno.ENOTDIR, errno.EMLINK):
                    raise
                target = _readlink(name, parent_fd)
                if target is None:  # not a symlink: a file on the way, or swapped back meanwhile
                    retries += 1
                    if exc.errno == errno.ENOTDIR and _is_not_dir(name, parent_fd):
                        raise
                    if retries > _SWAP_RETRIES:
                        raise ConfinementError(f"Tool path kept changing while it was resolved: {shown!r}",
                                               code="path_changed") from None
                    pending.insert(0, name)
                    continue
                links += 1
                if links > MAX_SYMLINKS:
                    raise OSError(errno.ELOOP, "Too many levels of symbolic links") from None
                pending = _expand(target, root_text, stack, shown) + pending
                continue
            stack.append((fd, os.path.join(parent_text, name)))
    finally:
        for fd, _ in stack:
            os.close(fd)


def _readlink(name: str, dir_fd: int) -> str | None:
    """The target of ``name`` when it is a symlink, else None (absent, or not a link)."""
    try:
        return os.readlink(name, dir_fd=dir_fd)
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as exc:
        if exc.errno == errno.EINVAL:  # exists, not a symlink
            return None
        raise


def _is_not_dir(name: str, dir_fd: int) -> bool:
    try:
        info = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except OSError:
        return False
    return not stat.S_ISDIR(info.st_mode) and not stat.S_ISLNK(info.st_mode)


def _expand(target: str, root_text: str, stack: list[tuple[int, str]], shown: str) -> list[str]:
    """The components a symlink's ``target`` stands for, relative to the top of ``stack``.

    An absolute target must lie under the root's text (then the stack is unwound to the root);
    ``..`` components stay in the list and pop the stack when processed (never above the root).
    """
    if not target:
        raise _escape(shown)
    if target.startswith("/"):
        normal = os.path.normpath(target)
        prefix = root_text.rstrip("/") + "/"
        if normal != root_text and not normal.startswith(prefix):
            raise _escape(shown)
        while len(stack) > 1:
            os.close(stack.pop()[0])
        target = normal[len(prefix):] if normal != root_text else ""
    return [part for part in target.split("/") if part not in ("", ".")]


def _escape(shown: str) -> ConfinementError:
    return ConfinementError(f"Tool path escapes the workspace through a symlink: {shown!r}", code="path_symlink_escape")


def open_private_dir(root: str | os.PathLike[str], parts: list[str], *, create: bool) -> int:
    """A descriptor of the runtime's own directory ``root/parts…`` (e.g. ``.maka/scripts``),
    reached with ``O_NOFOLLOW`` at every component and created (``mkdirat``) when ``create``.

    Why stricter than :func:`descend`: tools may use a symlink that stays inside the workspace;
    the runtime's own files have no reason to be reached through any link, so a symlink (or a
    non-directory) on the way is refused outright with ``NotADirectoryError``/``ELOOP`` — which
    callers report as their own stable code — instead of being resolved."""
    fd = os.open(os.fspath(root), os.O_RDONLY | _O_DIRECTORY | _O_CLOEXEC)
    try:
        for name in parts:
            try:
                child = os.open(name, _DIR_FLAGS, dir_fd=fd)
            except FileNotFoundError:
                if not create:
                    raise
                try:
                    os.mkdir(name, 0o755, dir_fd=fd)
                except FileExistsError:
                    pass
                else:
                    # the new entry is durable only once its parent is synced (fsync(2)):
                    # without this a power cut loses .maka/scripts and resume its script (found
                    # by the crash lab's powerloss fault at P11, issue 15)
                    try:
                        durable_sync(fd)
                    except OSError:  # pragma: no cover - a file system without directory fsync
                        pass
                child = os.open(name, _DIR_FLAGS, dir_fd=fd)
            os.close(fd)
            fd = child
    except BaseException:
        os.close(fd)
        raise
    return fd
