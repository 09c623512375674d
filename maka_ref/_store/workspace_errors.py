"""The workspace-resolution error type and its closed code vocabulary (spec 20 §6.2).

Why separate: every workspace step (marker format, marker files, Git exclude, the public
resolvers) raises these errors, so they sit below all of them; keeping them apart lets those
steps live in their own modules without importing the ``workspace`` entry points.
"""

from __future__ import annotations

from typing import Final, Literal

from maka_ref._store.errors import StoreError

__all__ = ["WORKSPACE_ERROR_CODES", "WorkspaceIdentityError"]

WORKSPACE_ERROR_CODES: Final = (
    "workspace_not_found",
    "invalid_workspace",
    "workspace_unmarked",
    "invalid_workspace_marker",
    "workspace_identity_changed",
    "workspace_io_failed",
)
WorkspaceErrorCode = Literal[
    "workspace_not_found",
    "invalid_workspace",
    "workspace_unmarked",
    "invalid_workspace_marker",
    "workspace_identity_changed",
    "workspace_io_failed",
]


class WorkspaceIdentityError(StoreError):
    """A workspace-resolution failure; ``code`` is one of :data:`WORKSPACE_ERROR_CODES`."""

    def __init__(self, code: WorkspaceErrorCode, message: str, *, detail: str | None = None) -> None:
        if code not in WORKSPACE_ERROR_CODES:
            raise ValueError(f"unknown workspace error code {code!r}")
        super().__init__(message, code=code, detail=detail)


def _io_failed(message: str, exc: BaseException | None = None) -> WorkspaceIdentityError:
    detail = None if exc is None else f"{type(exc).__name__}: {exc}"[:500]
    return WorkspaceIdentityError("workspace_io_failed", message, detail=detail)
