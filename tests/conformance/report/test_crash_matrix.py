"""The crash matrix in the certification reports (issue 19): the ``CRASH-*`` clauses drawn as
a picture in ``report.html`` and as a compact table in ``report.md`` that agree cell for cell,
failing crash trials told as timelines, the grid merged across platforms by ``maka-conformance
matrix``, and a real certification of a mutant whose red cells are where it broke — checked in
a real headless browser where one is installed.
"""

from __future__ import annotations

import io
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from conformance._cli.main import run as cli
from conformance.certify import certify
from conformance.reports import (
    ClauseResult,
    RunReport,
    render_html,
    render_markdown,
    write_reports,
)
from tests.conformance.report.support import (
    FILLS,
    LETTERS,
    MUTANT_COMMAND,
    NO_BROWSER,
    browser,
    browser_cells,
    cells_in_view,
    close_to,
    crash_svg,
    expected_letters,
    hex_fill,
    markdown_grid,
    screenshot,
    svg_trials,
)

INJECTED = "<script>alert('x')</script>"


def crash(cid: str, point: str, mode: str, fault: str, outcome: str, **kw: Any) -> ClauseResult:
    cell = {"point": point, "mode": mode, "fault": fault, "trialId": f"{point}-{mode}-{fault}-s0-r0"}
    capability = "store" if mode == "prefix" else "faults"
    return ClauseResult(cid, capability, "durable" if mode == "prefix" else "live", outcome, crash=cell,
                        duration_s=kw.pop("duration_s", 1.5), **kw)


TIMELINE = [
    {"t": 0.0, "ms": 480.0, "actor": "process", "proc": 1, "pid": 11, "step": "start + hello", "saw": "x 1"},
    {"t": 0.5, "ms": 120.0, "actor": "process", "proc": 1, "pid": 11, "step": "runtime.run_turn",
     "saw": "announced P1: blocked at the point"},
    {"t": 0.62, "ms": 9.0, "actor": "process", "proc": 1, "pid": 11, "step": "SIGKILL", "saw": "killed by SIGKILL"},
    {"t": 1.1, "actor": "oracle", "step": "effects_at_kill", "ok": False, "saw": f"1 start {INJECTED}"},
    {"t": 1.4, "actor": "harness", "step": "verdict", "ok": False, "saw": "failed: 1 of 9 checks failed"},
]


def sample(bundle: str | None = None) -> RunReport:
    clauses = [
        ClauseResult("LEDGER-VEC:x", "ledger.codec", "ledger", "passed"),
        crash("CRASH-P0-prefix-kill", "P0", "prefix", "kill", "passed"),
        crash("CRASH-P1-live-kill", "P1", "live-t1", "kill", "failed", message=f"failed: effects_at_kill {INJECTED}",
              evidence={"outcome": "failed", "trialId": "P1-live-t1-kill-s0-r0", "timeline": TIMELINE,
                        "bundle": bundle}),
        crash("CRASH-P2-live-kill", "P2", "live-t1", "kill", "failed", message="unreached: P2 never announced",
              evidence={"outcome": "unreached"}),
        crash("CRASH-P3-live-pause", "P3", "live-t1", "pause", "not_claimed", message="not claimed: faults"),
        crash("CRASH-P4-prefix-torn", "P4", "prefix", "torn", "not_run"),
        crash("CRASH-P5-live-thunder", "P5", "live-t1", "thunder", "error", message="worker crashed"),
    ]
    return RunReport(suite_version="0.1.0", implementation={"name": "impl", "version": "1",
                                                           "capabilities": ["store", "faults"]},
                     clauses=clauses, platform={"system": "Linux", "release": "6", "machine": "x86_64"},
                     started_at="2025-01-02T03:04:05Z")


#: What each crash clause of :func:`sample` must be drawn as.
SAMPLE_STATES = {"P0-prefix-kill-s0-r0": "passed", "P1-live-t1-kill-s0-r0": "failed",
                 "P2-live-t1-kill-s0-r0": "unreached", "P3-live-t1-pause-s0-r0": "not_claimed",
                 "P4-prefix-torn-s0-r0": "not_run", "P5-live-t1-thunder-s0-r0": "error"}


