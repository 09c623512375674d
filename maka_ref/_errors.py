"""Exceptions raised by the pure core.

Why a module of its own: every layer (codec, events, ledger, plans, CLI, later the stores
and the wire protocol) maps these to stable error codes, so they must live below all of
them. Each exception carries a stable ``code`` (machine-readable, part of our contract) and a
``message`` that is the spec's exact wording where the spec fixes one.

Only *operations that the spec defines as failing* raise (decode, encode, args hash). The
resolver and the planners never raise: they return ``corruption``/``blocked`` results.
"""

from __future__ import annotations


class MakaRefError(Exception):
    """Base class: ``code`` is stable, ``message`` is human-readable."""

    code: str = "maka_ref_error"

    def __init__(self, message: str, *, detail: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        #: Where in the input the problem was found (a JSON-pointer-like path), for humans.
        self.detail = detail

    def __str__(self) -> str:
        if self.detail:
            return f"{self.message} ({self.detail})"
        return self.message


class NotStrictJSONError(MakaRefError, ValueError):
    """A value is not strict JSON (NaN, Infinity, non-str key, set, bytes, -0 where refused...)."""

    code = "not_strict_json"


class InvalidJSONTextError(MakaRefError, ValueError):
    """Text that is not one JSON document (includes a torn line)."""

    code = "invalid_json"


class RuntimeEventSchemaError(MakaRefError, ValueError):
    """Spec 10 §2.1: the value does not decode as a RuntimeEvent."""

    code = "invalid_runtime_event"

    def __init__(self, detail: str | None = None) -> None:
        super().__init__("Invalid RuntimeEvent schema", detail=detail)


class RuntimeEventNotSerializableError(MakaRefError, ValueError):
    """Spec 10 §2.2: the event does not survive the canonical round trip."""

    code = "runtime_event_not_serializable"

    def __init__(self, detail: str | None = None) -> None:
        super().__init__("RuntimeEvent is not losslessly serializable", detail=detail)


class ArgsHashError(MakaRefError, ValueError):
    """Spec 10 §2.6: canonicalArgsHash refused its input."""

    code = "args_hash_error"


class PrefixError(MakaRefError, ValueError):
    """Spec 20 §1.9: an immutable prefix, segment or cursor cannot be built or verified."""

    code = "prefix_invalid"

    def __init__(self, message: str, *, code: str | None = None, detail: str | None = None) -> None:
        super().__init__(message, detail=detail)
        if code is not None:
            self.code = code
