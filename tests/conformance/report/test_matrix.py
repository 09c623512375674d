"""Merging per-platform reports into the capability × platform matrix."""

from __future__ import annotations

import json

from conformance.reports import (
    CAPABILITIES,
    ClauseResult,
    RunReport,
    merge_matrix,
    render_matrix_markdown,
    render_matrix_text,
)


def report(system: str, claimed: list[str], outcomes: dict[str, list[str]]) -> RunReport:
    clauses = [ClauseResult(f"{cap}-{i}", cap, "ledger", outcome)
               for cap, outs in outcomes.items() for i, outcome in enumerate(outs)]
    return RunReport(suite_version="0.1.0",
                     implementation={"name": "impl", "version": "1", "capabilities": claimed},
                     clauses=clauses, platform={"system": system, "release": "", "machine": ""})


def test_cells_for_one_platform_and_missing_platforms() -> None:
    r = report("Linux", ["ledger.codec", "ledger.plan", "store", "faults"], {
        "ledger.codec": ["passed", "passed"],
        "ledger.plan": ["passed", "failed"],
        "store": [],
        "faults": ["passed", "not_run"],
        "runtime.repair": ["not_claimed"],
    })
    m = merge_matrix([r])
    assert m.platforms == ["Linux", "macOS", "Windows"]
    assert m.capabilities == ["ledger.codec", "ledger.plan", "store", "faults", "runtime.repair"]
    assert m.cell("ledger.codec", "Linux") == "supported"
    assert m.cell("ledger.plan", "Linux") == "failed"
    assert m.cell("store", "Linux") == "not run"  # claimed, no clause ran
    assert m.cell("faults", "Linux") == "not run"  # claimed, partly run
    assert m.cell("runtime.repair", "Linux") == "not claimed"
    assert all(m.cell(c, p) == "not run" for c in m.capabilities for p in ("macOS", "Windows"))


def test_darwin_is_macos_and_unknown_systems_are_appended() -> None:
    reports = [report("FreeBSD", ["store"], {"store": ["passed"]}),
               report("Darwin", ["store"], {"store": ["passed"]}),
               report("Windows", [], {"store": ["not_claimed"]})]
    m = merge_matrix(reports)
    assert m.platforms == ["Linux", "macOS", "Windows", "FreeBSD"]
    assert m.cells["store"] == {"Linux": "not run", "macOS": "supported",
                                "Windows": "not claimed", "FreeBSD": "supported"}


def test_same_platform_conflicts_failed_wins_then_supported() -> None:
    ok = report("Linux", ["store", "faults"], {"store": ["passed"], "faults": ["passed"]})
    bad = report("Linux", ["store", "faults"], {"store": ["error"], "faults": ["not_run"]})
    unclaimed = report("Linux", [], {"faults": ["not_claimed"]})
    for order in ([ok, bad, unclaimed], [unclaimed, bad, ok]):
        m = merge_matrix(order)
        assert m.cell("store", "Linux") == "failed"
        assert m.cell("faults", "Linux") == "supported"
    m = merge_matrix([unclaimed, report("Linux", ["faults"], {"faults": ["not_run"]})])
    assert m.cell("faults", "Linux") == "not run"  # not run beats not claimed
    assert len(m.sources["Linux"]) == 2


def test_capabilities_are_the_union_in_protocol_order() -> None:
    m = merge_matrix([report("Linux", ["zeta"], {"runtime.loop": ["passed"]}),
                      report("Darwin", ["alpha", "ledger.codec"], {})])
    assert m.capabilities == ["ledger.codec", "runtime.loop", "alpha", "zeta"]
    assert m.cell("alpha", "Linux") == "not claimed"
    assert m.cell("alpha", "macOS") == "not run"  # claimed, no clause


def test_not_certified_source() -> None:
    m = merge_matrix([report("Linux", [], {})])
    assert m.sources == {"Linux": ["impl 1: not certified"]}


def test_empty_merge() -> None:
    m = merge_matrix([])
    assert m.capabilities == [] and m.platforms == ["Linux", "macOS", "Windows"]


def test_json_and_renderings() -> None:
    full = {c: ["passed"] for c in CAPABILITIES}
    m = merge_matrix([report("Linux", list(CAPABILITIES), full),
                      report("Darwin", list(CAPABILITIES), {**full, "faults": ["failed"]})])
    data = json.loads(m.to_json())
    assert data["cells"]["faults"] == {"Linux": "supported", "macOS": "failed",
                                       "Windows": "not run"}
    assert data["sources"]["Linux"] == ["impl 1: level recovery"]
    assert data["sources"]["macOS"] == ["impl 1: level durable"]

    md = render_matrix_markdown(m)
    lines = md.splitlines()
    assert lines[0] == "| Capability | Linux | macOS | Windows |"
    assert "| `faults` | supported | **failed** | not run |" in lines

    text = render_matrix_text(m)
    rows = text.splitlines()
    assert rows[0].split() == ["capability", "Linux", "macOS", "Windows"]
    faults = next(r for r in rows if r.startswith("faults"))
    assert faults.split() == ["faults", "supported", "FAILED", "not", "run"]
    assert text.isascii()
    assert rows[2].index("supported") == rows[0].index("Linux")  # columns line up


def test_the_declared_durability_is_a_row_per_platform() -> None:
    """Issue 15 item 4: what "durable" meant on each platform, as each implementation declared it."""
    linux = report("Linux", ["store"], {"store": ["passed"]})
    linux.implementation["durability"] = {"sync": "fsync", "directorySync": True, "details": "WAL"}
    mac = report("Darwin", ["store"], {"store": ["passed"]})
    mac.implementation["durability"] = {"sync": "F_FULLFSYNC", "directorySync": True}
    silent = report("FreeBSD", ["store"], {"store": ["failed"]})  # declared nothing
    m = merge_matrix([linux, mac, silent])
    assert m.durability == {"Linux": "fsync, directories synced", "macOS": "F_FULLFSYNC, directories synced",
                            "Windows": "not run", "FreeBSD": "not declared"}
    markdown = render_matrix_markdown(m)
    assert ("| durability (declared) | fsync, directories synced | F_FULLFSYNC, directories synced | not run "
            "| not declared |") in markdown
    text = render_matrix_text(m)
    assert [line.split("  ")[0] for line in text.splitlines() if line.startswith("durability")] == ["durability (declared)"]
    assert "F_FULLFSYNC, directories synced" in text and "not declared" in text
    assert json.loads(m.to_json())["durability"]["FreeBSD"] == "not declared"
    from conformance._report._matrix import render_matrix_html
    assert "<td>durability (declared)</td><td>fsync, directories synced</td>" in render_matrix_html(m)
