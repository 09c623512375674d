"""``crashlab-sweep.html``: the sweep report as one page people look at — the crash matrix
picture first, then every trial that did not pass as a timeline, then all trials.

Why a third file beside the JSON and the Markdown: "where does my runtime break" is a picture
(:mod:`crashlab._lab.crashmatrix`) and "what happened in that trial" is a story in time
(:mod:`crashlab._lab.timeline`); neither reads well as Markdown. The page is one
self-contained file — inline CSS and SVG, no JavaScript, nothing fetched — so it opens
offline, from a CI artifact, years later. Every string from the implementation is escaped.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any
from urllib.parse import quote

from crashlab._lab import crashmatrix, timeline

__all__ = ["QUIET", "render_html", "trial_anchor"]

#: Outcomes that are not a failure: no entry in "did not pass", no link from the cell.
QUIET: tuple[str, ...] = ("passed", "not_claimed", "not_run")

_CSS = """
:root { --fg:#1f2328; --muted:#59636e; --bg:#fff; --panel:#f6f8fa; --line:#d1d9e0; --ok:#1a7f37;
  --ok-bg:#dafbe1; --bad:#cf222e; --bad-bg:#ffebe9; }
@media (prefers-color-scheme: dark) { :root { --fg:#e6edf3; --muted:#9198a1; --bg:#0d1117; --panel:#151b23;
  --line:#3d444d; --ok:#3fb950; --ok-bg:#12261e; --bad:#f85149; --bad-bg:#2d1214; } }
* { box-sizing:border-box; }
body { margin:0; background:var(--bg); color:var(--fg); font:15px/1.5 system-ui,-apple-system,"Segoe UI",sans-serif; }
main { max-width:1100px; margin:0 auto; padding:24px 20px 64px; }
h1 { font-size:1.5rem; margin:0 0 4px; }
h2 { font-size:1.2rem; margin:28px 0 10px; padding-bottom:4px; border-bottom:1px solid var(--line); }
h3 { font-size:1rem; margin:0 0 6px; }
code, pre { font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace; font-size:.86rem; }
pre { background:var(--panel); border:1px solid var(--line); border-radius:6px; padding:8px 10px; overflow:auto;
  max-height:360px; white-space:pre-wrap; word-break:break-word; }
table { border-collapse:collapse; width:100%; margin:6px 0; }
th, td { border:1px solid var(--line); padding:4px 8px; text-align:left; vertical-align:top; }
th { background:var(--panel); }
.verdict { border-radius:8px; padding:12px 16px; margin:12px 0; font-size:1.25rem; font-weight:700; border:1px solid; }
.verdict.ok { color:var(--ok); background:var(--ok-bg); } .verdict.bad { color:var(--bad); background:var(--bad-bg); }
.meta { color:var(--muted); font-size:.88rem; }
.badge { border-radius:10px; padding:0 8px; font-size:.8rem; font-weight:600; color:#fff; }
.failure { border:1px solid var(--line); border-left:4px solid var(--bad); border-radius:6px; padding:10px 14px;
  margin:12px 0; }
details > summary { cursor:pointer; color:var(--muted); }
footer { margin-top:40px; color:var(--muted); font-size:.85rem; }
"""


def _e(text: object) -> str:
    return crashmatrix._x(text)


def trial_anchor(trial_id: str) -> str:
    """The id of a trial's entry in the page (a failing cell links to ``#`` it)."""
    return "trial-" + re.sub(r"[^A-Za-z0-9_-]+", "-", trial_id)


def _badge(outcome: str) -> str:
    style = crashmatrix.STYLES.get(outcome, crashmatrix.STYLES["error"])
    return (f'<span class="badge" style="background:{style.fill};color:{style.ink}">'
            f"{_e(style.letter)} {_e(style.label)}</span>")


def _bundle_href(bundle: str, report_dir: Path | None) -> str:
    """A link to a bundle's ``trial.json``, relative to the page when both are on one tree."""
    target = Path(bundle) / "trial.json"
    if report_dir is not None:
        try:
            rel = os.path.relpath(target, report_dir)
            return quote(Path(rel).as_posix())
        except ValueError:  # another drive (Windows)
            pass
    return Path(os.path.abspath(target)).as_uri()


def _failure(result: Any, report_dir: Path | None) -> str:
    spec = result.spec
    parts = [f'<article class="failure" id="{_e(trial_anchor(spec.trial_id))}">',
             f"<h3>{_badge(result.outcome)} <code>{_e(spec.trial_id)}</code></h3>",
             (f'<div class="meta">point <code>{_e(spec.point)}</code> · mode {_e(spec.mode)} · '
              f"fault {_e(spec.fault)} · seed {spec.seed} · {result.duration_s:.1f} s")]
    if result.bundle:
        parts.append(f' · <a href="{_e(_bundle_href(result.bundle, report_dir))}">failure bundle</a> '
                     f"(<code>crashlab replay {_e(result.bundle)}</code>)")
    parts.append("</div>")
    failed = [c for c in result.checks if not c.ok]
    if failed:
        parts.append("<ul>" + "".join(f"<li><code>{_e(c.name)}</code>: {_e(c.detail[:2000])}</li>" for c in failed)
                     + "</ul>")
    elif result.message:
        parts.append(f"<pre>{_e(result.message[:4000])}</pre>")
    steps = (result.evidence or {}).get("timeline") or []
    parts.append("<h4>Timeline</h4>" + timeline.render_html(steps, _e))
    if result.stderr_tail:
        parts.append(f"<details><summary>stderr (tail)</summary><pre>{_e(result.stderr_tail[-6000:])}</pre></details>")
    parts.append("</article>")
    return "".join(parts)


def _phases(result: Any) -> str:
    """Where a trial's time went, from its recorded timeline (issue 18 item 3)."""
    steps = (result.evidence or {}).get("timeline") or []
    return timeline.render_phases(timeline.phase_breakdown(steps)) if steps else ""


def render_html(report: Any, report_dir: str | os.PathLike[str] | None = None) -> str:
    """The page of a :class:`~crashlab._lab.sweep.SweepReport`; ``report_dir`` is where the
    page is written (bundle links are made relative to it)."""
    where = Path(report_dir) if report_dir is not None else None
    counts = report.counts()
    bad = [r for r in report.results if r.outcome not in QUIET]
    ok = report.ok
    verdict = ("INTERRUPTED: partial report" if report.interrupted
               else ("every trial passed" if ok else f"{len(bad)} trial(s) did not pass"))
    line = ", ".join(f"{v} {k.replace('_', ' ')}" for k, v in counts.items() if v) or "no trial"
    matrix = report.matrix()
    command = " ".join(report.command) if report.command else "the reference adapter (python -m maka_ref.adapter)"
    body = [
        "<h1>crashlab sweep</h1>",
        f'<div class="verdict {"ok" if ok else "bad"}">{_e(verdict)}</div>',
        (f'<p class="meta">{len(report.results)} of {report.planned or len(report.results)} trials: {_e(line)} · '
         f"{report.duration_s:.1f} s on {report.workers} worker(s) · implementation <code>{_e(command)}</code></p>"),
        '<section id="matrix"><h2>Crash matrix</h2>',
        crashmatrix.figure_html(matrix, title="crashlab sweep"),
        "</section>",
        f'<section id="failures"><h2>Trials that did not pass ({len(bad)})</h2>',
        "".join(_failure(r, where) for r in bad) or "<p>None.</p>",
        "</section>",
    ]
    rows = "".join(f"<tr><td><code>{_e(r.spec.trial_id)}</code></td><td>{_e(r.spec.point)}</td><td>{_e(r.spec.mode)}</td>"
                   f"<td>{_e(r.spec.fault)}</td><td>{r.spec.seed}</td><td>{_badge(r.outcome)}</td>"
                   f"<td>{r.duration_s:.1f} s</td><td>{_e(_phases(r))}</td></tr>" for r in report.results)
    body.append(f'<section id="trials"><h2>All trials ({len(report.results)})</h2><details><summary>Show all</summary>'
                "<table><thead><tr><th>trial</th><th>point</th><th>mode</th><th>fault</th><th>seed</th><th>outcome</th>"
                f"<th>time</th><th>where the time went</th></tr></thead><tbody>{rows}</tbody></table></details></section>")
    title = f"crashlab sweep — {verdict}"
    return ('<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
            '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
            f"<title>{_e(title)}</title>\n<style>{_CSS}{crashmatrix.CSS}{timeline.CSS}</style>\n</head>\n<body>\n<main>\n"
            + "\n".join(body) + "\n<footer>Generated by crashlab sweep (docs/crashlab.md)</footer>\n"
            "</main>\n</body>\n</html>\n")
