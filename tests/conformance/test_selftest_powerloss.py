"""The self-test and the power-loss-only mutants (issue 15 item 3, ``docs/selftest.md``):
with FUSE each is killed by its power-loss clause; without it (here: turned off with
``CRASHLAB_NO_POWERLOSS=1``, which makes every power-loss clause *not run*) each is reported
*not gradable* with the reason — neither a survivor nor a kill — and left out of the score."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from conformance._cli.main import run
from conformance._selftest import MutantOutcome, SelftestResult
from crashlab._lab.powerloss.mount import ENV_OFF
from tests.crashlab.powerloss.support import needs_fuse

POWERLOSS_MUTANTS = ("crash-t1-synchronous-normal", "crash-private-directory-not-synced",
                     "crash-tool-output-not-synced", "crash-write-rename-not-synced")


def _selftest(tmp_path: Path, names: tuple[str, ...]) -> tuple[int, str, dict]:
    out, err = io.StringIO(), io.StringIO()
    code = run(["selftest", "--mutants", ",".join(names), "--variants", "none", "-n", "2", "--report-dir", str(tmp_path)],
               stdout=out, stderr=err)
    return code, out.getvalue() + err.getvalue(), json.loads((tmp_path / "selftest.json").read_text(encoding="utf-8"))


@needs_fuse
def test_every_power_loss_mutant_is_killed_by_its_power_loss_clause(tmp_path: Path) -> None:
    code, text, report = _selftest(tmp_path, POWERLOSS_MUTANTS)
    assert code == 0, text
    assert report["score"] == {"killed": 4, "total": 4, "ratio": 1.0, "survived": [], "errors": [], "notGradable": {}}
    for m in report["mutants"]:
        assert m["status"] == "killed", m
        assert m["killedBy"] and all("-powerloss" in c for c in m["killedBy"]), m  # no kill clause selected
    assert report["baseline"]["failures"] == {}  # the reference passes the same clauses


def test_without_fuse_they_are_not_gradable_never_survivors(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ENV_OFF, "1")
    code, text, report = _selftest(tmp_path, ("crash-write-rename-not-synced", "crash-jsonl-torn-tail-accepted"))
    assert code == 0, text  # nothing survived, nothing errored
    by_name = {m["name"]: m for m in report["mutants"]}
    assert by_name["crash-write-rename-not-synced"]["status"] == "not_gradable"
    assert by_name["crash-write-rename-not-synced"]["killedBy"] == []
    assert by_name["crash-jsonl-torn-tail-accepted"]["status"] == "killed"  # an ordinary mutant is still graded
    score = report["score"]
    assert (score["killed"], score["total"], score["survived"]) == (1, 1, [])
    assert score["notGradable"]["crash-write-rename-not-synced"].startswith("faults.powerloss: not run: turned off")
    assert "NOT GRADABLE: crash-write-rename-not-synced: faults.powerloss: not run" in text
    assert "mutation score: 1/1 = 100%" in text
    markdown = (tmp_path / "selftest.md").read_text(encoding="utf-8")
    assert "not gradable here: crash-write-rename-not-synced" in markdown


def test_a_not_gradable_mutant_is_outside_the_score() -> None:
    killed = MutantOutcome("a", "crash", "", "", "", {}, "killed", ["C-1"], clauses_run=1)
    ungraded = MutantOutcome("b", "crash", "", "", "", {}, "not_gradable", error="faults.powerloss: not run: no /dev/fuse")
    survived = MutantOutcome("c", "crash", "", "", "", {}, "survived", clauses_run=1)
    assert SelftestResult("default", "2", [killed, ungraded], ["C-1"]).score == 1.0
    both = SelftestResult("default", "2", [killed, ungraded, survived], ["C-1"])
    assert both.score == 0.5 and both.exit_code == 1 and [m.name for m in both.survivors] == ["c"]
