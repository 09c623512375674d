"""Differential fuzzing (issue 7, docs/fuzzing.md): ``maka-conformance fuzz`` and ``replay``.

What is proven here: the reference fuzzed against itself finds nothing, raises nothing and
writes nothing outside its per-example workspaces; a planted disagreement (a mutant of the
corpus, ``python -m maka_ref.adapter --mutant NAME``) is found and shrunk to a ledger of at
most ten events, written as a bundle that replays (disagree against the mutant, agree against
the reference) and converts to a schema-valid golden vector that the reference passes; the
time budget is respected and still writes what was found; the optional ``batch`` operation
works, and an implementation without it is driven one request at a time. Issue 12: the search
keeps going after the first disagreement and reports one shrunk bundle per bucket (operation,
first differing path), each bucket shrunk on its own; an unclaimed capability is not searched;
Ctrl-C still writes every bucket; the example database replays saved buckets first.
"""

from __future__ import annotations

import io
import json
import os
import shlex
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conformance._cli.main import run
from conformance._fuzz import FuzzConfig, bundle_as_vector, load_bundle, run_fuzz

PY = shlex.quote(sys.executable)
REFERENCE = f"{PY} -m maka_ref.adapter"
LEDGER_MUTANT = f"{PY} -m maka_ref.adapter --mutant resolver-legacy-call-only-not-dispatched"
STORE_MUTANT = f"{PY} -m maka_ref.adapter --mutant store-generic-append-accepts-dispatch"

#: An implementation without ``batch``: the reference adapter with the operation removed.
NO_BATCH = '''
import maka_ref.adapter._dispatch as d
original = d.Dispatcher.__init__
def init(self, *args, **kwargs):
    original(self, *args, **kwargs)
    del self.table["batch"]
d.Dispatcher.__init__ = init
from maka_ref.adapter._server import main
main()
'''


