"""``inspect_workspace``: everything a workspace's durable store knows, as one JSON document.

The rules (docs/inspect.md):

* **Reading never writes** (spec 20 §1.8, spec 30 §10 item 33): every file of the workspace
  stays byte-identical and nothing is created. SQLite never opens the workspace's files; it
  opens a private copy (:mod:`maka_ref._inspect.snapshot`). Legacy JSONL files are read with
  plain reads; a legacy-only workspace never gains a ``runtime.sqlite``.
* **Which store** (spec 30 §5.2 rule 4): ``sqlite`` when ``<workspace>/runtime.sqlite``
  exists (never merged with or falling back to JSONL), else ``jsonl`` when legacy
  ``runtime-events.jsonl`` files exist, else ``none``.
* **A corrupt ledger is a result, not an error**: scanner issues show in each run's
  ``resolution`` and in ``health``; an undecodable row or torn line shows in the run's
  ``readErrors`` and in ``health``.
* **A workspace that cannot be inspected raises** :class:`StoreError` with a stable code:
  ``workspace_not_found``, ``workspace_not_a_directory``, ``workspace_unreadable``,
  ``workspace_busy`` (the database kept changing while it was copied), ``schema_too_new``,
  ``database_corrupt`` (not a database, truncated, malformed: any ``sqlite3.DatabaseError``
  from the copy; or a stored value that is not JSON), ``snapshot_unavailable`` and the
  stores' own codes (``schema_not_current``,
  ``capability_unavailable``, ``operational_state_migration_blocked``, …) unchanged.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Callable

from maka_ref._codec.jsontext import compact_json
from maka_ref._errors import MakaRefError, NotStrictJSONError
from maka_ref._inspect.document import FORMAT
from maka_ref._inspect.jsonl_view import inspect_jsonl, inspect_none
from maka_ref._inspect.sqlite_view import inspect_sqlite
from maka_ref._store.workspace.directory import check_workspace_dir
from maka_ref._store.errors import StoreError
from maka_ref._store.legacy.profile import iter_legacy_run_files
from maka_ref._store.runtime_store import DB_FILE_NAME

__all__ = ["inspect_workspace"]

#: Indirection for tests (a permission error cannot be provoked as root).
list_directory: Callable[[str], list[str]] = os.listdir


def _check_workspace(path: str | os.PathLike[str]) -> Path:
    return check_workspace_dir(path, list_directory=list_directory)


def inspect_workspace(path: str | os.PathLike[str]) -> dict[str, Any]:
    """The inspection document of the workspace at ``path`` (shape: docs/inspect.md)."""
    workspace = _check_workspace(path)
    try:
        if os.path.lexists(workspace / DB_FILE_NAME):
            body = inspect_sqlite(workspace)
        else:
            run_files = list(iter_legacy_run_files(workspace))
            body = inspect_jsonl(workspace, run_files) if run_files else inspect_none()
    except StoreError:
        raise
    except MakaRefError as error:  # a core decode error outside a run (e.g. projection metadata)
        raise StoreError(error.message, code=error.code, detail=error.detail) from None
    except OSError as error:
        name = getattr(error, "filename", None) or workspace
        raise StoreError(
            f"cannot read {name}: {error.strerror or error}", code="workspace_unreadable"
        ) from None
    document = {"inspectFormat": FORMAT, "workspace": str(workspace), **body}
    try:  # a raw edit can leave a BLOB or an infinite REAL where the stores write JSON values
        compact_json(document, negative_zero="zero")
    except NotStrictJSONError as error:
        raise StoreError(
            f"runtime.sqlite holds a value that is not JSON: {error.message}", code="database_corrupt"
        ) from None
    return document
