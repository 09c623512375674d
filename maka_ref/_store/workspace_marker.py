"""The ``.maka-workspace.json`` marker format and the identity string (spec 20 §6.1, §9 item 27).

Why separate: the format is pure (bytes in, id out; no file system, no Git), so the writer
form, the reader's exact-shape check and the ``workspace:v1:`` identity can be read and tested
on their own; the file steps that use them live in ``workspace_marker_io``.
"""

from __future__ import annotations

import re
from typing import Any, Final

from maka_ref._codec.jsontext import parse_json
from maka_ref._errors import InvalidJSONTextError
from maka_ref._store.workspace_errors import WorkspaceIdentityError

__all__ = [
    "IDENTITY_PREFIX",
    "MARKER_FILE_NAME",
    "MAX_MARKER_BYTES",
    "format_workspace_marker",
    "identity_from_workspace_id",
    "is_workspace_uuid",
    "parse_workspace_marker",
]

MARKER_FILE_NAME: Final = ".maka-workspace.json"
IDENTITY_PREFIX: Final = "workspace:v1:"
MAX_MARKER_BYTES: Final = 4096
_UUID_RE: Final = re.compile(
    r"[0-9a-f]{8}-[0-9a-f]{4}-[1-8][0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}", re.IGNORECASE | re.ASCII
)


def is_workspace_uuid(value: Any) -> bool:
    """§6.1 / §9 item 27: versions 1–8, variant 8–b, either case."""
    return type(value) is str and _UUID_RE.fullmatch(value) is not None


def identity_from_workspace_id(workspace_id: str) -> str:
    """``workspace:v1:`` + the marker's id, verbatim (case kept)."""
    return IDENTITY_PREFIX + workspace_id


def format_workspace_marker(workspace_id: str) -> bytes:
    """The writer form: compact, ``schemaVersion`` first, trailing newline."""
    if not is_workspace_uuid(workspace_id):
        raise WorkspaceIdentityError("invalid_workspace_marker", "Workspace marker candidate has an invalid id")
    return f'{{"schemaVersion":1,"workspaceId":"{workspace_id}"}}\n'.encode("ascii")


def parse_workspace_marker(data: bytes) -> str:
    """Return the ``workspaceId`` of marker bytes (any JSON formatting/key order; exact shape)."""
    if len(data) > MAX_MARKER_BYTES:
        raise WorkspaceIdentityError("invalid_workspace_marker", "Workspace marker exceeds 4096 bytes")
    try:
        value = parse_json(data.decode("utf-8"))
    except (UnicodeDecodeError, InvalidJSONTextError) as exc:
        raise WorkspaceIdentityError("invalid_workspace_marker", "Workspace marker is not valid JSON") from exc
    if (
        not isinstance(value, dict)
        or set(value) != {"schemaVersion", "workspaceId"}
        or type(value["schemaVersion"]) not in (int, float)
        or value["schemaVersion"] != 1
        or not is_workspace_uuid(value["workspaceId"])
    ):
        raise WorkspaceIdentityError("invalid_workspace_marker", "Workspace marker has an invalid shape")
    return str(value["workspaceId"])
