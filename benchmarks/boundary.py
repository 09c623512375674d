"""``python -m benchmarks.boundary``: what committing the boundary fact adds to a checkpoint
capture (issue 17, spec-phase4 §4.1/§4.2).

In one run, on one workspace (``benchmarks.checkpoint.build_workspace``: ``--files`` tracked
files, default 10,000, plus dirty and untracked files), alternating order each round:

* **capture** (the baseline): ``GitCheckpointCarrier().capture`` alone — ref published;
* **capture + fact**: ``maka_ref._boundary.capture.capture_and_commit`` — the same capture,
  then the boundary fact committed in one store transaction whose last check lists the ref
  (``for-each-ref``) to prove it still names the captured commit; the run has one user event,
  so each round's fact goes at a fresh run's H+1.

Medians and the ratio of the medians are printed; ``--json PATH`` writes them. Results:
``docs/performance.md`` ("Boundary fact commit (issue 17)").
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.checkpoint import build_workspace
from maka_ref._boundary.capture import capture_and_commit
from maka_ref._checkpoint import GitCheckpointCarrier
from maka_ref._store.runtime_store import RuntimeStore
from maka_ref._store.workspace.identity import resolve_workspace_identity


def run(files: int, dirty: int, rounds: int, directory: Path) -> dict[str, Any]:
    ws = build_workspace(directory, files, dirty)
    identity = resolve_workspace_identity(ws).identity
    carrier = GitCheckpointCarrier()
    store = RuntimeStore.open(ws)
    times: dict[str, list[float]] = {"capture": [], "capture_and_fact": []}
    try:
        for n in range(rounds):
            run_ids = {"sessionId": "bench", "invocationId": f"inv-{n}", "runId": f"run-{n}", "turnId": f"turn-{n}"}
            store.append({"id": f"user-{n}", **run_ids, "ts": 1, "partial": False, "role": "user", "author": "user",
                          "content": {"kind": "text", "text": "go"}})
            order = ["capture", "capture_and_fact"] if n % 2 == 0 else ["capture_and_fact", "capture"]
            for name in order:
                start = time.perf_counter()
                if name == "capture":
                    carrier.capture(str(ws), identity)
                else:
                    capture_and_commit(store, carrier, str(ws), identity, run_ids)
                times[name].append(time.perf_counter() - start)
    finally:
        store.close()
    medians = {name: statistics.median(values) for name, values in times.items()}
    return {"files": files, "rounds": rounds, "median_seconds": medians,
            "ratio": medians["capture_and_fact"] / medians["capture"], "load": os.getloadavg()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.boundary", description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=10_000)
    parser.add_argument("--dirty", type=int, default=50)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--json", default=None, metavar="PATH")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="maka-boundary-bench-") as tmp:
        result = run(args.files, args.dirty, args.rounds, Path(tmp))
    m = result["median_seconds"]
    sys.stdout.write(
        f"{result['files']} files, {result['rounds']} rounds, load {result['load'][0]:.2f}\n"
        f"capture          median {m['capture'] * 1000:8.1f} ms\n"
        f"capture + fact   median {m['capture_and_fact'] * 1000:8.1f} ms\n"
        f"ratio {result['ratio']:.3f}x\n")
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
