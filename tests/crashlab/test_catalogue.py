"""The crash-point catalogue (issue 6 item 1): every crash point of the protocol's failpoint
list is catalogued, ids are stable, and the transcribed tables agree with the spec sources."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import crashlab
from crashlab._lab.model import FAULTS, MODES

ROOT = Path(__file__).resolve().parents[2]


def test_every_protocol_failpoint_is_in_the_catalogue() -> None:
    data = json.loads((ROOT / "conformance" / "protocol" / "failpoints.json").read_text(encoding="utf-8"))
    covered = {fp for p in crashlab.catalogue() for fp in p.covers}
    missing = [f["id"] for f in data["failpoints"] if f["id"] not in covered]
    assert not missing, f"failpoints.json ids with no catalogue entry: {missing}"


def test_ids_are_unique_and_the_groups_are_complete() -> None:
    points = crashlab.catalogue()
    ids = [p.id for p in points]
    assert len(ids) == len(set(ids))
    assert ids[:12] == [f"P{n}" for n in range(12)]
    groups = {p.group for p in points}
    assert groups == {"phase0", "continuation", "storage", "recovery_bundle", "workspace", "reconciler"}
    for mode in ("inside_t1", "after_effect", "inside_t2", "after_t2", "inside_recovery_reconcile",
                 "inside_recovery_outcome", "inside_recovery_decision", "after_recovery_commit",
                 "inside_workspace_baseline", "after_workspace_baseline_commit"):
        assert mode in ids  # spec 30 §6.2
    for point in ("after_continuation_claim_committed", "after_run_created", "after_continuation_start_committed",
                  "after_terminal_event_committed", "after_terminal_header_committed"):
        assert point in ids  # spec 20 §4.9


@pytest.mark.parametrize("point", crashlab.catalogue(), ids=lambda p: p.id)
def test_every_entry_is_well_formed(point: crashlab.CrashPoint) -> None:
    assert point.spec and point.boundary and point.capability
    if point.unreachable:
        assert point.modes == ()
        return
    assert point.modes and set(point.modes) <= set(MODES)
    for mode in point.modes:
        assert set(point.faults(mode)) <= set(FAULTS) and "kill" in point.faults(mode)
        for short in point.protocols(mode):
            variant = crashlab.variant_of(mode, "legacy" if short == "legacy" else "t1_after_preflight_v1")
            assert point.allowed(variant), (point.id, variant)
            assert point.recovery(variant).get("repairIdempotent") is True


def test_phase0_prefixes_and_decisions_match_the_reference_catalogue() -> None:
    """spec 20 §2: the committedPrefix of each P-point and its required decision."""
    from maka_ref import FAILPOINTS
    from maka_ref._plan.phase0.failpoints import expected_phase0_decision

    for fp in FAILPOINTS:
        point = crashlab.crash_point(fp.id)
        assert point.raw["committedPrefix"] == fp.committed_prefix
        (state,) = point.allowed("prefix")
        want = expected_phase0_decision(fp.id)
        assert state["decision"]["disposition"] == want.disposition
        assert state["decision"]["rejectionReasons"] == list(want.rejection_reasons)
        assert state["decision"]["operations"] == list(want.operation_statuses)
        assert state["decision"]["replay"] == list(want.replay_labels)


def test_default_specs_cover_every_supported_cell_and_filter() -> None:
    specs = crashlab.default_specs()
    assert len({s.trial_id for s in specs}) == len(specs)
    assert {s.point for s in specs} == {p.id for p in crashlab.catalogue() if p.modes}
    few = crashlab.default_specs(points=["P3"], modes=["prefix"], faults=["kill"], trials=3, seed=7)
    assert [(s.seed, s.repetition) for s in few] == [(7, 0), (8, 1), (9, 2)]
    with pytest.raises(KeyError):
        crashlab.default_specs(points=["P99"])
