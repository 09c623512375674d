"""Smoke test: ``python -m benchmarks.boundary`` runs end to end at a tiny size and commits one
boundary fact per round (no timing asserted; figures in docs/performance.md, "Boundary fact
commit (issue 17, second part)")."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest

sys.path.append(str(Path(__file__).resolve().parents[2]))

from benchmarks import boundary


@pytest.mark.skipif(shutil.which("git") is None, reason="the git program is not installed")
def test_boundary_benchmark_runs_tiny(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "boundary.json"
    assert boundary.main(["--files", "30", "--dirty", "2", "--rounds", "2", "--json", str(out)]) == 0
    assert "ratio" in capsys.readouterr().out
    result = json.loads(out.read_text())
    assert result["files"] == 30 and result["rounds"] == 2
    assert set(result["median_seconds"]) == {"capture", "capture_and_fact"}
    assert all(value > 0 for value in result["median_seconds"].values())
