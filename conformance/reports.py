"""Results, levels and reports of ``maka-conformance certify`` (public API).

The pytest plugin turns each clause into a :class:`ClauseResult`, the CLI gathers them into a
:class:`RunReport` and calls :func:`write_reports`; ``maka-conformance matrix`` merges
``report.json`` files from several platforms with :func:`merge_matrix`. Nothing here needs
pytest or ``maka_ref``; importing this module imports the standard library only (and
:mod:`conformance.vectors`, lazily, by :func:`diff_json`). ``crashlab`` is imported when, and
only when, a report with crash-lab clauses (``CRASH-*``) is rendered: the crash matrix
picture and the failing trials' timelines are its drawings (``conformance._crashmatrix``).
See docs/reports.md and docs/levels.md.

Public API::

    ClauseResult, RunReport, OUTCOMES, SPEC_COMMIT, PROTOCOL_VERSION
    LEVELS, CAPABILITIES, required_capabilities(level), compute_level(clauses, claimed)
    write_reports(report, directory) -> {"json"|"junit"|"markdown"|"html": Path}
    render_markdown(report), render_html(report), junit_tree(report)
    merge_matrix(reports) -> Matrix; render_matrix_markdown(m); render_matrix_text(m)
    merge_crash_matrix(reports) -> crash matrix | None; render_matrix_html(m, crash)
    diff_json(expected, actual) -> {"path", "expected", "actual"} | None
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ._crashmatrix import crash_platforms, matrix_addenda, merge_crash_matrix, report_addenda
from ._report._diff import diff_json, json_path
from ._report._html import render_html as _render_html
from ._report._junit import junit_tree
from ._report._levels import (
    CAPABILITIES,
    LEVEL_CAPABILITIES,
    LEVELS,
    LevelVerdict,
    compute_level,
    required_capabilities,
)
from ._report._markdown import render_markdown as _render_markdown
from ._report._matrix import (
    CELL_STATES,
    Matrix,
    merge_matrix,
    render_matrix_markdown,
    render_matrix_text,
)
from ._report._matrix import render_matrix_html as _render_matrix_html
from ._report._model import (
    OUTCOMES,
    PROTOCOL_VERSION,
    SPEC_COMMIT,
    ClauseResult,
    RunReport,
    current_platform,
    utc_now_iso,
)
from ._report._writers import REPORT_FILES
from ._report._writers import write_reports as _write_reports

__all__ = [
    "CAPABILITIES",
    "CELL_STATES",
    "LEVELS",
    "LEVEL_CAPABILITIES",
    "OUTCOMES",
    "PROTOCOL_VERSION",
    "REPORT_FILES",
    "SPEC_COMMIT",
    "ClauseResult",
    "LevelVerdict",
    "Matrix",
    "RunReport",
    "compute_level",
    "crash_platforms",
    "current_platform",
    "diff_json",
    "json_path",
    "junit_tree",
    "merge_crash_matrix",
    "merge_matrix",
    "render_html",
    "render_markdown",
    "render_matrix_html",
    "render_matrix_markdown",
    "render_matrix_text",
    "required_capabilities",
    "utc_now_iso",
    "write_reports",
]


def render_html(report: RunReport) -> str:
    """``report.html`` of a finalized ``report`` (:meth:`RunReport.finalized`), with the crash
    matrix picture and the failing trials' timelines when it has crash-lab clauses."""
    return _render_html(report, report_addenda(report))


def render_markdown(report: RunReport) -> str:
    """``report.md`` of a finalized ``report``, with the crash matrix table when it has
    crash-lab clauses."""
    return _render_markdown(report, report_addenda(report))


def write_reports(report: RunReport, directory: str | Path) -> dict[str, Path]:
    """Write ``report.json``, ``junit.xml``, ``report.md`` and ``report.html`` into
    ``directory`` (created if needed); return ``{"json"|"junit"|"markdown"|"html": path}``.
    ``level_reached`` and ``levels`` are recomputed from the clauses first; ``report`` itself
    is not modified. Links to failure bundles are relative to ``directory``."""
    return _write_reports(report, directory, report_addenda)


def render_matrix_html(matrix: Matrix, crash: Any = None) -> str:
    """The merged platform page: :func:`merge_matrix`'s table and, given
    :func:`merge_crash_matrix`'s result, the crash matrix picture (one trial per platform in
    each cell)."""
    return _render_matrix_html(matrix, matrix_addenda(crash))
