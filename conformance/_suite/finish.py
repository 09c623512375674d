"""The end of a suite run on the controlling process: clause records become a
:class:`~conformance.reports.RunReport` per target, written with every report format.

One target without ``--dist each``; with ``--dist each`` over several ``--tx`` targets, one
report per target in ``<report dir>/<target>/``. ``reports.json`` in the report directory
lists what was written, so ``certify`` (and CI scripts) can find the files.
"""

from __future__ import annotations

import json
import re
import time
from pathlib import Path
from typing import Any

import pytest

from conformance._suite.recording import ClauseRecord, Recorder

__all__ = ["build_reports", "finish_run"]


def _suite_version() -> str:
    try:
        from importlib.metadata import version

        return version("maka-conformance")
    except Exception:  # not installed (running from a checkout)
        return "0+unknown"


def _clause_result(record: ClauseRecord) -> Any:
    from conformance.reports import ClauseResult

    info = record.info
    return ClauseResult(
        clause_id=str(info.get("clauseId")), capability=str(info.get("capability")), level=str(info.get("level")),
        outcome=record.outcome, title=str(info.get("title", "")), spec=str(info.get("spec", "")),
        duration_s=round(record.duration_s, 4), message=record.message, diff=record.diff,
        evidence=record.evidence, stderr_tail=record.stderr_tail[-8192:], target=record.target,
        crash=dict(info["crash"]) if isinstance(info.get("crash"), dict) else None,
    )


def build_reports(config: pytest.Config, recorder: Recorder, exitstatus: int) -> dict[str, Any]:
    from conformance.reports import RunReport, current_platform

    out: dict[str, Any] = {}
    for target, records in recorder.by_target().items():
        info = recorder.targets.get(target, {})
        handshake = dict(info.get("handshake") or {})
        implementation = {
            "name": (handshake.get("implementation") or {}).get("name"),
            "version": (handshake.get("implementation") or {}).get("version"),
            "protocol": handshake.get("protocol"),
            "capabilities": list(handshake.get("capabilities") or []),
            "failpoints": list(handshake.get("failpoints") or []),
            "command": info.get("command") or handshake.get("command"),
            # how the harness found the implementation's processes (cgroup, or what it could not see)
            "processTracking": info.get("tracking"),
            # how it makes its files durable, as it declared (protocol §3 ``durability``), or None
            "durability": handshake.get("durability"),
        }
        errors: list[str] = []
        unavailable = info.get("unavailable")
        if unavailable:
            errors.append(f"the implementation could not be started: {unavailable.get('verdict')}: {unavailable.get('message')}")
        errors.extend(str(s) for s in info.get("survivors", []))
        if exitstatus in (pytest.ExitCode.INTERRUPTED, pytest.ExitCode.INTERNAL_ERROR):
            errors.append(f"the pytest run ended with exit status {int(exitstatus)}")
        report = RunReport(
            suite_version=_suite_version(), implementation=implementation,
            clauses=[_clause_result(r) for r in records],
            platform=info.get("platform") or current_platform(),
            duration_s=round(time.time() - recorder.started, 3), workers=int(info.get("workers") or 1),
            selection={"level": config.getoption("maka_level"), "keyword": config.getoption("keyword") or None},
            harness_errors=errors,
        )
        if info.get("python"):
            report.python = str(info["python"])
        out[target] = report.finalized()
    return out


def _slug(target: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", target).strip("_") or "target"


def finish_run(config: pytest.Config, recorder: Recorder, exitstatus: int) -> None:
    directory = config.getoption("maka_report_dir")
    reports = build_reports(config, recorder, exitstatus)
    if directory is None:
        return
    from conformance.reports import write_reports

    root = Path(directory)
    listing = []
    for target, report in reports.items():
        where = root if len(reports) == 1 else root / _slug(target)
        paths = write_reports(report, where)
        entry = {"target": target}
        entry.update({kind: str(path.relative_to(root)) for kind, path in paths.items()})
        listing.append(entry)
    (root / "reports.json").write_text(json.dumps({"reports": listing}, indent=2) + "\n", encoding="utf-8")
