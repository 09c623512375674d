"""``python -m benchmarks.reconcile``: what Phase 3 evidence adds to a ``Write`` tool call (issue 16).

The issue's bound: the evidence may add at most 10 % to the cost of a Write tool call. Measured
in one run, interleaved, so both sides see the same disk and load:

* **with evidence**: one turn of ``maka_ref._runtime.run_turn`` (T1 protocol) in a fresh
  workspace holding ``--calls`` files of ``--size`` bytes; the script overwrites each once with
  ``Write`` (new content of the same size), then ends with a text step. Each call reads and
  hashes its target before T1 (the record of spec-phase3 §1), commits the evidence row inside
  T1's transaction, and re-checks the ``before`` state just before the effect (§1.7).
* **without**: the very same turn with evidence turned off (the runtime's
  ``build_evidence`` replaced by a function answering None for this process — exactly the path a
  call without evidence takes, §1.1 item 3).
* **empty**: the same turn without tool calls (fixed per-turn cost).

Per-call cost of each side = ``(turn − empty) / calls``; the figure is the ratio
``with / without`` of the medians over ``--rounds`` rounds (sides alternate, order flipped
every round), in wall time (what a call costs, fsyncs included: noisy on a shared disk) and in
process CPU time (what the evidence itself adds: reading, hashing, encoding, one more row), and
``addedCpuOverCallWall`` = (CPU with − CPU without) / wall without: the evidence's own work as a
share of what a Write call costs, the figure that stays stable when fsync latency swings. Results: docs/performance.md ("Phase 3 evidence (issue 16)").
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from maka_ref._runtime import run_turn, tool_runtime


def _script(calls: int, size: int) -> dict[str, Any]:
    steps: list[dict[str, Any]] = [
        {"toolCalls": [{"id": f"call-{n}", "name": "Write", "args": {"path": f"f{n}.txt", "content": "b" * size}}]}
        for n in range(calls)
    ]
    steps.append({"text": "done"})
    return {"userMessage": "write", "protocol": "t1_after_preflight_v1", "steps": steps}


def _turn(base: Path, name: str, script: dict[str, Any], files: int, size: int) -> tuple[float, float]:
    ws = base / name
    ws.mkdir()
    for n in range(files):
        (ws / f"f{n}.txt").write_bytes(b"a" * size)
    start, cpu = time.perf_counter(), time.process_time()
    summary = run_turn(ws, script)
    elapsed, cpu = time.perf_counter() - start, time.process_time() - cpu
    if summary.status != "completed":
        raise SystemExit(f"benchmark turn did not complete: {summary.status}")
    shutil.rmtree(ws)
    return elapsed, cpu


def measure(rounds: int, calls: int, size: int, directory: str | None) -> dict[str, Any]:
    original = tool_runtime.build_evidence
    script, empty_script = _script(calls, size), _script(0, size)
    with_ev: list[tuple[float, float]] = []
    without: list[tuple[float, float]] = []
    empty: list[tuple[float, float]] = []
    base = Path(tempfile.mkdtemp(prefix="bench-reconcile-", dir=directory))
    try:
        for r in range(rounds + 1):  # round 0 warms imports and the page cache; not counted
            order = ("with", "without") if r % 2 == 0 else ("without", "with")
            results: dict[str, tuple[float, float]] = {}
            for side in order:
                tool_runtime.build_evidence = original if side == "with" else (lambda *a, **k: None)  # type: ignore[assignment]
                try:
                    results[side] = _turn(base, f"{r}-{side}", script, calls, size)
                finally:
                    tool_runtime.build_evidence = original  # type: ignore[assignment]
            results["empty"] = _turn(base, f"{r}-empty", empty_script, 0, size)
            if r:
                with_ev.append(results["with"])
                without.append(results["without"])
                empty.append(results["empty"])
    finally:
        tool_runtime.build_evidence = original  # type: ignore[assignment]
        shutil.rmtree(base, ignore_errors=True)
    out: dict[str, Any] = {"rounds": rounds, "calls": calls, "size": size}
    for index, clock in ((0, "wall"), (1, "cpu")):
        e = statistics.median(x[index] for x in empty)
        per_with = (statistics.median(x[index] for x in with_ev) - e) / calls
        per_without = (statistics.median(x[index] for x in without) - e) / calls
        out[clock] = {
            "perCallWithEvidenceMs": round(per_with * 1000, 3),
            "perCallWithoutMs": round(per_without * 1000, 3),
            "ratio": round(per_with / per_without, 3),
            "emptyTurnMs": round(e * 1000, 2),
        }
    # The noise-robust figure: the CPU the evidence adds, over what the call costs in wall time
    # (fsync latency on a loaded shared disk swings the wall ratio by ±30 % between runs).
    added = out["cpu"]["perCallWithEvidenceMs"] - out["cpu"]["perCallWithoutMs"]
    out["addedCpuOverCallWall"] = round(added / out["wall"]["perCallWithoutMs"], 4)
    return {
        **out,
        "loadavg": [round(x, 2) for x in os.getloadavg()],
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.reconcile", description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--calls", type=int, default=20)
    parser.add_argument("--size", type=int, default=250, help="bytes of each file before and after the Write")
    parser.add_argument("--dir", default=None, help="where the temporary workspaces live (default: $TMPDIR)")
    args = parser.parse_args(argv)
    print(json.dumps(measure(args.rounds, args.calls, args.size, args.dir), indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
