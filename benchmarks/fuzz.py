"""``python -m benchmarks.fuzz [--ledgers N] [--batch B] [--seed S] [--json PATH]``: fuzzing throughput.

Issue 7's benchmark (results: ``docs/performance.md``, "Differential fuzzing (issue 7)").
In one run, over the same Hypothesis-generated ledgers (valid, corrupted, crash-truncated:
``conformance._fuzz._ledgers.fuzz_ledgers``), it measures ledgers per second of:

* **generate**: Hypothesis drawing the ledgers (reported, not part of the targets);
* **in process**: the reference answering ``ledger.resolve`` and ``ledger.plan`` for each
  ledger exactly as the fuzzer's reference side does (the adapter's operation table in this
  process) — target ≥ 1,000/s;
* **protocol, batched**: the same two requests per ledger sent to ``python -m maka_ref.adapter``
  (one long-lived process) in ``batch`` requests of ``B`` ledgers, answers compared with the
  in-process reference's — target ≥ 100/s;
* **protocol, one at a time**: the same without ``batch`` (what a non-batching implementation gets);
* **fuzz end to end**: ``run_fuzz`` on ledgers only (generation + both sides + comparison, one
  batch per example) against the reference adapter, for the rate a real run sees, with
  ``--search hypothesis`` (every example drawn by Hypothesis's engine);
* issue 18 item 4, ``--search fast`` (``conformance._fuzz._fast``): **generate (fast)**, the
  same strategies drawn by a seeded plain generator; **fast search in process**, generation +
  the reference on both sides in this process + comparison (the search loop with no process
  boundary) — target ≥ 1,000/s; **fuzz end to end, fast**: ``run_fuzz --search fast`` against
  the adapter, ``B`` ledgers per ``batch`` round trip — target ≥ 300/s.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import platform
import sys
import tempfile
import time
from typing import Any


def _generate(n: int, seed: int) -> list[Any]:
    from hypothesis import HealthCheck, Phase, given, settings
    from hypothesis import seed as seed_

    from conformance._fuzz._ledgers import fuzz_ledgers

    out: list[Any] = []

    @seed_(seed)
    @settings(max_examples=n, database=None, deadline=None, suppress_health_check=list(HealthCheck),
              phases=(Phase.generate,))
    @given(fuzz_ledgers())
    def collect(case: Any) -> None:
        out.append(case)

    collect()
    return out


def _rate(n: int, seconds: float) -> float:
    return n / seconds if seconds > 0 else float("inf")


def run(n: int, batch: int, seed: int) -> dict[str, Any]:
    from conformance._fuzz import FuzzConfig, run_fuzz
    from conformance._fuzz._ledgers import LEDGER_OPS, ledger_requests
    from conformance._fuzz._targets import ProtocolTarget, ReferenceTarget, command_line
    from conformance._fuzz._values import comparable, first_difference, wire

    t0 = time.perf_counter()
    cases = _generate(n, seed)
    generate = time.perf_counter() - t0
    ledgers = [wire(c.events) for c in cases]
    events = sum(len(e) for e in ledgers)
    ref = ReferenceTarget()
    t0 = time.perf_counter()
    expected = [ref.run(ledger_requests(e)) for e in ledgers]
    in_process = time.perf_counter() - t0

    def through(target: Any, per_call: int) -> tuple[float, int]:
        disagreements = 0
        t0 = time.perf_counter()
        for start in range(0, len(ledgers), per_call):
            chunk = ledgers[start:start + per_call]
            requests = [r for e in chunk for r in ledger_requests(e)]
            answers = target.run(requests)
            for i, answer in enumerate(answers):
                op = requests[i][0]
                e = expected[start + i // len(LEDGER_OPS)][i % len(LEDGER_OPS)]
                disagreements += first_difference(comparable(op, e), comparable(op, answer)) is not None
        return time.perf_counter() - t0, disagreements

    with tempfile.TemporaryDirectory() as cwd:
        batched = ProtocolTarget(command_line(None), cwd=cwd, max_batch=batch * len(LEDGER_OPS))
        batched._started()
        batched_s, batched_bad = through(batched, batch)
        batched_trips = batched.round_trips
        batched.close()
        single = ProtocolTarget(command_line(None), cwd=cwd, use_batch=False)
        single._started()
        single_s, single_bad = through(single, batch)
        single.close()
        t0 = time.perf_counter()
        result = run_fuzz(FuzzConfig(examples=n, seed=seed, properties=("ledger",), report_dir=cwd + "/r",
                                     search="hypothesis"), io.StringIO())
        fuzz_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        fast = run_fuzz(FuzzConfig(examples=n, seed=seed, properties=("ledger",), report_dir=cwd + "/f",
                                   search="fast", max_batch=batch * len(LEDGER_OPS)), io.StringIO())
        fast_s = time.perf_counter() - t0
    fast_generate, fast_in_process, fast_bad = _fast_in_process(n, seed, batch)
    return {
        "ledgers": n, "events": events, "meanEvents": round(events / max(1, n), 1), "batch": batch, "seed": seed,
        "python": platform.python_version(), "machine": platform.machine(),
        "generatePerS": round(_rate(n, generate), 1),
        "inProcessPerS": round(_rate(n, in_process), 1),
        "protocolBatchedPerS": round(_rate(n, batched_s), 1), "protocolBatchedRoundTrips": batched_trips,
        "protocolSinglePerS": round(_rate(n, single_s), 1),
        "disagreements": batched_bad + single_bad,
        "fuzzEndToEndPerS": round(_rate(result.summary["properties"]["ledger"]["examples"], fuzz_s), 1),
        "fuzzExitCode": result.exit_code,
        "fastGeneratePerS": round(_rate(n, fast_generate), 1),
        "fastInProcessPerS": round(_rate(n, fast_in_process), 1), "fastInProcessDisagreements": fast_bad,
        "fastEndToEndPerS": round(_rate(fast.summary["properties"]["ledger"]["examples"], fast_s), 1),
        "fastExitCode": fast.exit_code,
        "loadAverage": list(os.getloadavg()),
    }


def _fast_in_process(n: int, seed: int, batch: int) -> tuple[float, float, int]:
    """(seconds to draw ``n`` fast ledgers, seconds of the fast search loop in process —
    drawing, both sides the in-process reference, comparing —, disagreements found)."""
    import itertools

    from conformance._fuzz._buckets import BucketTracker
    from conformance._fuzz._fast import fast_cases, fast_ledger_search
    from conformance._fuzz._ledgers import fuzz_ledgers, ledger_disagreements_many
    from conformance._fuzz._targets import ReferenceTarget

    strategy = fuzz_ledgers()
    list(itertools.islice(fast_cases(strategy, seed + 1), 3))  # first-use costs (imports, caches)
    t0 = time.perf_counter()
    list(itertools.islice(fast_cases(strategy, seed), n))
    generate = time.perf_counter() - t0
    ref, other = ReferenceTarget(), ReferenceTarget()
    tracker = BucketTracker()
    t0 = time.perf_counter()
    fast_ledger_search(strategy, seed, lambda cases: ledger_disagreements_many(cases, other, ref), tracker,
                       examples=n, chunk=batch)
    loop = time.perf_counter() - t0
    ref.close()
    other.close()
    return generate, loop, sum(b.count for b in tracker.buckets.values())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.fuzz", description=__doc__.splitlines()[0])
    parser.add_argument("--ledgers", type=int, default=1000, metavar="N", help="ledgers to generate (default 1000)")
    parser.add_argument("--batch", type=int, default=64, metavar="B", help="ledgers per batch request (default 64)")
    parser.add_argument("--seed", type=int, default=1, metavar="S")
    parser.add_argument("--json", metavar="PATH", help="also write the results as JSON")
    args = parser.parse_args(argv)
    r = run(args.ledgers, args.batch, args.seed)
    print(f"{r['ledgers']} ledgers ({r['meanEvents']} events on average), seed {r['seed']}, "
          f"Python {r['python']} {r['machine']}")
    rows = [("generate (Hypothesis)", r["generatePerS"], ""),
            ("reference in process (resolve + plan)", r["inProcessPerS"], "target >= 1000/s"),
            (f"adapter over the protocol, batch of {r['batch']}", r["protocolBatchedPerS"], "target >= 100/s"),
            ("adapter over the protocol, one request at a time", r["protocolSinglePerS"], ""),
            ("fuzz end to end, --search hypothesis (vs the adapter)", r["fuzzEndToEndPerS"], ""),
            ("generate (fast)", r["fastGeneratePerS"], ""),
            ("fast search in process (generate + both sides + compare)", r["fastInProcessPerS"], "target >= 1000/s"),
            (f"fuzz end to end, --search fast (vs the adapter, batch of {r['batch']})", r["fastEndToEndPerS"],
             "target >= 300/s")]
    for name, rate, note in rows:
        print(f"  {name:<66} {rate:>9.1f} ledgers/s  {note}")
    print(f"  disagreements: {r['disagreements'] + r['fastInProcessDisagreements']} (must be 0: the reference "
          f"against itself); load average {', '.join('%.2f' % x for x in r['loadAverage'])}")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as handle:
            json.dump(r, handle, indent=1)
    ok = r["disagreements"] == 0 and r["fastInProcessDisagreements"] == 0
    return 0 if ok and r["fuzzExitCode"] == 0 and r["fastExitCode"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
