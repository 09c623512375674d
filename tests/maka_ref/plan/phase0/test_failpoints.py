"""Failpoints P0–P11 and the Phase 0 crash contract (spec 20 §2, §8 item 1).

The tables below are copied from spec 20 §2; the module's own data is compared against them,
never used to compute expectations.
"""

from __future__ import annotations

import copy

import pytest

from maka_ref._plan.phase0.failpoints import (
    COMMITTED_PREFIXES,
    EXPECTED_PHASE0_DECISIONS,
    FAILPOINT_IDS,
    FAILPOINTS,
    PREFIX_SIZES,
    Failpoint,
    expected_phase0_decision,
    failpoint,
    reference_crash_ledger,
    reference_event_id,
)
from maka_ref._plan.phase0.plan import build_resume_plan

#: spec 20 §2 catalogue: id → committedPrefix (exact).
SPEC_CATALOGUE = [
    ("P0", "before_function_call"),
    ("P1", "after_function_call"),
    ("P2", "after_function_call"),
    ("P3", "after_function_call"),
    ("P4", "after_function_call"),
    ("P5", "after_function_response"),
    ("P6", "after_function_response"),
    ("P7", "after_function_response"),
    ("P8", "after_function_response"),
    ("P9", "after_terminal_event"),
    ("P10", "after_terminal_event"),
    ("P11", "after_terminal_event"),
]

#: spec 20 §2 "Prefix sizes".
SPEC_PREFIX_SIZES = {
    "before_function_call": 1,
    "after_function_call": 2,
    "after_function_response": 3,
    "after_terminal_event": 4,
}

#: spec 20 §2 "Required decisions": disposition, op statuses, reasons, replay labels.
SPEC_DECISIONS = {
    "before_function_call": ("safe_replay", [], [], ["user"]),
    "after_function_call": ("blocked", ["indeterminate"], ["dangling_tool_state"], ["user"]),
    "after_function_response": ("safe_replay", ["succeeded"], [], ["user", "call", "response"]),
    "after_terminal_event": ("safe_replay", ["succeeded"], [], ["user", "call", "response", "terminal"]),
}

ALL = [fp_id for fp_id, _ in SPEC_CATALOGUE]


def test_item1_catalogue_ids_and_prefixes() -> None:
    """§8 item 1: ids exactly P0…P11 in order; distinct prefixes in order."""
    assert [fp.id for fp in FAILPOINTS] == [f"P{i}" for i in range(12)]
    assert FAILPOINT_IDS == tuple(f"P{i}" for i in range(12))
    assert [(fp.id, fp.committed_prefix) for fp in FAILPOINTS] == SPEC_CATALOGUE
    distinct = list(dict.fromkeys(fp.committed_prefix for fp in FAILPOINTS))
    assert distinct == ["before_function_call", "after_function_call", "after_function_response", "after_terminal_event"]
    assert COMMITTED_PREFIXES == tuple(distinct)


def test_catalogue_is_machine_readable() -> None:
    """§2: an ordered list of `{id, boundary, committedPrefix}`."""
    js = [fp.to_json() for fp in FAILPOINTS]
    assert all(list(row) == ["id", "boundary", "committedPrefix"] for row in js)
    assert js[0] == {"id": "P0", "boundary": "before tool preparation (T1)", "committedPrefix": "before_function_call"}
    assert js[11]["committedPrefix"] == "after_terminal_event"
    assert all(isinstance(row["boundary"], str) and row["boundary"] for row in js)
    assert failpoint("P8") == Failpoint("P8", "terminal RuntimeEvent commit", "after_function_response")


def test_prefix_sizes() -> None:
    assert dict(PREFIX_SIZES) == SPEC_PREFIX_SIZES
    assert list(PREFIX_SIZES) == list(COMMITTED_PREFIXES)


def test_expected_decision_table_is_the_spec_table() -> None:
    assert list(EXPECTED_PHASE0_DECISIONS) == list(SPEC_DECISIONS)
    for prefix, (disposition, statuses, reasons, labels) in SPEC_DECISIONS.items():
        row = EXPECTED_PHASE0_DECISIONS[prefix]
        assert row.committed_prefix == prefix
        assert row.disposition == disposition
        assert list(row.operation_statuses) == statuses
        assert list(row.rejection_reasons) == reasons
        assert list(row.replay_labels) == labels
        # §1.5: only an indeterminate operation requires verification.
        assert row.requires_verification is ("indeterminate" in statuses)
    assert expected_phase0_decision("P3") is EXPECTED_PHASE0_DECISIONS["after_function_call"]
    assert EXPECTED_PHASE0_DECISIONS["after_terminal_event"].replay_event_ids("P9") == (
        "user-P9",
        "call-P9",
        "response-P9",
        "terminal-P9",
    )


