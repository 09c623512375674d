"""Turns pytest's per-phase reports into one result per clause, on the controlling process.

Why here and not in the workers: under xdist the controller sees every worker's reports
(pytest forwards them with their ``user_properties``), so it is the one place that can write
one report per run — or one per target with ``--dist each``. Without xdist the controller is
the only process and the same code runs.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import Any, Mapping

__all__ = ["ClauseRecord", "Recorder"]

NOT_CLAIMED_PREFIX = "not claimed: "


@dataclass
class ClauseRecord:
    """What the controller learned about one clause on one target."""

    nodeid: str
    target: str
    info: dict[str, Any]
    outcome: str = "not_run"
    duration_s: float = 0.0
    message: str = ""
    diff: dict[str, Any] | None = None
    evidence: dict[str, Any] = field(default_factory=dict)
    stderr_tail: str = ""


def _props(report: Any) -> dict[str, Any]:
    return {k: v for k, v in getattr(report, "user_properties", ()) if isinstance(k, str) and k.startswith("maka_")}


def _longrepr_text(report: Any, limit: int = 4000) -> str:
    text = getattr(report, "longreprtext", "") or ""
    return text if len(text) <= limit else text[: limit - 20] + "\n… (truncated)"


class Recorder:
    """Accumulates clause records per target and streams progress events to a file."""

    def __init__(self, events_path: str | None) -> None:
        self.records: dict[tuple[str, str], ClauseRecord] = {}
        self.targets: dict[str, dict[str, Any]] = {}
        self.total = 0
        self.done = 0
        self.started = time.time()
        self._events_path = events_path

    # -- progress ---------------------------------------------------------------------------

    def emit(self, event: Mapping[str, Any]) -> None:
        if not self._events_path:
            return
        line = json.dumps(dict(event), ensure_ascii=False, default=str)
        # the parent reads the file while the run goes on: a flush is all it needs (progress
        # is not durable state); pytest's hooks run on one thread, so no lock either
        with open(self._events_path, "a", encoding="utf-8") as fh:
            fh.write(line + "\n")

    def collected(self, count: int) -> None:
        self.total += count
        self.emit({"event": "collected", "total": self.total})

    # -- reports ----------------------------------------------------------------------------

    def target_info(self, target: str) -> dict[str, Any]:
        return self.targets.setdefault(target, {})

    def on_report(self, report: Any, target: str) -> None:
        props = _props(report)
        info = props.get("maka_clause")
        if info is None:
            return
        key = (target, report.nodeid)
        record = self.records.get(key)
        if record is None:
            record = self.records[key] = ClauseRecord(report.nodeid, target, dict(info))
        record.duration_s += float(getattr(report, "duration", 0.0) or 0.0)
        if "maka_stderr_tail" in props:
            record.stderr_tail = str(props["maka_stderr_tail"])
        if "maka_evidence" in props:
            record.evidence.update(props["maka_evidence"])
        if report.when == "call":
            if report.passed:
                record.outcome = "passed"
            elif report.failed:
                self._fail(record, report, props, "failed")
            elif report.skipped:
                self._skip(record, report)
        elif report.when == "setup":
            if report.skipped:
                self._skip(record, report)
            elif report.failed:
                self._fail(record, report, props, "error")
        elif report.when == "teardown":
            if report.failed and record.outcome in ("passed", "not_run"):
                self._fail(record, report, props, "failed")
            self.done += 1
            self.emit({"event": "clause", "clauseId": info.get("clauseId"), "outcome": record.outcome,
                       "target": target, "done": self.done, "total": self.total,
                       "message": record.message.splitlines()[0][:200] if record.message else "",
                       # enough to rebuild a partial report if the run is interrupted
                       "clause": {k: info.get(k) for k in ("capability", "level", "title", "spec")}
                       | ({"crash": info["crash"]} if info.get("crash") else {}),
                       "durationS": round(record.duration_s, 4)})

    @staticmethod
    def _skip(record: ClauseRecord, report: Any) -> None:
        reason = ""
        if isinstance(report.longrepr, tuple) and len(report.longrepr) == 3:
            reason = str(report.longrepr[2])
        reason = reason.removeprefix("Skipped: ")
        if reason.startswith(NOT_CLAIMED_PREFIX):
            record.outcome = "not_claimed"
        else:
            record.outcome = "not_run"
        record.message = reason

    @staticmethod
    def _fail(record: ClauseRecord, report: Any, props: Mapping[str, Any], outcome: str) -> None:
        from conformance.deviations import note_for

        record.outcome = outcome
        record.message = str(props.get("maka_message") or _longrepr_text(report))
        note = note_for(str(record.info.get("clauseId", "")))
        if note:  # a rule upstream breaks: say so, and why the rule stands (docs/deviations.md)
            record.message += "\n\n" + note
        diff = props.get("maka_diff")
        record.diff = dict(diff) if isinstance(diff, Mapping) else None

    def by_target(self) -> dict[str, list[ClauseRecord]]:
        out: dict[str, list[ClauseRecord]] = {}
        for (target, _), record in sorted(self.records.items(), key=lambda kv: (kv[0][0], kv[1].info.get("clauseId", ""), kv[0][1])):
            out.setdefault(target, []).append(record)
        for target in self.targets:
            out.setdefault(target, [])
        return out
