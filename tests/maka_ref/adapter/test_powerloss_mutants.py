"""The power-loss-only mutants (issue 15 item 3; ``maka_ref/adapter/_mutants/powerloss.py``):
each is correct under SIGKILL and wrong under a power cut. For each one, the ``kill`` trials at
its killing point pass (in both modes) and the ``powerloss`` trial there fails with the check
its docstring names; one failing power-loss bundle replays to the same failed checks. The
unmutated reference passes the same power-loss trials (so the failure is the mutant's).

Needs FUSE (skipped with the reason otherwise); ``crashlab sweep --fault kill`` over every
catalogued point on each mutant is recorded in ``docs/crashlab-powerloss.md`` (too slow for a
test).
"""

from __future__ import annotations

import io
import json
import re
import sys
from pathlib import Path

import pytest

from crashlab import TrialSpec, run_trial
from crashlab._lab.cli import main
from maka_ref.adapter._mutants import MUTANTS
from tests.crashlab.powerloss.support import needs_fuse

pytestmark = [pytest.mark.skipif(sys.platform == "win32", reason="POSIX SIGKILL semantics"), needs_fuse]

#: mutant → (point, mode of the failing power-loss trial, the check that must fail there)
EXPECTED = {
    "crash-t1-synchronous-normal": ("P5", "prefix", None),  # the store's commits are lost: any oracle
    "crash-private-directory-not-synced": ("P5", "live", "resume_outcome"),  # script_unreadable
    "crash-tool-output-not-synced": ("P5", "live", "world_at_kill"),  # notes.txt empty
    "crash-write-rename-not-synced": ("P5", "live", "world_at_kill"),  # notes.txt missing
}


def _command(name: str | None) -> tuple[str, ...]:
    return (sys.executable, "-m", "maka_ref.adapter", *(["--mutant", name] if name else []))


def test_the_corpus_holds_exactly_these_power_loss_mutants() -> None:
    assert {n for n, m in MUTANTS.items() if m.needs == "faults.powerloss"} == set(EXPECTED)
    for name, (point, mode, _) in EXPECTED.items():
        assert MUTANTS[name].keyword == f"CRASH-{point}-{mode}-powerloss", name


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_the_mutant_passes_kill_and_fails_a_power_cut(name: str) -> None:
    point, mode, check = EXPECTED[name]
    for kill_mode in ("prefix", "live"):
        result = run_trial(TrialSpec(point, kill_mode, "kill", command=_command(name)), timeout=120)
        assert result.outcome == "passed", (kill_mode, result.message)
    cut = run_trial(TrialSpec(point, mode, "powerloss", command=_command(name)), timeout=120)
    checks = {c.name: c.ok for c in cut.checks}
    assert cut.outcome == "failed", cut.message
    assert checks.get("kill_was_real") is True, checks  # the crash was real, the cut was made
    if check is not None:
        assert checks.get(check) is False, (check, checks)
    reverted = cut.evidence["powerCut"]
    assert reverted["reverted"] or reverted.get("undone"), reverted  # the cut really took something


def test_the_reference_passes_the_same_power_cuts() -> None:
    for point, mode in sorted({(p, m) for p, m, _ in EXPECTED.values()}):
        result = run_trial(TrialSpec(point, mode, "powerloss", command=_command(None)), timeout=120)
        assert result.outcome == "passed", (point, mode, result.message)


def test_a_power_loss_bundle_of_a_mutant_replays_the_failure(tmp_path: Path) -> None:
    impl = " ".join(_command("crash-write-rename-not-synced"))
    out, err = io.StringIO(), io.StringIO()
    code = main(["sweep", "--impl", impl, "--points", "P5", "--mode", "live", "--fault", "powerloss",
                 "--report-dir", str(tmp_path)], out, err)
    assert code == 1, out.getvalue() + err.getvalue()
    [trial] = [t for t in json.loads((tmp_path / "crashlab-sweep.json").read_text())["trials"]
               if t["outcome"] == "failed"][:1]
    failed = sorted(c["name"] for c in trial["checks"] if not c["ok"])
    assert "world_at_kill" in failed, failed
    out, err = io.StringIO(), io.StringIO()
    code = main(["replay", trial["bundle"]], out, err)
    text = out.getvalue() + err.getvalue()
    assert code == 1 and f"replaying {trial['trialId']}" in text, text
    assert sorted(re.findall(r"^  FAILED (\w+):", text, re.MULTILINE)) == failed, text
