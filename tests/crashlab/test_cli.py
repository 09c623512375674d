"""``crashlab sweep`` / ``crashlab replay`` (issue 6 items 4, 6): exit codes, report, bundles."""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path

import pytest

from crashlab import TrialResult, TrialSpec, write_bundle
from crashlab._lab.cli import main

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX SIGKILL semantics")


def _run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    return main(list(argv), out, err), out.getvalue(), err.getvalue()


def test_sweep_subset_passes_and_writes_the_report(tmp_path: Path) -> None:
    code, out, _ = _run("sweep", "--points", "P0,inside_t1", "--mode", "prefix", "--trials", "2", "--seed", "5",
                        "-n", "2", "--report-dir", str(tmp_path))
    assert code == 0, out
    assert "[16/16]" in out  # kill, torn, powerloss, powerloss-torn (not run where FUSE is missing)
    report = json.loads((tmp_path / "crashlab-sweep.json").read_text())
    assert report["counts"]["passed"] + report["counts"]["not_run"] == 16 and report["ok"] is True
    assert report["counts"]["passed"] >= 8
    row = next(r for r in report["table"] if r["point"] == "P0" and r["fault"] == "torn")
    assert (row["total"], row["detected"]) == (2, 0)
    assert "| P0 | prefix | kill | 0 / 2 |" in (tmp_path / "crashlab-sweep.md").read_text()


def test_usage_errors_exit_2() -> None:
    assert _run("sweep", "--points", "P99")[0] == 2
    assert _run("sweep", "--points", "P10", "--mode", "prefix", "--fault", "pause")[0] == 2
    assert _run("replay", "/nonexistent/bundle")[0] == 2
    code, out, _ = _run("sweep", "--list", "--points", "P3", "--mode", "live", "--fault", "kill")
    assert code == 0 and out.split() == ["P3-live-t1-kill-s0-r0", "P3-live-legacy-kill-s0-r0"]


def test_replay_reruns_a_bundle_and_a_broken_impl_fails(tmp_path: Path) -> None:
    spec = TrialSpec("P5", "prefix", "kill", seed=3)
    bundle = write_bundle(tmp_path / "bundles", TrialResult(spec, "failed", message="recorded"), tmp_path / "none")
    code, out, _ = _run("replay", str(bundle))
    assert code == 0 and "passed" in out and "seed 3" in out
    failing = tmp_path / "fails.py"
    failing.write_text("import sys; sys.exit(3)\n")
    code, out, _ = _run("replay", str(bundle), "--impl", f"{sys.executable} {failing}")
    assert code == 1 and "implementation_behaved" in out


def test_no_prefork_flag_reaches_every_spawn(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from crashlab._client import _client

    seen: list[object] = []
    original = _client.spawn

    def spy(argv: object, **kw: object) -> object:
        seen.append(kw.get("prefork"))
        return original(argv, **kw)

    monkeypatch.setattr(_client, "spawn", spy)
    code, out, _ = _run("sweep", "--points", "P2", "--mode", "prefix", "--fault", "kill", "--no-prefork",
                        "--report-dir", str(tmp_path))
    assert code == 0, out
    assert seen and set(seen) == {False}
