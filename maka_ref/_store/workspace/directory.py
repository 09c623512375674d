"""The workspace-directory check shared by every command that takes ``--workspace``.

Why one function: ``inspect``, ``repair`` and ``resume`` must refuse a bad workspace with the
same stable codes (``workspace_not_found``, ``workspace_not_a_directory``,
``workspace_unreadable``), before anything opens a file in it.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Callable

from maka_ref._store.errors import StoreError

__all__ = ["check_workspace_dir"]


def _unreadable(workspace: Path, error: OSError) -> StoreError:
    return StoreError(f"workspace {workspace} cannot be read: {error.strerror or error}", code="workspace_unreadable")


def check_workspace_dir(
    path: str | os.PathLike[str], *, list_directory: Callable[[str], object] | None = None
) -> Path:
    """The absolute workspace directory, or a :class:`StoreError` with a stable code.

    ``list_directory`` (e.g. ``os.listdir``), when given, is called once to prove the
    directory can be listed (``inspect`` needs that; it is an indirection so tests running as
    root can simulate a permission error).
    """
    text = os.fspath(path)
    if text == "":
        raise StoreError("workspace path is empty", code="workspace_not_found")
    workspace = Path(os.path.abspath(text))
    try:
        mode = os.stat(workspace).st_mode
    except (FileNotFoundError, NotADirectoryError):
        raise StoreError(f"workspace {workspace} does not exist", code="workspace_not_found") from None
    except OSError as error:
        raise _unreadable(workspace, error) from None
    if not stat.S_ISDIR(mode):
        raise StoreError(f"workspace {workspace} is not a directory", code="workspace_not_a_directory")
    if list_directory is not None:
        try:
            list_directory(str(workspace))
        except OSError as error:
            raise _unreadable(workspace, error) from None
    return workspace
