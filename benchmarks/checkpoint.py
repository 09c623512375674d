"""``python -m benchmarks.checkpoint``: capture of a 10,000-file workspace against a plain
``git add -A && git write-tree`` on the same tree (issue 17, "Done means": at most 2×).

In one run, so every figure sees the same machine, page cache and load:

* **workspace**: ``--files`` tracked files (default 10,000, 100 per directory, 40 B–4 KiB of
  text), committed; then the state of a working session: ``--dirty`` tracked files modified,
  as many untracked files added, and an ignored ``build/`` directory of 500 files;
* **plain** (the baseline): ``git add -A`` then ``git write-tree``, the user's own two
  commands, on a byte copy of the workspace's index (taken untimed before each round, mtime
  kept — exactly the index the user would run them on; the workspace's real index is never
  touched, so every round starts from the same state);
* **capture**: ``GitCheckpointCarrier().capture`` — everything: locating the repository, the
  steady-state checks, the survey (index copy, untracked listing, sizes), ``add -A`` into the
  private index, the post-check, ``write-tree``, ``commit-tree``, the create-only ref;
* **head-seeded** (for the record, spec-phase4 §3.4 step 3): the private index seeded with
  ``read-tree HEAD`` instead of the index copy, then ``add -A`` and ``write-tree`` — what
  issue 17's "seeded from HEAD" would cost before any check, commit or ref;
* **cold plain**: ``add -A`` + ``write-tree`` into an empty index (no stat cache at all).

Rounds alternate the order of the variants; medians and minima are printed, and the ratio
capture / plain of the medians is the headline. ``--json PATH`` writes the figures. Results:
``docs/performance.md`` ("Checkpoint capture (issue 17)").
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from maka_ref._checkpoint import GitCheckpointCarrier

IDENTITY = "workspace:v1:123e4567-e89b-42d3-a456-426614174000"


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(GIT_CONFIG_NOSYSTEM="1", GIT_AUTHOR_NAME="bench", GIT_AUTHOR_EMAIL="bench@example.invalid",
               GIT_COMMITTER_NAME="bench", GIT_COMMITTER_EMAIL="bench@example.invalid", **extra)
    return env


def _git(cwd: Path, *args: str, **env: str) -> str:
    done = subprocess.run(["git", *args], cwd=cwd, env=_env(**env), capture_output=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"git {' '.join(args)} failed: {done.stderr.decode(errors='replace').strip()}")
    return done.stdout.decode()


def build_workspace(root: Path, files: int, dirty: int, seed: int = 17) -> Path:
    """A committed tree of ``files`` files, then ``dirty`` modified and ``dirty`` untracked
    files and an ignored build directory."""
    rng = random.Random(seed)
    ws = root / "ws"
    ws.mkdir(parents=True)
    _git(ws, "init", "-q", "-b", "main")
    (ws / ".gitignore").write_text("build/\n")
    paths = []
    for i in range(files):
        path = ws / f"src{i // 100:03d}" / f"file{i % 100:02d}.txt"
        path.parent.mkdir(exist_ok=True)
        path.write_text(f"line {i}\n" * rng.randint(4, 400))
        paths.append(path)
    _git(ws, "add", "-A")
    _git(ws, "commit", "-q", "-m", "workspace")
    for path in rng.sample(paths, min(dirty, len(paths))):
        with open(path, "a") as handle:
            handle.write("an uncommitted edit\n")
    for i in range(dirty):
        (ws / "new").mkdir(exist_ok=True)
        (ws / "new" / f"untracked{i}.txt").write_text(f"untracked {i}\n" * 10)
    (ws / "build").mkdir()
    for i in range(500):
        (ws / "build" / f"out{i}.o").write_bytes(bytes(rng.getrandbits(8) for _ in range(64)))
    _git(ws, "status", "--porcelain")  # refresh the index's stat cache, as a user's git does
    return ws


def _copy_index(ws: Path, target: Path) -> None:
    shutil.copyfile(ws / ".git" / "index", target)
    info = os.stat(ws / ".git" / "index")
    os.utime(target, ns=(info.st_atime_ns, info.st_mtime_ns))


def _cpu() -> float:
    """CPU seconds of this process and its reaped children (user + system)."""
    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def _timed(action: Callable[[], Any]) -> tuple[float, float, Any]:
    """(wall seconds, CPU seconds of this process and every git it ran, result)."""
    cpu, started = _cpu(), time.perf_counter()
    result = action()
    return time.perf_counter() - started, _cpu() - cpu, result


def run(files: int, dirty: int, rounds: int, directory: Path) -> dict[str, Any]:
    ws = build_workspace(directory, files, dirty)
    scratch = directory / "scratch"
    scratch.mkdir()
    carrier = GitCheckpointCarrier()
    trees: dict[str, set[str]] = {}

    def plain() -> str:
        index = scratch / "plain-index"
        _git(ws, "add", "-A", GIT_INDEX_FILE=str(index))
        return _git(ws, "write-tree", GIT_INDEX_FILE=str(index)).strip()

    def cold() -> str:
        index = scratch / "cold-index"
        _git(ws, "add", "-A", GIT_INDEX_FILE=str(index))
        return _git(ws, "write-tree", GIT_INDEX_FILE=str(index)).strip()

    def head_seeded() -> str:
        index = scratch / "head-index"
        _git(ws, "read-tree", "HEAD", GIT_INDEX_FILE=str(index))
        _git(ws, "add", "-A", GIT_INDEX_FILE=str(index))
        return _git(ws, "write-tree", GIT_INDEX_FILE=str(index)).strip()

    def capture() -> str:
        return carrier.capture(str(ws), IDENTITY).tree_oid

    def prepare(name: str) -> None:
        for leftover in scratch.iterdir():
            leftover.unlink()
        if name == "plain":
            _copy_index(ws, scratch / "plain-index")

    variants: dict[str, Callable[[], str]] = {"plain": plain, "capture": capture, "head-seeded": head_seeded,
                                              "cold plain": cold}
    times: dict[str, list[float]] = {name: [] for name in variants}
    cpu_times: dict[str, list[float]] = {name: [] for name in variants}
    for name, action in variants.items():  # warm-up: page cache, objects of new content written once
        prepare(name)
        trees.setdefault(name, set()).add(action())
    for round_ in range(rounds):
        order = list(variants) if round_ % 2 == 0 else list(reversed(variants))
        for name in order:
            prepare(name)
            elapsed, cpu, tree = _timed(variants[name])
            times[name].append(elapsed)
            cpu_times[name].append(cpu)
            trees[name].add(tree)
    for ref in _git(ws, "for-each-ref", "--format=%(refname)", "refs/maka/").split():
        _git(ws, "update-ref", "-d", ref)
    captured = carrier.capture(str(ws), IDENTITY)
    verify_s, _, _ = _timed(lambda: carrier.verify(str(ws), captured.checkpoint_ref, captured.policy_hash))
    compare_s, _, drift = _timed(lambda: carrier.compare(str(ws), captured.checkpoint_ref, captured.policy_hash))
    medians = {name: statistics.median(values) for name, values in times.items()}
    cpu_medians = {name: statistics.median(values) for name, values in cpu_times.items()}
    return {
        "files": files,
        "dirty": dirty,
        "rounds": rounds,
        "capturedFiles": captured.file_count,
        "capturedBytes": captured.total_bytes,
        "sameTree": len(trees["plain"] | trees["capture"] | trees["head-seeded"] | trees["cold plain"]) == 1,
        "medianSeconds": medians,
        "minSeconds": {name: min(values) for name, values in times.items()},
        "cpuMedianSeconds": cpu_medians,
        "ratioCaptureToPlain": medians["capture"] / medians["plain"],
        "cpuRatioCaptureToPlain": cpu_medians["capture"] / cpu_medians["plain"],
        "ratioHeadSeededToPlain": medians["head-seeded"] / medians["plain"],
        "verifySeconds": verify_s,
        "compareSeconds": compare_s,
        "compareClean": drift.clean,
        "git": _git(ws, "version").strip(),
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
        "loadAverage": os.getloadavg()[0],
    }


def report(result: dict[str, Any]) -> str:
    lines = [
        (f"workspace: {result['files']} tracked files, {result['dirty']} modified + {result['dirty']} untracked, "
         f"500 ignored; capture holds {result['capturedFiles']} files, {result['capturedBytes']:,} bytes"),
        f"{result['git']}, Python {result['python']}, {result['cpus']} CPUs, {result['rounds']} rounds",
        "",
        f"{'variant':<14}{'median s':>10}{'min s':>10}{'× plain':>9}{'CPU s':>9}{'CPU × plain':>13}",
    ]
    plain, plain_cpu = result["medianSeconds"]["plain"], result["cpuMedianSeconds"]["plain"]
    for name, median in result["medianSeconds"].items():
        cpu = result["cpuMedianSeconds"][name]
        lines.append(f"{name:<14}{median:>10.3f}{result['minSeconds'][name]:>10.3f}{median / plain:>9.2f}"
                     f"{cpu:>9.3f}{cpu / plain_cpu:>13.2f}")
    lines += [
        "",
        (f"capture / plain = {result['ratioCaptureToPlain']:.2f} wall, {result['cpuRatioCaptureToPlain']:.2f} CPU "
         f"(target <= 2.00: {'met' if result['ratioCaptureToPlain'] <= 2.0 else 'NOT met'}); "
         f"all variants wrote the same tree: {result['sameTree']}; load average {result['loadAverage']:.1f}"),
        (f"verify {result['verifySeconds']:.3f} s, compare {result['compareSeconds']:.3f} s "
         f"(clean: {result['compareClean']}) — informational"),
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.checkpoint", description=__doc__.split("\n")[0])
    parser.add_argument("--files", type=int, default=10_000)
    parser.add_argument("--dirty", type=int, default=50)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--dir", type=Path, default=None, help="where to build the workspace (default: a temp dir)")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args(argv)
    if shutil.which("git") is None:
        print("git is not installed", file=sys.stderr)
        return 2
    holder = tempfile.mkdtemp(prefix="bench-checkpoint-", dir=args.dir)
    try:
        result = run(args.files, args.dirty, args.rounds, Path(holder))
    finally:
        shutil.rmtree(holder, ignore_errors=True)
    print(report(result))
    if args.json is not None:
        args.json.write_text(json.dumps({"checkpoint": result}, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
