"""Smoke test: ``python -m benchmarks.restart`` runs end to end at a tiny size (no timing asserted)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

# ``benchmarks`` is not an installed package: reach it from the checkout, after the installed
# packages (append, not insert, so ``maka_ref`` still comes from the installation under test).
sys.path.append(str(Path(__file__).resolve().parents[2]))

from benchmarks import restart


def test_restart_benchmark_runs_tiny(tmp_path: Path, capsys) -> None:
    out = tmp_path / "restart.json"
    assert restart.main(["--sizes", "40", "--repeat", "1", "--dir", str(tmp_path), "--json", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "load average before" in printed and "plan end to end" in printed
    (run,) = json.loads(out.read_text())["runs"]
    assert run["events"] == 40
    assert set(run["cpuSeconds"]) == {"json.loads", "load", "load (exact)", "resolve end to end", "plan end to end"}
    assert run["ratioToJsonLoads"]["json.loads"] == 1.0
    assert [p.name for p in tmp_path.iterdir()] == ["restart.json"]  # the temporary ledger is removed
