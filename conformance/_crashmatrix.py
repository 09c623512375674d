"""The crash matrix of certification reports: the ``CRASH-*`` clauses of one run (in
``report.html`` and ``report.md``) or of several platforms' runs (``maka-conformance
matrix``), drawn as the crash lab's crash matrix, and the timelines of failing crash trials.

Why a module of its own: the report writers (``conformance._report``) are standard-library
only and the picture is ``crashlab``'s (:mod:`crashlab._lab.crashmatrix`, the same one
``crashlab sweep`` draws), so something must translate clauses into trials and hand the
drawings to the writers as :class:`~conformance._report._addenda.Addenda`. ``crashlab`` is
imported only when a report has crash clauses; every other report renders exactly as before.

A clause's cell comes from its ``crash`` field (``{"point", "mode", "fault", "trialId"}``,
set by the suite for every ``CRASH-*`` clause whatever its outcome). A failed clause whose
trial was *unreached* (or a harness error of the trial) is drawn as such: the trial's
outcome is in the clause's evidence.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import quote

from conformance._report._addenda import Addenda
from conformance._report._html import clause_anchor, e
from conformance._report._matrix import BASE_PLATFORMS
from conformance._report._text import platform_label

if TYPE_CHECKING:
    from conformance._report._model import ClauseResult, RunReport
    from crashlab._lab.crashmatrix import CrashMatrix, MatrixTrial

__all__ = ["clause_outcome", "crash_platforms", "crash_trials", "matrix_addenda", "merge_crash_matrix",
           "report_addenda", "report_crash_matrix"]


def clause_outcome(clause: ClauseResult) -> str:
    """The crash-matrix state of a crash clause: its outcome, except that a failed clause
    whose trial was ``unreached`` (or ended in a harness ``error``) says so."""
    if clause.outcome == "failed":
        trial = (clause.evidence or {}).get("outcome")
        return trial if trial in ("unreached", "error") else "failed"
    return clause.outcome


def _has_crash(report: RunReport) -> bool:
    return any(c.crash for c in report.clauses)


def crash_trials(report: RunReport, *, platform: str | None = None, link: bool = True) -> list[MatrixTrial]:
    """The crash clauses of ``report`` as crash-matrix trials (a failing one links to its
    failure entry when ``link``)."""
    from crashlab._lab.crashmatrix import MatrixTrial

    out = []
    for clause in report.clauses:
        crash = clause.crash
        if not crash:
            continue
        outcome = clause_outcome(clause)
        out.append(MatrixTrial(
            point=str(crash.get("point")), fault=str(crash.get("fault")), mode=str(crash.get("mode")),
            outcome=outcome, trial_id=str(crash.get("trialId") or clause.clause_id),
            duration_s=float(clause.duration_s) if clause.ran else None,
            href=f"#{clause_anchor(clause.clause_id)}" if link and clause.bad else None,
            detail=f"{clause.clause_id}" + (f": {clause.message.splitlines()[0][:160]}" if clause.bad and clause.message
                                            else ""),
            platform=platform))
    return out


def report_crash_matrix(report: RunReport) -> CrashMatrix | None:
    """The crash matrix of one run, or ``None`` when it has no crash clause."""
    if not _has_crash(report):
        return None
    from crashlab._lab.crashmatrix import build_matrix

    return build_matrix(crash_trials(report))


def merge_crash_matrix(reports: Iterable[RunReport]) -> CrashMatrix | None:
    """The crash matrix of several runs (one per platform, typically): a cell holds one trial
    per report, platforms in the capability matrix's order (Linux, macOS, Windows, then
    others as they appear); ``None`` when no report has a crash clause."""
    reports = [r for r in reports if _has_crash(r)]
    if not reports:
        return None
    from crashlab._lab.crashmatrix import build_matrix

    labelled = [(platform_label(r.platform.get("system")), r) for r in reports]
    order = list(BASE_PLATFORMS) + [p for p, _ in labelled if p not in BASE_PLATFORMS]
    labelled.sort(key=lambda item: order.index(item[0]))  # stable: one platform's runs keep their order
    return build_matrix(t for label, r in labelled for t in crash_trials(r, platform=label, link=False))


def _bundle_href(bundle: str, directory: Path | None) -> str:
    target = Path(bundle) / "trial.json"
    if directory is not None:
        try:
            return quote(Path(os.path.relpath(target, directory)).as_posix())
        except ValueError:  # another drive (Windows)
            pass
    return Path(os.path.abspath(target)).as_uri()


def _timeline_note(clause: ClauseResult, directory: Path | None) -> str:
    from crashlab._lab.timeline import render_html

    evidence = clause.evidence or {}
    steps = evidence.get("timeline")
    if not isinstance(steps, list):
        return ""
    trial = (clause.crash or {}).get("trialId") or evidence.get("trialId") or clause.clause_id
    bundle = evidence.get("bundle")
    link = (f' · <a href="{e(_bundle_href(str(bundle), directory))}">failure bundle</a> '
            f"(<code>crashlab replay {e(bundle)}</code>)" if bundle else "")
    return (f'<h4>Timeline of trial <code>{e(trial)}</code>{link}</h4>'
            + render_html([s for s in steps if isinstance(s, dict)], e))


def report_addenda(report: RunReport, directory: Path | None = None) -> Addenda:
    """The crash matrix section and the failing trials' timelines for ``report``'s HTML and
    Markdown reports (nothing, and no ``crashlab`` import, without crash clauses).
    ``directory`` is where the reports go: bundle links are made relative to it."""
    if not _has_crash(report):
        return Addenda()
    from crashlab._lab import crashmatrix, timeline

    matrix = report_crash_matrix(report)
    assert matrix is not None
    html = ('<section id="crash-matrix"><h2>Crash matrix</h2>'
            + crashmatrix.figure_html(matrix, title="Crash-lab clauses") + "</section>")
    markdown = "## Crash matrix\n\n" + crashmatrix.render_markdown(matrix, per="trial")
    notes = {c.clause_id: note for c in report.failures() if c.crash and (note := _timeline_note(c, directory))}
    return Addenda(html_sections=(html,), markdown_sections=(markdown,), html_failure_notes=notes,
                   css=crashmatrix.CSS + timeline.CSS)


def matrix_addenda(crash: CrashMatrix | None) -> Addenda:
    """The crash part of the merged platform page (``maka-conformance matrix --format html``)."""
    if crash is None:
        empty = '<section id="crash-matrix"><h2>Crash matrix</h2><p>No crash-lab clause in these reports.</p></section>'
        return Addenda(html_sections=(empty,))
    from crashlab._lab import crashmatrix

    figure = crashmatrix.figure_html(
        crash, title="Crash-lab clauses by platform",
        caption=f"Rows: crash points; columns: fault and mode; in each cell one trial per {crash_platforms(crash)}. "
                "Hover a cell for its trial, platform and duration.")
    return Addenda(html_sections=('<section id="crash-matrix"><h2>Crash matrix</h2>' + figure + "</section>",),
                   css=crashmatrix.CSS)


def crash_platforms(crash: CrashMatrix) -> str:
    """``platform (Linux, macOS)``: what the letters of a merged cell stand for, in order."""
    seen = list(dict.fromkeys(t.platform for t in crash.trials() if t.platform))
    names = [p for p in BASE_PLATFORMS if p in seen] + [p for p in seen if p not in BASE_PLATFORMS]
    return f"platform ({', '.join(names)})" if names else "trial"
