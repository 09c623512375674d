"""Levels a run did not select are "not selected" (grey), never "not reached" (red) as if they
had failed (issue 19 item 3; docs/levels.md "Selections")."""

from __future__ import annotations

import io
from types import SimpleNamespace

from conformance._cli.summary import print_summary
from conformance.reports import (
    CAPABILITIES,
    LEVELS,
    ClauseResult,
    RunReport,
    compute_level,
    render_html,
    render_markdown,
)

_LEVEL_OF = {"ledger.codec": "ledger", "ledger.resolver": "ledger", "ledger.plan": "ledger", "store": "durable",
             "runtime.loop": "live", "faults": "live", "store.continuation": "recovery", "runtime.repair": "recovery",
             "runtime.continuation": "recovery"}


def passing(*capabilities: str) -> list[ClauseResult]:
    return [ClauseResult(f"{c.upper()}-001", c, _LEVEL_OF[c], "passed") for c in capabilities]


def report(clauses: list[ClauseResult], level: str | None = None, keyword: str | None = None) -> RunReport:
    return RunReport(suite_version="0.1.0", implementation={"name": "impl", "capabilities": list(CAPABILITIES)},
                     clauses=clauses, selection={"level": level, "keyword": keyword}).finalized()


def test_levels_above_the_selected_one_are_not_selected() -> None:
    r = report(passing("ledger.codec", "ledger.resolver", "ledger.plan", "store"), level="durable")
    assert r.level_reached == "durable"
    assert r.levels["ledger"] == {"reached": True, "reasons": []}
    for level in ("live", "recovery"):
        assert r.levels[level] == {"reached": False, "selected": False, "reasons": [
            "not selected: the run was limited to level durable (--level durable)"]}


def test_a_keyword_that_selects_no_clause_of_a_level_leaves_it_out() -> None:
    r = report(passing("store", "faults"), keyword="STORE or FAULTS")
    assert [r.levels[lvl].get("selected", True) for lvl in LEVELS] == [False, True, True, False]
    assert r.levels["ledger"]["reasons"] == ["not selected: -k STORE or FAULTS selected none of its clauses"]
    # a selected level above one left out is not reached, and says why without blaming it
    assert r.levels["durable"]["reasons"] == ["requires level ledger, which was not selected"]
    assert r.levels["live"]["reasons"][0] == "requires level durable, which was not reached"


def test_a_recovery_clause_of_a_lower_capability_keeps_its_level_selected() -> None:
    clauses = [ClauseResult("CRASH-P1-live-kill", "faults", "recovery", "failed")]
    r = report(clauses, keyword="CRASH-P1-live-kill")
    assert r.levels["recovery"].get("selected", True) is True  # one of its clauses ran (and failed)
    assert r.levels["live"].get("selected", True) is True  # the clause's capability is live's
    assert r.levels["ledger"]["selected"] is False and r.levels["durable"]["selected"] is False


def test_without_a_selection_nothing_is_left_out() -> None:
    clauses = passing("ledger.codec", "ledger.resolver", "ledger.plan")
    verdict = compute_level(clauses, CAPABILITIES)
    assert all("selected" not in info for info in verdict.per_level.values())
    assert verdict.per_level["durable"]["reasons"] == ["store: no clause ran"]
    r = report(clauses)
    assert r.levels == verdict.per_level


def test_reports_show_not_selected_in_grey_not_red() -> None:
    r = report(passing("ledger.codec", "ledger.resolver", "ledger.plan"), level="ledger")
    html = render_html(r)
    levels = html.split('<section id="levels">', 1)[1].split("</section>", 1)[0]
    assert levels.count('<span class="badge b-not-selected">not selected</span>') == 3
    assert "b-not-reached" not in levels and "not reached" not in levels
    assert ".b-not_claimed, .b-not-selected { color:var(--muted); background:var(--panel); }" in html
    md = render_markdown(r)
    assert "| `live` | not selected | not selected: the run was limited to level ledger (--level ledger) |" in md
    out = io.StringIO()
    print_summary(SimpleNamespace(reports=[r], report_paths={}), out)
    text = out.getvalue()
    assert "levels:  ledger yes   durable not selected   live not selected   recovery not selected" in text
    assert "not reached" not in text