def _files(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*") if p.is_file()}


def test_the_reference_against_itself_finds_nothing_raises_nothing_writes_nothing_outside(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    (cwd / "keep.txt").write_text("unchanged", encoding="utf-8")
    monkeypatch.chdir(cwd)
    monkeypatch.setenv("MAKA_FUZZ_DB", str(tmp_path / "db"))
    before = _files(tmp_path)
    out = io.StringIO()
    code = run(["fuzz", "--examples", "40", "--schedules", "6", "--seed", "20240601",
                "--report-dir", str(tmp_path / "report")], stdout=out, stderr=out)
    assert code == 0, out.getvalue()
    assert "seed 20240601" in out.getvalue()
    summary = json.loads((tmp_path / "report" / "fuzz.json").read_text(encoding="utf-8"))
    assert summary["seed"] == 20240601 and summary["bundles"] == [] and summary["strayFiles"] == []
    assert summary["batching"] is True and summary["restarts"] == 0
    assert summary["properties"]["ledger"]["examples"] >= 40 and summary["properties"]["schedule"]["examples"] >= 6
    assert summary["database"] == str(tmp_path / "db") and (tmp_path / "db").is_dir()
    # Nothing outside the report dir (which holds no workspace any more), the database and
    # Hypothesis's caches next to it.
    after = {f for f in _files(tmp_path) if not f.startswith(("report/", "db/", ".hypothesis-home/"))}
    assert after == before
    assert {f for f in _files(tmp_path / "report") if not f.startswith(".hypothesis/")} == {"fuzz.json"}
    assert (cwd / "keep.txt").read_text(encoding="utf-8") == "unchanged"


def _ledger_bundle(report: Path) -> Path:
    """The mutant's one bug shows in two operations: a bucket (and bundle) each."""
    result = run_fuzz(FuzzConfig(impl=LEDGER_MUTANT, examples=300, seed=1, report_dir=str(report),
                                 properties=("ledger",), time_budget=600), io.StringIO())
    assert result.harness_error is None and result.exit_code == 1
    buckets = {(b["op"], b["path"]): b for b in result.summary["buckets"]}
    assert set(buckets) == {("ledger.resolve", "$.result.decisions[*].status"),
                            ("ledger.plan", "$.result.operations[*].status")}, list(buckets)
    assert len(result.bundles) == 2 and all(b["shrink"] == "complete" for b in buckets.values())
    return Path(buckets["ledger.resolve", "$.result.decisions[*].status"]["bundle"])


def test_a_planted_disagreement_is_shrunk_replayed_and_becomes_a_vector(tmp_path: Path) -> None:
    """One search (it is the slow part), then everything a bundle must do."""
    ledger_bundle = _ledger_bundle(tmp_path)
    _found_and_shrunk_to_at_most_ten_events(ledger_bundle)
    _replays_disagree_against_the_mutant_and_agree_against_the_reference(ledger_bundle)
    _as_vector_prints_a_schema_valid_golden_vector_that_the_reference_passes(ledger_bundle)


def _found_and_shrunk_to_at_most_ten_events(ledger_bundle: Path) -> None:
    bundle = load_bundle(str(ledger_bundle))
    assert bundle["property"] == "ledger" and bundle["op"] == "ledger.resolve" and bundle["seed"] == 1
    assert 1 <= len(bundle["input"]["events"]) <= 10, (bundle.get("shrink"), len(bundle["input"]["events"]))
    assert bundle["diff"]["path"].startswith("$.result.decisions[") and bundle["diff"]["path"].endswith(".status")
    assert bundle["diff"] == {"path": bundle["diff"]["path"], "expected": "indeterminate",
                              "actual": "definitely_not_dispatched"}
    assert bundle["expected"]["ok"] and bundle["actual"]["ok"]
    assert bundle["implementation"]["command"] == shlex.split(LEDGER_MUTANT)
    assert bundle["implementation"]["handshake"]["implementation"]["name"] == "maka-ref"
    assert not bundle["referenceFailed"]


def _replays_disagree_against_the_mutant_and_agree_against_the_reference(ledger_bundle: Path) -> None:
    out = io.StringIO()
    started = time.monotonic()
    assert run(["replay", str(ledger_bundle)], stdout=out, stderr=out) == 1, out.getvalue()  # recorded command
    assert "DISAGREE" in out.getvalue() and "decisions[" in out.getvalue()
    assert run(["replay", str(ledger_bundle), "--impl", LEDGER_MUTANT], stdout=io.StringIO()) == 1
    out = io.StringIO()
    assert run(["replay", str(ledger_bundle), "--impl", REFERENCE], stdout=out, stderr=out) == 0, out.getvalue()
    assert "agree" in out.getvalue()
    assert time.monotonic() - started < 30  # seconds, not a search
    assert run(["replay", str(ledger_bundle.parent / "missing.json")], stdout=io.StringIO(), stderr=io.StringIO()) == 2
    assert run(["replay", str(ledger_bundle), "--impl", "/nonexistent/adapter"], stdout=io.StringIO(),
               stderr=io.StringIO()) == 2


def _as_vector_prints_a_schema_valid_golden_vector_that_the_reference_passes(ledger_bundle: Path) -> None:
    from jsonschema import Draft202012Validator

    from conformance.vectors import Vector, check_vector, iter_vectors, parse_json_text
    from maka_ref.adapter import run_vector_operation

    out = io.StringIO()
    assert run(["replay", str(ledger_bundle), "--as-vector"], stdout=out) == 0
    vector = json.loads(out.getvalue())
    schema = json.loads((Path(__file__).resolve().parents[3] / "conformance" / "vectors" / "vector.schema.json")
                        .read_text(encoding="utf-8"))
    validator = Draft202012Validator({"$ref": "#/$defs/vector", "$defs": schema["$defs"]})
    assert list(validator.iter_errors(vector)) == []
    assert vector["id"].startswith("resolver/fuzz-") and vector["operation"] == "resolve"
    assert vector["id"] not in {v.id for v in iter_vectors()}
    text = json.dumps(vector)  # read back as a vector file is read: double semantics
    data = parse_json_text(text)
    regression = Vector(group="resolver", id=data["id"], spec=data["spec"], description=data["description"],
                        operation=data["operation"], input=data["input"], expect=data["expect"])
    assert check_vector(regression, run_vector_operation) == []  # the reference passes its regression case


def test_a_schedule_disagreement_is_shrunk_and_replays(tmp_path: Path) -> None:
    result = run_fuzz(FuzzConfig(impl=STORE_MUTANT, schedule_examples=30, seed=3, report_dir=str(tmp_path), steps=8,
                                 properties=("schedule",)), io.StringIO())
    assert result.exit_code == 1 and result.bundles
    bundle = load_bundle(result.bundles[0])
    for path in result.bundles:  # the accepted dispatch, and what follows from it (one bucket each)
        other = load_bundle(path)
        assert other["property"] == "schedule" and other["op"] == "store.append"
        assert len(other["input"]["steps"]) <= 10
        assert other["expected"] == {"ok": False, "code": "reserved_tool_boundary_fact"}
        assert run(["replay", path], stdout=io.StringIO()) == 1
        assert run(["replay", path, "--impl", REFERENCE], stdout=io.StringIO()) == 0
    with pytest.raises(ValueError):
        bundle_as_vector(bundle)  # store behaviour has no vector operation
    assert run(["replay", result.bundles[0], "--as-vector"], stdout=io.StringIO(), stderr=io.StringIO()) == 2


def test_the_time_budget_is_respected_and_what_was_found_is_written(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MAKA_FUZZ_DB", str(tmp_path / "cache" / "db"))
    # Warm Hypothesis's caches first (a cold cache costs seconds before the first example).
    run_fuzz(FuzzConfig(examples=1, properties=("ledger",), seed=1, report_dir=str(tmp_path / "warm")), io.StringIO())
    started = time.monotonic()
    result = run_fuzz(FuzzConfig(impl=LEDGER_MUTANT, examples=1_000_000, schedule_examples=1_000_000, seed=11,
                                 report_dir=str(tmp_path / "r"), time_budget=12), io.StringIO())
    elapsed = time.monotonic() - started
    assert elapsed < 12 + 6, elapsed  # process start-up and the last example's round trip
    assert result.harness_error is None
    props = result.summary["properties"]
    assert props["schedule"]["stopped"] == "time budget"
    assert props["ledger"]["bundle"] is not None and result.bundles  # found within the budget, written
    assert Path(props["ledger"]["bundle"]).is_file()


def test_the_batch_operation_answers_each_request_as_if_sent_alone(tmp_path: Path) -> None:
    from conformance.protocol import validate_request, validate_response
    from crashlab import ProtocolClient

    requests = [{"op": "ledger.resolve", "params": {"events": []}}, {"op": "ledger.nope"},
                {"op": "batch", "params": {"requests": []}}, {"op": "hello", "params": {"protocol": 1}},
                {"op": "store.open", "params": {"workspace": str(tmp_path)}},
                {"op": "store.close", "params": {"workspace": str(tmp_path)}}]
    assert validate_request({"id": 1, "op": "batch", "params": {"requests": requests}}) == []
    with ProtocolClient.start(REFERENCE, cwd=str(tmp_path), validator=validate_response) as client:
        reply = client.call("batch", {"requests": requests})
        alone = client.call("ledger.resolve", {"events": []})
        refused = client.call("batch", {"requests": "no"})
    assert reply.ok
    responses = reply.result["responses"]
    assert responses[0] == {"ok": True, "result": alone.result}
    assert [r.get("error", {}).get("code") for r in responses[1:4]] == ["unknown_op", "invalid_params", "invalid_params"]
    assert responses[4]["ok"] and responses[5] == {"ok": True, "result": {}}
    assert not refused.ok and refused.code == "invalid_params"


def test_an_implementation_without_batch_is_driven_one_request_at_a_time(tmp_path: Path) -> None:
    script = tmp_path / "no_batch_adapter.py"
    script.write_text(NO_BATCH, encoding="utf-8")
    result = run_fuzz(FuzzConfig(impl=f"{PY} {shlex.quote(str(script))}", examples=15, schedule_examples=3, seed=5,
                                 report_dir=str(tmp_path / "r")), io.StringIO())
    assert result.exit_code == 0, result.summary
    assert result.summary["batching"] is False and result.bundles == []


def test_no_batch_flag_and_the_default_database_location(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MAKA_FUZZ_DB", raising=False)
    out = io.StringIO()
    code = run(["fuzz", "--examples", "5", "--schedules", "1", "--seed", "3", "--no-batch", "--only", "ledger",
                "--report-dir", str(tmp_path)], stdout=out, stderr=out)
    assert code == 0, out.getvalue()
    summary = json.loads((tmp_path / "fuzz.json").read_text(encoding="utf-8"))
    assert summary["batching"] is False and list(summary["properties"]) == ["ledger"]
    assert summary["database"] == os.path.join(str(tmp_path), ".hypothesis", "maka-fuzz")
    assert (tmp_path / ".hypothesis" / "maka-fuzz").is_dir()


def test_building_the_cli_parser_does_not_load_the_fuzz_machinery() -> None:
    """Every ``maka-conformance`` command builds the whole parser, fuzz subcommands included;
    the ``conformance._fuzz`` package loads its machinery (and Hypothesis) only on first use."""
    code = ("import sys; from conformance._cli.main import build_parser; build_parser(); "
            "import conformance._fuzz as fuzz; "
            "print([m for m in sys.modules if m.split('.')[0] == 'hypothesis' "
            "or m in ('conformance._fuzz._runner', 'conformance._fuzz._bundles')]); "
            "print(fuzz.DB_ENV, sorted(set(fuzz.__all__) - set(dir(fuzz))))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         cwd=Path(__file__).resolve().parents[3])
    assert out.stdout.splitlines() == ["[]", "MAKA_FUZZ_DB []"]


def test_a_run_ignores_constants_of_local_modules() -> None:
    """Same seed, same search whatever local code the process imported: during a run the
    fuzzer switches Hypothesis's local-constant pool off, and restores it afterwards."""
    from hypothesis.internal.conjecture import providers

    from conformance._fuzz._runner import _without_local_constants

    original = providers._get_local_constants
    restore = _without_local_constants()
    try:
        pool = providers._get_local_constants()
        assert len(pool) == 0
    finally:
        restore()
    assert providers._get_local_constants is original


TWO_BUGS = (f"{PY} -m maka_ref.adapter --mutant resolver-legacy-call-only-not-dispatched "
            f"--mutant phase0-wrong-high-water")


def test_an_implementation_with_two_bugs_gets_a_bucket_each_and_every_bundle_replays(tmp_path: Path) -> None:
    """Issue 12 item 3: the search goes on after the first disagreement, buckets them by
    operation and first differing path, shrinks one per bucket and reports every bucket."""
    from conformance._fuzz._buckets import path_pattern

    out = io.StringIO()
    result = run_fuzz(FuzzConfig(impl=TWO_BUGS, examples=60, seed=1, report_dir=str(tmp_path / "r"),
                                 properties=("ledger",)), out)
    assert result.exit_code == 1 and result.harness_error is None
    summary = json.loads((tmp_path / "r" / "fuzz.json").read_text(encoding="utf-8"))
    buckets = {(b["op"], b["path"]): b for b in summary["buckets"]}
    # bug 1 (a legacy call-only operation read as not dispatched) shows in resolve and plan;
    # bug 2 (the plan's high-water off by one) in plan only
    assert {("ledger.resolve", "$.result.decisions[*].status"),
            ("ledger.plan", "$.result.sourceRuntimeEventHighWater")} <= set(buckets), list(buckets)
    assert len(result.bundles) == len(buckets) == len(summary["properties"]["ledger"]["buckets"])
    for key in (("ledger.resolve", "$.result.decisions[*].status"), ("ledger.plan", "$.result.sourceRuntimeEventHighWater")):
        assert buckets[key]["shrink"] == "complete" and 1 <= buckets[key]["size"] <= 10, buckets[key]
    for (op, path), b in buckets.items():  # a rarer third one may stop at the shrink limit
        assert b["count"] >= 1 and (b["shrink"] == "complete" or b["shrink"].startswith("stopped at the shrink limit"))
        assert path_pattern(b["diff"]["path"]) == path and Path(b["bundle"]).is_file()
        assert f"in {op} at {path}: {b['count']} example(s); smallest {b['size']} events" in out.getvalue()
        bundle = load_bundle(b["bundle"])
        assert bundle["bucket"] == {"op": op, "path": path, "count": b["count"]} and bundle["op"] == op
        assert run(["replay", b["bundle"]], stdout=io.StringIO(), stderr=io.StringIO()) == 1  # recorded command
        assert run(["replay", b["bundle"], "--impl", REFERENCE], stdout=io.StringIO(), stderr=io.StringIO()) == 0
    assert "disagreement bucket(s)" in out.getvalue()


def test_an_unclaimed_capability_is_not_searched(tmp_path: Path) -> None:
    """Protocol §3: an operation of an unclaimed capability answers not_claimed, which is no
    disagreement; the fuzzer honours the handshake and says what it skipped."""
    out = io.StringIO()
    code = run(["fuzz", "--impl", f"{REFERENCE} --claim ledger.resolver", "--examples", "25", "--schedules", "3",
                "--seed", "4", "--report-dir", str(tmp_path)], stdout=out, stderr=out)
    assert code == 0, out.getvalue()
    summary = json.loads((tmp_path / "fuzz.json").read_text(encoding="utf-8"))
    assert set(summary["requests"]) == {"ledger.resolve"}  # no store traffic, no ledger.plan
    assert summary["buckets"] == [] and summary["bundles"] == []
    assert summary["properties"]["schedule"]["skipped"] == "store not claimed"
    assert summary["properties"]["ledger"]["ops"] == ["ledger.resolve"]
    assert summary["properties"]["ledger"]["skippedOps"] == {"ledger.plan": "ledger.plan not claimed"}
    assert "schedule: skipped (store not claimed)" in out.getvalue()


def test_ctrl_c_stops_the_run_and_still_writes_every_bucket_found(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    from conformance._fuzz._targets import ReferenceTarget

    calls = {"n": 0}
    original = ReferenceTarget.run

    def interrupted_at_the_40th_example(self: ReferenceTarget, requests: list) -> list:
        calls["n"] += 1
        if calls["n"] == 40:
            raise KeyboardInterrupt
        return original(self, requests)

    monkeypatch.setattr(ReferenceTarget, "run", interrupted_at_the_40th_example)
    out = io.StringIO()
    # one reference call per example is the Hypothesis mode's (``--search fast`` checks 128
    # ledgers per call; its own Ctrl-C test is in test_fast.py)
    result = run_fuzz(FuzzConfig(impl=TWO_BUGS, examples=1000, seed=1, report_dir=str(tmp_path),
                                 search="hypothesis"), out)
    assert result.exit_code == 130 and result.interrupted  # issue 13: SIGINT exits 130, report partial
    summary = json.loads((tmp_path / "fuzz.json").read_text(encoding="utf-8"))
    assert summary["interrupted"] is True
    ledger = summary["properties"]["ledger"]
    assert ledger["stopped"] == "interrupted" and ledger["examples"] == 40
    assert len(ledger["buckets"]) >= 2 and len(result.bundles) == len(ledger["buckets"])
    assert all(b["shrink"] == "not shrunk (interrupted)" and Path(b["bundle"]).is_file() for b in ledger["buckets"])
    assert summary["properties"]["schedule"]["skipped"] == "interrupted"
    assert "(interrupted)" in out.getvalue()


def test_the_example_database_replays_every_bucket_first_and_forgets_fixed_ones(tmp_path: Path) -> None:
    db = tmp_path / "db"
    first = run_fuzz(FuzzConfig(impl=LEDGER_MUTANT, examples=60, seed=1, report_dir=str(tmp_path / "a"),
                                database=str(db), properties=("ledger",)), io.StringIO())
    found = {(b["op"], b["path"]) for b in first.summary["buckets"]}
    assert ("ledger.resolve", "$.result.decisions[*].status") in found and any(db.rglob("*"))
    # another seed and a single new example: the buckets come from the database, first
    again = run_fuzz(FuzzConfig(impl=LEDGER_MUTANT, examples=1, seed=99, report_dir=str(tmp_path / "b"),
                                database=str(db), properties=("ledger",)), io.StringIO())
    assert {(b["op"], b["path"]) for b in again.summary["buckets"]} == found
    assert again.summary["properties"]["ledger"]["examples"] >= len(found)
    # the fixed implementation: nothing found, and the saved examples are dropped
    fixed = run_fuzz(FuzzConfig(impl=REFERENCE, examples=1, seed=99, report_dir=str(tmp_path / "c"),
                                database=str(db), properties=("ledger",)), io.StringIO())
    assert fixed.exit_code == 0 and fixed.summary["properties"]["ledger"]["examples"] >= 2  # replayed + new
    assert not [p for p in db.rglob("*") if p.is_file()]


def test_bucket_paths_ignore_array_indices() -> None:
    from conformance._fuzz._buckets import path_pattern

    assert path_pattern("$.result.decisions[12].reason") == "$.result.decisions[*].reason"
    assert path_pattern("$.steps[3].code") == "$.steps[*].code"
    assert path_pattern("$.projection.runs[0].toolOperations[1].version") == "$.projection.runs[*].toolOperations[*].version"
    assert path_pattern("$.ok") == "$.ok"


def test_each_bucket_is_shrunk_on_its_own_to_its_minimal_example() -> None:
    """Two independent "bugs" in one search over integer lists: an element above 100
    (bucket A) and a list longer than 5 (bucket B). Each bucket is shrunk to *its* minimal
    example; the shrinker never slides from one bucket into the other."""
    from hypothesis import given
    from hypothesis import seed as seed_
    from hypothesis import strategies as st

    from conformance._fuzz._buckets import BucketTracker, run_bucketed
    from conformance._fuzz._search import Disagreement

    def check(values: list[int]) -> list[Disagreement]:
        found = []
        if any(v > 100 for v in values):
            found.append(Disagreement("ledger", "big", "valid", {"values": values}, 0, 1,
                                      {"path": f"$.values[{len(values) - 1}]"}, size=(len(values), sum(values))))
        if len(values) > 5:
            found.append(Disagreement("ledger", "long", "valid", {"values": values}, 0, 1, {"path": "$.length"},
                                      size=(len(values), sum(values))))
        return found

    tracker = BucketTracker()

    def make_test(body, settings, key):  # type: ignore[no-untyped-def]
        def example(values: list[int]) -> None:
            tracker.start_example()
            body(values)

        test = settings(seed_(5)(given(st.lists(st.integers(0, 1000), max_size=12))(example)))
        test._hypothesis_internal_database_key = key
        return test

    outcome = run_bucketed(make_test, check, tracker, database=None, database_key=b"t", examples=300)
    buckets = {b.op: b for b in outcome.buckets}
    assert set(buckets) == {"big", "long"} and outcome.examples >= 300 and outcome.shrink_examples > 0
    assert all(b.shrink == "complete" and b.count >= 1 for b in buckets.values())
    assert buckets["big"].path == "$.values[*]"
    assert buckets["big"].result.input == {"values": [101]}
    assert buckets["long"].result.input == {"values": [0, 0, 0, 0, 0, 0]}


def test_a_store_without_a_scoped_rebuild_is_no_disagreement(tmp_path: Path) -> None:
    """Protocol §4.2: a store that rebuilds its projections only as a whole answers a
    session-scoped ``store.rebuild_projections`` with ``rebuild_scope_unsupported`` (upstream's
    public API has no session argument); the schedule search skips that step instead of
    reporting it (the legal variant ``upstream-choices`` makes that choice)."""
    out = io.StringIO()
    code = run(["fuzz", "--impl", f"{REFERENCE} --variant upstream-choices", "--only", "schedule", "--schedules", "12",
                "--seed", "11", "--report-dir", str(tmp_path)], stdout=out, stderr=out)
    assert code == 0, out.getvalue()
    summary = json.loads((tmp_path / "fuzz.json").read_text(encoding="utf-8"))
    assert summary["buckets"] == [] and summary["requests"].get("store.rebuild_projections", 0) > 0
