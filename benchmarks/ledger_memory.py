"""``python -m benchmarks.ledger_memory``: peak memory of ``maka-ref resolve`` / ``plan`` on a
large ledger file (issue 13 item 2; results in docs/performance.md).

One command: it writes (in a child) a ledger of ``--events`` RuntimeEvents (the shape of
``benchmarks.ledgers``: one T1 run, ~350 bytes a line) to a temporary file, then runs each
command as a real child process (``python -m maka_ref resolve|plan FILE``, stdout read and
hashed by this process) and takes the child's own peak resident set size from ``wait4``'s
``ru_maxrss``. In the same run, two baselines as children too:

* **interpreter**: ``python -c "import maka_ref"`` — the floor every command pays;
* **json.loads**: the ledger parsed line by line with the standard library into one list
  (``[json.loads(line) for line in file]``) — what plain Python needs to hold the ledger as
  values, with no validation, freezing or answer.

Reported per command: peak RSS, peak / ledger size (the issue's target: ≤ 3×) and peak /
json.loads baseline. ``--compare TREE`` runs the same commands on another checkout (e.g. a
``git worktree`` of the code before the change) in the same run and checks that both print
the same bytes (sha256 of stdout).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.ledgers import build_ledger

_JSON_BASELINE = (
    "import json, sys\n"
    "with open(sys.argv[1], 'rb') as f:\n"
    "    values = [json.loads(line) for line in f]\n"
    "print(len(values))\n"
)


def write_ledger(path: Path, n_events: int) -> int:
    """Write ``n_events`` events as JSON lines; returns the file's size in bytes."""
    with open(path, "w", encoding="utf-8") as handle:
        for event in build_ledger(n_events):
            handle.write(json.dumps(event, ensure_ascii=False, separators=(",", ":")) + "\n")
    return path.stat().st_size


def run_child(argv: list[str], tree: str | None = None) -> dict[str, Any]:
    """Run ``argv``; its exit status, seconds, peak RSS (bytes) and the sha256 of its stdout."""
    env = dict(os.environ)
    if tree is not None:  # ``python -m`` puts the working directory first on sys.path
        env["PYTHONPATH"] = tree
    digest = hashlib.sha256()
    start = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env, cwd=tree)
    assert proc.stdout is not None
    for chunk in iter(lambda: proc.stdout.read(1 << 20), b""):  # type: ignore[union-attr]
        digest.update(chunk)
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    seconds = time.perf_counter() - start
    # Linux reports ru_maxrss in KiB (macOS in bytes).
    peak = usage.ru_maxrss * (1 if sys.platform == "darwin" else 1024)
    return {"exit": proc.returncode, "seconds": round(seconds, 2), "peakBytes": peak, "stdoutSha256": digest.hexdigest()}


def measure(n_events: int, directory: str | None, compare: str | None) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="maka-ledger-memory-", dir=directory) as scratch:
        ledger = Path(scratch) / "ledger.jsonl"
        py = sys.executable
        # Written by a child: a forked child's ru_maxrss starts from its parent's resident
        # size, so this process must stay small for the children's peaks to be their own.
        subprocess.run([py, "-c", "import sys; from benchmarks.ledger_memory import write_ledger; "
                        "write_ledger(__import__('pathlib').Path(sys.argv[1]), int(sys.argv[2]))",
                        str(ledger), str(n_events)], check=True, cwd=Path(__file__).resolve().parents[1])
        size = ledger.stat().st_size
        rows: dict[str, Any] = {
            "interpreter": run_child([py, "-c", "import maka_ref"]),
            "jsonLoads": run_child([py, "-c", _JSON_BASELINE, str(ledger)]),
        }
        trees = {"": None} if compare is None else {"": None, "compare:": compare}
        for label, tree in trees.items():
            for command in ("resolve", "plan"):
                rows[f"{label}{command}"] = run_child([py, "-m", "maka_ref", command, str(ledger)], tree)
    baseline = rows["jsonLoads"]["peakBytes"]
    for row in rows.values():
        row["perLedgerByte"] = round(row["peakBytes"] / size, 2)
        row["perJsonLoads"] = round(row["peakBytes"] / baseline, 2)
    out: dict[str, Any] = {
        "events": n_events,
        "ledgerBytes": size,
        "python": platform.python_version(),
        "rows": rows,
    }
    if compare is not None:
        out["sameOutput"] = {
            command: rows[command]["stdoutSha256"] == rows[f"compare:{command}"]["stdoutSha256"]
            for command in ("resolve", "plan")
        }
    return out


def _mib(n: int) -> str:
    return f"{n / 2**20:,.0f}"


def render(result: dict[str, Any]) -> str:
    lines = [
        f"ledger: {result['events']:,} events, {_mib(result['ledgerBytes'])} MiB; Python {result['python']}",
        "",
        "| run | exit | seconds | peak RSS MiB | peak / ledger size | peak / json.loads |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for name, row in result["rows"].items():
        lines.append(
            f"| {name} | {row['exit']} | {row['seconds']} | {_mib(row['peakBytes'])} | "
            f"{row['perLedgerByte']} | {row['perJsonLoads']} |"
        )
    if "sameOutput" in result:
        lines.append("")
        lines.append("same stdout bytes as the compared tree: " + ", ".join(
            f"{command} {'yes' if same else 'NO'}" for command, same in result["sameOutput"].items()))
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.ledger_memory", description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=1_000_000, help="ledger size in events (default 1,000,000)")
    parser.add_argument("--dir", default=None, help="where the temporary ledger is written")
    parser.add_argument("--compare", metavar="TREE", default=None,
                        help="also run the commands with PYTHONPATH=TREE (another checkout) and compare outputs")
    parser.add_argument("--json", metavar="PATH", default=None, help="also write the result as JSON")
    args = parser.parse_args(argv)
    result = measure(args.events, args.dir, args.compare)
    print(render(result))
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=2) + "\n")
    failed = [name for name, row in result["rows"].items() if row["exit"] != 0]
    return 1 if failed or not all(result.get("sameOutput", {}).values()) else 0


if __name__ == "__main__":
    sys.exit(main())
