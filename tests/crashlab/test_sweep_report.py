"""``crashlab sweep``'s reports of a known failing run (issue 19): the crash matrix picture in
``crashlab-sweep.html`` and its text table in ``crashlab-sweep.md`` agree cell for cell with
the trials, the mutant's red cells are where it broke, a failing trial is told as a timeline
(HTML and ``crashlab replay``), and a real headless browser draws one cell per trial in the
right colours (skipped, with the reason, where no browser is installed).

One small sweep (2 points × the kill fault × 3 modes = 6 trials, a few seconds) against the
mutant ``runtime-effect-before-t1`` is shared by the module.
"""

from __future__ import annotations

import io
import json
import re
import shlex
import sys
from pathlib import Path
from typing import Any

import pytest

from crashlab._lab.cli import main
from tests.conformance.report.support import (
    FILLS,
    LETTERS,
    MUTANT_COMMAND,
    MUTANT_POINTS,
    MUTANT_SWEEP,
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

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX SIGKILL semantics")


def _run(*argv: str) -> tuple[int, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(list(argv), out, err)
    return code, out.getvalue() + err.getvalue()


@pytest.fixture(scope="module")
def sweep(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    where = tmp_path_factory.mktemp("mutant-sweep")
    code, out = _run("sweep", "--impl", shlex.join(MUTANT_COMMAND), "--points", ",".join(MUTANT_POINTS),
                     "--fault", "kill", "-n", "2", "--report-dir", str(where))
    assert code == 1, out  # a trial failed
    assert "crashlab-sweep.html" in out
    return where, json.loads((where / "crashlab-sweep.json").read_text(encoding="utf-8"))


def _variant(spec: dict[str, Any]) -> str:
    if spec["mode"] == "prefix":
        return "prefix"
    return "live-t1" if spec["protocol"].startswith("t1") else "live-legacy"


def _raw(data: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"trial": t["trialId"], "point": t["spec"]["point"], "fault": t["spec"]["fault"],
             "mode": _variant(t["spec"]), "outcome": t["outcome"], "durationS": t["durationS"]} for t in data["trials"]]


def test_the_mutant_breaks_exactly_at_the_known_cells(sweep: tuple[Path, dict[str, Any]]) -> None:
    _, data = sweep
    assert {t["trialId"]: t["outcome"] for t in data["trials"]} == MUTANT_SWEEP


def test_picture_and_tables_agree_cell_for_cell(sweep: tuple[Path, dict[str, Any]]) -> None:
    where, data = sweep
    raw = _raw(data)
    cells = svg_trials(crash_svg((where / "crashlab-sweep.html").read_text(encoding="utf-8")))
    # one cell per trial, each saying what the trial's record says
    assert sorted(c["trial"] for c in cells) == sorted(t["trial"] for t in raw)
    by_id = {t["trial"]: t for t in raw}
    for cell in cells:
        trial = by_id[cell["trial"]]
        assert (cell["point"], cell["fault"], cell["mode"], cell["outcome"]) == (
            trial["point"], trial["fault"], trial["mode"], trial["outcome"])
        assert cell["letter"] == LETTERS[trial["outcome"]]
        assert cell["fill"] == hex_fill(FILLS[trial["outcome"]])
        assert cell["title"].startswith(f"{trial['trial']}: ")  # the hover: trial id and timing
        assert re.search(r" in \d+(\.\d)? m?s", cell["title"]), cell["title"]
    # the Markdown grid: same cells, same letters, rows in catalogue order
    columns, rows = markdown_grid((where / "crashlab-sweep.md").read_text(encoding="utf-8"))
    assert columns == ["kill/prefix", "kill/live-t1", "kill/live-legacy"]
    assert list(rows) == ["P1", "P2"]
    want = expected_letters(raw)
    for point, letters in rows.items():
        for column, text in zip(columns, letters):
            fault, mode = column.split("/")
            assert text == want.get((point, fault, mode), ""), (point, column)
    # and the picture's grid is the table's: same rows top to bottom, same columns left to right
    ys = {c["point"]: c["y"] for c in cells}
    assert ys["P1"] < ys["P2"]
    xs = {c["mode"]: c["x"] for c in cells if c["point"] == "P1"}
    assert xs["prefix"] < xs["live-t1"] < xs["live-legacy"]


def test_a_red_cell_links_to_its_timeline_and_bundle(sweep: tuple[Path, dict[str, Any]]) -> None:
    where, _ = sweep
    html = (where / "crashlab-sweep.html").read_text(encoding="utf-8")
    cells = {c["trial"]: c for c in svg_trials(crash_svg(html))}
    assert cells["P1-prefix-kill-s0-r0"]["href"] is None  # a passing cell links nowhere
    href = cells["P1-live-t1-kill-s0-r0"]["href"]
    assert href == "#trial-P1-live-t1-kill-s0-r0"
    entry = html.split(f'<article class="failure" id="{href[1:]}">', 1)[1].split("</article>", 1)[0]
    bundle = re.search(r'<a href="([^"]+)">failure bundle</a>', entry)
    assert bundle and (where / bundle.group(1)).is_file()  # relative to the page, and it exists
    assert json.loads((where / bundle.group(1)).read_text())["trialId"] == "P1-live-t1-kill-s0-r0"
    timeline = entry.split('<table class="timeline">', 1)[1]
    assert '<tr class="tl-bad"><td class="t">' in timeline and "effects_at_kill" in timeline
    assert "SIGKILL" in timeline and "killed by SIGKILL" in timeline


def test_a_failing_trial_is_recorded_as_a_timeline(sweep: tuple[Path, dict[str, Any]]) -> None:
    _, data = sweep
    trial = next(t for t in data["trials"] if t["trialId"] == "P1-live-t1-kill-s0-r0")
    steps = trial["evidence"]["timeline"]
    times = [s["t"] for s in steps]
    assert times == sorted(times) and times[0] >= 0 and times[-1] <= trial["durationS"] + 0.01
    first, kill = steps[0], next(s for s in steps if s["step"] == "SIGKILL")
    assert (first["actor"], first["proc"], first["step"]) == ("process", 1, "start + hello")
    assert (kill["proc"], kill["saw"]) == (1, "killed by SIGKILL")
    arm = next(s for s in steps if s["step"].startswith("faults.arm"))
    turn = next(s for s in steps if s["step"] == "runtime.run_turn")
    assert arm["step"] == "faults.arm P1#1" and turn["saw"].startswith("announced P1")
    assert arm["t"] <= turn["t"] <= kill["t"]
    # the oracle's steps are the trial's checks, in order, with what each saw
    oracle = [(s["step"], s["ok"]) for s in steps if s["actor"] == "oracle"]
    assert oracle == [(c["name"], c["ok"]) for c in trial["checks"]]
    assert ("effects_at_kill", False) in oracle
    reopened = [s for s in steps if s["actor"] == "process" and s["proc"] == 2]
    assert reopened and reopened[0]["t"] > kill["t"] and reopened[0]["pid"] != kill["pid"]
    assert steps[-1]["step"] == "verdict" and steps[-1]["ok"] is False and steps[-1]["saw"].startswith("failed")


def test_replay_prints_the_timeline(sweep: tuple[Path, dict[str, Any]]) -> None:
    where, _ = sweep
    code, out = _run("replay", str(where / "bundles" / "P2-live-t1-kill-s0-r0"))
    assert code == 1, out
    lines = out.split("timeline (seconds from the trial's start, who, step, what it saw):\n", 1)[1].splitlines()
    assert re.fullmatch(r"\s+\+0\.\d{3} s\s+process 1 \(pid \d+\)\s+start \+ hello\s+maka-ref .*", lines[0]), lines[0]
    assert any(re.fullmatch(r"\s+\+\d+\.\d{3} s\s+process 1 \(pid \d+\)\s+SIGKILL\s+killed by SIGKILL", ln)
               for ln in lines), out
    assert any(re.fullmatch(r"\s+\+\d+\.\d{3} s\s+oracle\s+allowed_prefix\s+FAILED\s+.+", ln) for ln in lines), out
    assert re.fullmatch(r"\s+\+\d+\.\d{3} s\s+harness\s+verdict\s+FAILED\s+failed: .+", lines[-1]), lines[-1]


@pytest.mark.skipif(browser() is None, reason=NO_BROWSER)
def test_a_real_browser_draws_one_cell_per_trial_in_the_mutants_colours(
        sweep: tuple[Path, dict[str, Any]], tmp_path: Path) -> None:
    where, _ = sweep
    page = where / "crashlab-sweep.html"
    cells = browser_cells(page, tmp_path)
    assert sorted(c["trial"] for c in cells) == sorted(MUTANT_SWEEP)  # one cell per trial, no more
    for cell in cells:
        outcome = MUTANT_SWEEP[cell["trial"]]
        assert cell["outcome"] == outcome
        assert cell["fill"] == "rgb({}, {}, {})".format(*FILLS[outcome]), cell
        assert cell["w"] > 20 and cell["h"] > 10 and cell["hit"] == cell["trial"], cell  # drawn, visible, on top
    shot = screenshot(page, tmp_path / "sweep.png")
    for cell in cells_in_view(cells):
        rgb = shot.pixel(cell["x"] + 3, cell["y"] + cell["h"] / 2)  # inside the cell, left of its letter
        assert close_to(rgb, FILLS[MUTANT_SWEEP[cell["trial"]]]), (cell["trial"], rgb)
    red = [c["trial"] for c in cells if close_to(shot.pixel(c["x"] + 3, c["y"] + c["h"] / 2), FILLS["failed"])]
    assert sorted(red) == ["P1-live-t1-kill-s0-r0", "P2-live-t1-kill-s0-r0"]
