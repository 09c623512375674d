"""Typed access to ``params``: a missing key or a wrong type is ``invalid_params``, never a crash."""

from __future__ import annotations

from typing import Any, Mapping

from maka_ref.adapter._errors import invalid_params

__all__ = ["opt_bool", "opt_int", "opt_str", "req", "req_int", "req_object", "req_str", "usable_path", "workspace"]

_MISSING = object()


def req(params: Mapping[str, Any], key: str) -> Any:
    value = params.get(key, _MISSING)
    if value is _MISSING:
        raise invalid_params(f"params.{key} is required")
    return value


def req_str(params: Mapping[str, Any], key: str) -> str:
    value = req(params, key)
    if not isinstance(value, str) or not value:
        raise invalid_params(f"params.{key} must be a non-empty string")
    return value


def req_object(params: Mapping[str, Any], key: str) -> Mapping[str, Any]:
    value = req(params, key)
    if not isinstance(value, Mapping):
        raise invalid_params(f"params.{key} must be an object")
    return value


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def req_int(params: Mapping[str, Any], key: str) -> int:
    value = req(params, key)
    if not _is_int(value):
        raise invalid_params(f"params.{key} must be an integer")
    return value


def opt_str(params: Mapping[str, Any], key: str) -> str | None:
    return None if params.get(key) is None else req_str(params, key)


def opt_bool(params: Mapping[str, Any], key: str, default: bool) -> bool:
    value = params.get(key, default)
    if not isinstance(value, bool):
        raise invalid_params(f"params.{key} must be a boolean")
    return value


def opt_int(params: Mapping[str, Any], key: str, default: int) -> int:
    value = params.get(key, default)
    if not _is_int(value):
        raise invalid_params(f"params.{key} must be an integer")
    return value


def workspace(params: Mapping[str, Any]) -> str:
    """``params.workspace``: an absolute path (the harness creates the directory)."""
    import os

    value = req_str(params, "workspace")
    if not usable_path(value):  # found by ``fuzz --self``: was internal_error (ValueError from os.*)
        raise invalid_params("params.workspace must be a file-system path (no NUL, encodable)")
    if not os.path.isabs(value):
        raise invalid_params("params.workspace must be an absolute path")
    return value


def usable_path(value: str) -> bool:
    """A string the OS can take as a path: no NUL byte, encodable with the file-system encoding."""
    import os

    if "\x00" in value:
        return False
    try:
        os.fsencode(value)
    except UnicodeError:
        return False
    return True
