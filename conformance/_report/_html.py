"""``report.html``: one self-contained page (inline CSS, no JavaScript, no external assets).

Same order as the Markdown report: summary with the verdict, levels, the capability ×
outcome table, failures with their diff and stderr, and the full clause list collapsed in a
``<details>``. Every string is escaped with :func:`html.escape`: messages and stderr come
from the implementation under test and may contain markup.
"""

from __future__ import annotations

import re
from html import escape
from pathlib import Path

from ._addenda import Addenda
from ._html_style import CSS
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


def e(text: object) -> str:
    """Escape for element text and quoted attribute values."""
    return escape(visible(text), quote=True)


def clause_anchor(clause_id: str) -> str:
    """The id of a failed clause's entry in the page (links point at ``#`` it)."""
    return "clause-" + re.sub(r"[^A-Za-z0-9_-]+", "-", clause_id)



def _badge(outcome: str) -> str:
    label = OUTCOME_LABELS.get(outcome, outcome)
    return f'<span class="badge b-{e(outcome)}">{e(label)}</span>'


def _summary(report: RunReport) -> str:
    ok = report.level_reached is not None
    facts = [
        ("Implementation", f"<strong>{e(implementation_line(report))}</strong>"),
        ("Platform", e(platform_line(report))),
        ("Durability (declared)", e(durability_line(report))),
        ("Result", e(counts_line(report))),
        ("Duration", e(f"{duration(report.duration_s)} on {report.workers} worker(s)")),
        ("Started", e(report.started_at)),
        ("Selection", e(selection_line(report))),
        ("Suite", e(f"{report.suite_version}, spec commit {report.spec_commit}, "
                    f"protocol {report.protocol_version}")),
    ]
    command = report.implementation.get("command")
    if command:
        text = " ".join(command) if isinstance(command, list) else str(command)
        facts.append(("Command", f"<code>{e(text)}</code>"))
    if report.unknown_capabilities:
        facts.append(("Unknown capabilities", e(", ".join(report.unknown_capabilities))
                      + " (claimed, ignored)"))
    rows = "".join(f"<dt>{k}</dt><dd>{v}</dd>" for k, v in facts)
    parts = [
        '<section id="summary"><h2>Summary</h2>',
        f'<div class="verdict {"ok" if ok else "bad"}">{e(verdict_line(report))}'
        f"<small>{e(implementation_line(report))} · {e(platform_line(report))}</small></div>",
        f'<dl class="facts">{rows}</dl>',
    ]
    if report.harness_errors:
        errs = "".join(f"<pre>{e(truncate(x, MESSAGE_CHARS))}</pre>" for x in report.harness_errors)
        parts.append(f'<div class="harness"><h3>Harness errors ({len(report.harness_errors)})'
                     f"</h3><p>The run is incomplete and certifies nothing.</p>{errs}</div>")
    parts.append("</section>")
    return "\n".join(parts)


def _levels(report: RunReport) -> str:
    rows = []
    for level, info in report.levels.items():
        status = level_status(info)
        reasons = info.get("reasons") or []
        why = ('<ul class="reasons">' + "".join(f"<li>{e(r)}</li>" for r in reasons) + "</ul>"
               if reasons else e(REACHED_TEXT))
        cls = {"reached": "b-reached", "not selected": "b-not-selected"}.get(status, "b-not-reached")
        rows.append(f"<tr><td><code>{e(level)}</code></td>"
                    f'<td><span class="badge {cls}">{e(status)}</span></td><td>{why}</td></tr>')
    return ('<section id="levels"><h2>Levels</h2><table><thead><tr><th>Level</th><th>Status</th>'
            f"<th>Why</th></tr></thead><tbody>{''.join(rows)}</tbody></table></section>")


def _capabilities(report: RunReport) -> str:
    head = "".join(f'<th class="num">{e(OUTCOME_LABELS[o])}</th>' for o in OUTCOMES)
    rows = []
    for capability, counts in report.capability_counts().items():
        claimed = "yes" if capability in report.claimed else "no"
        cells = "".join(
            f'<td class="num {"zero" if not counts[o] else "hot-" + o}">{counts[o]}</td>'
            for o in OUTCOMES
        )
        rows.append(f"<tr><td><code>{e(capability)}</code></td><td>{claimed}</td>{cells}</tr>")
    return ('<section id="capabilities"><h2>Capabilities</h2><table><thead><tr>'
            f"<th>Capability</th><th>Claimed</th>{head}</tr></thead>"
            f"<tbody>{''.join(rows)}</tbody></table></section>")


