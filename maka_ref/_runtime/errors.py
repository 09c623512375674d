"""Errors of the live reference runtime (``maka_ref._runtime``).

Why a module of its own: the loop, the provider, the tools and the CLI all map failures to a
stable ``code`` (our contract, used in the CLI's JSON error envelope, in the run summary and in
the terminal ``failed`` event's ``failureClass``). Every class is a
:class:`~maka_ref._errors.MakaRefError`, so callers above can catch one base.

Tool failures are *not* exceptions of this module: a tool that refuses or fails produces an
``isError`` result that is committed and handed to the provider (spec 30 §6.5). Only failures
that stop the turn raise.
"""

from __future__ import annotations

from maka_ref._errors import MakaRefError

__all__ = [
    "RuntimeLoopError",
    "ScriptError",
    "ScriptExhaustedError",
    "ToolBoundaryError",
]


class RuntimeLoopError(MakaRefError):
    """Base of every runtime failure; ``code`` is stable."""

    code = "runtime_error"

    def __init__(self, message: str, *, code: str | None = None, detail: str | None = None) -> None:
        super().__init__(message, detail=detail)
        if code is not None:
            self.code = code


class ScriptError(RuntimeLoopError):
    """The provider script is unreadable, not JSON, or does not match ``script.schema.json``."""

    code = "invalid_script"


class ScriptExhaustedError(RuntimeLoopError):
    """The loop asked for a model step past the end of the script (the script never ended
    the turn with a text-only step at that point)."""

    code = "script_exhausted"


class ToolBoundaryError(RuntimeLoopError):
    """T1 or T2 did not commit (``t1_failed``, ``t1_already_claimed``, ``t2_failed``), or a
    legacy append of the call / response failed (``legacy_call_append_failed``,
    ``legacy_response_append_failed``).

    Raised instead of handing anything to the provider: after ``t1_*`` the implementation ran
    zero times; after ``t2_failed`` it ran once but its result is never published.
    """

    code = "tool_boundary_failed"

    def __init__(self, code: str, message: str, *, operation_id: str | None = None, detail: str | None = None) -> None:
        super().__init__(message, code=code, detail=detail)
        self.operation_id = operation_id
