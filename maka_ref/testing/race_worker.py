"""Worker process of the concurrency harness (spec 30 §7.1), one mode per process.

Run as ``python -m maka_ref.testing.race_worker`` by :mod:`maka_ref.testing.process_race`;
it is shipped (not a test file) so the crash lab and third-party suites can reuse it.

Protocol (spec 30 §7.1, §10 items 34–36):

1. write ``READY\\n`` to stdout (unbuffered ``os.write``);
2. poll every 5 ms until the start file exists (a file-existence barrier that works on every
   OS and lets the parent release all workers at the same moment);
3. open the store on the directory holding the database file, write ``OPENED\\n``;
4. perform the mode. Open-only modes then poll (5 ms) for the stop file before closing;
5. success: ``RESULT ok <json>\\n`` on stdout, exit 0. Failure: ``RESULT error <code>
   <message>\\n`` on stderr, exit 2. ``<code>`` is the :class:`~maka_ref._store.errors.StoreError`
   ``code`` (``duplicate_event_id``, ``already_settled``…), or ``SQLITE_<NAME>`` for a raw
   ``sqlite3`` error, or the exception class name otherwise, so a parent matches outcomes by
   **code, never by message text**. A second stderr line ``ERROR_CLASS <name>`` names the
   exception class (``ToolLedgerRejectionError`` vs ``ToolLedgerCorruptionError`` is a
   behavioural contract, spec 30 §2.9). Unexpected (non-store) exceptions also get a
   traceback after those lines.

Environment (names of spec 30 §7.1; the last two are this harness's additions):

* ``MAKA_SQLITE_RECOVERY_CONCURRENCY_MODE``  — one of :data:`MODES`;
* ``MAKA_SQLITE_RECOVERY_CONCURRENCY_DB``    — path of ``runtime.sqlite`` (its directory is the
  store root; a path that is itself a directory is a failing open, scenario C12);
* ``MAKA_SQLITE_RECOVERY_CONCURRENCY_START`` — start-barrier file;
* ``MAKA_SQLITE_RECOVERY_CONCURRENCY_STOP``  — stop file for open-only modes (default
  ``<start>.stop``);
* ``MAKA_SQLITE_RECOVERY_CONCURRENCY_WORKER`` — worker index (distinct ids for ``append``);
* ``MAKA_SQLITE_RECOVERY_CONCURRENCY_COUNT``  — events per ``append`` worker (default 1).

The fixture builders (:func:`prepare_database`, :func:`completed_bundle_events`, …) are the
spec's §7.2 prepared database and worker payloads; tests import them to assert post-states.
They, the modes and the protocol helpers live in the private ``_race_worker`` package
(``fixtures``, ``modes`` and ``protocol``) and are re-exported here.
"""

from __future__ import annotations

import json
import os
import sys
import traceback
from pathlib import Path
from typing import Any

from maka_ref._store.errors import StoreError
from maka_ref.testing._race_worker.fixtures import (
    APPEND_INVOCATION,
    APPEND_RUN,
    APPEND_SESSION,
    OTHER_ARGS,
    SOURCE_IDENTITY,
    append_event,
    completed_bundle_events,
    continuation_claim,
    continuation_source_events,
    parked_bundle_events,
    prepare_database,
    t1_input,
    t2_input,
)
from maka_ref.testing._race_worker.modes import MODES, OPEN_ONLY_MODES
from maka_ref.testing._race_worker.protocol import (
    ENV_COUNT,
    ENV_DB,
    ENV_MODE,
    ENV_START,
    ENV_STOP,
    ENV_WORKER,
    _say,
    _wait_for,
    error_code,
)

__all__ = [
    "APPEND_INVOCATION",
    "APPEND_RUN",
    "APPEND_SESSION",
    "ENV_COUNT",
    "ENV_DB",
    "ENV_MODE",
    "ENV_START",
    "ENV_STOP",
    "ENV_WORKER",
    "MODES",
    "OPEN_ONLY_MODES",
    "OTHER_ARGS",
    "SOURCE_IDENTITY",  # not listed before the split, but tests read rw.SOURCE_IDENTITY
    "append_event",
    "completed_bundle_events",
    "continuation_claim",
    "continuation_source_events",
    "error_code",
    "main",
    "parked_bundle_events",
    "prepare_database",
    "run",
    "t1_input",
    "t2_input",
]


def _open(mode: str, db: Path) -> list[Any]:
    from maka_ref._store import DB_FILE_NAME, RuntimeStore

    if db.name != DB_FILE_NAME:
        raise StoreError(f"race worker database must be named {DB_FILE_NAME}: {db}", code="race_db_path")
    stores = [RuntimeStore.open(db.parent)]
    if mode == "operational_open_only":
        # The product's operational owner opens both scopes of the same file (spec 30 §1.1).
        from maka_ref._store.agent_runs.store import AgentRunStore

        try:
            stores.append(AgentRunStore.open(db.parent))
        except BaseException:
            stores[0].close()
            raise
    return stores


def run(env: dict[str, str]) -> int:
    """One worker lifetime (the protocol above); returns the exit code."""
    mode = env.get(ENV_MODE, "")
    stores: list[Any] = []
    try:
        if mode not in MODES:
            raise ValueError(f"unknown race worker mode {mode!r}")
        db = Path(env[ENV_DB])
        start = Path(env[ENV_START])
        stop = Path(env.get(ENV_STOP) or f"{start}.stop")
        _say(1, "READY\n")
        _wait_for(start)
        stores = _open(mode, db)
        _say(1, "OPENED\n")
        detail = MODES[mode](stores[0], env)
        if mode in OPEN_ONLY_MODES:
            _wait_for(stop)
        for store in reversed(stores):
            store.close()
        stores = []
        _say(1, f"RESULT ok {json.dumps(detail, sort_keys=True, separators=(',', ':'))}\n")
        return 0
    except BaseException as error:  # noqa: BLE001 - every failure becomes a RESULT line
        message = " ".join(str(error).split()) or type(error).__name__
        _say(2, f"RESULT error {error_code(error)} {message}\nERROR_CLASS {type(error).__name__}\n")
        if not isinstance(error, StoreError):
            _say(2, traceback.format_exc())
        return 2
    finally:
        for store in reversed(stores):
            try:
                store.close()
            except BaseException:  # noqa: BLE001 - the RESULT line is already written
                pass


def main() -> None:
    sys.exit(run(dict(os.environ)))


if __name__ == "__main__":
    main()
