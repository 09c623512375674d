"""Results, levels and reports of ``maka-conformance certify`` (public API).

The pytest plugin turns each clause into a :class:`ClauseResult`, the CLI gathers them into a
:class:`RunReport` and calls :func:`write_reports`; ``maka-conformance matrix`` merges
``report.json`` files from several platforms with :func:`merge_matrix`. Nothing here needs
pytest, ``crashlab`` or ``maka_ref``; only the standard library is imported (and
:mod:`conformance.vectors`, lazily, by :func:`diff_json`). See docs/reports.md and
docs/levels.md.

Public API::

    ClauseResult, RunReport, OUTCOMES, SPEC_COMMIT, PROTOCOL_VERSION
    LEVELS, CAPABILITIES, required_capabilities(level), compute_level(clauses, claimed)
    write_reports(report, directory) -> {"json"|"junit"|"markdown"|"html": Path}
    render_markdown(report), render_html(report), junit_tree(report)
    merge_matrix(reports) -> Matrix; render_matrix_markdown(m); render_matrix_text(m)
    diff_json(expected, actual) -> {"path", "expected", "actual"} | None
"""

from __future__ import annotations

from ._report._diff import diff_json, json_path
from ._report._html import render_html
from ._report._junit import junit_tree
from ._report._levels import (
    CAPABILITIES,
    LEVEL_CAPABILITIES,
    LEVELS,
    LevelVerdict,
    compute_level,
    required_capabilities,
)
from ._report._markdown import render_markdown
from ._report._matrix import (
    CELL_STATES,
    Matrix,
    merge_matrix,
    render_matrix_markdown,
    render_matrix_text,
)
from ._report._model import (
    OUTCOMES,
    PROTOCOL_VERSION,
    SPEC_COMMIT,
    ClauseResult,
    RunReport,
    current_platform,
    utc_now_iso,
)
from ._report._writers import REPORT_FILES, write_reports

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
    "current_platform",
    "diff_json",
    "json_path",
    "junit_tree",
    "merge_matrix",
    "render_html",
    "render_markdown",
    "render_matrix_markdown",
    "render_matrix_text",
    "required_capabilities",
    "utc_now_iso",
    "write_reports",
]
