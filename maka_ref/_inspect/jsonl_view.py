"""``inspect`` of a legacy-only workspace: ``kind = "jsonl"`` (spec 30 §5.2 rule 4, §10 item 33).

Only taken when ``runtime.sqlite`` does not exist (rule 4: never merge with, or fall back to,
the files once a database exists). The files are read with plain reads through
``JsonlRuntimeEventReader`` (the same parse as the tree import), and nothing is created — in
particular never ``runtime.sqlite``. A torn or invalid line is reported on its run
(``readErrors``, with ``line``) and as the health result, never skipped (spec 20 §1.8).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from maka_ref._inspect.document import RunEntry, health_json, health_of_events, storage_json
from maka_ref._store.errors import StoreError
from maka_ref._store.legacy.profile import JsonlRuntimeEventReader, LegacyRunFile

__all__ = ["inspect_jsonl", "inspect_none"]


def inspect_jsonl(workspace: Path, run_files: list[LegacyRunFile]) -> dict[str, Any]:
    """The document body of a workspace holding legacy ``runtime-events.jsonl`` files only."""
    reader = JsonlRuntimeEventReader(workspace)
    entries: list[RunEntry] = []
    first_failure: BaseException | None = None
    all_events: list[Any] = []
    for run_file in sorted(run_files, key=lambda f: (f.session_id, f.run_id)):
        entry = RunEntry(run_file.session_id, run_file.run_id)
        try:
            entry.events = reader.read_run_events(run_file.session_id, run_file.run_id)
        except StoreError as error:  # torn tail, invalid line, identity mismatch
            entry.events = None
            entry.fail("events", error)
            first_failure = first_failure or error
        else:
            all_events.extend(entry.events)
        entries.append(entry)
    health = health_json(first_failure) if first_failure is not None else health_of_events(all_events)
    return {
        "storage": storage_json("jsonl", files=[f.source_path for f in run_files]),
        "health": health,
        "runs": [entry.to_json() for entry in entries],
        "unsettledOperations": [],
        "unattachedToolOperations": [],
        "unattachedToolJournalEvents": [],
        "importSources": [],
    }


def inspect_none() -> dict[str, Any]:
    """The document body of a workspace with no store at all."""
    return {
        "storage": storage_json("none"),
        "health": health_json(None),
        "runs": [],
        "unsettledOperations": [],
        "unattachedToolOperations": [],
        "unattachedToolJournalEvents": [],
        "importSources": [],
    }
