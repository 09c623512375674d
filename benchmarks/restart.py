"""``python -m benchmarks.restart``: the restart path end to end (issue 18 item 1).

One command: it writes a ledger file of ``--sizes`` events (the shape of
``benchmarks.ledgers``, ~350 bytes a line), then, round-robin in one run, best of
``--repeat``:

* **json.loads** (the baseline): ``[json.loads(line) for line in file]`` in this process;
* **load**: ``load_ledger(file)`` in this process — read, parse, check and freeze every line
  (the msgspec fast path with the exact decoder as fallback);
* **load (exact)**: the same with the fast path off (``load_ledger_with(file,
  decode_runtime_event)``), what the restart path cost before issue 18;
* **resolve / plan, end to end**: ``python -m maka_ref resolve|plan FILE`` as a child, its
  own CPU time (user + system, from ``wait4``), interpreter start and writing the answer
  included; stdout is read and counted.

* with ``--upstream DIR`` (a built ``maka-agent`` checkout, Node ≥ 22.19 on ``PATH`` or in
  ``--node``): **upstream resolve / plan, end to end**, ``node restart_upstream.mjs resolve|plan
  FILE`` as a child the same way — JSON.parse, upstream's ``decodeRuntimeEvent``, then its
  ``resolveRuntimeRecovery`` / ``buildResumePlanFromRuntimeEvents``, the answer written as JSON.
  Without Node or the checkout the rows say why and nothing else changes.

All are CPU times (the machine is shared: wall time wanders with the load; ``uptime`` is
printed before and after). Ratios are against json.loads of the same file in the same run.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchmarks.ledger_memory import write_ledger
from maka_ref._cli.ledger_input import load_ledger, load_ledger_with
from maka_ref._events.schema import decode_runtime_event

_ROOT = Path(__file__).resolve().parents[1]
_UPSTREAM_SCRIPT = Path(__file__).with_name("restart_upstream.mjs")


def _cpu(call: Callable[[], Any]) -> float:
    start = time.process_time()
    call()
    return time.process_time() - start


def _json_loads(path: Path) -> None:
    with open(path, "rb") as handle:
        [json.loads(line) for line in handle]


def _child(command: str, path: Path, argv: list[str] | None = None) -> float:
    """CPU seconds of ``python -m maka_ref COMMAND FILE`` (user + system of the child), or of
    ``argv + [COMMAND, FILE]`` when given (upstream's side)."""
    args = (argv or [sys.executable, "-m", "maka_ref"]) + [command, str(path)]
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=_ROOT)
    assert proc.stdout is not None and proc.stderr is not None
    while proc.stdout.read(1 << 20):
        pass
    error = proc.stderr.read().decode("utf-8", "replace").strip()
    _, status, usage = os.wait4(proc.pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{' '.join(args[:3])} {command} failed on {path}: {error.splitlines()[-1] if error else ''}")
    return usage.ru_utime + usage.ru_stime


def upstream_argv(upstream: str | None, node: str | None) -> tuple[list[str] | None, str | None]:
    """``([node, script, --upstream, DIR], None)`` when upstream can be timed, else ``(None, why)``."""
    if not upstream:
        return None, None
    node = node or shutil.which("node")
    if node is None:
        return None, "node is not on PATH (upstream needs Node >= 22.19)"
    if not (Path(upstream) / "packages" / "runtime" / "dist").is_dir():
        return None, f"{upstream} is not a built maka-agent checkout (examples/maka-ts-adapter/README.md)"
    return [node, str(_UPSTREAM_SCRIPT), "--upstream", upstream], None


def measure(n_events: int, repeat: int, directory: str | None, upstream: list[str] | None = None) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="maka-restart-", dir=directory) as scratch:
        path = Path(scratch) / "ledger.jsonl"
        size = write_ledger(path, n_events)
        runs: dict[str, Callable[[], float]] = {
            "json.loads": lambda: _cpu(lambda: _json_loads(path)),
            "load": lambda: _cpu(lambda: load_ledger(str(path))),
            "load (exact)": lambda: _cpu(lambda: load_ledger_with(str(path), decode_runtime_event)),
            "resolve end to end": lambda: _child("resolve", path),
            "plan end to end": lambda: _child("plan", path),
        }
        if upstream is not None:
            runs["upstream resolve end to end"] = lambda: _child("resolve", path, upstream)
            runs["upstream plan end to end"] = lambda: _child("plan", path, upstream)
        best: dict[str, float] = {}
        for _ in range(repeat):
            for name, run in runs.items():
                seconds = run()
                best[name] = min(best.get(name, seconds), seconds)
    base = best["json.loads"]
    return {
        "events": n_events,
        "megabytes": round(size / 1e6, 2),
        "cpuSeconds": {name: round(value, 3) for name, value in best.items()},
        "ratioToJsonLoads": {name: round(value / base, 2) for name, value in best.items()},
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.restart", description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="100000", help="comma-separated ledger sizes (default 100000)")
    parser.add_argument("--repeat", type=int, default=3, help="best of N (default 3)")
    parser.add_argument("--dir", default=None, help="where the temporary ledger is written")
    parser.add_argument("--json", metavar="PATH", default=None, help="also write the result as JSON")
    parser.add_argument("--upstream", metavar="DIR", default=None,
                        help="also time upstream's decode + resolve/plan of the same file (a built maka-agent checkout)")
    parser.add_argument("--node", default=None, help="the Node >= 22.19 to run upstream with (default: node on PATH)")
    args = parser.parse_args(argv)
    upstream, why = upstream_argv(args.upstream, args.node)
    if why:
        print(f"upstream: not run: {why}")
    load = lambda: os.getloadavg()
    results = {"loadBefore": load(), "runs": [], "loadAfter": None}
    print(f"load average before: {results['loadBefore']}")
    names = ["json.loads", "load", "load (exact)", "resolve end to end", "plan end to end"]
    if upstream is not None:
        names += ["upstream resolve end to end", "upstream plan end to end"]
    print(f"{'events':>10} {'MB':>7}  " + "  ".join(f"{name:>20}" for name in names))
    for size in (int(text) for text in args.sizes.split(",")):
        row = measure(size, args.repeat, args.dir, upstream)
        results["runs"].append(row)
        cells = "  ".join(f"{row['cpuSeconds'][name]:>9.3f}s {row['ratioToJsonLoads'][name]:>6.2f}x"
                          for name in row["cpuSeconds"])
        print(f"{row['events']:>10} {row['megabytes']:>7}  {cells}", flush=True)
    results["loadAfter"] = load()
    print(f"load average after: {results['loadAfter']}")
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
