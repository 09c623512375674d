"""The script sidecar: how ``resume`` in a new process finds the script of the source run.

Why a sidecar: the scripted provider answers from a script file, but the AgentRun header is a
closed shape (spec 20 §5.1) — it has no field for a script path. So ``maka-ref run`` copies the
*validated* script into the workspace before the turn starts, keyed by the run id it is about
to use: ``<workspace>/.maka/scripts/<runId>.json`` (a copy, not a path, so moving or deleting
the original script cannot change what a continuation replays). A continuation writes the same
file for its own target run, so a multi-generation chain finds its script at every generation.

The write is atomic (temp file, fsync, rename) and happens before the run header exists, so a
run killed at any failpoint already has its sidecar.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Final

from maka_ref._runtime.provider import Script, load_script

__all__ = ["SCRIPTS_DIR", "read_script_sidecar", "script_sidecar_path", "write_script_sidecar"]

SCRIPTS_DIR: Final = os.path.join(".maka", "scripts")


def script_sidecar_path(root: str | os.PathLike[str], run_id: str) -> Path:
    return Path(root) / SCRIPTS_DIR / f"{run_id}.json"


def write_script_sidecar(root: str | os.PathLike[str], run_id: str, script: Any) -> Path:
    """Validate ``script`` (path, mapping or :class:`Script`) and store it for ``run_id``."""
    loaded = load_script(script)
    path = script_sidecar_path(root, run_id)
    path.parent.mkdir(parents=True, exist_ok=True)
    temp = path.with_name(f".{path.name}.tmp{os.getpid()}")
    # ASCII escapes: a lone surrogate in the script's text (valid JSON, not encodable as UTF-8)
    # is stored as \udXXX and reads back as the same string.
    data = json.dumps(loaded.to_json(), ensure_ascii=True, sort_keys=True).encode("ascii")
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        os.write(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(temp, path)
    return path


def read_script_sidecar(root: str | os.PathLike[str], run_id: str) -> Script:
    """The script stored for ``run_id``; raises ``ScriptError`` (``script_unreadable``) if absent."""
    return load_script(script_sidecar_path(root, run_id))
