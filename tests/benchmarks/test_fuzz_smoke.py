"""Smoke test: ``python -m benchmarks.fuzz`` runs end to end at a tiny size, both search modes
on the same run (no timing asserted)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

# ``benchmarks`` is not an installed package: reach it from the checkout, after the installed
# packages (append, not insert, so ``maka_ref`` still comes from the installation under test).
sys.path.append(str(Path(__file__).resolve().parents[2]))

from benchmarks import fuzz


def test_fuzz_benchmark_runs_tiny(tmp_path: Path, capsys) -> None:
    out = tmp_path / "fuzz.json"
    assert fuzz.main(["--ledgers", "12", "--batch", "4", "--json", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "--search fast" in printed and "--search hypothesis" in printed and "load average" in printed
    r = json.loads(out.read_text())
    assert r["ledgers"] == 12 and r["disagreements"] == 0 and r["fastInProcessDisagreements"] == 0
    assert r["fastExitCode"] == 0 and r["fuzzExitCode"] == 0
    assert all(r[k] > 0 for k in ("fastGeneratePerS", "fastInProcessPerS", "fastEndToEndPerS", "fuzzEndToEndPerS"))
