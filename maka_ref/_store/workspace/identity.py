"""Workspace identity: the ``.maka-workspace.json`` marker and its Git exclude rule (spec 20 §6).

Why: continuation must prove it resumes in the *same logical workspace* as the source run, and
that proof must survive moves, copies and archives (a path or an inode does not). The proof is
a random UUID stored once in a marker file at the canonical workspace root; the identity string
is ``workspace:v1:<workspaceId>`` with the marker's text kept verbatim.

Invariants this module keeps (§6.2, §6.3, §9 items 27–29):

* an existing marker is authoritative and never rewritten;
* a marker is published only by a hard link from a fully written, fsynced temporary file
  (atomic create-if-absent), and every resolver returns what it *re-reads* from disk, so N
  concurrent resolvers converge on one identity (a rename would let them overwrite each other);
* in a Git workspace the exclude rule is written *before* the marker, so a marker never shows
  up in ``git status``; if Git cannot be queried no marker is created; a non-Git workspace
  never runs Git;
* the directory's (device, inode) is re-checked around publication
  (``workspace_identity_changed`` — the *resolution* error, distinct from the execution
  revalidation gate code of the same name, §9 item 36).

Path and cwd differences are diagnostics only (§6.4): :func:`compare_workspace` separates the
hard gates from the ``workspace_location_changed`` diagnostic.

Layout: this module keeps the entry points (:func:`resolve_workspace_identity`,
:func:`read_workspace_identity`, :func:`compare_workspace`) and the order of the steps; the
steps live in the sibling modules ``marker`` (error codes, marker format, marker
read/publish on disk) and ``git`` (exclude rule), and every public name is re-exported here.

Depends on: ``_codec`` (JSON text, frozen values), ``_store.errors``. POSIX-first: on platforms
without ``O_NOFOLLOW``/``O_NONBLOCK``/``fcntl`` the corresponding guard is skipped.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

from maka_ref._codec.frozen import FrozenDict
from maka_ref._store.workspace.git import (
    GIT_TIMEOUT_SECONDS,
    MAX_EXCLUDE_BYTES,
    _ensure_git_ignore,
)
from maka_ref._store.workspace.marker import (
    IDENTITY_PREFIX,
    MARKER_FILE_NAME,
    MAX_MARKER_BYTES,
    WORKSPACE_ERROR_CODES,
    WorkspaceIdentityError,
    _assert_same_directory,
    _canonical_directory,
    _io_failed,
    _publish_marker,
    _read_marker,
    format_workspace_marker,
    identity_from_workspace_id,
    is_workspace_uuid,
    parse_workspace_marker,
)

__all__ = [
    "GIT_TIMEOUT_SECONDS",
    "IDENTITY_PREFIX",
    "MARKER_FILE_NAME",
    "MAX_EXCLUDE_BYTES",
    "MAX_MARKER_BYTES",
    "WORKSPACE_ERROR_CODES",
    "WorkspaceIdentity",
    "WorkspaceIdentityError",
    "compare_workspace",
    "format_workspace_marker",
    "identity_from_workspace_id",
    "is_workspace_uuid",
    "normalize_cwd",
    "parse_workspace_marker",
    "read_workspace_identity",
    "resolve_workspace_identity",
]


@dataclass(frozen=True, slots=True)
class WorkspaceIdentity:
    """``identity`` = ``workspace:v1:<id>``; ``workspace_path`` is diagnostic only (§6.4)."""

    identity: str
    workspace_path: str
    marker_created: bool

    @property
    def workspace_id(self) -> str:
        return self.identity[len(IDENTITY_PREFIX) :]


# --------------------------------------------------------------------------- public API


def resolve_workspace_identity(
    path: str | os.PathLike[str], *, env: Mapping[str, str] | None = None, new_workspace_id: str | None = None
) -> WorkspaceIdentity:
    """§6.2: resolve (creating the marker if the workspace is unmarked) and return the identity.

    ``env`` replaces ``os.environ`` for locating and running ``git`` (tests, hosts).
    ``new_workspace_id``: the random id an unmarked workspace's new marker gets (default: a fresh
    v4 UUID); an existing marker still wins, and the answer is always re-read from disk. Raises
    :class:`WorkspaceIdentityError`; any unexpected failure is ``workspace_io_failed``.
    """
    try:
        canonical, dev_ino = _canonical_directory(path)
        workspace_id = _read_marker(canonical)
        if workspace_id is not None:
            _ensure_git_ignore(canonical, env)
            return WorkspaceIdentity(identity_from_workspace_id(workspace_id), canonical, False)
        _ensure_git_ignore(canonical, env)  # first: if this fails nothing is published
        if new_workspace_id is not None and not is_workspace_uuid(new_workspace_id):
            raise WorkspaceIdentityError("invalid_workspace_marker", f"not a workspace id: {new_workspace_id!r}")
        published = _publish_marker(canonical, dev_ino, new_workspace_id)
        _assert_same_directory(canonical, dev_ino)
        workspace_id = _read_marker(canonical)
        if workspace_id is None:
            raise _io_failed(f"Workspace marker disappeared right after publication: {canonical}")
        return WorkspaceIdentity(identity_from_workspace_id(workspace_id), canonical, published)
    except WorkspaceIdentityError:
        raise
    except Exception as exc:  # noqa: BLE001 - §6.2 step 6: wrap every other cause
        raise _io_failed("Unable to resolve workspace identity", exc) from exc


def read_workspace_identity(path: str | os.PathLike[str], *, require: bool = False) -> WorkspaceIdentity | None:
    """Read-only resolution: never creates a marker, never runs Git, never writes.

    An unmarked workspace returns ``None``, or raises ``workspace_unmarked`` when ``require``.
    """
    try:
        canonical, _ = _canonical_directory(path)
        workspace_id = _read_marker(canonical)
    except WorkspaceIdentityError:
        raise
    except Exception as exc:  # noqa: BLE001
        raise _io_failed("Unable to read workspace identity", exc) from exc
    if workspace_id is None:
        if require:
            raise WorkspaceIdentityError("workspace_unmarked", f"Workspace is not marked: {canonical}")
        return None
    return WorkspaceIdentity(identity_from_workspace_id(workspace_id), canonical, False)


def normalize_cwd(cwd: str) -> str:
    """§3.6 (h): ``\\`` → ``/``, trailing ``/`` stripped, lower-cased when it starts ``X:/``."""
    normalized = cwd.replace("\\", "/").rstrip("/")
    if re.match(r"[A-Za-z]:/", normalized):
        normalized = normalized.lower()
    return normalized


def compare_workspace(
    recorded_identity: str | None,
    current_identity: str | None,
    recorded_cwd: str | None,
    current_cwd: str | None,
    *,
    stage: Literal["planning", "execution"] = "planning",
) -> tuple[tuple[str, ...], tuple[FrozenDict, ...]]:
    """§6.4 gate vs diagnostic: ``(gate_codes, diagnostics)``.

    Gates (planning): no recorded identity → ``workspace_identity_missing``; identities differ →
    ``workspace_identity_mismatch`` (``workspace_identity_changed`` at ``stage="execution"``,
    where ``recorded_identity`` is the plan snapshot). Path differences never gate: they yield
    one ``{"code": "workspace_location_changed", "detail": {"sourceCwd", "currentCwd"}}``.
    """
    gates: list[str] = []
    if recorded_identity is None or recorded_identity == "":
        gates.append("workspace_identity_missing")
    elif current_identity != recorded_identity:
        gates.append("workspace_identity_changed" if stage == "execution" else "workspace_identity_mismatch")
    diagnostics: list[FrozenDict] = []
    if (
        recorded_cwd is not None
        and current_cwd is not None
        and normalize_cwd(recorded_cwd) != normalize_cwd(current_cwd)
    ):
        diagnostics.append(
            FrozenDict(
                {
                    "code": "workspace_location_changed",
                    "detail": {"sourceCwd": recorded_cwd, "currentCwd": current_cwd},
                }
            )
        )
    return tuple(gates), tuple(diagnostics)
