"""The crash lab's trials inside the Phase 3 reconciler (spec-phase3 §5.6, §5.7; issue 16 item 3).

Real trials through :func:`crashlab.run_trial` against real adapter processes: every trial at
the three reconciler points passes on the reference; an implementation that does not claim
``runtime.reconcile`` gets them *not claimed*; a point listed but never fired is *unreached*;
and each of four broken reconcilers of the mutant corpus (``maka_ref/adapter/_mutants/reconcile.py``)
fails exactly the check that names its bug.
"""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import pytest

import crashlab
from crashlab import TrialSpec, run_trial

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX SIGKILL and SIGSTOP semantics")

T1 = "t1_after_preflight_v1"
POINTS = ("reconcile_after_observation", "reconcile_after_decision", "reconcile_inside_bundle")
REFERENCE = (sys.executable, "-m", "maka_ref.adapter")

#: The reference, except that arming a reconciler point does nothing (it still lists them).
SILENT_RECONCILER = textwrap.dedent('''
    import sys
    from maka_ref.adapter import _faults
    original = _faults.arm
    def arm(params):
        if str(params.get("failpoint", "")).startswith("reconcile_"):
            return {"armed": params["failpoint"]}
        return original(params)
    _faults.arm = arm
    from maka_ref.adapter._server import main
    main(sys.argv[1:])
''')


def mutant(name: str) -> tuple[str, ...]:
    return (*REFERENCE, "--mutant", name)


def failed(result: crashlab.TrialResult) -> dict[str, str]:
    return {c.name: c.detail for c in result.failed_checks}


def test_the_catalogue_lists_the_reconciler_points_with_kill_and_race() -> None:
    points = [p for p in crashlab.catalogue() if p.group == "reconciler"]
    assert [p.id for p in points] == list(POINTS)
    assert all(p.failpoint == p.id and not p.unreachable for p in points)
    assert [p.faults("live") for p in points] == [("kill", "race"), ("kill", "pause", "race"), ("kill", "race")]
    assert all(p.protocols("live") == ("t1",) and p.capabilities("live")[0] == "runtime.reconcile" for p in points)
    specs = crashlab.default_specs(points=POINTS)
    assert sorted(s.trial_id for s in specs) == sorted(
        [f"{p}-live-t1-{f}-s0-r0" for p in POINTS for f in ("kill", "race")]
        + ["reconcile_after_decision-live-t1-pause-s0-r0"])
    setups = {s["id"]: s for s in points[0].mode_info("live")["setups"]}
    assert {k: (v["crash"], v["settles"]["outcome"]) for k, v in setups.items()} == {
        "expected": ("P4", "completed"), "prior": ("P2", "parked"), "outside": ("P4", "parked")}


@pytest.mark.parametrize("point", POINTS)
def test_a_kill_at_each_point_then_a_second_kill_then_one_settlement_passes_on_the_reference(point: str) -> None:
    result = run_trial(TrialSpec(point, "live", "kill", protocol=T1), timeout=120)
    assert result.outcome == "passed", (result.message, result.stderr_tail[-2000:])
    names = [c.name for c in result.checks]
    # per setup (expected, prior, outside): the tool's kill and two reconciler kills, each proved real
    assert names.count("kill_was_real") == 9
    assert names.count("settled_once") == 3 and names.count("nothing_committed") == 6
    assert names.count("setup_effects") == 3 and names.count("projection_consistent") == 3
    assert {"bundle_whole", "target_untouched", "effect_log", "reconcile_idempotent", "repair_idempotent",
            "resume_outcome", "outside_write_survives", "no_survivors"} <= set(names)
    killed = [c.detail for c in result.checks if c.name == "kill_was_real" and "inside runtime.re" in c.detail]
    assert len(killed) == 6 and all("returncode -9" in d for d in killed)
    # first inside runtime.reconcile at the point, then inside a reconciling repair at the next point
    after = POINTS[(POINTS.index(point) + 1) % len(POINTS)]
    assert [d.split(":")[0] for d in killed] == [f"kill at {point}#1 inside runtime.reconcile",
                                                f"kill at {after}#1 inside runtime.repair"] * 3
    settled = [c.detail for c in result.checks if c.name == "settled_once"]
    assert [d.split("] ")[1] for d in settled] == ["one completed bundle (reconcile_matches_expected_state)",
                                                   "one parked bundle (reconcile_matches_prior_state)",
                                                   "one parked bundle (reconcile_diverged)"]
    resumed = [c.detail for c in result.checks if c.name == "resume_outcome"]
    assert ["parked=False" in d for d in resumed] == [True, False, False]  # only a completed op is continued past


@pytest.mark.parametrize("point", POINTS)
def test_two_reconcilers_racing_at_each_point_leave_one_bundle_on_the_reference(point: str) -> None:
    result = run_trial(TrialSpec(point, "live", "race", protocol=T1), timeout=120)
    assert result.outcome == "passed", (result.message, result.stderr_tail[-2000:])
    assert {"stopped_at_point", "one_bundle", "loser_commits_nothing", "target_untouched", "effect_log",
            "no_survivors"} <= {c.name for c in result.checks}
    answers = result.evidence["reconciler"]["race"]["answers"]
    assert sorted(a["claim"] for a in answers.values()) == ["already_settled", "completed"]
    # stopped inside its bundle transaction, A holds the write lock: B waits and A wins
    if point == "reconcile_inside_bundle":
        assert answers["A"]["claim"] == "completed" and result.evidence["reconciler"]["race"]["bWaitedOnA"]


