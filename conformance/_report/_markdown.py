"""``report.md``: the report for people reading a pull request or a CI summary page.

Order (docs/reports.md): summary with the verdict first, then levels, the capability ×
outcome table, failures (message, diff, stderr), and the full clause list. Every piece of
text that came from an implementation is either inside a fenced block whose fence is longer
than any backtick run in it, or escaped for a table cell, so it cannot break the layout.
"""

from __future__ import annotations

import re
from pathlib import Path

from ._addenda import Addenda
from ._model import OUTCOMES, ClauseResult, RunReport
from ._text import (
    MESSAGE_CHARS,
    OUTCOME_LABELS,
    REACHED_TEXT,
    counts_line,
    diff_sides,
    duration,
    durability_line,
    implementation_line,
    level_status,
    platform_line,
    selection_line,
    stderr_tail,
    truncate,
    verdict_line,
    visible,
)

_MD_SPECIAL = re.compile(r"([\\`*_{}\[\]<>|#!~])")


def cell(text: object) -> str:
    """Text safe inside a Markdown table cell (one line, specials escaped)."""
    one_line = " ".join(visible(text).split())
    return _MD_SPECIAL.sub(r"\\\1", one_line)


def code(text: object, table: bool = True) -> str:
    """An inline code span of ``text``: the backtick fence is longer than any run inside; in
    a table ``|`` is escaped too (GFM strips that escape there, and only there)."""
    one_line = " ".join(visible(text).split())
    if table:
        one_line = one_line.replace("|", "\\|")
    longest = max((len(m) for m in re.findall(r"`+", one_line)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if one_line.startswith("`") or one_line.endswith("`") else ""
    return f"{fence}{pad}{one_line}{pad}{fence}"


def fenced(text: str, lang: str = "") -> str:
    """A fenced code block that ``text`` cannot close early."""
    longest = max((len(m) for m in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}{lang}\n{text}\n{fence}"


def _table(header: list[str], rows: list[list[str]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return lines


def _summary(report: RunReport) -> list[str]:
    lines = [
        "# maka-conformance report",
        "",
        f"## Summary: **{verdict_line(report)}**",
        "",
        f"- Implementation: **{cell(implementation_line(report))}**",
        f"- Platform: {cell(platform_line(report))}",
        f"- Durability (declared): {cell(durability_line(report))}",
        f"- Result: {counts_line(report)}",
        f"- Duration: {duration(report.duration_s)} on {report.workers} worker(s), "
        f"started {cell(report.started_at)}",
        f"- Selection: {cell(selection_line(report))}",
        f"- Suite {cell(report.suite_version)}, spec commit `{report.spec_commit}`, "
        f"protocol {report.protocol_version}",
    ]
    if report.unknown_capabilities:
        names = ", ".join(cell(c) for c in report.unknown_capabilities)
        lines.append(f"- Unknown capabilities claimed (ignored): {names}")
    tracking = report.implementation.get("processTracking")
    if tracking:
        lines.append(f"- Process tracking: {cell(str(tracking))}")
    if report.interrupted:
        lines += ["", "**Interrupted (SIGINT)**: a partial report of the clauses that finished; it certifies nothing."]
    if report.harness_errors:
        lines += ["", f"**Harness errors ({len(report.harness_errors)})**: the run is "
                  "incomplete and certifies nothing.", ""]
        lines += [fenced(truncate(err, MESSAGE_CHARS)) for err in report.harness_errors]
    return lines


def _levels(report: RunReport) -> list[str]:
    rows = []
    for level, info in report.levels.items():
        reasons = "<br>".join(cell(r) for r in info.get("reasons", [])) or REACHED_TEXT
        rows.append([code(level), level_status(info), reasons])
    return ["## Levels", "", *_table(["Level", "Status", "Why"], rows)]


def _capabilities(report: RunReport) -> list[str]:
    claimed = report.claimed
    rows = []
    for capability, counts in report.capability_counts().items():
        mark = "yes" if capability in claimed else "no"
        rows.append([f"{code(capability)}", mark] + [str(counts[o]) for o in OUTCOMES])
    header = ["Capability", "Claimed"] + [OUTCOME_LABELS[o] for o in OUTCOMES]
    return ["## Capabilities", "", *_table(header, rows)]


def _failure(clause: ClauseResult) -> list[str]:
    title = f" — {cell(clause.title)}" if clause.title else ""
    lines = [
        f"### {clause.outcome.upper()}: {code(clause.clause_id, False)}{title}",
        "",
        f"- Spec: {cell(clause.spec) or 'n/a'}; capability {code(clause.capability, False)}, "
        f"level `{clause.level}`, target {code(clause.target, False)}, "
        f"{duration(clause.duration_s)}",
        "",
    ]
    if clause.message:
        lines += [fenced(truncate(clause.message, MESSAGE_CHARS)), ""]
    if clause.diff:
        expected, actual = diff_sides(clause.diff)
        lines += [f"First difference at {code(clause.diff.get('path', '$'), False)}:", "",
                  "Expected:", "", fenced(expected, "json"), "",
                  "Actual:", "", fenced(actual, "json"), ""]
    if clause.stderr_tail:
        lines += ["<details><summary>stderr (tail)</summary>", "",
                  fenced(stderr_tail(clause.stderr_tail)), "", "</details>", ""]
    return lines


def _failures(report: RunReport) -> list[str]:
    failures = report.failures()
    lines = [f"## Failures ({len(failures)})", ""]
    if not failures:
        return lines + ["No clause failed."]
    for clause in failures:
        lines += _failure(clause)
    return lines


def _clauses(report: RunReport) -> list[str]:
    rows = [[f"{code(c.clause_id)}", cell(c.title), cell(c.spec), f"{code(c.capability)}",
             c.level, OUTCOME_LABELS[c.outcome], duration(c.duration_s) if c.ran else ""]
            for c in report.clauses]
    header = ["Clause", "Title", "Spec", "Capability", "Level", "Outcome", "Time"]
    return [f"## All clauses ({len(report.clauses)})", "", *_table(header, rows)]


def render_markdown(report: RunReport, addenda: Addenda | None = None) -> str:
    """The Markdown report of a finalized ``report`` (see :meth:`RunReport.finalized`), with
    the sections a layer above drew (:class:`Addenda`: the crash matrix table)."""
    extra = [[text.rstrip("\n")] for text in (addenda.markdown_sections if addenda else ())]
    sections = [_summary(report), _levels(report), _capabilities(report), *extra,
                _failures(report), _clauses(report)]
    return "\n\n".join("\n".join(s).rstrip() for s in sections) + "\n"


def write_markdown(report: RunReport, path: Path, addenda: Addenda | None = None) -> Path:
    path.write_text(render_markdown(report, addenda), encoding="utf-8")
    return path
