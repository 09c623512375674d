"""The platform capability matrix: several ``report.json`` files (one per platform, often from
CI jobs on Linux, macOS and Windows) merged into capabilities × platforms.

In the spirit of the architecture spec's matrix (00 "Platform capability matrix"), a cell says
what was *proven* on a platform, not what is hoped: "supported" needs a claim and every
clause of the capability run and passed there.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Iterable

from ._addenda import Addenda
from ._levels import CAPABILITIES
from ._model import RunReport
from ._text import durability_text, implementation_line, platform_label

__all__ = ["CELL_STATES", "Matrix", "merge_matrix", "render_matrix_html", "render_matrix_markdown",
           "render_matrix_text"]

SUPPORTED, FAILED, NOT_CLAIMED, NOT_RUN = "supported", "failed", "not claimed", "not run"
#: Cell values; in merge precedence order (the first one present wins).
CELL_STATES: tuple[str, ...] = (FAILED, SUPPORTED, NOT_RUN, NOT_CLAIMED)
BASE_PLATFORMS: tuple[str, ...] = ("Linux", "macOS", "Windows")


@dataclass
class Matrix:
    """``cells[capability][platform]`` is one of :data:`CELL_STATES`.

    ``sources[platform]`` lists what was merged there (``"maka-ref 0.1.0: level live"``), so a
    reader can tell which run a cell comes from.
    """

    capabilities: list[str]
    platforms: list[str]
    cells: dict[str, dict[str, str]]
    sources: dict[str, list[str]] = field(default_factory=dict)
    #: ``durability[platform]``: how the implementation declared it makes files durable there
    #: (the handshake's ``durability``, protocol §3; "not declared" when it said nothing, "not
    #: run" without a report). Several different declarations on one platform are joined by "; ".
    durability: dict[str, str] = field(default_factory=dict)

    def cell(self, capability: str, platform: str) -> str:
        return self.cells[capability][platform]

    def to_dict(self) -> dict[str, Any]:
        return {"capabilities": self.capabilities, "platforms": self.platforms,
                "cells": self.cells, "sources": self.sources, "durability": self.durability}

    def to_json(self, *, indent: int | None = 2) -> str:
        return json.dumps(self.to_dict(), indent=indent, ensure_ascii=False)


def report_cells(report: RunReport) -> dict[str, str]:
    """The cell value of each capability (clauses' or claimed) for one report."""
    cells: dict[str, str] = {}
    for capability, clauses in report.by_capability().items():
        if any(c.bad for c in clauses):
            cells[capability] = FAILED
        elif capability not in report.claimed:
            cells[capability] = NOT_CLAIMED
        elif clauses and all(c.outcome == "passed" for c in clauses):
            cells[capability] = SUPPORTED
        else:  # claimed, but nothing ran, or part of it did not run
            cells[capability] = NOT_RUN
    return cells


def _merge(a: str, b: str) -> str:
    return min(a, b, key=CELL_STATES.index)


def merge_matrix(reports: Iterable[RunReport]) -> Matrix:
    """Merge reports into a :class:`Matrix`.

    Rows: the union of capabilities (known ones in protocol order, then others sorted).
    Columns: Linux, macOS, Windows (``Darwin`` is macOS), then any other system in order of
    appearance. A platform without a report is "not run" everywhere; several reports for one
    platform merge with "failed" first, then "supported", then "not run", then "not claimed".
    """
    reports = list(reports)
    per_platform: dict[str, dict[str, str]] = {}
    sources: dict[str, list[str]] = {}
    declarations: dict[str, list[str]] = {}
    platforms = list(BASE_PLATFORMS)
    for report in reports:
        label = platform_label(report.platform.get("system"))
        if label not in platforms:
            platforms.append(label)
        merged = per_platform.setdefault(label, {})
        for capability, state in report_cells(report).items():
            old = merged.get(capability)
            merged[capability] = state if old is None else _merge(old, state)
        level = report.verdict().level_reached
        status = f"level {level}" if level else "not certified"
        sources.setdefault(label, []).append(f"{implementation_line(report)}: {status}")
        declared = durability_text(report.implementation.get("durability"))
        seen = declarations.setdefault(label, [])
        if declared not in seen:
            seen.append(declared)
    names = {c for cells in per_platform.values() for c in cells}
    capabilities = [c for c in CAPABILITIES if c in names] + sorted(names - set(CAPABILITIES))
    cells = {
        cap: {p: per_platform.get(p, {}).get(cap, NOT_CLAIMED if p in per_platform else NOT_RUN)
              for p in platforms}
        for cap in capabilities
    }
    durability = {p: "; ".join(declarations[p]) if p in declarations else NOT_RUN for p in platforms}
    return Matrix(capabilities=capabilities, platforms=platforms, cells=cells, sources=sources, durability=durability)


def render_matrix_markdown(matrix: Matrix) -> str:
    """A Markdown table (capability rows, platform columns) plus a legend and sources."""
    header = "| Capability | " + " | ".join(matrix.platforms) + " |"
    lines = [header, "|---|" + "|".join("---" for _ in matrix.platforms) + "|"]
    for cap in matrix.capabilities:
        states = (matrix.cells[cap][p] for p in matrix.platforms)
        row = [f"**{s}**" if s == FAILED else s for s in states]
        lines.append(f"| `{cap}` | " + " | ".join(row) + " |")
    if matrix.durability:
        lines.append("| durability (declared) | " + " | ".join(matrix.durability.get(p, NOT_RUN) for p in matrix.platforms)
                     + " |")
    lines += ["", "supported = claimed and every clause passed; failed = a clause failed or "
              "errored; not run = no report for the platform, or claimed but not (fully) run; durability = "
              "how the implementation said it makes files durable there (handshake, protocol §3)."]
    if matrix.sources:
        lines += [""] + [f"- {p}: " + "; ".join(s) for p, s in matrix.sources.items()]
    return "\n".join(lines) + "\n"


def render_matrix_text(matrix: Matrix) -> str:
    """A plain aligned table for terminals (ASCII only, so it survives any console)."""
    marks = {SUPPORTED: "supported", FAILED: "FAILED", NOT_CLAIMED: "-", NOT_RUN: "not run"}
    header = ["capability", *matrix.platforms]
    rows = [[cap, *(marks[matrix.cells[cap][p]] for p in matrix.platforms)]
            for cap in matrix.capabilities]
    if matrix.durability:
        rows.append(["durability (declared)", *(matrix.durability.get(p, NOT_RUN) for p in matrix.platforms)])
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    fmt = "  ".join(f"{{:<{w}}}" for w in widths)
    lines = [fmt.format(*header), fmt.format(*("-" * w for w in widths))]
    lines += [fmt.format(*row).rstrip() for row in rows]
    lines.append("(- = not claimed)")
    for platform, srcs in matrix.sources.items():
        lines.append(f"{platform}: " + "; ".join(srcs))
    return "\n".join(lines) + "\n"


_CELL_CLASS = {SUPPORTED: "b-passed", FAILED: "b-failed", NOT_CLAIMED: "b-not_claimed", NOT_RUN: "b-not_run"}


def render_matrix_html(matrix: Matrix, addenda: Addenda | None = None) -> str:
    """One self-contained page: the capability table (capability rows, platform columns),
    the sources, then the sections a layer above drew (the merged crash matrix picture)."""
    from html import escape

    from ._html_style import CSS

    addenda = addenda or Addenda()
    head = "".join(f"<th>{escape(p)}</th>" for p in matrix.platforms)
    rows = "".join(
        f"<tr><td><code>{escape(cap)}</code></td>"
        + "".join(f'<td><span class="badge {_CELL_CLASS[matrix.cells[cap][p]]}">{escape(matrix.cells[cap][p])}'
                  "</span></td>" for p in matrix.platforms) + "</tr>"
        for cap in matrix.capabilities)
    if matrix.durability:
        rows += ("<tr><td>durability (declared)</td>"
                 + "".join(f"<td>{escape(matrix.durability.get(p, NOT_RUN))}</td>" for p in matrix.platforms) + "</tr>")
    sources = "".join(f"<li>{escape(p)}: {escape('; '.join(s))}</li>" for p, s in matrix.sources.items())
    body = (f'<section id="capabilities"><h2>Capabilities</h2><table><thead><tr><th>Capability</th>{head}</tr>'
            f"</thead><tbody>{rows}</tbody></table><p>supported = claimed and every clause passed; failed = a clause "
            "failed or errored; not run = no report for the platform, or claimed but not (fully) run.</p>"
            f"<ul>{sources}</ul></section>")
    return ('<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
            '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
            f"<title>maka-conformance platform matrix</title>\n<style>{CSS}{addenda.css}</style>\n</head>\n"
            "<body>\n<main>\n<h1>maka-conformance platform matrix</h1>\n"
            + body + "\n" + "\n".join(addenda.html_sections) + "\n</main>\n</body>\n</html>\n")
