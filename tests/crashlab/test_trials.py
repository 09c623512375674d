"""Real crash-lab trials (issue 6 item 2): a representative subset passes against the
reference, and deliberately broken builds fail with a clear explanation."""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import pytest

import crashlab
from crashlab import TrialSpec, run_trial

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX SIGKILL semantics")

T1 = "t1_after_preflight_v1"

#: A wrapper adapter: the reference with one deliberate bug (``MODE`` = argv[1]).
BROKEN = textwrap.dedent('''
    import sys
    mode = sys.argv[1]
    if mode == "header_first":  # the terminal header before the terminal event (spec 20 §4.1 broken)
        import importlib
        rt = importlib.import_module("maka_ref._runtime.run_turn")
        original = rt._Turn.finalize
        def finalize(self, status, error):
            ts = self.clock()
            self.runs.update_run(self.ids.session_id, self.ids.run_id,
                                 {"status": status, "updatedAt": ts, "completedAt": ts})
            original(self, status, error)
        rt._Turn.finalize = finalize
    elif mode == "never_fires":  # faults.arm says armed, arms nothing
        from maka_ref.adapter import _faults
        _faults.arm = lambda params: {"armed": params["failpoint"]}
    from maka_ref.adapter._server import main
    main(sys.argv[2:])
''')


@pytest.fixture(scope="module")
def broken(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("broken") / "broken_adapter.py"
    path.write_text(BROKEN, encoding="utf-8")
    return path


@pytest.mark.parametrize("spec", [
    TrialSpec("P3", "prefix"),
    TrialSpec("P9", "prefix"),
    TrialSpec("P4", "live", protocol=T1),
    TrialSpec("P8", "live", protocol="legacy"),
    TrialSpec("P11", "live", protocol=T1),
    TrialSpec("after_continuation_start_committed", "live", protocol=T1),
    TrialSpec("inside_t2", "prefix"),
    TrialSpec("after_recovery_commit", "prefix"),
], ids=lambda s: s.trial_id)
def test_reference_passes(spec: TrialSpec) -> None:
    result = run_trial(spec, timeout=90)
    assert result.outcome == "passed", (result.message, result.stderr_tail[-2000:])
    names = {c.name for c in result.checks}
    assert {"kill_was_real", "projection_stable", "reading_never_writes", "allowed_prefix", "repair_idempotent",
            "effect_log", "no_survivors"} <= names
    assert result.evidence["killedPid"] > 0


def test_header_before_terminal_event_is_caught(broken: Path, tmp_path: Path) -> None:
    spec = TrialSpec("P8", "live", protocol=T1, command=(sys.executable, str(broken), "header_first"))
    result = run_trial(spec, timeout=90, bundle_dir=tmp_path)
    assert result.outcome == "failed"
    failed = {c.name: c.detail for c in result.failed_checks}
    assert "allowed_prefix" in failed and "header status 'completed'" in failed["allowed_prefix"]
    assert result.bundle and (Path(result.bundle) / "trial.json").exists()
    assert (Path(result.bundle) / "workspace" / "runtime.sqlite").exists()


def test_a_point_that_never_fires_is_unreached(broken: Path) -> None:
    spec = TrialSpec("P3", "live", protocol=T1, command=(sys.executable, str(broken), "never_fires"))
    result = run_trial(spec, timeout=90)
    assert result.outcome == "unreached"
    assert "P3" in result.message and "without announcing" in result.message


def test_an_unclaimed_capability_is_not_claimed() -> None:
    spec = TrialSpec("P3", "live", protocol=T1, command=(sys.executable, "-m", "maka_ref.adapter", "--claim", "store", "--claim", "runtime.loop"))
    result = run_trial(spec, timeout=60)
    assert result.outcome == "not_claimed" and "faults" in result.message


def test_a_missing_fault_module_is_an_error(monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib

    real = importlib.import_module

    def fake(name: str, *a: object) -> object:
        if name == "crashlab._lab.faults.race":
            raise ModuleNotFoundError("No module named 'crashlab._lab.faults.race'")
        return real(name, *a)

    monkeypatch.setattr(importlib, "import_module", fake)
    result = run_trial(TrialSpec("P5", "live", "race", protocol=T1), timeout=60)
    assert result.outcome == "error" and "race" in result.message