def _agree(html: str, markdown: str, states: dict[str, str]) -> list[dict[str, Any]]:
    """The picture and the table say the same, cell for cell, and what ``states`` says."""
    cells = svg_trials(crash_svg(html))
    assert {c["trial"]: c["outcome"] for c in cells} == states
    for cell in cells:
        assert cell["letter"] == LETTERS[cell["outcome"]] and cell["fill"] == hex_fill(FILLS[cell["outcome"]])
    columns, rows = markdown_grid(markdown)
    want = expected_letters(cells)
    assert set(rows) == {c["point"] for c in cells}
    for point, letters in rows.items():
        assert len(letters) == len(columns)
        for column, text in zip(columns, letters):
            fault, mode = column.split("/")
            assert text == want.get((point, fault, mode), ""), (point, column)
    return cells


def test_picture_and_table_agree_and_say_each_outcome() -> None:
    report = sample().finalized()
    html, md = render_html(report), render_markdown(report)
    cells = _agree(html, md, SAMPLE_STATES)
    order = [s.split('id="')[1].split('"')[0] for s in re.findall(r'<section id="[^"]+"', html)]
    assert order == ["summary", "levels", "capabilities", "crash-matrix", "failures", "clauses"]
    assert md.index("## Capabilities") < md.index("## Crash matrix") < md.index("## Failures")
    links = {c["trial"]: c["href"] for c in cells}
    assert links["P1-live-t1-kill-s0-r0"] == "#clause-CRASH-P1-live-kill"
    assert links["P2-live-t1-kill-s0-r0"] == "#clause-CRASH-P2-live-kill"
    assert links["P0-prefix-kill-s0-r0"] is None and links["P3-live-t1-pause-s0-r0"] is None
    for target in filter(None, links.values()):
        assert f'<article class="failure" id="{target[1:]}">' in html  # every link lands on its entry


def test_a_failing_crash_clause_shows_its_timeline_and_bundle(tmp_path: Path) -> None:
    bundle = tmp_path / "crash-bundles" / "P1-live-t1-kill-s0-r0"
    bundle.mkdir(parents=True)
    (bundle / "trial.json").write_text("{}")
    paths = write_reports(sample(str(bundle)), tmp_path)
    html = paths["html"].read_text(encoding="utf-8")
    entry = html.split('<article class="failure" id="clause-CRASH-P1-live-kill">', 1)[1].split("</article>", 1)[0]
    assert '<a href="crash-bundles/P1-live-t1-kill-s0-r0/trial.json">failure bundle</a>' in entry
    rows = re.findall(r"<tr class=\"([^\"]+)\"><td class=\"t\">\+([\d.]+) s</td><td class=\"who\">([^<]+)</td>", entry)
    assert rows == [("tl-process", "0.000", "process 1 (pid 11)"), ("tl-process", "0.500", "process 1 (pid 11)"),
                    ("tl-process", "0.620", "process 1 (pid 11)"), ("tl-bad", "1.100", "oracle"),
                    ("tl-bad", "1.400", "harness")]
    assert INJECTED not in html and "&lt;script&gt;" in entry
    other = html.split('<article class="failure" id="clause-CRASH-P2-live-kill">', 1)[1].split("</article>", 1)[0]
    assert "timeline" not in other  # no timeline recorded: none drawn
    _agree(html, paths["markdown"].read_text(encoding="utf-8"), SAMPLE_STATES)
    loaded = RunReport.from_json(paths["json"].read_text(encoding="utf-8"))
    assert [c.crash for c in loaded.clauses] == [c.crash for c in sample(str(bundle)).clauses]


