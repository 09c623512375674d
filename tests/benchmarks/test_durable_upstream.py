"""``python -m benchmarks.durable --upstream DIR``: the node:sqlite comparison is wired and fails
politely where upstream (or a Node with ``node:sqlite``) is missing; its inputs are the very
calls the Python side times, in upstream's input shape."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from benchmarks._durable.inputs import _calls
from benchmarks._durable.upstream import SCRIPT, measure_upstream


@pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")
def test_missing_checkout_is_reported_not_raised(tmp_path: Path) -> None:
    result = measure_upstream(tmp_path, str(tmp_path / "no-such-checkout"), rounds=1, slices=1, calls_per_slice=2,
                              commits_per_slice=2, calls_per_run=2, warmup_calls=1, warmup_commits=1)
    assert set(result) == {"error"}
    assert "node:sqlite is not available" in result["error"] or "cannot import upstream's storage" in result["error"]
    inputs = json.loads((tmp_path / "upstream" / "inputs.json").read_text(encoding="utf-8"))
    assert len(inputs) == 3  # warm-up + 1 round × 1 slice × 2 calls
    expected = _calls(0, 3, 2)
    first = inputs[0]
    assert first["t1"]["operationId"] == expected[0].t1.operation_id
    assert first["t1"]["runtimeEvent"] == expected[0].t1.runtime_event
    assert first["t1"]["dispatchRuntimeEvent"] == expected[0].t1.dispatch_runtime_event
    assert first["t1"]["canonicalArgsHash"] == expected[0].t1.canonical_args_hash
    assert set(first["t2"]) == {"operationId", "journalEventId", "runtimeEvent", "committedAt"}
    assert inputs[2]["t2"]["runtimeEvent"] == expected[2].t2.runtime_event


def test_no_node_is_reported(tmp_path: Path) -> None:
    result = measure_upstream(tmp_path, "/nowhere", 1, 1, 1, 1, 1, 1, 1, node=str(tmp_path / "no-node"))
    assert "error" in result


def test_script_is_beside_the_module() -> None:
    assert SCRIPT.is_file() and SCRIPT.suffix == ".mjs"
