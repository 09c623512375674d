"""The complete code tables of spec 20 §3.16 (and §3.9), checked as data against the spec text.

The spec file is read (read-only) from ``/work/shared/spec`` when present; the tuples in
``maka_ref._plan.continuation.codes`` must equal the backticked names of each listing, in
order. A static check also pins every park/reject code used by the package to the tables.
"""

from __future__ import annotations

import pathlib
import re

import pytest

from maka_ref._plan.continuation import codes

SPEC = pathlib.Path("/work/shared/spec/20-plan-continuation-repair.md")
PACKAGE = pathlib.Path(__file__).resolve().parents[4] / "maka_ref" / "_plan" / "continuation"


@pytest.fixture(scope="module")
def spec_text() -> str:
    if not SPEC.exists():
        pytest.skip("spec text not available")
    return SPEC.read_text(encoding="utf-8")


def _between(text: str, start: str, end: str) -> str:
    i = text.index(start) + len(start)
    return text[i : text.index(end, i)]


def _names(fragment: str) -> list[str]:
    return re.findall(r"`([a-z0-9_]+)`", fragment)


def test_rejection_reasons_exact(spec_text):
    section = _between(spec_text, "### 3.16 Complete code tables", "---")
    fragment = _between(section, "Rejection reasons (exact):", "(*declared")
    assert list(codes.REJECTION_REASONS) == _names(fragment)
    assert len(codes.REJECTION_REASONS) == 34
    assert "workspace_cwd_mismatch" not in codes.EMITTED_REJECTION_REASONS


def test_diagnostic_codes_exact(spec_text):
    section = _between(spec_text, "### 3.16 Complete code tables", "---")
    fragment = _between(section, "Diagnostic codes = all reasons above plus:", "(and `dangling_tool_state`")
    assert list(codes.DIAGNOSTIC_ONLY_CODES) == _names(fragment)
    assert "dangling_tool_state" not in codes.DIAGNOSTIC_CODES
    assert set(codes.DIAGNOSTIC_CODES) == (set(codes.REJECTION_REASONS) - {"dangling_tool_state"}) | set(
        codes.DIAGNOSTIC_ONLY_CODES)


def test_segment_block_reasons_and_failpoints(spec_text):
    section = _between(spec_text, "### 3.16 Complete code tables", "\n---")
    assert list(codes.SEGMENT_BLOCK_REASONS) == _names(_between(section, "Segment block reasons:", "\n\n"))
    assert list(codes.CONTINUATION_FAILPOINTS) == _names(section.split("Continuation failpoints:", 1)[1])
    # §3.3 step 4 mapping
    assert {k: codes.SEGMENT_BLOCK_TO_PLANNER_REASON[k] for k in codes.SEGMENT_BLOCK_REASONS} == {
        "tool_recovery_unsettled": "runtime_ledger_unreadable",
        "tool_recovery_corruption": "runtime_ledger_unreadable",
        "provider_replay_non_suffix_gap": "provider_replay_non_suffix_gap",
        "provider_replay_unsupported": "provider_replay_unsupported",
    }


def test_origin_table_codes_are_known(spec_text):
    section = _between(spec_text, "### 3.16 Complete code tables", "\n---")
    table = _between(section, "| code | produced by | kind |", "Segment block reasons:")
    first_column = re.findall(r"^\| `([a-z_]+)` \|", table, re.M)
    assert first_column and set(first_column) <= set(codes.REJECTION_REASONS) | set(codes.DIAGNOSTIC_ONLY_CODES)


def test_revalidation_codes(spec_text):
    fragment = _between(spec_text, "(`RuntimeContinuationRevalidationError`):", "Order (")
    assert list(codes.REVALIDATION_CODES) == _names(fragment)


def test_every_code_the_package_parks_with_is_in_the_tables():
    pattern = re.compile(r"(?:reject|park|LineageError|result)\(\s*\"([a-z_]+)\"")
    used: set[str] = set()
    for path in PACKAGE.glob("*.py"):
        used.update(pattern.findall(path.read_text(encoding="utf-8")))
    used.update({"continuation_claim_repair_required", "continuation_already_exists",
                 "continuation_started_indeterminate", "pending_permission", "workspace_location_changed"})
    assert len(used) > 25
    assert used <= set(codes.DIAGNOSTIC_CODES) | {"dangling_tool_state"}, used - set(codes.DIAGNOSTIC_CODES)


def test_package_is_pure_and_layered():
    """docs/architecture.md: the pure core imports no store/runtime layer and no I/O modules."""
    forbidden = re.compile(
        r"^\s*(?:from|import)\s+(?:maka_ref\._store|maka_ref\._runtime|maka_ref\._cli|maka_ref\._inspect|os\b|"
        r"sqlite3|time\b|random\b|subprocess|pathlib|socket)",
        re.M,
    )
    for path in PACKAGE.glob("*.py"):
        assert not forbidden.search(path.read_text(encoding="utf-8")), path.name
