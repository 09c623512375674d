"""``python -m benchmarks.restart --upstream DIR``: upstream's restart path is timed beside ours
when a built checkout and a Node ≥ 22.19 are there, and is reported "not
run" with the reason when they are not — never a crash, never a silent zero."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks.ledger_memory import write_ledger
from benchmarks.restart import _UPSTREAM_SCRIPT, main, upstream_argv


def test_missing_checkout_or_node_is_a_reason(tmp_path: Path) -> None:
    assert upstream_argv(None, None) == (None, None)
    argv, why = upstream_argv(str(tmp_path), "/bin/true")
    assert argv is None and "not a built maka-agent checkout" in (why or "")
    if shutil.which("node") is None:
        assert "node is not on PATH" in (upstream_argv(str(tmp_path), None)[1] or "")


def test_the_benchmark_runs_without_upstream_and_says_so(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "r.json"
    assert main(["--sizes", "300", "--repeat", "1", "--upstream", str(tmp_path / "none"), "--json", str(out)]) == 0
    assert "upstream: not run: " in capsys.readouterr().out
    row = json.loads(out.read_text(encoding="utf-8"))["runs"][0]
    assert "upstream resolve end to end" not in row["cpuSeconds"] and row["events"] == 300


def _node_at_least(node: str, wanted: tuple[int, int]) -> bool:
    done = subprocess.run([node, "--version"], capture_output=True, text=True, check=False)
    parts = done.stdout.strip().lstrip("v").split(".")
    return done.returncode == 0 and tuple(int(p) for p in parts[:2]) >= wanted


def test_upstream_answers_the_same_ledger_as_the_reference(tmp_path: Path) -> None:
    """With upstream built (``MAKA_UPSTREAM``, Node ≥ 22.19 in ``MAKA_NODE`` or on PATH): the
    script's resolution of the benchmark's ledger equals ``maka-ref resolve``'s on the keys both
    answer — so the timed work is the same work."""
    root = os.environ.get("MAKA_UPSTREAM")
    node = os.environ.get("MAKA_NODE") or shutil.which("node")
    if not root or not Path(root, "packages", "runtime", "dist").is_dir():
        pytest.skip("MAKA_UPSTREAM does not name a built maka-agent checkout (examples/maka-ts-adapter/README.md)")
    if node is None or not _node_at_least(node, (22, 19)):
        pytest.skip("upstream needs Node >= 22.19: set MAKA_NODE or put one on PATH")
    ledger = tmp_path / "ledger.jsonl"
    write_ledger(ledger, 400)
    theirs = json.loads(subprocess.run([node, str(_UPSTREAM_SCRIPT), "--upstream", root, "resolve", str(ledger)],
                                       capture_output=True, text=True, check=True).stdout)
    ours = json.loads(subprocess.run([sys.executable, "-m", "maka_ref", "resolve", str(ledger)],
                                     capture_output=True, text=True, check=True).stdout)
    keys = ("toolCallId", "operationId", "status", "reason")
    assert [{k: d.get(k) for k in keys} for d in theirs["decisions"]] == [{k: d.get(k) for k in keys} for d in ours["decisions"]]
    assert len(theirs["decisions"]) > 50
