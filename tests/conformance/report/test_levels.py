"""The certification level rule of docs/levels.md (:func:`conformance.reports.compute_level`)."""

from __future__ import annotations

import pytest

from conformance.reports import (
    CAPABILITIES,
    LEVELS,
    ClauseResult,
    RunReport,
    compute_level,
    required_capabilities,
)

_LEVEL_OF = {
    "ledger.codec": "ledger", "ledger.resolver": "ledger", "ledger.plan": "ledger",
    "store": "durable", "store.continuation": "recovery", "runtime.loop": "live", "faults": "live",
    "runtime.repair": "recovery", "runtime.continuation": "recovery",
}


def clause(capability: str, outcome: str = "passed", *, level: str | None = None,
           cid: str | None = None) -> ClauseResult:
    return ClauseResult(cid or f"{capability.upper()}-001", capability,
                        level or _LEVEL_OF[capability], outcome)


def all_passing(*, skip: tuple[str, ...] = ()) -> list[ClauseResult]:
    return [clause(c) for c in CAPABILITIES if c not in skip]


def test_level_order_and_requirements_are_cumulative() -> None:
    assert LEVELS == ("ledger", "durable", "live", "recovery")
    assert set(required_capabilities("ledger")) == {"ledger.codec", "ledger.resolver",
                                                     "ledger.plan"}
    ledger = set(required_capabilities("ledger"))
    assert set(required_capabilities("durable")) == ledger | {"store"}
    assert set(required_capabilities("live")) == set(required_capabilities("durable")) | {
        "runtime.loop", "faults"}
    assert set(required_capabilities("recovery")) == set(CAPABILITIES)
    with pytest.raises(ValueError):
        required_capabilities("nope")


def test_everything_claimed_and_passing_reaches_recovery() -> None:
    verdict = compute_level(all_passing(), CAPABILITIES)
    assert verdict.level_reached == "recovery" and verdict.certified
    assert all(v == {"reached": True, "reasons": []} for v in verdict.per_level.values())


def test_nothing_claimed_reaches_nothing() -> None:
    verdict = compute_level([], [])
    assert verdict.level_reached is None and not verdict.certified
    reasons = verdict.per_level["ledger"]["reasons"]
    assert "ledger.codec: not claimed by the implementation" in reasons


def test_unclaimed_capability_blocks_its_level_and_all_above() -> None:
    claimed = [c for c in CAPABILITIES if c != "store"]
    clauses = [c if c.capability != "store" else clause("store", "not_claimed")
               for c in all_passing()]
    verdict = compute_level(clauses, claimed)
    assert verdict.level_reached == "ledger"
    assert verdict.per_level["durable"]["reasons"] == ["store: not claimed by the implementation"]
    for below, level in (("durable", "live"), ("live", "recovery")):
        assert not verdict.per_level[level]["reached"]
        assert verdict.per_level[level]["reasons"][0] == (
            f"requires level {below}, which was not reached")


def test_failure_at_ledger_blocks_every_level() -> None:
    clauses = all_passing() + [clause("ledger.resolver", "failed", cid="LEDGER-RESOLVE-014")]
    verdict = compute_level(clauses, CAPABILITIES)
    assert verdict.level_reached is None
    assert verdict.per_level["ledger"]["reasons"] == [
        "ledger.resolver: 1 failed (LEDGER-RESOLVE-014)"]
    assert all(not verdict.per_level[lvl]["reached"] for lvl in LEVELS)


@pytest.mark.parametrize("outcome", ["failed", "error"])
def test_failure_at_live_keeps_durable(outcome: str) -> None:
    clauses = all_passing() + [clause("faults", outcome, cid="FAULTS-P3")]
    verdict = compute_level(clauses, CAPABILITIES)
    assert verdict.level_reached == "durable"
    assert verdict.per_level["live"]["reasons"] == [f"faults: 1 {outcome} (FAULTS-P3)"]


def test_claimed_but_no_clause_ran() -> None:
    verdict = compute_level(all_passing(skip=("store",)), CAPABILITIES)
    assert verdict.level_reached == "ledger"
    assert verdict.per_level["durable"]["reasons"] == ["store: no clause ran"]


def test_not_run_clauses_make_a_level_uncertifiable() -> None:
    clauses = all_passing() + [clause("runtime.repair", "not_run", cid="REPAIR-9")]
    verdict = compute_level(clauses, CAPABILITIES)
    assert verdict.level_reached == "live"
    (reason,) = verdict.per_level["recovery"]["reasons"]
    assert reason.startswith("runtime.repair: 1 not run (REPAIR-9)")
    assert "cannot certify" in reason


def test_selected_subset_with_nothing_run_says_why() -> None:
    clauses = all_passing(skip=("runtime.loop", "faults", "runtime.repair",
                                "runtime.continuation"))
    clauses += [clause(c, "not_run") for c in ("runtime.loop", "faults")]
    verdict = compute_level(clauses, CAPABILITIES)
    assert verdict.level_reached == "durable"
    reasons = verdict.per_level["live"]["reasons"]
    assert any("runtime.loop: 1 not run" in r for r in reasons)
    assert "runtime.loop: no clause ran" in reasons


def test_clause_counts_only_from_its_own_level_up() -> None:
    # A codec clause tagged "recovery" failing blocks recovery, not ledger.
    clauses = all_passing() + [clause("ledger.codec", "failed", level="recovery", cid="C-R")]
    verdict = compute_level(clauses, CAPABILITIES)
    assert verdict.level_reached == "live"
    assert verdict.per_level["recovery"]["reasons"] == ["ledger.codec: 1 failed (C-R)"]


def test_many_failures_are_summarised() -> None:
    clauses = all_passing() + [clause("ledger.plan", "failed", cid=f"P-{i}") for i in range(5)]
    reasons = compute_level(clauses, CAPABILITIES).per_level["ledger"]["reasons"]
    assert reasons == ["ledger.plan: 5 failed (P-0, P-1, P-2, … (+2))"]


def test_unknown_capabilities_do_not_matter() -> None:
    clauses = all_passing() + [ClauseResult("X-1", "x.extra", "ledger", "failed")]
    assert compute_level(clauses, [*CAPABILITIES, "x.extra"]).level_reached == "recovery"


def test_harness_errors_certify_nothing() -> None:
    verdict = compute_level(all_passing(), CAPABILITIES, harness_errors=["worker gw1 died"])
    assert verdict.level_reached is None
    assert "harness error" in verdict.per_level["ledger"]["reasons"][0]


def test_run_report_finalized_agrees_with_compute_level() -> None:
    report = RunReport(suite_version="0.1.0",
                       implementation={"name": "x", "capabilities": list(CAPABILITIES)[:4]},
                       clauses=all_passing())
    final = report.finalized()
    assert report.level_reached is None and report.levels == {}  # not mutated
    assert final.level_reached == "durable"
    assert final.levels == compute_level(final.clauses, final.claimed).per_level
