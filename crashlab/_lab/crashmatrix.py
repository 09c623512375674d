"""The crash matrix: crash points × (fault, mode), one cell per trial, coloured by outcome —
as a picture (inline SVG) and as a compact text table that says the same cell for cell.

Why a picture: the question a runtime author asks of a crash-lab run is *where* the runtime
breaks — at which point, under which fault, in which mode — and a grid coloured the way a
coverage report colours lines answers it at a glance, where a table of words does not. Why
text too: the Markdown reports and terminals need the same grid, and the two must never
disagree, so both are drawn from one :class:`CrashMatrix`.

Who uses it: ``crashlab sweep`` (``crashlab-sweep.html`` and ``.md``), the ``certify`` reports
(the ``CRASH-*`` clauses) and ``maka-conformance matrix`` (the same grid merged across
platforms: a cell then holds one trial per platform). Everything here is standard library
and pure (no clock, no I/O besides reading the catalogue for the row order).

Rows are the catalogue's points in catalogue order (P0–P11, then the continuation, storage
and recovery points); a point the catalogue does not know (a report from another version)
comes after them, in order of appearance. Columns are the (fault, mode) pairs that occur in
the data — any fault name, so a new fault appears without a code change — faults in
:data:`~crashlab._lab.model.FAULTS` order, then unknown ones in order of appearance; modes
``prefix``, ``live-t1``, ``live-legacy``, then others. A (point, column) without a trial is
blank. Every outcome has a colour *and* a letter, so the grid reads without colour too.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from html import escape
from typing import Any

__all__ = [
    "CSS",
    "STATES",
    "STYLES",
    "CrashMatrix",
    "MatrixTrial",
    "build_matrix",
    "cell_letters",
    "figure_html",
    "legend_text",
    "render_markdown",
    "render_svg",
    "render_text",
    "trials_from_results",
]


@dataclass(frozen=True)
class Style:
    """How one outcome is drawn: its name for people, its letter (the colour-free reading),
    the cell's fill and the letter's colour on it."""

    label: str
    letter: str
    fill: str
    ink: str


#: Every cell state, the failing ones first (the order of the legend).
STATES: tuple[str, ...] = ("failed", "unreached", "error", "passed", "not_claimed", "not_run")
STYLES: Mapping[str, Style] = {
    "failed": Style("failed", "F", "#d1242f", "#ffffff"),
    "unreached": Style("unreached", "U", "#8250df", "#ffffff"),
    "error": Style("error", "E", "#bc4c00", "#ffffff"),
    "passed": Style("passed", "P", "#8ddb9e", "#0a3d1a"),
    "not_claimed": Style("not claimed", "N", "#d0d7de", "#32383f"),
    "not_run": Style("not run", "-", "#f6f8fa", "#57606a"),
}
#: The states that make a cell (and a Markdown cell's text) stand out.
BAD: frozenset[str] = frozenset({"failed", "unreached", "error"})
_MODE_ORDER = ("prefix", "live-t1", "live-legacy")


@dataclass(frozen=True)
class MatrixTrial:
    """One trial in the grid. ``mode`` is the variant (``prefix``, ``live-t1``,
    ``live-legacy``); ``outcome`` one of :data:`STATES`; ``href`` where its cell links (the
    failure's entry in the same page); ``detail`` the first words of what went wrong;
    ``platform`` set in a merged matrix."""

    point: str
    fault: str
    mode: str
    outcome: str
    trial_id: str
    duration_s: float | None = None
    href: str | None = None
    detail: str = ""
    platform: str | None = None

    def __post_init__(self) -> None:
        if self.outcome not in STYLES:
            raise ValueError(f"{self.trial_id}: unknown crash-matrix outcome {self.outcome!r}")

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {"trialId": self.trial_id, "outcome": self.outcome, "durationS": self.duration_s}
        if self.platform is not None:
            data["platform"] = self.platform
        if self.href:
            data["href"] = self.href
        return data


Column = tuple[str, str]  # (fault, mode)


@dataclass
class CrashMatrix:
    """``rows`` (points), ``columns`` ((fault, mode) pairs) and the trials of every cell."""

    rows: list[str]
    columns: list[Column]
    cells: dict[tuple[str, Column], list[MatrixTrial]] = field(default_factory=dict)

    def cell(self, point: str, column: Column) -> list[MatrixTrial]:
        """The trials of one cell, in order (repetitions, or platforms when merged); ``[]``
        when the catalogue has no such trial."""
        return self.cells.get((point, column), [])

    def trials(self) -> list[MatrixTrial]:
        return [t for row in self.rows for col in self.columns for t in self.cell(row, col)]

    def counts(self) -> dict[str, int]:
        out = dict.fromkeys(STATES, 0)
        for trial in self.trials():
            out[trial.outcome] += 1
        return out

    def to_json(self) -> dict[str, Any]:
        return {"rows": list(self.rows), "columns": [{"fault": f, "mode": m} for f, m in self.columns],
                "cells": [{"point": p, "fault": c[0], "mode": c[1], "trials": [t.to_json() for t in ts]}
                          for (p, c), ts in self.cells.items()]}


def _catalogue_order() -> list[str]:
    from crashlab._lab.catalogue import catalogue

    return [p.id for p in catalogue()]


def _fault_order() -> tuple[str, ...]:
    from crashlab._lab.model import FAULTS

    return FAULTS


def _ordered(seen: Sequence[str], known: Sequence[str]) -> list[str]:
    present = set(seen)
    return [k for k in known if k in present] + [s for s in dict.fromkeys(seen) if s not in set(known)]


def build_matrix(trials: Iterable[MatrixTrial], *, row_order: Sequence[str] | None = None) -> CrashMatrix:
    """Arrange ``trials`` into a :class:`CrashMatrix` (rows and columns as the module says).
    ``row_order`` replaces the catalogue's order (tests, other catalogues)."""
    trials = list(trials)
    rows = _ordered([t.point for t in trials], _catalogue_order() if row_order is None else row_order)
    faults = _ordered([t.fault for t in trials], _fault_order())
    pairs = {(t.fault, t.mode) for t in trials}
    columns: list[Column] = []
    for fault in faults:
        modes = _ordered([t.mode for t in trials if t.fault == fault], _MODE_ORDER)
        columns += [(fault, m) for m in modes if (fault, m) in pairs]
    cells: dict[tuple[str, Column], list[MatrixTrial]] = {}
    for trial in trials:
        cells.setdefault((trial.point, (trial.fault, trial.mode)), []).append(trial)
    ordered = {(p, c): cells[(p, c)] for p in rows for c in columns if (p, c) in cells}
    return CrashMatrix(rows=rows, columns=columns, cells=ordered)


def trials_from_results(results: Iterable[Any], link: Callable[[Any], str | None] | None = None) -> list[MatrixTrial]:
    """The grid's trials of ``crashlab`` :class:`~crashlab.TrialResult` objects; ``link``
    gives a cell's ``href`` (e.g. the failure's anchor in the page)."""
    from crashlab._lab.catalogue import variant_of

    out = []
    for r in results:
        outcome = r.outcome if r.outcome in STYLES else "error"
        out.append(MatrixTrial(point=r.spec.point, fault=r.spec.fault, mode=variant_of(r.spec.mode, r.spec.protocol),
                               outcome=outcome, trial_id=r.spec.trial_id, duration_s=r.duration_s,
                               href=link(r) if link is not None else None,
                               detail=(r.message or "").splitlines()[0][:200] if r.message else ""))
    return out


# --------------------------------------------------------------------------- text


def cell_letters(trials: Sequence[MatrixTrial]) -> str:
    """The letters of a cell's trials, in order (``""``: no trial)."""
    return "".join(STYLES[t.outcome].letter for t in trials)


def legend_text(separator: str = " · ", blank: str = "blank") -> str:
    return separator.join(f"{STYLES[s].letter} {STYLES[s].label}" for s in STATES) + f"{separator}{blank}: no such trial"


def _column_label(column: Column) -> str:
    return f"{column[0]}/{column[1]}"


def render_markdown(matrix: CrashMatrix, *, per: str = "trial") -> str:
    """The grid as a compact Markdown table: one letter per trial (several in a cell: one
    per ``per`` — repetition or platform), cells with a failure in bold, then the legend."""
    if not matrix.rows:
        return "No crash trial.\n"
    header = ["point", *(_column_label(c) for c in matrix.columns)]
    lines = ["| " + " | ".join(header) + " |", "|---|" + "|".join(":-:" for _ in matrix.columns) + "|"]
    for point in matrix.rows:
        cells = []
        for column in matrix.columns:
            trials = matrix.cell(point, column)
            text = cell_letters(trials)
            cells.append(f"**{text}**" if any(t.outcome in BAD for t in trials) else text)
        lines.append(f"| {point} | " + " | ".join(cells) + " |")
    lines += ["", f"One letter per {per}: {legend_text()}."]
    return "\n".join(lines) + "\n"


def render_text(matrix: CrashMatrix, *, per: str = "trial") -> str:
    """The grid as an aligned ASCII table for terminals (same letters as Markdown; ``.`` for
    no trial)."""
    if not matrix.rows:
        return "no crash trial\n"
    header = ["point", *(_column_label(c) for c in matrix.columns)]
    rows = [[p, *(cell_letters(matrix.cell(p, c)) or "." for c in matrix.columns)] for p in matrix.rows]
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    out = ["  ".join(h.ljust(w) for h, w in zip(header, widths)).rstrip()]
    out += ["  ".join(v.ljust(w) for v, w in zip(row, widths)).rstrip() for row in rows]
    out.append(f"(one letter per {per}: {legend_text(', ', '.')})")
    return "\n".join(out) + "\n"


# --------------------------------------------------------------------------- the picture

_CHAR_W = 6.7  # width of one character of the 11 px monospace labels
_ROW_H, _ROW_GAP = 20, 3
_COL_GAP = 4
_HEAD_H = 44
_PAD = 6
_LETTER_MIN_W = 9.0  # a sub-cell narrower than this carries no letter (its title still says)

_XML_BAD = str.maketrans({c: None for c in [*range(9), 11, 12, *range(14, 32), 0xFFFE, 0xFFFF]})


def _x(text: object) -> str:
    """Text safe in SVG (XML 1.0) and HTML alike: escaped, no character XML cannot carry."""
    clean = str(text).translate(_XML_BAD)
    clean = "".join(c if not 0xD800 <= ord(c) <= 0xDFFF else "\ufffd" for c in clean)
    return escape(clean, quote=True)


def _duration(seconds: float | None) -> str:
    if seconds is None:
        return ""
    return f"{seconds * 1000:.0f} ms" if seconds < 1 else f"{seconds:.1f} s"


def _hover(trial: MatrixTrial) -> str:
    where = f" on {trial.platform}" if trial.platform else ""
    took = f" in {_duration(trial.duration_s)}" if trial.duration_s is not None and trial.outcome != "not_run" else ""
    text = f"{trial.trial_id}: {STYLES[trial.outcome].label}{where}{took}"
    return text + (f" — {trial.detail}" if trial.detail else "")


def _f(value: float) -> str:
    return f"{value:.1f}".rstrip("0").rstrip(".")


def _column_widths(columns: Sequence[Column]) -> list[float]:
    """Each column as wide as its mode's name (60 px at least); the columns of a fault share
    out what its name needs beyond their sum."""
    widths = [max(60.0, _CHAR_W * len(mode) + 14) for _, mode in columns]
    for fault in dict.fromkeys(f for f, _ in columns):
        idx = [n for n, (f, _) in enumerate(columns) if f == fault]
        span = sum(widths[n] for n in idx) + (len(idx) - 1) * _COL_GAP
        short = _CHAR_W * len(fault) + 14 - span
        for n in idx if short > 0 else ():
            widths[n] += short / len(idx)
    return widths


def render_svg(matrix: CrashMatrix, *, title: str = "Crash matrix", ident: str = "cm") -> str:
    """The grid as one inline ``<svg>`` element (no script, nothing fetched): a rect per
    trial with its letter, the trial id, outcome and duration in its ``<title>`` (shown on
    hover), a link to ``href`` when it has one, and the legend underneath. Every trial's
    group carries ``data-trial``, ``data-outcome``, ``data-point``, ``data-fault`` and
    ``data-mode``; nothing else does."""
    widths = _column_widths(matrix.columns)
    lefts = [sum(widths[:n]) + n * _COL_GAP for n in range(len(widths))]
    label_w = max(48.0, _CHAR_W * max([len(r) for r in matrix.rows] + [5]) + 16)
    grid_w = sum(widths) + len(widths) * _COL_GAP
    top = _HEAD_H
    grid_h = len(matrix.rows) * (_ROW_H + _ROW_GAP)
    legend_y = top + grid_h + 14
    items = [(s, f"{STYLES[s].letter} = {STYLES[s].label}") for s in STATES]
    legend_w = sum(14 + 6 + _CHAR_W * len(text) + 18 for _, text in items)
    width = _PAD * 2 + max(label_w + grid_w, legend_w)
    height = legend_y + 14 + 16 + _PAD
    counts = matrix.counts()
    summary = ", ".join(f"{n} {STYLES[s].label}" for s, n in counts.items() if n) or "no trial"
    parts = [
        (f'<svg xmlns="http://www.w3.org/2000/svg" class="crash-matrix" id="{_x(ident)}" '
         f'width="{_f(width)}" height="{_f(height)}" viewBox="0 0 {_f(width)} {_f(height)}" role="img" '
         f'aria-labelledby="{_x(ident)}-title {_x(ident)}-desc" font-family="ui-monospace,Menlo,Consolas,monospace" '
         f'font-size="11">'),
        f'<title id="{_x(ident)}-title">{_x(title)}: {len(matrix.trials())} trials — {_x(summary)}</title>',
        (f'<desc id="{_x(ident)}-desc">Rows: crash points in catalogue order. Columns: fault and mode. '
         f"One cell per trial, coloured and lettered by outcome ({_x(legend_text())}).</desc>"),
    ]
    # column headers: the fault over its modes, then each mode
    parts.append('<g class="cm-head" fill="currentColor">')
    x0 = _PAD + label_w
    spans: dict[str, list[int]] = {}
    for n, (fault, _mode) in enumerate(matrix.columns):
        spans.setdefault(fault, []).append(n)
    for fault, idx in spans.items():
        left = x0 + lefts[idx[0]]
        right = x0 + lefts[idx[-1]] + widths[idx[-1]]
        parts.append(f'<text x="{_f((left + right) / 2)}" y="14" text-anchor="middle" font-weight="700">{_x(fault)}</text>')
        parts.append(f'<rect x="{_f(left)}" y="19" width="{_f(right - left)}" height="1.5" opacity=".5"/>')
    for n, (_fault, mode) in enumerate(matrix.columns):
        cx = x0 + lefts[n] + widths[n] / 2
        parts.append(f'<text x="{_f(cx)}" y="34" text-anchor="middle">{_x(mode)}</text>')
    parts.append("</g>")
    # row labels
    parts.append('<g class="cm-rows" fill="currentColor">')
    for r, point in enumerate(matrix.rows):
        y = top + r * (_ROW_H + _ROW_GAP) + _ROW_H / 2 + 4
        parts.append(f'<text x="{_f(_PAD + label_w - 8)}" y="{_f(y)}" text-anchor="end">{_x(point)}</text>')
    parts.append("</g>")
    # the cells
    parts.append('<g class="cm-cells" font-weight="700" text-anchor="middle">')
    for r, point in enumerate(matrix.rows):
        y = top + r * (_ROW_H + _ROW_GAP)
        for c, column in enumerate(matrix.columns):
            x, col_w = x0 + lefts[c], widths[c]
            trials = matrix.cell(point, column)
            if not trials:
                parts.append(f'<circle class="cm-none" cx="{_f(x + col_w / 2)}" cy="{_f(y + _ROW_H / 2)}" r="1.5" '
                             'fill="currentColor" opacity=".35"/>')
                continue
            sub = (col_w - (len(trials) - 1)) / len(trials)
            for k, trial in enumerate(trials):
                parts.append(_trial_svg(trial, x + k * (sub + 1), y, sub))
    parts.append("</g>")
    # the legend
    parts.append(f'<g class="cm-legend" transform="translate({_PAD} {_f(legend_y)})">')
    lx = 0.0
    for state, text in items:
        st = STYLES[state]
        parts.append(f'<rect x="{_f(lx)}" y="0" width="14" height="14" rx="2" fill="{st.fill}" stroke="#8c959f" '
                     'stroke-width=".5"/>'
                     f'<text x="{_f(lx + 7)}" y="11" text-anchor="middle" font-weight="700" fill="{st.ink}">'
                     f"{_x(st.letter)}</text>"
                     f'<text x="{_f(lx + 20)}" y="11" fill="currentColor">{_x(text)}</text>')
        lx += 14 + 6 + _CHAR_W * len(text) + 18
    parts.append("</g></svg>")
    return "".join(parts)


def _trial_svg(trial: MatrixTrial, x: float, y: float, w: float) -> str:
    st = STYLES[trial.outcome]
    dash = ' stroke="#8c959f" stroke-dasharray="3 2"' if trial.outcome == "not_run" else ""
    data = (f'data-trial="{_x(trial.trial_id)}" data-outcome="{_x(trial.outcome)}" data-point="{_x(trial.point)}" '
            f'data-fault="{_x(trial.fault)}" data-mode="{_x(trial.mode)}"')
    if trial.platform is not None:
        data += f' data-platform="{_x(trial.platform)}"'
    body = (f'<g class="cm-trial o-{_x(trial.outcome)}" {data}><title>{_x(_hover(trial))}</title>'
            f'<rect x="{_f(x)}" y="{_f(y)}" width="{_f(w)}" height="{_ROW_H}" rx="2" fill="{st.fill}"{dash}/>')
    if w >= _LETTER_MIN_W:
        body += (f'<text x="{_f(x + w / 2)}" y="{_f(y + _ROW_H / 2 + 4)}" fill="{st.ink}">{_x(st.letter)}</text>')
    body += "</g>"
    return f'<a href="{_x(trial.href)}">{body}</a>' if trial.href else body


#: Page styles for the picture (the pages that embed it include them once).
CSS = """
figure.crash-matrix { margin:8px 0 4px; overflow-x:auto; }
figure.crash-matrix svg { max-width:100%; height:auto; }
figure.crash-matrix figcaption { color:var(--muted, #59636e); font-size:.85rem; }
.cm-trial:hover rect { stroke:currentColor; stroke-width:2; }
"""


def figure_html(matrix: CrashMatrix, *, title: str = "Crash matrix", ident: str = "cm", caption: str = "") -> str:
    """The picture in a ``<figure>`` with a caption (for the HTML pages)."""
    text = caption or ("Rows: crash points in catalogue order; columns: fault and mode; one cell per trial. "
                       "Hover a cell for the trial id and its duration; a failing cell links to its entry.")
    return (f'<figure class="crash-matrix">{render_svg(matrix, title=title, ident=ident)}'
            f"<figcaption>{_x(text)}</figcaption></figure>")
