"""``run_sweep``: many trials on a thread pool, and the sweep report (JSON, Markdown and HTML).

Why threads: a trial spends its time waiting on child processes (spawn, a blocked failpoint,
a projection), so threads parallelise it without pickling specs across processes; every
trial has its own workspace and processes, so trials share nothing but the report.
"""

from __future__ import annotations

import json
import platform
import sys
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from concurrent.futures import wait as wait_futures
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence

from crashlab._lab import crashmatrix
from crashlab._lab.catalogue import variant_of
from crashlab._lab.engine import DEFAULT_TRIAL_TIMEOUT, abort_running, run_trial
from crashlab._lab.model import OUTCOMES, TrialResult, TrialSpec
from crashlab._lab.sweep_html import QUIET, render_html, trial_anchor

__all__ = ["SweepReport", "run_sweep", "write_report"]

#: After SIGINT, how long the killed trials get to reap their processes before the report.
_INTERRUPT_GRACE_S = 30.0


@dataclass
class SweepReport:
    results: list[TrialResult] = field(default_factory=list)
    duration_s: float = 0.0
    workers: int = 1
    command: list[str] | None = None
    #: SIGINT stopped the sweep: ``results`` are the trials that finished before it (of ``planned``).
    interrupted: bool = False
    planned: int = 0

    @property
    def ok(self) -> bool:
        return not self.interrupted and all(r.outcome in ("passed", "not_claimed", "not_run") for r in self.results)

    def counts(self) -> dict[str, int]:
        out = {o: 0 for o in OUTCOMES}
        for r in self.results:
            out[r.outcome] = out.get(r.outcome, 0) + 1
        return out

    def table(self) -> list[dict[str, Any]]:
        """Per point × mode × fault: trials, passed, detected (failed/unreached/error), seeds of failures."""
        rows: dict[tuple[str, str, str], dict[str, Any]] = {}
        for r in self.results:
            key = (r.spec.point, variant_of(r.spec.mode, r.spec.protocol), r.spec.fault)
            row = rows.setdefault(key, {"point": key[0], "mode": key[1], "fault": key[2], "total": 0, "passed": 0,
                                        "detected": 0, "notClaimed": 0, "notRun": 0, "failureSeeds": []})
            row["total"] += 1
            if r.outcome == "passed":
                row["passed"] += 1
            elif r.outcome == "not_claimed":
                row["notClaimed"] += 1
            elif r.outcome == "not_run":  # e.g. no FUSE here for a power-loss fault: never detected, never passed
                row["notRun"] += 1
            else:
                row["detected"] += 1
                row["failureSeeds"].append(r.spec.seed)
        return list(rows.values())

    def matrix(self) -> crashmatrix.CrashMatrix:
        """The crash matrix of the results (rows: points; columns: fault × mode; one cell per
        trial); a failing cell links to the trial's entry in ``crashlab-sweep.html``."""
        def link(r: TrialResult) -> str | None:
            return None if r.outcome in QUIET else "#" + trial_anchor(r.spec.trial_id)

        return crashmatrix.build_matrix(crashmatrix.trials_from_results(self.results, link))

    def to_html(self, report_dir: str | Path | None = None) -> str:
        """``crashlab-sweep.html`` (bundle links relative to ``report_dir``)."""
        return render_html(self, report_dir)

    def to_json(self) -> dict[str, Any]:
        from crashlab._client._cgroup import tracking_description

        return {"tool": "crashlab sweep", "python": platform.python_version(), "platform": sys.platform,
                "command": self.command, "processTracking": tracking_description(), "workers": self.workers, "durationS": round(self.duration_s, 2),
                "counts": self.counts(), "ok": self.ok, "interrupted": self.interrupted,
                "planned": self.planned or len(self.results), "table": self.table(),
                "matrix": self.matrix().to_json(),
                "trials": [r.to_json() for r in self.results]}

    def to_markdown(self) -> str:
        c = self.counts()
        lines = ["# crashlab sweep", ""]
        if self.interrupted:
            lines += [f"**Interrupted (SIGINT)**: a partial report of the {len(self.results)} of {self.planned} "
                      f"trials that finished before it.", ""]
        lines += [f"{len(self.results)} trials in {self.duration_s:.1f} s on {self.workers} worker(s): "
                  + ", ".join(f"{v} {k}" for k, v in c.items() if v), ""]
        if self.results:
            lines += ["## Crash matrix", "", crashmatrix.render_markdown(self.matrix(), per="repetition").rstrip("\n"),
                      ""]
        lines += ["## Detected per point, mode and fault", "",
                  "| point | mode | fault | detected / total | failing seeds |", "|---|---|---|---|---|"]
        for row in self.table():
            seeds = ", ".join(str(s) for s in row["failureSeeds"]) or "—"
            lines.append(f"| {row['point']} | {row['mode']} | {row['fault']} | {row['detected']} / {row['total']} | {seeds} |")
        bad = [r for r in self.results if r.outcome not in ("passed", "not_claimed")]
        if bad:
            lines += ["", "## Failures", ""]
            for r in bad:
                lines.append(f"* `{r.spec.trial_id}` **{r.outcome}** (seed {r.spec.seed}): {r.message[:500]}"
                             + (f" — bundle `{r.bundle}`" if r.bundle else ""))
        return "\n".join(lines) + "\n"