def test_reports_without_crash_clauses_are_unchanged_and_never_import_crashlab() -> None:
    code = ("import sys; from conformance.reports import ClauseResult, RunReport, render_html, render_markdown; "
            "r = RunReport(suite_version='1', implementation={'name': 'x'}, "
            "clauses=[ClauseResult('A-1', 'store', 'durable', 'failed', message='m')]).finalized(); "
            "h = render_html(r); m = render_markdown(r); "
            "print('crash-matrix' in h, 'Crash matrix' in m, sorted(x for x in sys.modules if x.startswith('crashlab')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         cwd=Path(__file__).resolve().parents[3])
    assert out.stdout.strip() == "False False []"


def test_a_report_rebuilt_from_progress_events_keeps_its_crash_cells(tmp_path: Path) -> None:
    from conformance.certify import _report_from_events

    cell = {"point": "P1", "mode": "live-t1", "fault": "kill", "trialId": "P1-live-t1-kill-s0-r0"}
    events = tmp_path / "events.jsonl"
    events.write_text(json.dumps({"event": "clause", "clauseId": "CRASH-P1-live-kill", "outcome": "failed",
                                  "clause": {"capability": "faults", "level": "live", "title": "t", "spec": "s",
                                             "crash": cell}}) + "\n"
                      + json.dumps({"event": "clause", "clauseId": "LEDGER-VEC:x", "outcome": "passed",
                                    "clause": {"capability": "ledger.codec", "level": "ledger"}}) + "\n")
    report = _report_from_events(events, None)
    assert [c.crash for c in report.clauses] == [cell, None]
    md = render_markdown(report.finalized())
    assert "| P1 | **F** |" in md


def _platform(report: RunReport, system: str, outcomes: dict[str, str]) -> RunReport:
    clauses = []
    for c in report.clauses:
        if c.crash is not None and c.crash["trialId"] in outcomes:
            clauses.append(crash(c.clause_id, c.crash["point"], c.crash["mode"], c.crash["fault"],
                                 outcomes[c.crash["trialId"]]))
    return RunReport(suite_version="0.1.0", implementation=report.implementation, clauses=clauses,
                     platform={"system": system, "release": "", "machine": ""})


def test_matrix_merges_the_crash_grid_across_platforms(tmp_path: Path) -> None:
    base = sample()
    mac = _platform(base, "Darwin", {"P0-prefix-kill-s0-r0": "passed", "P1-live-t1-kill-s0-r0": "passed"})
    linux = _platform(base, "Linux", {"P0-prefix-kill-s0-r0": "passed", "P1-live-t1-kill-s0-r0": "failed"})
    files = []
    for name, r in (("mac.json", mac), ("linux.json", linux)):  # macOS first: the columns still put Linux first
        (tmp_path / name).write_text(r.to_json(), encoding="utf-8")
        files.append(str(tmp_path / name))
    outputs = {}
    for fmt in ("markdown", "text", "json", "html"):
        out = io.StringIO()
        assert cli(["matrix", *files, "--format", fmt], stdout=out) == 0
        outputs[fmt] = out.getvalue()
    columns, rows = markdown_grid(outputs["markdown"])
    assert columns == ["kill/prefix", "kill/live-t1"]
    assert rows == {"P0": ["PP", ""], "P1": ["", "FP"]}  # Linux then macOS in every cell
    assert "One letter per platform (Linux, macOS)" in outputs["markdown"]
    text = outputs["text"].split("crash matrix\n", 1)[1].splitlines()
    assert text[1].split() == ["P0", "PP", "."] and text[2].split() == ["P1", ".", "FP"] and outputs["text"].isascii()
    data = json.loads(outputs["json"])
    cell = next(c for c in data["crash"]["cells"] if c["point"] == "P1")
    assert [(t["platform"], t["outcome"]) for t in cell["trials"]] == [("Linux", "failed"), ("macOS", "passed")]
    assert data["cells"]  # the capability matrix is still there
    cells = svg_trials(crash_svg(outputs["html"]))
    p1 = sorted((c for c in cells if c["point"] == "P1"), key=lambda c: c["x"])
    assert [(c["platform"], c["outcome"], c["fill"]) for c in p1] == [
        ("Linux", "failed", hex_fill(FILLS["failed"])), ("macOS", "passed", hex_fill(FILLS["passed"]))]
    assert all(c["href"] is None for c in cells)  # the merged page has no failure entries to link to
    assert "<script" not in outputs["html"]


# --------------------------------------------------------------------------- a real run


#: The crash clauses certified against the mutant, and the outcome each must get.
CERTIFIED = {"P1-prefix-kill-s0-r0": "passed", "P1-live-t1-kill-s0-r0": "failed", "P2-live-t1-kill-s0-r0": "failed"}
KEYWORD = "CRASH-P1-prefix-kill or CRASH-P1-live-kill or CRASH-P2-live-kill"


@pytest.fixture(scope="module")
def certified(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if sys.platform == "win32":
        pytest.skip("POSIX SIGKILL semantics")
    where = tmp_path_factory.mktemp("mutant-certify")
    stale = where / "crash-bundles" / "P9-prefix-kill-s0-r0"  # a past run's bundle: certify removes it
    stale.mkdir(parents=True)
    (stale / "trial.json").write_text("{}")
    result = certify(" ".join(MUTANT_COMMAND), report_dir=where, workers=2, keyword=KEYWORD)
    assert result.harness_error is None, result.harness_error
    assert result.exit_code == 1
    return where


def test_a_certified_mutant_shows_its_red_cells(certified: Path) -> None:
    html = (certified / "report.html").read_text(encoding="utf-8")
    md = (certified / "report.md").read_text(encoding="utf-8")
    cells = _agree(html, md, CERTIFIED)
    data = json.loads((certified / "report.json").read_text(encoding="utf-8"))
    crash_clauses = [c for c in data["clauses"] if c["crash"]]
    assert {c["crash"]["trialId"]: c["outcome"] for c in crash_clauses} == CERTIFIED
    for cell in cells:  # the hover says the trial and the time the clause took
        clause = next(c for c in crash_clauses if c["crash"]["trialId"] == cell["trial"])
        assert cell["title"].startswith(f"{cell['trial']}: {cell['outcome']} in ")
        assert (cell["href"] == f"#clause-{clause['clause_id']}") == (cell["outcome"] == "failed")
    # every failing clause: its timeline, and a bundle crashlab replay can re-run
    for clause in (c for c in crash_clauses if c["outcome"] == "failed"):
        entry = html.split(f'id="clause-{clause["clause_id"]}">', 1)[1].split("</article>", 1)[0]
        assert '<table class="timeline">' in entry and "killed by SIGKILL" in entry
        link = re.search(r'<a href="([^"]+)">failure bundle</a>', entry)
        assert link and link.group(1) == f"crash-bundles/{clause['crash']['trialId']}/trial.json"
        assert json.loads((certified / link.group(1)).read_text())["trialId"] == clause["crash"]["trialId"]
    assert sorted(p.name for p in (certified / "crash-bundles").iterdir()) == [
        "P1-live-t1-kill-s0-r0", "P2-live-t1-kill-s0-r0"]  # this run's failures only
    levels = html.split('<section id="levels">', 1)[1].split("</section>", 1)[0]
    assert '<td><code>ledger</code></td><td><span class="badge b-not-selected">not selected</span>' in levels


@pytest.mark.skipif(browser() is None, reason=NO_BROWSER)
def test_a_real_browser_draws_the_certified_mutant(certified: Path, tmp_path: Path) -> None:
    page = certified / "report.html"
    cells = browser_cells(page, tmp_path)
    assert sorted(c["trial"] for c in cells) == sorted(CERTIFIED)  # one cell per trial
    for cell in cells:
        assert cell["fill"] == "rgb({}, {}, {})".format(*FILLS[CERTIFIED[cell["trial"]]]), cell
        assert cell["w"] > 20 and cell["h"] > 10 and cell["hit"] == cell["trial"], cell
    shot = screenshot(page, tmp_path / "report.png")
    for cell in cells_in_view(cells):
        rgb = shot.pixel(cell["x"] + 3, cell["y"] + cell["h"] / 2)
        assert close_to(rgb, FILLS[CERTIFIED[cell["trial"]]]), (cell["trial"], rgb)
