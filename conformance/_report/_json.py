"""``report.json``: the machine-readable report, the source for the matrix and dashboards."""

from __future__ import annotations

from pathlib import Path

from ._model import RunReport


def write_json(report: RunReport, path: Path) -> Path:
    """Write ``report`` as JSON (UTF-8, trailing newline); ``RunReport.from_json`` reads it."""
    text = report.to_json() + "\n"
    try:
        data = text.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate from a broken stderr: escape everything
        data = (report.to_json(ensure_ascii=True) + "\n").encode("ascii")
    path.write_bytes(data)
    return path
