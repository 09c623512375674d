"""Smoke test: ``python -m benchmarks.loop`` runs end to end at a tiny size (no timing asserted)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

# ``benchmarks`` is not an installed package: reach it from the checkout, after the installed
# packages (append, not insert, so ``maka_ref`` still comes from the installation under test).
sys.path.append(str(Path(__file__).resolve().parents[2]))

from benchmarks import loop  # noqa: E402


def test_loop_benchmark_runs_tiny(tmp_path: Path, capsys) -> None:
    out = tmp_path / "loop.json"
    assert loop.main(["--dir", str(tmp_path), "--calls", "2", "--rounds", "2", "--warmup", "1", "--json", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "per call: (turn − empty − D) / D" in printed
    result = json.loads(out.read_text())["loop"]
    assert result["calls"] == 2 and result["rounds"] == 2 and len(result["perRound"]) == 2
    assert set(result["medianSeconds"]) == {"loop", "empty", "fresh", "warm", "impl", "inLoopT12"}
    assert [p.name for p in tmp_path.iterdir()] == ["loop.json"]  # the temporary databases are removed


def test_loop_script_shape() -> None:
    script = loop.loop_script(3)
    assert [len(step.get("toolCalls", [])) for step in script["steps"]] == [1, 1, 1, 0]
    assert script["steps"][-1] == {"text": "done"}
    assert len({step["toolCalls"][0]["args"]["path"] for step in script["steps"][:-1]}) == 3