def test_a_late_t2_of_a_stopped_tool_after_the_reconciler_settled_is_refused_on_the_reference() -> None:
    result = run_trial(TrialSpec("reconcile_after_decision", "live", "pause", protocol=T1), timeout=120)
    assert result.outcome == "passed", (result.message, result.stderr_tail[-2000:])
    names = [c.name for c in result.checks]
    assert names.count("stopped_at_point") == 1 and names.count("kill_was_real") == 1
    assert {"nothing_committed", "settled_once", "late_writer_rejected", "target_untouched", "effect_log"} <= set(names)
    late = result.evidence["reconciler"]["pause"]["lateReply"]
    # the reference fails the late turn closed: its T2 collides with the bundle's outcome id
    assert late["kind"] == "reply" and late["status"] == "failed" and late["error"]["code"] == "t2_failed"


@pytest.mark.parametrize("fault", ["kill", "race", "pause"])
def test_an_implementation_without_runtime_reconcile_is_not_claimed(fault: str) -> None:
    claims = [arg for cap in ("store", "runtime.loop", "runtime.repair", "runtime.continuation", "faults")
              for arg in ("--claim", cap)]
    spec = TrialSpec("reconcile_after_decision", "live", fault, protocol=T1, command=(*REFERENCE, *claims))
    result = run_trial(spec, timeout=60)
    assert result.outcome == "not_claimed" and "runtime.reconcile" in result.message
    assert not result.failed_checks


def test_a_reconciler_point_that_never_fires_is_unreached(tmp_path: Path) -> None:
    wrapper = tmp_path / "silent_reconciler.py"
    wrapper.write_text(SILENT_RECONCILER, encoding="utf-8")
    result = run_trial(TrialSpec("reconcile_after_observation", "live", "kill", protocol=T1,
                                 command=(sys.executable, str(wrapper))), timeout=90)
    assert result.outcome == "unreached"
    assert "reconcile_after_observation" in result.message and "without announcing" in result.message


def test_a_reconciler_that_rewrites_the_file_fails_target_untouched(tmp_path: Path) -> None:
    spec = TrialSpec("reconcile_after_decision", "live", "kill", protocol=T1,
                     command=mutant("runtime-reconcile-rewrites-file"))
    result = run_trial(spec, timeout=120, bundle_dir=tmp_path)
    assert result.outcome == "failed"
    assert "notes.txt changed" in failed(result)["target_untouched"]
    assert result.bundle and (Path(result.bundle) / "trial.json").exists()


def test_a_reconciler_that_completes_a_prior_state_fails_settled_once() -> None:
    spec = TrialSpec("reconcile_after_observation", "live", "kill", protocol=T1,
                     command=mutant("runtime-reconcile-prior-state-completes"))
    result = run_trial(spec, timeout=120)
    assert result.outcome == "failed"
    assert failed(result)["settled_once"].startswith("[prior: Edit killed at P2]")
    assert "required {'outcome': 'parked'" in failed(result)["settled_once"]


def test_a_racing_loser_that_claims_the_bundle_fails_loser_commits_nothing() -> None:
    spec = TrialSpec("reconcile_after_decision", "live", "race", protocol=T1,
                     command=mutant("runtime-reconcile-loser-claims-completed"))
    result = run_trial(spec, timeout=120)
    assert result.outcome == "failed"
    assert set(failed(result)) == {"loser_commits_nothing"}  # the store still holds one bundle
    assert "2 reconcilers report committing a bundle" in failed(result)["loser_commits_nothing"]


def test_a_bundle_committed_in_two_transactions_is_caught_by_a_kill_inside_it() -> None:
    spec = TrialSpec("reconcile_inside_bundle", "live", "kill", protocol=T1,
                     command=mutant("crash-reconcile-bundle-not-atomic"))
    result = run_trial(spec, timeout=120)
    assert result.outcome == "failed"
    bad = failed(result)
    assert "a partial or repeated bundle" in bad["bundle_whole"] and "nothing_committed" in bad
    # the same broken build passes every trial that kills nowhere inside the bundle
    clean = run_trial(TrialSpec("reconcile_after_observation", "live", "race", protocol=T1,
                                command=mutant("crash-reconcile-bundle-not-atomic")), timeout=120)
    assert clean.outcome == "passed", clean.message


def test_the_default_sweep_runs_them_and_a_sweep_against_a_broken_reconciler_fails(tmp_path: Path) -> None:
    """``crashlab sweep`` with no point filter lists the seven reconciler trials; a sweep of the
    reconciler group against the non-atomic bundle exits 1 with that kill trial failed."""
    import io
    import json
    import shlex

    from crashlab._lab.cli import main

    out = io.StringIO()
    assert main(["sweep", "--list"], out, io.StringIO()) == 0
    listed = [line for line in out.getvalue().splitlines() if line.startswith("reconcile_")]
    assert len(listed) == 7
    out, err = io.StringIO(), io.StringIO()
    code = main(["sweep", "--impl", shlex.join(mutant("crash-reconcile-bundle-not-atomic")), "--points",
                 "reconcile_inside_bundle", "--fault", "kill", "--report-dir", str(tmp_path)], out, err)
    assert code == 1, out.getvalue() + err.getvalue()
    report = json.loads((tmp_path / "crashlab-sweep.json").read_text(encoding="utf-8"))
    assert {t["trialId"]: t["outcome"] for t in report["trials"]} == {
        "reconcile_inside_bundle-live-t1-kill-s0-r0": "failed"}
    assert "| reconcile_inside_bundle | **F** |" in (tmp_path / "crashlab-sweep.md").read_text(encoding="utf-8")
    assert (tmp_path / "bundles" / "reconcile_inside_bundle-live-t1-kill-s0-r0" / "trial.json").exists()
