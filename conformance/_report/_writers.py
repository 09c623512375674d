"""``write_reports``: the four report files of one run, written from one finalized copy so that
they cannot disagree about the level."""

from __future__ import annotations

from pathlib import Path
from typing import Callable

from ._addenda import Addenda
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


def write_reports(report: RunReport, directory: str | Path,
                  addenda: Callable[[RunReport, Path], Addenda] | None = None) -> dict[str, Path]:
    """Write ``report.json``, ``junit.xml``, ``report.md`` and ``report.html`` into
    ``directory`` (created if needed); return ``{"json"|"junit"|"markdown"|"html": path}``.

    ``level_reached`` and ``levels`` are recomputed from the clauses first; ``report`` itself
    is not modified. ``addenda(final report, directory)`` gives the parts a layer above draws
    into the Markdown and HTML reports (links in them may be relative to ``directory``).
    """
    final = report.finalized()
    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    extra = addenda(final, out) if addenda is not None else None
    paths = {"json": write_json(final, out / REPORT_FILES["json"]),
             "junit": write_junit(final, out / REPORT_FILES["junit"]),
             "markdown": write_markdown(final, out / REPORT_FILES["markdown"], extra),
             "html": write_html(final, out / REPORT_FILES["html"], extra)}
    return {kind: paths[kind] for kind in REPORT_FILES}