def run_sweep(specs: Sequence[TrialSpec], *, workers: int = 1, on_result: Callable[[TrialResult], None] | None = None,
              report_dir: str | Path | None = None, timeout: float = DEFAULT_TRIAL_TIMEOUT,
              env: dict[str, str] | None = None, prefork: bool | None = None) -> SweepReport:
    """Run ``specs`` (``workers`` at a time); failure bundles go to ``<report_dir>/bundles``.
    Results keep the order of ``specs``; ``on_result`` sees them as they finish."""
    started = time.monotonic()
    bundles = Path(report_dir) / "bundles" if report_dir is not None else None
    results: list[TrialResult | None] = [None] * len(specs)
    pool = ThreadPoolExecutor(max_workers=max(1, workers))
    futures = {pool.submit(run_trial, spec, timeout=timeout, bundle_dir=bundles, env=env, prefork=prefork): n
               for n, spec in enumerate(specs)}
    interrupted = False
    try:
        for future in as_completed(futures):
            result = future.result()
            results[futures[future]] = result
            if on_result is not None:
                on_result(result)
    except KeyboardInterrupt:
        # SIGINT: no new trial starts, running ones are killed (no bundle), the finished ones
        # make a partial report
        interrupted = True
        pool.shutdown(wait=False, cancel_futures=True)
        abort_running()
        try:
            # a cancelled future is never "done" for wait() (no worker notifies it): skip those
            wait_futures([f for f in futures if not f.cancelled()], timeout=_INTERRUPT_GRACE_S)
        except KeyboardInterrupt:
            abort_running()
    finally:
        pool.shutdown(wait=not interrupted)
    command = list(specs[0].command) if specs and specs[0].command else None
    report = SweepReport([r for r in results if r is not None], time.monotonic() - started, workers, command,
                         interrupted=interrupted, planned=len(specs))
    if report_dir is not None:
        write_report(report, Path(report_dir))
    return report


def write_report(report: SweepReport, report_dir: Path) -> tuple[Path, Path, Path]:
    """Write ``crashlab-sweep.json``, ``.md`` and ``.html`` into ``report_dir``."""
    report_dir.mkdir(parents=True, exist_ok=True)
    js, md = report_dir / "crashlab-sweep.json", report_dir / "crashlab-sweep.md"
    page = report_dir / "crashlab-sweep.html"
    js.write_text(json.dumps(report.to_json(), indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    md.write_text(report.to_markdown(), encoding="utf-8")
    page.write_text(report.to_html(report_dir), encoding="utf-8")
    return js, md, page


def load_specs(points: Iterable[str] | None = None, **kw: Any) -> list[TrialSpec]:
    from crashlab._lab.catalogue import default_specs

    return default_specs(points=points, **kw)
