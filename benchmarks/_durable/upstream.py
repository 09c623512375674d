"""Upstream's store beside the reference: ``python -m benchmarks.durable --upstream DIR``.

Why: the reference's durable ratio means something next to upstream's only when both are
measured the same way, on the same disk, in the same minutes. Upstream's store runs on
``node:sqlite``, so this module writes the very T1/T2 inputs the Python side times to a JSON
file and runs ``upstream.mjs`` (beside this file) with Node against the checkout the user
built; that script times upstream's ``commitToolPrepared`` + ``commitToolOutcome`` against a
raw ``node:sqlite`` commit, interleaved like :mod:`.throughput`. Nothing of upstream is
copied or needed otherwise: without ``--upstream`` this never runs.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

from benchmarks._durable.inputs import _calls

SCRIPT = Path(__file__).with_name("upstream.mjs")


def _t1_json(call: Any) -> dict[str, Any]:
    t1 = call.t1
    return {
        "operationId": t1.operation_id, "journalEventId": t1.journal_event_id, "runtimeEvent": t1.runtime_event,
        "dispatchRuntimeEvent": t1.dispatch_runtime_event, "providerToolCallId": t1.provider_tool_call_id,
        "toolName": t1.tool_name, "canonicalArgsHash": t1.canonical_args_hash, "recoveryMode": t1.recovery_mode,
        "committedAt": t1.committed_at,
    }


def _t2_json(call: Any) -> dict[str, Any]:
    t2 = call.t2
    return {"operationId": t2.operation_id, "journalEventId": t2.journal_event_id, "runtimeEvent": t2.runtime_event,
            "committedAt": t2.committed_at}


def measure_upstream(root: Path, upstream: str, rounds: int, slices: int, calls_per_slice: int,
                     commits_per_slice: int, calls_per_run: int, warmup_calls: int,
                     warmup_commits: int, node: str | None = None) -> dict[str, Any]:
    """Run ``upstream.mjs``; its JSON result, or ``{"error": …}`` when it could not run."""
    node = node or shutil.which("node")
    if node is None:
        return {"error": "node is not on PATH"}
    work = root / "upstream"
    work.mkdir(parents=True, exist_ok=True)
    count = warmup_calls + rounds * slices * calls_per_slice
    inputs = work / "inputs.json"
    inputs.write_text(json.dumps([{"t1": _t1_json(c), "t2": _t2_json(c)} for c in _calls(0, count, calls_per_run)]),
                      encoding="utf-8")
    argv = [node, str(SCRIPT), "--upstream", upstream, "--inputs", str(inputs), "--dir", str(work),
            "--rounds", str(rounds), "--slices", str(slices), "--calls-per-slice", str(calls_per_slice),
            "--commits-per-slice", str(commits_per_slice), "--warmup-calls", str(warmup_calls),
            "--warmup-commits", str(warmup_commits)]
    try:
        done = subprocess.run(argv, capture_output=True, text=True, env={**os.environ}, check=False)
    except OSError as error:  # no such executable, not executable…
        return {"error": f"cannot run {node}: {error}"}
    if done.returncode != 0:
        return {"error": (done.stderr.strip() or f"exit {done.returncode}").splitlines()[-1]}
    return json.loads(done.stdout)
