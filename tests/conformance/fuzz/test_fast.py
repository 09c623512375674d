"""``fuzz --search fast`` (issue 18 item 4, docs/fuzzing.md "Fast search"): the same ledger
strategies drawn by a seeded plain generator. Proven here: the same seed gives the same
ledgers (and another seed others); the fast draws reach every reachable code of the spec, as
the Hypothesis mode does; a planted disagreement (a mutant of the corpus) is found, its
bucket gets a bundle shrunk to at most ten events that replays against the mutant; the
example database keeps it for the next run and forgets it once fixed; a bad mode is a clear
harness error."""

from __future__ import annotations

import io
import json
import shlex
import sys
from pathlib import Path

import pytest

from conformance._cli.main import run
from conformance._fuzz import FuzzConfig, load_bundle, run_fuzz
from conformance._fuzz._coverage import measure_coverage
from conformance._fuzz._fast import draw_case
from conformance._fuzz._ledgers import LEDGER_KINDS, fuzz_ledgers

PY = shlex.quote(sys.executable)
REFERENCE = f"{PY} -m maka_ref.adapter"
LEDGER_MUTANT = f"{PY} -m maka_ref.adapter --mutant resolver-legacy-call-only-not-dispatched"


def test_the_same_seed_gives_the_same_ledgers_and_another_seed_others() -> None:
    strategy = fuzz_ledgers()
    first = [draw_case(strategy, 5, i) for i in range(40)]
    again = [draw_case(fuzz_ledgers(), 5, i) for i in range(40)]
    other = [draw_case(strategy, 6, i) for i in range(40)]
    assert first == again
    assert first != other
    assert {c.kind for c in first} == set(LEDGER_KINDS)  # every kind of the model, already in 40
    assert any(c.high_water is not None for c in first + other)


def test_fast_draws_reach_every_reachable_code() -> None:
    union = measure_coverage(1000, seed=0, generators=("union",), search="fast").generators["union"]
    assert union.examples == 1000
    assert union.missing() == []
    assert union.to_json()["unexpected"] == []


def test_a_planted_disagreement_is_found_shrunk_saved_and_forgotten_once_fixed(tmp_path: Path) -> None:
    db = tmp_path / "db"
    result = run_fuzz(FuzzConfig(impl=LEDGER_MUTANT, examples=300, seed=1, report_dir=str(tmp_path / "a"),
                                 database=str(db), properties=("ledger",), search="fast"), io.StringIO())
    assert result.harness_error is None and result.exit_code == 1
    assert result.summary["search"] == "fast"
    buckets = {(b["op"], b["path"]): b for b in result.summary["buckets"]}
    resolve = buckets[("ledger.resolve", "$.result.decisions[*].status")]
    assert resolve["shrink"] == "complete"
    bundle = load_bundle(resolve["bundle"])
    assert 1 <= len(bundle["input"]["events"]) <= 10
    assert bundle["diff"]["expected"] == "indeterminate" and bundle["diff"]["actual"] == "definitely_not_dispatched"
    assert run(["replay", resolve["bundle"], "--impl", LEDGER_MUTANT], stdout=io.StringIO()) == 1
    assert run(["replay", resolve["bundle"], "--impl", REFERENCE], stdout=io.StringIO()) == 0
    # the next run (another seed, one new example) meets the saved buckets first
    again = run_fuzz(FuzzConfig(impl=LEDGER_MUTANT, examples=1, seed=99, report_dir=str(tmp_path / "b"),
                                database=str(db), properties=("ledger",)), io.StringIO())
    assert set(buckets) <= {(b["op"], b["path"]) for b in again.summary["buckets"]}
    fixed = run_fuzz(FuzzConfig(impl=REFERENCE, examples=1, seed=99, report_dir=str(tmp_path / "c"),
                                database=str(db), properties=("ledger",)), io.StringIO())
    assert fixed.exit_code == 0
    assert not [p for p in db.rglob("*") if p.is_file()]


def test_an_unknown_search_mode_is_a_harness_error(tmp_path: Path) -> None:
    result = run_fuzz(FuzzConfig(search="quick", report_dir=str(tmp_path)), io.StringIO())
    assert result.exit_code == 2 and "unknown search mode 'quick'" in (result.harness_error or "")


def test_ctrl_c_in_a_fast_search_counts_only_what_was_checked_and_writes_every_bucket(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from conformance._fuzz._targets import ReferenceTarget

    calls = {"n": 0}
    original = ReferenceTarget.run

    def interrupted_at_the_third_chunk(self: ReferenceTarget, requests: list) -> list:
        calls["n"] += 1
        if calls["n"] == 3:
            raise KeyboardInterrupt
        return original(self, requests)

    monkeypatch.setattr(ReferenceTarget, "run", interrupted_at_the_third_chunk)
    result = run_fuzz(FuzzConfig(impl=LEDGER_MUTANT, examples=1000, seed=1, report_dir=str(tmp_path),
                                 properties=("ledger",), search="fast"), io.StringIO())
    assert result.exit_code == 130 and result.interrupted
    ledger = json.loads((tmp_path / "fuzz.json").read_text(encoding="utf-8"))["properties"]["ledger"]
    assert ledger["stopped"] == "interrupted" and ledger["examples"] == 256  # two chunks of 128 checked
    assert ledger["buckets"] and all(b["shrink"] == "not shrunk (interrupted)" for b in ledger["buckets"])
    assert all(Path(b["bundle"]).is_file() for b in ledger["buckets"])