def _failure(clause: ClauseResult, note: str = "") -> str:
    title = f" — {e(clause.title)}" if clause.title else ""
    parts = [
        f'<article class="failure" id="{clause_anchor(clause.clause_id)}">',
        f"<h3>{_badge(clause.outcome)} <code>{e(clause.clause_id)}</code>{title}</h3>",
        f'<div class="meta">spec {e(clause.spec or "n/a")} · capability '
        f"<code>{e(clause.capability)}</code> · level {e(clause.level)} · target "
        f"{e(clause.target)} · {e(duration(clause.duration_s))}</div>",
    ]
    if clause.message:
        parts.append(f"<pre>{e(truncate(clause.message, MESSAGE_CHARS))}</pre>")
    if clause.diff:
        expected, actual = diff_sides(clause.diff)
        parts.append(
            f"<p>First difference at <code>{e(clause.diff.get('path', '$'))}</code></p>"
            f'<div class="diff"><div><h4>expected</h4><pre>{e(expected)}</pre></div>'
            f"<div><h4>actual</h4><pre>{e(actual)}</pre></div></div>"
        )
    if clause.stderr_tail:
        parts.append("<details><summary>stderr (tail)</summary>"
                     f"<pre>{e(stderr_tail(clause.stderr_tail))}</pre></details>")
    if note:
        parts.append(note)
    parts.append("</article>")
    return "\n".join(parts)


def _failures(report: RunReport, notes: dict[str, str] | None = None) -> str:
    failures = report.failures()
    notes = notes or {}
    body = "\n".join(_failure(c, notes.get(c.clause_id, "")) for c in failures) or "<p>No clause failed.</p>"
    return f'<section id="failures"><h2>Failures ({len(failures)})</h2>\n{body}\n</section>'


def _clause_ref(clause: ClauseResult) -> str:
    """The clause id; failures link to their entry in the Failures section (no JS needed)."""
    ident = f"<code>{e(clause.clause_id)}</code>"
    return f'<a href="#{clause_anchor(clause.clause_id)}">{ident}</a>' if clause.bad else ident


def _clauses(report: RunReport) -> str:
    rows = "".join(
        f"<tr><td>{_clause_ref(c)}</td><td>{e(c.title)}</td><td>{e(c.spec)}</td>"
        f"<td><code>{e(c.capability)}</code></td><td>{e(c.level)}</td>"
        f'<td>{_badge(c.outcome)}</td><td class="num">'
        f'{e(duration(c.duration_s)) if c.ran else ""}</td></tr>'
        for c in report.clauses
    )
    return (f'<section id="clauses"><h2>All clauses ({len(report.clauses)})</h2>'
            f"<details><summary>Show all {len(report.clauses)} clauses</summary>"
            "<table><thead><tr><th>Clause</th><th>Title</th><th>Spec</th><th>Capability</th>"
            '<th>Level</th><th>Outcome</th><th class="num">Time</th></tr></thead>'
            f"<tbody>{rows}</tbody></table></details></section>")


def render_html(report: RunReport, addenda: Addenda | None = None) -> str:
    """The HTML report of a finalized ``report`` (see :meth:`RunReport.finalized`), with the
    parts a layer above drew (:class:`Addenda`: the crash matrix, trial timelines)."""
    addenda = addenda or Addenda()
    title = f"maka-conformance: {implementation_line(report)} — {verdict_line(report)}"
    body = "\n".join([_summary(report), _levels(report), _capabilities(report), *addenda.html_sections,
                      _failures(report, dict(addenda.html_failure_notes)), _clauses(report)])
    return (
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f"<title>{e(title)}</title>\n<style>{CSS}{addenda.css}</style>\n</head>\n<body>\n<main>\n"
        f"<h1>maka-conformance report</h1>\n{body}\n"
        f"<footer>Generated by maka-conformance {e(report.suite_version)} · "
        f"spec commit {e(report.spec_commit)} · {e(report.started_at)}</footer>\n"
        "</main>\n</body>\n</html>\n"
    )


def write_html(report: RunReport, path: Path, addenda: Addenda | None = None) -> Path:
    path.write_text(render_html(report, addenda), encoding="utf-8")
    return path
