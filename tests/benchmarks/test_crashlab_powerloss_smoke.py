"""Smoke test: the power-loss figures of ``python -m benchmarks.crashlab --powerloss-only``
(issue 15) run end to end at a tiny size — a kill and a power-loss trial at one point, and
T1+T2 pairs on a plain directory and on the mount that the reference really commits. No
timing is asserted; without FUSE each figure says "not run" with its reason."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

# ``benchmarks`` is not an installed package: reach it from the checkout, after the installed
# packages (append, not insert, so ``maka_ref`` still comes from the installation under test).
sys.path.append(str(Path(__file__).resolve().parents[2]))

from benchmarks import crashlab as bench  # noqa: E402
from crashlab._lab.powerloss.mount import ENV_OFF, unavailable  # noqa: E402


@pytest.mark.skipif(unavailable() is not None, reason=f"power-loss filesystem unavailable: {unavailable()}")
def test_the_power_loss_figures_run_tiny(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(bench, "POWERLOSS_CELLS", [("P5", "prefix")])
    result = bench.powerloss_vs_kill(1)
    assert result["failures"] == [] and [c["point"] for c in result["cells"]] == ["P5"]
    assert result["cells"][0]["killMs"] > 0 and result["cells"][0]["powerlossMs"] > 0
    pairs = bench.t1t2_overhead(3, 2)
    assert pairs["pairs"] == 6 and pairs["plainMs"] > 0 and pairs["fuseMs"] > 0


def test_without_fuse_the_figures_are_not_run(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ENV_OFF, "1")
    assert bench.powerloss_vs_kill(1) == {"notRun": f"turned off ({ENV_OFF}=1)"}
    assert bench.t1t2_overhead(3, 2) == {"notRun": f"turned off ({ENV_OFF}=1)"}
