"""``write_reports``: the four report files of one run, written from one finalized copy so that
they cannot disagree about the level."""

from __future__ import annotations

from pathlib import Path

from ._html import write_html
from ._json import write_json
from ._junit import write_junit
from ._markdown import write_markdown
from ._model import RunReport

REPORT_FILES: dict[str, str] = {
    "json": "report.json",
    "junit": "junit.xml",
    "markdown": "report.md",
    "html": "report.html",
}


def write_reports(report: RunReport, directory: str | Path) -> dict[str, Path]:
    """Write ``report.json``, ``junit.xml``, ``report.md`` and ``report.html`` into
    ``directory`` (created if needed); return ``{"json"|"junit"|"markdown"|"html": path}``.

    ``level_reached`` and ``levels`` are recomputed from the clauses first; ``report`` itself
    is not modified.
    """
    final = report.finalized()
    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    writers = {"json": write_json, "junit": write_junit, "markdown": write_markdown,
               "html": write_html}
    return {kind: writers[kind](final, out / name) for kind, name in REPORT_FILES.items()}
