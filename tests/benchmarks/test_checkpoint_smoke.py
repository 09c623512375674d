"""Smoke test: ``python -m benchmarks.checkpoint`` runs end to end at a tiny size (no timing
asserted; the figures live in docs/performance.md, "Checkpoint capture (issue 17)")."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest

# ``benchmarks`` is not an installed package: reach it from the checkout, after the installed
# packages (append, not insert, so ``maka_ref`` still comes from the installation under test).
sys.path.append(str(Path(__file__).resolve().parents[2]))

from benchmarks import checkpoint


@pytest.mark.skipif(shutil.which("git") is None, reason="the git program is not installed")
def test_checkpoint_benchmark_runs_tiny(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "checkpoint.json"
    assert checkpoint.main(["--files", "40", "--dirty", "3", "--rounds", "1", "--dir", str(tmp_path),
                            "--json", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "capture / plain =" in printed
    result = json.loads(out.read_text())["checkpoint"]
    assert result["files"] == 40 and result["sameTree"] is True and result["compareClean"] is True
    assert result["capturedFiles"] == 40 + 3 + 1  # tracked, untracked and .gitignore; build/ ignored
    assert set(result["medianSeconds"]) == {"plain", "capture", "head-seeded", "cold plain"}
    assert [p.name for p in tmp_path.iterdir()] == ["checkpoint.json"]  # the workspace is removed
