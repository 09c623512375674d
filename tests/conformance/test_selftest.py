"""``maka-conformance selftest`` (issue 7 item 2) at CI size: one fast mutant per layer must be
killed by its target clauses, and the JSON / Markdown reports must say so correctly."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from conformance._cli.main import run
from conformance._selftest import MutantOutcome, SelftestResult, list_mutants, list_variants, mutant_command

#: One fast mutant per layer, with a clause that must be among its killers.
CI_MUTANTS = {
    "codec-collation-dropped": "LEDGER-VEC:args-hash/",
    "resolver-parked-as-completed": "LEDGER-VEC:resolver/",
    "phase0-wrong-high-water": "LEDGER-VEC:phase0-plan/",
    "store-newer-schema-opened": "STORE-SCHEMA-001",
    "runtime-header-before-terminal": "RUNTIME-CRASH-P8-",
    "continuation-duplicate-user-message": "RECOVERY-RESUME-00",
    "crash-jsonl-torn-tail-accepted": "MUTANT-GAP-CRASH-001",
}


@pytest.fixture(scope="module")
def selftest(tmp_path_factory: pytest.TempPathFactory) -> tuple[int, str, dict, str]:
    out_dir = tmp_path_factory.mktemp("selftest")
    out, err = io.StringIO(), io.StringIO()
    code = run(["selftest", "--mutants", ",".join(CI_MUTANTS), "--variants", "none", "-n", "2", "--report-dir", str(out_dir)],
               stdout=out, stderr=err)
    report = json.loads((out_dir / "selftest.json").read_text(encoding="utf-8"))
    markdown = (out_dir / "selftest.md").read_text(encoding="utf-8")
    return code, out.getvalue() + err.getvalue(), report, markdown


def test_every_ci_mutant_is_killed(selftest: tuple[int, str, dict, str]) -> None:
    code, text, report, _ = selftest
    assert code == 0, text
    assert report["score"] == {"killed": len(CI_MUTANTS), "total": len(CI_MUTANTS), "ratio": 1.0, "survived": [],
                               "errors": [], "notGradable": {}}
    assert report["baseline"] == {"failures": {}, "error": None}
    by_name = {m["name"]: m for m in report["mutants"]}
    assert list(by_name) == [n for n in (m["name"] for m in list_mutants()) if n in CI_MUTANTS]
    for name, expected in CI_MUTANTS.items():
        m = by_name[name]
        assert m["status"] == "killed", m
        assert any(c.startswith(expected) for c in m["killedBy"]), (name, m["killedBy"])
        assert m["clausesRun"] >= len(m["killedBy"]) >= 1
        assert m["selection"]["keyword"], m


def test_the_report_lists_kills_per_clause(selftest: tuple[int, str, dict, str]) -> None:
    _, text, report, markdown = selftest
    clauses = report["clauses"]
    for m in report["mutants"]:
        for clause_id in m["killedBy"]:
            assert m["name"] in clauses[clause_id]
    assert report["clausesKillingNone"] == [c for c, names in clauses.items() if not names]
    assert report["clausesKillingNone"], "the target selections hold clauses that kill none of these mutants"
    assert f"mutation score: {len(CI_MUTANTS)}/{len(CI_MUTANTS)} = 100%" in text
    assert f"**{len(CI_MUTANTS)}/{len(CI_MUTANTS)} = 100%**" in markdown
    for name in CI_MUTANTS:
        assert f"`{name}`" in markdown
    assert "## Clauses that kill no mutant" in markdown


def test_a_survivor_fails_the_selftest_and_is_named(tmp_path: Path) -> None:
    killed = MutantOutcome("a", "codec", "10 §2", "X", "d", {"keyword": "X"}, "killed", ["C-1"], clauses_run=2)
    survived = MutantOutcome("b", "store", "30 §1", "Y", "d", {"keyword": "Y"}, "survived", [], clauses_run=1)
    result = SelftestResult("default", "2", [killed, survived], ["C-1", "C-2"])
    assert result.exit_code == 1 and result.score == 0.5
    assert result.kills_by_clause() == {"C-1": ["a"], "C-2": []}
    assert result.clauses_killing_none() == ["C-2"]
    paths = result.write(tmp_path)
    data = json.loads(paths["json"].read_text(encoding="utf-8"))
    assert data["score"]["survived"] == ["b"]
    assert "survived: b" in paths["markdown"].read_text(encoding="utf-8")
    errored = SelftestResult("default", "2", [MutantOutcome("c", "crash", "", "", "", {}, "error", error="boom")], [])
    assert errored.exit_code == 2


def test_unknown_mutant_is_a_usage_error() -> None:
    err = io.StringIO()
    assert run(["selftest", "--mutants", "nope"], stdout=io.StringIO(), stderr=err) == 2
    assert "unknown mutant(s): nope" in err.getvalue()


def test_list_and_command() -> None:
    out = io.StringIO()
    assert run(["selftest", "--list"], stdout=out, stderr=io.StringIO()) == 0
    lines = out.getvalue().splitlines()
    assert len(lines) == len(list_mutants()) + len(list_variants()) and len(list_mutants()) >= 30
    assert [line.split()[0] for line in lines if line.split()[1] == "variant"] == [v["name"] for v in list_variants()]
    assert mutant_command("x").endswith("-m maka_ref.adapter --mutant x")
