"""The effect log as a floor under the store: never resume a store that forgot a started effect.

Why: SQLite keeps committed transactions in ``runtime.sqlite-wal`` until a checkpoint. A WAL
that is deleted or truncated (a careless copy, a restore, a disk fault) silently rolls the
store back to an older state — SQLite's semantics, invisible to every check of the store
itself. The workspace's effect log (:mod:`maka_ref._runtime.effects`) is written outside the
store and durably *before* every real start of a tool implementation, and the runtime commits
the call (T1, or the legacy ``function_call``) before it appends that line. So every
``operationId`` in the log must name a call the store knows. When one does not, the store has
lost history: a continuation planned on it would re-run a step whose effect already happened
(an Append written twice). :func:`check_store_covers_effect_log` refuses that with
``store_behind_effect_log`` before anything is planned or claimed; an effect log that cannot be
read is ``effect_log_unreadable`` (fail closed: the guard cannot be checked).

Recovery is a human decision (restore the lost WAL, or move the effect log aside once the
workspace's files are known to be right); the message says so.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from maka_ref._runtime.effects import EFFECT_LOG_NAME, read_effect_log
from maka_ref._runtime.ids import operation_id
from maka_ref._store.errors import StoreError

__all__ = ["check_store_covers_effect_log", "known_operation_ids"]

_CALLS_SQL = (
    "SELECT invocation_id, json_extract(payload_json, '$.content.id') FROM runtime_events "
    "WHERE event_kind = 'function_call'"
)


def known_operation_ids(conn: sqlite3.Connection) -> set[str]:
    """Operation ids of every call the store holds: T1 rows of ``tool_operations`` and the
    ids of committed ``function_call`` events (legacy calls have no ``tool_operations`` row)."""
    known = {str(row[0]) for row in conn.execute("SELECT operation_id FROM tool_operations")}
    for invocation_id, call_id in conn.execute(_CALLS_SQL):
        if isinstance(invocation_id, str) and isinstance(call_id, str) and invocation_id and call_id:
            known.add(operation_id(invocation_id, call_id))
    return known


def check_store_covers_effect_log(workspace: Path, conn: sqlite3.Connection) -> None:
    """Raise ``store_behind_effect_log`` when the effect log of ``workspace`` names an
    operation the store has no call for (module docstring)."""
    try:
        entries = read_effect_log(workspace).entries
    except (OSError, ValueError) as error:  # UnicodeDecodeError and JSON errors are ValueErrors
        raise StoreError(f"{EFFECT_LOG_NAME} cannot be read, so resume cannot prove the store is not behind "
                         f"it: {error}", code="effect_log_unreadable") from None
    if not entries:
        return
    known = known_operation_ids(conn)
    missing = [str(entry.get("operationId")) for entry in entries if entry.get("operationId") not in known]
    if missing:
        raise StoreError(
            f"{EFFECT_LOG_NAME} records the start of {len(missing)} operation(s) the store has no call for "
            f"(first: {missing[0]}): runtime.sqlite lost committed history (a deleted or truncated WAL?); "
            "resuming would re-run a step whose effect already happened. Restore the store's files, or move the "
            "effect log aside once the workspace is known to be right.",
            code="store_behind_effect_log",
        )
