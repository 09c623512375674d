"""Which ``params.workspace`` the adapter may create its store in: an existing directory it may own.

Why: the protocol (``docs/protocol.md`` §4.2) says the harness creates every workspace, so an
adapter that creates one (``mkdir -p``) only hides a harness bug — and with a typo or an empty
variable it writes ``runtime.sqlite`` and the identity marker into ``/``, ``/etc`` or a home
directory. So every operation that may write the workspace (``store.open`` in either mode, the
implicit writer of the other ``store.*`` writes, ``runtime.*``) first checks the path and answers
``workspace_invalid`` instead of creating or using it.

"May own" is deliberately a short, fixed rule (``docs/spec-choices.md``): the path must name an
existing directory (a symlink to one is followed, then judged by its real path) that is

* not the file-system root and not one of the standard system directories themselves
  (:data:`SYSTEM_DIRECTORIES`: ``/etc``, ``/usr``, ``/var``, ``/tmp``, ``/home``, … and their
  macOS ``/private`` forms) — a *subdirectory* of ``/tmp`` or ``/var`` is fine;
* not inside a pseudo file system (``/proc``, ``/sys``, ``/dev``), whose entries are not files;
* not the current user's home directory itself.

Ownership in the Unix sense (``st_uid``) is not required: the harness may run the adapter as
another user than the one who made the directory, and root (CI) owns nothing it did not create.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Final

from maka_ref.adapter._errors import OpError

__all__ = ["SYSTEM_DIRECTORIES", "owned_workspace", "workspace_refusal"]

#: Directories that are never a workspace themselves (their subdirectories may be).
SYSTEM_DIRECTORIES: Final = frozenset(
    {
        "/", "/bin", "/boot", "/dev", "/etc", "/home", "/lib", "/lib32", "/lib64", "/libx32", "/media",
        "/mnt", "/opt", "/proc", "/root", "/run", "/sbin", "/srv", "/sys", "/tmp", "/usr", "/var",
        "/usr/bin", "/usr/lib", "/usr/local", "/usr/sbin", "/usr/share", "/var/lib", "/var/log", "/var/tmp",
        "/Applications", "/Library", "/System", "/Users", "/Volumes", "/private", "/private/etc",
        "/private/tmp", "/private/var",
    }
)
#: Pseudo file systems: nothing at or below them is a workspace.
PSEUDO_FILE_SYSTEMS: Final = ("/proc", "/sys", "/dev")


def workspace_refusal(path: str) -> str | None:
    """Why ``path`` is not a workspace the adapter may own, or None when it is (reads only)."""
    try:
        info = os.stat(path)
    except FileNotFoundError:
        return f"workspace {path} does not exist (the harness creates it; the adapter never does)"
    except OSError as exc:
        return f"workspace {path} cannot be examined: {exc.strerror or exc}"
    if not stat.S_ISDIR(info.st_mode):
        return f"workspace {path} is not a directory"
    real = os.path.realpath(path)
    if real in SYSTEM_DIRECTORIES:
        return f"workspace {path} is the system directory {real}, which no implementation may own"
    if any(real == top or real.startswith(top + "/") for top in PSEUDO_FILE_SYSTEMS):
        return f"workspace {path} lies in the pseudo file system {real}"
    try:
        home = os.path.realpath(Path.home())
    except (KeyError, RuntimeError):  # no home directory known for this user
        home = None
    if home is not None and real == home:
        return f"workspace {path} is the home directory itself"
    return None


def owned_workspace(path: str) -> str:
    """``path`` when :func:`workspace_refusal` has nothing against it, else ``workspace_invalid``."""
    reason = workspace_refusal(path)
    if reason is not None:
        raise OpError("workspace_invalid", reason)
    return path
