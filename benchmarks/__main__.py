"""``python -m benchmarks [--sizes 10000,100000,1000000] [--repeat N] [--json PATH]``.

Measures, per ledger size, in one process and one run:

* ``json.loads`` of the ledger's JSON-lines text, line by line (the baseline);
* decoding every parsed line as a RuntimeEvent (closed schema, normalisation, freezing);
* ``resolve_recovery`` and ``build_resume_plan`` over the already-decoded events.

and reports events per second and the ratio of (resolve + plan) to the baseline. The issue's
targets: ratio ≤ 1.0, and the 1M run within 12× the 100k run (linear growth).
"""

from __future__ import annotations

import argparse
import gc
import json
import platform
import sys
import time
from typing import Any, Callable

from benchmarks.ledgers import build_ledger
from maka_ref._events.schema import decode_runtime_event
from maka_ref._ledger.resolver import resolve_recovery
from maka_ref._plan.resume_plan import build_resume_plan


def _best_of(repeat: int, fn: Callable[[], Any]) -> tuple[float, Any]:
    best = float("inf")
    result: Any = None
    for _ in range(repeat):
        gc.collect()
        gc.disable()
        try:
            start = time.perf_counter()
            result = fn()
            elapsed = time.perf_counter() - start
        finally:
            gc.enable()
        best = min(best, elapsed)
    return best, result


def measure(n_events: int, repeat: int) -> dict[str, Any]:
    events = build_ledger(n_events)
    lines = [json.dumps(e, ensure_ascii=False, separators=(",", ":")) for e in events]
    text_bytes = sum(len(line.encode("utf-8")) + 1 for line in lines)
    del events

    loads_s, parsed = _best_of(repeat, lambda: [json.loads(line) for line in lines])
    decode_s, decoded = _best_of(repeat, lambda: [decode_runtime_event(v) for v in parsed])
    resolve_s, resolution = _best_of(repeat, lambda: resolve_recovery(decoded))
    plan_s, plan = _best_of(repeat, lambda: build_resume_plan(decoded))
    assert not resolution.has_corruption, "benchmark ledger must be healthy"
    return {
        "events": n_events,
        "textMB": round(text_bytes / 1e6, 2),
        "jsonLoadsSeconds": loads_s,
        "decodeSeconds": decode_s,
        "resolveSeconds": resolve_s,
        "planSeconds": plan_s,
        "resolvePlusPlanSeconds": resolve_s + plan_s,
        "ratioResolvePlanToJsonLoads": (resolve_s + plan_s) / loads_s,
        "ratioDecodeToJsonLoads": decode_s / loads_s,
        "resolvePlusPlanEventsPerSecond": n_events / (resolve_s + plan_s),
        "planDisposition": plan.disposition,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__)
    parser.add_argument("--sizes", default="10000,100000,1000000")
    parser.add_argument("--repeat", type=int, default=3, help="best of N (the 1M size always runs once)")
    parser.add_argument("--json", dest="json_path", default=None, help="also write the results here")
    args = parser.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",") if s]

    rows = []
    for n in sizes:
        print(f"measuring {n:,} events ...", file=sys.stderr, flush=True)
        rows.append(measure(n, args.repeat if n < 1_000_000 else 1))

    print(f"Python {platform.python_version()} on {platform.machine()} ({platform.system()})")
    print("| events | text MB | json.loads s | decode s | resolve s | plan s | resolve+plan events/s | (resolve+plan) / json.loads | decode / json.loads |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        print(
            f"| {r['events']:,} | {r['textMB']} | {r['jsonLoadsSeconds']:.3f} | {r['decodeSeconds']:.3f} | "
            f"{r['resolveSeconds']:.3f} | {r['planSeconds']:.3f} | {r['resolvePlusPlanEventsPerSecond']:,.0f} | "
            f"{r['ratioResolvePlanToJsonLoads']:.2f} | {r['ratioDecodeToJsonLoads']:.2f} |"
        )
    by_size = {r["events"]: r for r in rows}
    if 100_000 in by_size and 1_000_000 in by_size:
        growth = by_size[1_000_000]["resolvePlusPlanSeconds"] / by_size[100_000]["resolvePlusPlanSeconds"]
        print(f"\ngrowth 100k → 1M (resolve+plan): {growth:.1f}× (linear is 10×; the target is ≤ 12×)")
    if args.json_path:
        with open(args.json_path, "w", encoding="utf-8") as fh:
            json.dump({"python": platform.python_version(), "rows": rows}, fh, indent=2)
            fh.write("\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
