"""The ``powerloss`` and ``powerloss-torn`` faults in trials, sweeps, replays and clauses
(issue 15 item 2): the reference passes with the very oracles of ``kill``; a build that does
not fsync its commits passes every kill and fails the power cut, and its bundle replays the
failure; where FUSE is missing (here: turned off) the trials are "not run", never passed."""

from __future__ import annotations

import io
import json
import re
import shlex
import sys
import textwrap
from pathlib import Path

import pytest

from crashlab import TrialSpec, run_trial
from crashlab._lab.cli import main
from crashlab._lab.powerloss.mount import ENV_OFF

from .support import needs_fuse

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX SIGKILL semantics")

#: A representative set: the committed prefix before T1 (P0), inside the tool (P3), a settled
#: tool before the next (P7), resume (P11), a continuation point, inside T1, the effect marker.
POINTS = "P0,P3,P7,P11,after_continuation_start_committed,inside_t1,after_effect"

#: The reference with its commits not synced (``PRAGMA synchronous = OFF``): every kill passes
#: (the page cache survives a SIGKILL), a power cut loses what the store had committed.
UNSYNCED = textwrap.dedent('''
    import sqlite3, sys
    _connect = sqlite3.connect
    class Unsynced(sqlite3.Connection):
        def execute(self, sql, *args):
            if sql.replace(" ", "").lower().startswith("pragmasynchronous="):
                sql = "PRAGMA synchronous = OFF"
            return super().execute(sql, *args)
    def connect(*args, **kwargs):
        kwargs.setdefault("factory", Unsynced)
        return _connect(*args, **kwargs)
    sqlite3.connect = connect
    from maka_ref.adapter._server import main
    main(sys.argv[1:])
''')


def _cli(*argv: str) -> tuple[int, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(list(argv), out, err)
    return code, out.getvalue() + err.getvalue()


def _trials(report_dir: Path) -> list[dict]:
    return json.loads((report_dir / "crashlab-sweep.json").read_text())["trials"]


@needs_fuse
@pytest.mark.parametrize("fault", ["powerloss-torn"])  # powerloss: every point, below
def test_sweep_passes_on_the_reference_at_representative_points(tmp_path: Path, fault: str) -> None:
    code, out = _cli("sweep", "--fault", fault, "--points", POINTS, "-n", "2", "--report-dir", str(tmp_path / "cut"))
    assert code == 0, out
    trials = _trials(tmp_path / "cut")
    assert len(trials) == 15 and {t["outcome"] for t in trials} == {"passed"}, out
    code, out = _cli("sweep", "--fault", "kill", "--points", POINTS, "-n", "2", "--report-dir", str(tmp_path / "kill"))
    assert code == 0, out
    kill_checks = {t["trialId"].replace("-kill-", f"-{fault}-"): {c["name"] for c in t["checks"]}
                   for t in _trials(tmp_path / "kill")}
    for trial in trials:
        checks = {c["name"]: c["ok"] for c in trial["checks"]}
        # the kill fault's oracles, every one of them, plus the cut's own check
        assert set(checks) == kill_checks[trial["trialId"]] | {"power_cut"}, trial["trialId"]
        assert checks["kill_was_real"] and checks["effect_log"], trial["trialId"]
        cut = trial["evidence"]["powerCut"]
        assert cut["problems"] == []
        assert cut["granularity"] in ((None,) if fault == "powerloss" else (512, 4096))


@needs_fuse
def test_an_unsynced_store_passes_kill_fails_power_loss_and_replays(tmp_path: Path) -> None:
    adapter = tmp_path / "unsynced_adapter.py"
    adapter.write_text(UNSYNCED)
    impl = f"{shlex.quote(sys.executable)} {shlex.quote(str(adapter))}"
    code, out = _cli("sweep", "--impl", impl, "--points", "P5", "--mode", "prefix", "--fault", "kill",
                     "--report-dir", str(tmp_path / "kill"))
    assert code == 0, out  # a SIGKILL loses nothing the kernel has
    code, out = _cli("sweep", "--impl", impl, "--points", "P5", "--mode", "prefix", "--fault", "powerloss",
                     "--report-dir", str(tmp_path / "power"))
    assert code == 1, out
    [trial] = _trials(tmp_path / "power")
    failed = sorted(c["name"] for c in trial["checks"] if not c["ok"])
    assert trial["outcome"] == "failed" and failed, trial["message"]
    assert {c["name"]: c["ok"] for c in trial["checks"]}["kill_was_real"]
    lost = {r["path"]: r["lostBytes"] for r in trial["evidence"]["powerCut"]["reverted"]}
    assert lost.get("runtime.sqlite-wal", 0) > 0, lost  # the commits sat in the page cache
    bundle = Path(trial["bundle"])
    assert (bundle / "trial.json").exists() and (bundle / "workspace").is_dir()
    code, out = _cli("replay", str(bundle))
    assert code == 1, out
    assert f"replaying {trial['trialId']}" in out, out
    assert sorted(re.findall(r"^  FAILED (\w+):", out, re.M)) == failed, out  # the same checks fail again


def test_without_fuse_the_trials_are_not_run_never_passed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ENV_OFF, "1")
    result = run_trial(TrialSpec("P5", "prefix", "powerloss"), timeout=60)
    assert result.outcome == "not_run", result.message
    assert result.message == f"not run: turned off ({ENV_OFF}=1)"
    assert not any(c.ok for c in result.checks)
    code, out = _cli("sweep", "--fault", "powerloss-torn", "--points", "P0", "--report-dir", str(tmp_path))
    report = json.loads((tmp_path / "crashlab-sweep.json").read_text())
    assert code == 0 and report["counts"]["passed"] == 0 and report["counts"]["not_run"] == 3, out
    assert "not_run" in out and "not run: turned off" in out
    assert not (tmp_path / "bundles").exists()
    assert {r["notRun"] for r in report["table"]} == {1}


def test_an_implementation_that_does_not_claim_it_is_not_claimed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ENV_OFF, "1")  # not claimed wins over not run: it does not depend on the machine
    claims = [arg for cap in ("ledger.codec", "ledger.resolver", "ledger.plan", "store") for arg in ("--claim", cap)]
    spec = TrialSpec("P5", "prefix", "powerloss", command=(sys.executable, "-m", "maka_ref.adapter", *claims))
    result = run_trial(spec, timeout=60)
    assert result.outcome == "not_claimed" and "faults.powerloss" in result.message, result.message


def test_the_clause_is_reported_not_run_without_fuse(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from conformance.certify import certify

    monkeypatch.setenv(ENV_OFF, "1")
    result = certify(None, report_dir=tmp_path, workers=0, keyword="CRASH-P5-prefix-powerloss")
    clauses = json.loads((tmp_path / "report.json").read_text())["clauses"]
    by_id = {c["clause_id"]: c for c in clauses}
    assert set(by_id) == {"CRASH-P5-prefix-powerloss", "CRASH-P5-prefix-powerloss-torn"}, set(by_id)
    for clause in by_id.values():
        assert clause["outcome"] == "not_run" and "not run: turned off" in clause["message"], clause
        assert clause["capability"] == "faults.powerloss"
    assert result is not None


@needs_fuse
def test_every_catalogued_point_passes_a_power_cut(tmp_path: Path) -> None:
    """Issue 15's "done": ``crashlab sweep --fault powerloss`` passes at every catalogued point."""
    code, out = _cli("sweep", "--fault", "powerloss", "-n", "2", "--report-dir", str(tmp_path))
    trials = _trials(tmp_path)
    assert code == 0 and len(trials) == 49 and {t["outcome"] for t in trials} == {"passed"}, out
