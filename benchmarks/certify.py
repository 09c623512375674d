"""``python -m benchmarks.certify [--levels recovery] [--json PATH]``: wall time of a full
certification of the bundled reference runtime, with ``-n 2`` and with ``-n 1``, in one run.

Issue 5's target: the whole certification (every level) under 5 minutes on 2 cores; the ratio
``-n 1`` / ``-n 2`` says how well the clauses spread over workers. Each configuration runs
:func:`conformance.certify` exactly as ``maka-conformance certify`` does (a child pytest run
with xdist), into a temporary report directory; the clause counts are printed beside the
times so a run that silently selected fewer clauses cannot look fast. Results go to
docs/performance.md ("Certification wall time (issue 5)").
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import tempfile
import time
from typing import Any

from conformance.certify import certify


def _run(workers: str, level: str | None) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="maka-bench-certify-") as tmp:
        started = time.perf_counter()
        result = certify(None, level=level, report_dir=tmp, workers=workers)
        wall = time.perf_counter() - started
        counts: dict[str, int] = {}
        for report in result.reports:
            for outcome, n in report.counts().items():
                counts[outcome] = counts.get(outcome, 0) + n
        return {"workers": workers, "wall_s": round(wall, 2), "exit": result.exit_code,
                "level_reached": result.reports[0].level_reached if result.reports else None,
                "counts": counts, "harness_error": result.harness_error}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.certify")
    parser.add_argument("--level", default=None, help="certify up to this level (default: every level)")
    parser.add_argument("--json", default=None, help="also write the results as JSON here")
    args = parser.parse_args(argv)
    rows = [_run("2", args.level), _run("1", args.level)]
    ratio = rows[1]["wall_s"] / rows[0]["wall_s"] if rows[0]["wall_s"] else float("nan")
    doc = {"machine": {"cpus": os.cpu_count(), "python": platform.python_version(), "system": platform.system()},
           "runs": rows, "ratio_n1_over_n2": round(ratio, 2)}
    for row in rows:
        print(f"-n {row['workers']}: {row['wall_s']:7.1f} s  exit {row['exit']}  level {row['level_reached']}  {row['counts']}")
    print(f"ratio (-n 1 / -n 2): {ratio:.2f}")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as fh:
            json.dump(doc, fh, indent=2)
    return 0 if all(r["exit"] == 0 for r in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
