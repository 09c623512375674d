"""``python -m benchmarks.selftest [--workers 2] [--mutants a,b] [--full] [--json PATH]``: wall time
of the mutant self-test (issue 7), default size unless ``--full``.

Runs :func:`conformance._selftest.run_selftest` exactly as ``maka-conformance selftest`` does
(a baseline certification of the union of the target selections against the unmutated
reference, then one certification per mutant, each a child pytest run with ``-n W``) into a
temporary directory, and prints the total, the baseline, the per-layer and per-mutant times,
the clause counts and the score, so a run that silently selected fewer clauses or killed fewer
mutants cannot look fast. Results go to docs/performance.md ("Mutant self-test (issue 7)").
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import tempfile
import time
from typing import Any

from conformance._selftest import run_selftest


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.selftest")
    parser.add_argument("--workers", default="2", help="xdist workers per certification (default 2)")
    parser.add_argument("--mutants", help="comma-separated subset (default: the whole corpus)")
    parser.add_argument("--full", action="store_true", help="every mutant against the whole suite")
    parser.add_argument("--json", metavar="PATH", help="also write the measurements as JSON")
    args = parser.parse_args(argv)
    names = [n for n in args.mutants.split(",") if n] if args.mutants else None
    with tempfile.TemporaryDirectory(prefix="maka-bench-selftest-") as tmp:
        started = time.perf_counter()
        result = run_selftest(names, full=args.full, workers=args.workers, report_dir=tmp)
        wall = time.perf_counter() - started
        baseline_s = None
        baseline_report = os.path.join(tmp, "baseline", "report.json")
        if os.path.exists(baseline_report):
            with open(baseline_report, encoding="utf-8") as fh:
                baseline_s = json.load(fh).get("duration_s")
    layers: dict[str, dict[str, float]] = {}
    for m in result.mutants:
        entry = layers.setdefault(m.layer, {"mutants": 0, "wall_s": 0.0, "clauses_run": 0})
        entry["mutants"] += 1
        entry["wall_s"] = round(entry["wall_s"] + m.duration_s, 2)
        entry["clauses_run"] += m.clauses_run
    data: dict[str, Any] = {
        "mode": result.mode, "workers": args.workers, "cpus": os.cpu_count(), "python": platform.python_version(),
        "load_avg_1m": round(os.getloadavg()[0], 2) if hasattr(os, "getloadavg") else None,
        "wall_s": round(wall, 1), "baseline_s": baseline_s,
        "mutants": len(result.mutants), "killed": len(result.killed), "score": round(result.score, 4),
        "clauses_run_total": sum(m.clauses_run for m in result.mutants),
        "layers": layers,
        "per_mutant": {m.name: {"wall_s": round(m.duration_s, 2), "clauses_run": m.clauses_run,
                                "killed_by": len(m.killed_by), "status": m.status} for m in result.mutants},
    }
    print(f"selftest ({result.mode}, -n {args.workers}, {os.cpu_count()} CPUs): {wall:.1f} s wall, "
          f"{len(result.killed)}/{len(result.mutants)} killed ({result.score:.0%}), "
          f"{data['clauses_run_total']} clause runs; baseline {baseline_s} s")
    print(f"{'layer':<14}{'mutants':>8}{'wall s':>9}{'clauses':>9}")
    for layer, entry in layers.items():
        print(f"{layer:<14}{entry['mutants']:>8}{entry['wall_s']:>9.1f}{entry['clauses_run']:>9}")
    for name, entry in data["per_mutant"].items():
        print(f"  {name:<44}{entry['wall_s']:>7.1f} s {entry['clauses_run']:>5} clauses  {entry['status']}")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as fh:
            json.dump(data, fh, indent=1)
    return 0 if result.exit_code == 0 else 1


if __name__ == "__main__":
    raise SystemExit(main())
