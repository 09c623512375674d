"""Coverage of the spec's codes by the ledger generators (issue 12 item 4, ``docs/fuzzing.md``
"Coverage"): 1,000 examples of the fuzzer's mix reach every reachable resolver reason, issue
code, plan diagnostic (and ``tool_ledger_corruption`` issue code), status, origin, disposition
and rejection reason; the same seed gives the same numbers; ``fuzz --coverage`` prints the
table and writes ``coverage.json``."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from conformance._cli.main import run
from conformance._fuzz._coverage import (CATEGORIES, UNREACHABLE, codes_of, measure_coverage, reachable,
                                         universe)


def test_a_thousand_examples_of_the_union_reach_every_reachable_code() -> None:
    report = measure_coverage(1000, seed=0, generators=("union",))
    union = report.generators["union"]
    assert union.examples == 1000
    assert union.missing() == []
    data = union.to_json()
    assert data["unexpected"] == []  # nothing outside the spec's vocabularies
    assert not set(UNREACHABLE) & set(union.counts)
    from maka_ref.testing.strategies import EDGE_FAMILIES

    assert set(data["families"]) <= set(EDGE_FAMILIES) and data["families"]


def test_the_same_seed_gives_the_same_numbers() -> None:
    first = measure_coverage(40, seed=7, generators=("edge", "truncated")).to_json()
    again = measure_coverage(40, seed=7, generators=("edge", "truncated")).to_json()
    assert first == again
    assert first["generators"]["edge"]["examples"] == 40


def test_codes_are_namespaced_by_category() -> None:
    resolution = {"decisions": [{"toolCallId": "c", "status": "completed", "reason": "matching_response",
                                 "settlementOrigin": "normal_t2"}],
                  "issues": [{"code": "identity_conflict", "eventId": "e"}], "hasCorruption": True,
                  "requiresReconciliation": False}
    plan = {"disposition": "blocked", "operations": [{"status": "succeeded"}],
            "diagnostics": [{"code": "tool_ledger_corruption", "detail": {"issueCode": "identity_conflict"}},
                            {"code": "tool_name_mismatch"}],
            "rejectionReasons": ["dangling_tool_state"]}
    assert codes_of(resolution, plan) == {
        "status:completed", "reason:matching_response", "origin:normal_t2", "issue:identity_conflict",
        "disposition:blocked", "opstatus:succeeded", "diag:tool_ledger_corruption",
        "diag-issue:identity_conflict", "diag:tool_name_mismatch", "rejection:dangling_tool_state"}
    assert set(UNREACHABLE) < set(universe()) and len(reachable()) == len(universe()) - len(UNREACHABLE)
    assert len(CATEGORIES["diag"][1]) == 11  # spec 20 §1.3


def test_the_cli_prints_the_table_and_writes_coverage_json(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    out = io.StringIO()
    code = run(["fuzz", "--coverage", "--examples", "30", "--seed", "3", "--report-dir", "report"],
               stdout=out, stderr=out)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report"]  # Hypothesis's caches too
    data = json.loads((tmp_path / "report" / "coverage.json").read_text(encoding="utf-8"))
    assert data["format"] == "maka-coverage/1" and data["seed"] == 3 and data["examplesPerGenerator"] == 30
    assert list(data["generators"]) == ["valid", "corrupted", "truncated", "edge", "union"]
    union = data["generators"]["union"]["codes"]
    assert code == (0 if union["reached"] == union["reachable"] else 1)
    for line in ("status", "reason", "diag-issue", "code pairs", "edge families", "unreachable by design"):
        assert line in out.getvalue()
    err = io.StringIO()
    assert run(["fuzz", "--coverage", "--impl", "x", "--report-dir", str(tmp_path)], stdout=io.StringIO(),
               stderr=err) == 2
    assert "do not apply" in err.getvalue()
