"""Errors as values: the protocol's own codes (``docs/protocol.md`` §5).

Why a class: operations are small functions that return a result object; when they cannot,
they raise :class:`OpError` (or a :class:`~maka_ref.MakaRefError`, whose ``code`` is already
stable) and the server turns it into one ``ok: false`` response. Nothing escapes as a crash.
"""

from __future__ import annotations

from typing import Any, Mapping

__all__ = ["OpError", "invalid_params"]


class OpError(Exception):
    """A failure answered as ``{"ok": false, "error": {code, message, details?}}``."""

    def __init__(self, code: str, message: str, details: Mapping[str, Any] | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.details = dict(details) if details is not None else None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.details is not None:
            out["details"] = self.details
        return out


def invalid_params(message: str) -> OpError:
    return OpError("invalid_params", message)