def test_full_reference_ledger_shape() -> None:
    """§2 reference ledger (legacy, no marker) with the failpoint identity; our ids/ts."""
    identity = {"sessionId": "session-P9", "invocationId": "invocation-run-P9", "runId": "run-P9", "turnId": "turn-run-P9"}
    assert reference_crash_ledger("P9") == [
        {"id": "user-P9", **identity, "ts": 1, "partial": False, "role": "user", "author": "user",
         "content": {"kind": "text", "text": "run the tool"}},
        {"id": "call-P9", **identity, "ts": 2, "partial": False, "role": "model", "author": "agent",
         "content": {"kind": "function_call", "id": "tool-1", "name": "Bash", "args": {"command": "touch marker"}}},
        {"id": "response-P9", **identity, "ts": 3, "partial": False, "role": "tool", "author": "tool",
         "content": {"kind": "function_response", "id": "tool-1", "name": "Bash", "result": {"exitCode": 0}}},
        {"id": "terminal-P9", **identity, "ts": 4, "partial": False, "role": "system", "author": "system",
         "status": "failed", "actions": {"endInvocation": True}},
    ]
    assert reference_event_id("P0", "terminal") == "terminal-P0"


def test_reference_ledger_returns_fresh_dicts() -> None:
    first = reference_crash_ledger("P5")
    first[0]["content"]["text"] = "changed"
    assert reference_crash_ledger("P5")[0]["content"]["text"] == "run the tool"


def test_unknown_failpoint_is_a_key_error() -> None:
    for bad in ("P12", "p0", "", None):
        with pytest.raises(KeyError):
            reference_crash_ledger(bad)  # type: ignore[arg-type]


@pytest.mark.parametrize("fp_id,prefix", SPEC_CATALOGUE)
def test_failpoint_phase0_decision(fp_id: str, prefix: str) -> None:
    """§2 "Required decisions" for every failpoint, plus: two projections are deep-equal,
    projecting does not change the ledger, any other expected high-water →
    runtime_offset_mismatch."""
    ledger = reference_crash_ledger(fp_id)
    size = SPEC_PREFIX_SIZES[prefix]
    labels = ["user", "call", "response", "terminal"][:size]
    assert [e["id"] for e in ledger] == [f"{label}-{fp_id}" for label in labels]
    for e in ledger:
        assert (e["sessionId"], e["invocationId"], e["runId"], e["turnId"]) == (
            f"session-{fp_id}",
            f"invocation-run-{fp_id}",
            f"run-{fp_id}",
            f"turn-run-{fp_id}",
        )

    stored = copy.deepcopy(ledger)
    plan = build_resume_plan(ledger)
    again = build_resume_plan(ledger)
    assert plan == again and plan.to_json() == again.to_json()
    assert ledger == stored

    disposition, statuses, reasons, replay_labels = SPEC_DECISIONS[prefix]
    assert plan.disposition == disposition
    assert [op.status for op in plan.operations] == statuses
    assert list(plan.rejection_reasons) == reasons
    assert [e["id"] for e in plan.replay_runtime_events] == [f"{label}-{fp_id}" for label in replay_labels]
    assert plan.source_runtime_event_high_water == size
    assert [e["id"] for e in plan.runtime_events] == [e["id"] for e in stored]
    if statuses:
        op = plan.operations[0]
        assert (op.tool_call_id, op.tool_name, op.args, op.call_runtime_event_id) == (
            "tool-1",
            "Bash",
            {"command": "touch marker"},
            f"call-{fp_id}",
        )
        if statuses == ["succeeded"]:
            assert (op.response_runtime_event_id, op.response_is_error) == (f"response-{fp_id}", False)
        else:
            assert op.response_runtime_event_id is None and op.response_is_error is None
    # §1.5: the unanswered legacy call's effect is unknown.
    assert plan.requires_verification is (statuses == ["indeterminate"])
    assert ("directive" in plan.to_json()) is plan.requires_verification

    # the module's table agrees
    expected = expected_phase0_decision(fp_id)
    assert plan.disposition == expected.disposition
    assert tuple(op.status for op in plan.operations) == expected.operation_statuses
    assert plan.rejection_reasons == expected.rejection_reasons
    assert tuple(e["id"] for e in plan.replay_runtime_events) == expected.replay_event_ids(fp_id)

    # [doc] any expected high-water different from the reopened prefix → runtime_offset_mismatch
    assert build_resume_plan(ledger, size).rejection_reasons == tuple(reasons)
    for other in (size - 1, size + 1):
        mismatched = build_resume_plan(ledger, other)
        assert mismatched.disposition == "blocked"
        assert mismatched.rejection_reasons[0] == "runtime_offset_mismatch"
        assert mismatched.diagnostics[0].code == "runtime_offset_mismatch"
        assert mismatched.diagnostics[0].detail == {
            "expectedRuntimeEventHighWater": other,
            "actualRuntimeEventHighWater": size,
        }


def test_all_failpoints_covered() -> None:
    assert ALL == list(FAILPOINT_IDS)
