"""The crash matrix (issue 19): rows in catalogue order, columns taken from the data (any
fault name), one cell per trial, colour *and* letter per outcome, and a picture that stays
one well-formed offline SVG whatever the trial ids and messages hold."""

from __future__ import annotations

import re

import pytest

from crashlab._lab.crashmatrix import (
    MatrixTrial,
    build_matrix,
    render_markdown,
    render_svg,
    render_text,
)
from tests.conformance.report.support import (
    FILLS,
    LETTERS,
    crash_svg,
    hex_fill,
    markdown_grid,
    svg_trials,
)


def trial(point: str, fault: str, mode: str, outcome: str = "passed", rep: int = 0, **kw: object) -> MatrixTrial:
    return MatrixTrial(point, fault, mode, outcome, f"{point}-{mode}-{fault}-s{rep}-r{rep}", duration_s=1.25, **kw)


def page(svg: str) -> str:
    return f"<html><body>{svg}</body></html>"


def test_rows_follow_the_catalogue_and_unknown_points_come_last() -> None:
    m = build_matrix([trial("zz_new_point", "kill", "prefix"), trial("P3", "kill", "prefix"),
                      trial("inside_t1", "kill", "prefix"), trial("P0", "kill", "prefix")])
    assert m.rows == ["P0", "P3", "inside_t1", "zz_new_point"]


def test_columns_come_from_the_data_any_fault_name() -> None:
    m = build_matrix([trial("P0", "lightning", "live-t1"), trial("P0", "kill", "live-legacy"),
                      trial("P0", "kill", "prefix"), trial("P1", "torn", "live-t1"), trial("P1", "lightning", "prefix"),
                      trial("P1", "kill", "weird-mode")])
    # known faults in the catalogue's fault order, then new ones as they appear; known modes
    # first within a fault, then new ones
    assert m.columns == [("kill", "prefix"), ("kill", "live-legacy"), ("kill", "weird-mode"),
                         ("torn", "live-t1"), ("lightning", "prefix"), ("lightning", "live-t1")]
    columns, rows = markdown_grid("## Crash matrix\n\n" + render_markdown(m))
    assert columns == ["kill/prefix", "kill/live-legacy", "kill/weird-mode", "torn/live-t1", "lightning/prefix",
                       "lightning/live-t1"]
    assert rows == {"P0": ["P", "P", "", "", "", "P"], "P1": ["", "", "P", "P", "P", ""]}


def test_every_outcome_has_its_colour_and_letter_and_failures_stand_out() -> None:
    outcomes = ["passed", "failed", "unreached", "error", "not_claimed", "not_run"]
    m = build_matrix([trial(f"P{n}", "kill", "prefix", outcome) for n, outcome in enumerate(outcomes)])
    cells = {c["outcome"]: c for c in svg_trials(crash_svg(page(render_svg(m))))}
    for outcome in outcomes:
        assert cells[outcome]["fill"] == hex_fill(FILLS[outcome])
        assert cells[outcome]["letter"] == LETTERS[outcome]
    assert len({c["fill"] for c in cells.values()}) == len(outcomes)  # six distinct colours
    assert len({c["letter"] for c in cells.values()}) == len(outcomes)  # and six distinct letters
    md = render_markdown(m)
    assert "| P1 | **F** |" in md and "| P2 | **U** |" in md and "| P3 | **E** |" in md
    assert "| P0 | P |" in md and "| P4 | N |" in md and "| P5 | - |" in md
    assert "F failed" in md and "U unreached" in md and "N not claimed" in md and "- not run" in md


def test_repetitions_get_one_cell_each() -> None:
    m = build_matrix([trial("P3", "torn", "prefix", "passed", 0), trial("P3", "torn", "prefix", "failed", 1),
                      trial("P3", "torn", "prefix", "passed", 2)])
    cells = svg_trials(crash_svg(page(render_svg(m))))
    assert [c["trial"] for c in sorted(cells, key=lambda c: c["x"])] == [
        "P3-prefix-torn-s0-r0", "P3-prefix-torn-s1-r1", "P3-prefix-torn-s2-r2"]
    assert len({c["x"] for c in cells}) == 3 and len({c["y"] for c in cells}) == 1
    assert "| P3 | **PFP** |" in render_markdown(m)
    text = render_text(m)
    assert text.splitlines()[1].split() == ["P3", "PFP"] and text.isascii()


def test_a_cell_links_only_when_given_and_says_its_trial_and_time_on_hover() -> None:
    m = build_matrix([trial("P1", "kill", "live-t1", "failed", href="#trial-x", detail="effects_at_kill: 1 start"),
                      trial("P1", "kill", "prefix")])
    cells = {c["mode"]: c for c in svg_trials(crash_svg(page(render_svg(m))))}
    assert cells["live-t1"]["href"] == "#trial-x" and cells["prefix"]["href"] is None
    assert cells["live-t1"]["title"] == "P1-live-t1-kill-s0-r0: failed in 1.2 s — effects_at_kill: 1 start"
    assert cells["prefix"]["title"] == "P1-prefix-kill-s0-r0: passed in 1.2 s"


HOSTILE = "<script>alert(1)</script>\x01&\"'\ud800"


def test_the_picture_is_one_offline_wellformed_svg_whatever_the_text() -> None:
    m = build_matrix([trial("P0", "kill", "prefix", "failed", href=f"#{HOSTILE}", detail=HOSTILE),
                      MatrixTrial("P0", HOSTILE, "prefix", "passed", HOSTILE, 0.5)])
    svg = render_svg(m, title=HOSTILE)
    root = crash_svg(page(svg))  # parses as XML: nothing unescaped, no character XML refuses
    assert "<script" not in svg and "alert(1)</script>" not in svg
    assert not re.search(r"\b(?:https?:)?//", svg.replace("http://www.w3.org/2000/svg", ""))  # nothing fetched
    assert not re.search(r"\son\w+=", svg)  # no event handlers
    assert len(svg_trials(root)) == 2


def test_unknown_outcomes_are_refused() -> None:
    with pytest.raises(ValueError, match="unknown crash-matrix outcome"):
        MatrixTrial("P0", "kill", "prefix", "flaky", "t")


def test_no_trial_gives_no_grid() -> None:
    m = build_matrix([])
    assert m.rows == [] and m.columns == [] and render_markdown(m) == "No crash trial.\n"
    assert svg_trials(crash_svg(page(render_svg(m)))) == []
