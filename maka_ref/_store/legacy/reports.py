"""The results of the legacy imports (spec 30 §5.2 rules 1, 2 and 7): plain report values.

Why a module of their own: they are what the entry points of ``legacy.profile`` return and
what the adapter serialises (``to_json``); they hold no logic beyond that shape.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

from maka_ref._store.runtime_store import RuntimeStore

__all__ = [
    "ImportReport",
    "JsonlImportReport",
    "LegacyStoreOpen",
]


@dataclass(frozen=True, slots=True)
class ImportReport:
    """§5.2 rule 2 report. ``files_scanned`` counts files actually read (a file whose
    fingerprint is recorded is skipped unread and not counted, §9 item 138)."""

    files_scanned: int = 0
    events_read: int = 0
    events_imported: int = 0
    events_existing: int = 0

    def to_json(self) -> dict[str, int]:
        return {
            "filesScanned": self.files_scanned,
            "eventsRead": self.events_read,
            "eventsImported": self.events_imported,
            "eventsExisting": self.events_existing,
        }


@dataclass(frozen=True, slots=True)
class JsonlImportReport:
    """Rule 7 report of one strict single-run import (§9 item 140: ``{2,2,0}``)."""

    events_read: int = 0
    events_imported: int = 0
    events_existing: int = 0

    def to_json(self) -> dict[str, int]:
        return {
            "eventsRead": self.events_read,
            "eventsImported": self.events_imported,
            "eventsExisting": self.events_existing,
        }


class LegacyStoreOpen(NamedTuple):
    """Result of :func:`open_runtime_store_with_legacy_import`: a ``kind = sqlite`` writer."""

    store: RuntimeStore
    report: ImportReport
