"""``maka-conformance fuzz``: the whole run — seed, database, budget, both searches, reports.

Why the run is shaped this way:

* **One seed per run, printed first.** A search that found something must be re-runnable
  exactly (``--seed``), and a CI log is often all a person has.
* **A persistent example database** (``MAKA_FUZZ_DB`` or ``<report-dir>/.hypothesis/maka-fuzz``):
  Hypothesis replays every failure it saved before generating anything new, so CI that caches
  this directory re-checks yesterday's disagreements first, at no cost when they are fixed.
* **Two searches**, ledgers then write schedules, sharing the time budget; each stops
  generating at 60 % of its share and may spend the rest shrinking (:mod:`._search`).
* **Per-example workspaces** under ``<report-dir>/.workspaces``, removed after each schedule;
  a file left in that directory at the end was written by a side outside its workspace and is
  reported (``strayFiles``). The implementation runs with that directory as its working
  directory, so its stray writes land there too.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import sys
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence, TextIO

from conformance._fuzz._bundles import make_bundle, write_bundle
from conformance._fuzz._search import Budget, Disagreement, SearchOutcome, Tracker, fuzz_settings, run_search
from conformance._fuzz._targets import ProtocolTarget, ReferenceTarget, command_line

__all__ = ["DB_ENV", "FuzzConfig", "FuzzResult", "database_path", "hypothesis_home", "run_fuzz"]

DB_ENV = "MAKA_FUZZ_DB"
PROPERTIES = ("ledger", "schedule")


@dataclass
class FuzzConfig:
    impl: str | Sequence[str] | None = None
    examples: int = 200
    #: Write schedules to draw (default: a tenth of ``examples``, at least 1).
    schedule_examples: int | None = None
    seed: int | None = None
    time_budget: float | None = None
    report_dir: str = "maka-fuzz-report"
    database: str | None = None
    properties: Sequence[str] = PROPERTIES
    batch: bool = True
    max_batch: int = 256
    timeout: float = 30.0
    steps: int = 20


@dataclass
class FuzzResult:
    seed: int
    bundles: list[str] = field(default_factory=list)
    summary: dict[str, Any] = field(default_factory=dict)
    harness_error: str | None = None
    #: Files left in the workspaces' root: written outside every per-example workspace.
    stray_files: list[str] = field(default_factory=list)

    @property
    def exit_code(self) -> int:
        return 2 if self.harness_error else 1 if self.bundles or self.stray_files else 0


def database_path(report_dir: str, explicit: str | None = None) -> str:
    """Where Hypothesis keeps its examples: ``explicit``, else ``$MAKA_FUZZ_DB``, else under the report dir."""
    return explicit or os.environ.get(DB_ENV) or os.path.join(report_dir, ".hypothesis", "maka-fuzz")


def _ledger_search(config: FuzzConfig, seed: int, db: Any, impl: Any, ref: Any, budget: Budget) -> SearchOutcome:
    from hypothesis import given
    from hypothesis import seed as seed_

    from conformance._fuzz._ledgers import check_ledger, fuzz_ledgers

    tracker = Tracker(budget)

    def ledger_disagrees(case: Any) -> None:
        tracker.start_example()
        try:
            check_ledger(case, impl, ref)
        except Disagreement as d:
            tracker.record(d)
            raise

    test = seed_(seed)(fuzz_settings(config.examples, db)(given(fuzz_ledgers())(ledger_disagrees)))
    return run_search(test, tracker)


def _schedule_search(config: FuzzConfig, seed: int, db: Any, impl: Any, ref: Any, budget: Budget,
                     workspace_root: str) -> SearchOutcome:
    from hypothesis import seed as seed_
    from hypothesis.stateful import run_state_machine_as_test

    from conformance._fuzz._schedules import Workspaces, check_schedule, schedule_machine

    tracker = Tracker(budget)
    workspaces = Workspaces(workspace_root)

    def check(steps: list[Any]) -> None:
        try:
            check_schedule(steps, impl, ref, workspaces)
        except Disagreement as d:
            tracker.record(d)
            raise

    machine = seed_(seed)(schedule_machine(check, tracker))
    count = config.schedule_examples if config.schedule_examples is not None else max(1, config.examples // 10)
    settings = fuzz_settings(count, db, steps=config.steps)
    return run_search(lambda: run_state_machine_as_test(machine, settings=settings), tracker)


def _stray_files(root: str) -> list[str]:
    out = []
    for directory, _, files in os.walk(root):
        out.extend(os.path.relpath(os.path.join(directory, name), root) for name in files)
    return sorted(out)


def hypothesis_home(report_dir: str, db_dir: str) -> str:
    """Hypothesis's own caches: ``<report-dir>/.hypothesis`` with the default database, else a
    ``.hypothesis-home`` next to ``$MAKA_FUZZ_DB`` (so one CI cache keeps both warm: a cold
    cache costs Hypothesis several seconds before its first example)."""
    if os.path.abspath(db_dir) == os.path.join(report_dir, ".hypothesis", "maka-fuzz"):
        return os.path.join(report_dir, ".hypothesis")
    return os.path.join(os.path.dirname(os.path.abspath(db_dir)), ".hypothesis-home")


def _hypothesis_home(directory: Any) -> Any:
    """Point Hypothesis's own storage (its caches) at ``directory``; return the previous setting.

    Why: Hypothesis otherwise writes ``.hypothesis/`` into the working directory, and the
    fuzzer promises to write nothing outside its report directory and workspaces.
    """
    from hypothesis import configuration

    previous = vars(configuration).get("__hypothesis_home_directory")
    configuration.set_hypothesis_home_dir(directory)
    return previous


def _without_local_constants() -> Callable[[], None]:
    """Stop Hypothesis from mixing constants of the process's *local* modules into generated
    data for the duration of a run; return the function that restores it.

    Why: Hypothesis (6.13x+) seeds its string and number choices with literals it finds in the
    source of every non-installed, non-test module imported so far. Which modules those are
    depends on the install (editable or not), the working directory and whatever else the
    process imported (in our own test suite: the ``benchmarks`` package), so the same
    ``--seed`` could generate and shrink differently from one machine to the next. The fuzzer
    promises that a printed seed reproduces its search. The hook is private to Hypothesis;
    when it is missing nothing is changed.
    """
    try:
        from hypothesis.internal.conjecture import providers

        original = providers._get_local_constants
        empty = providers.Constants()
    except (ImportError, AttributeError, TypeError):  # another Hypothesis version: leave it alone
        return lambda: None
    providers._get_local_constants = lambda: empty

    def restore() -> None:
        providers._get_local_constants = original

    return restore


def enter_search_environment(report_dir: str, db_dir: str) -> Callable[[], None]:
    """What every fuzz run (``run_fuzz``, ``run_self_fuzz``) sets up around its searches:
    Hypothesis's caches under the report directory (:func:`hypothesis_home`) and no local
    constants (:func:`_without_local_constants`). Returns the function that undoes both."""
    home = _hypothesis_home(hypothesis_home(report_dir, db_dir))
    restore_constants = _without_local_constants()

    def leave() -> None:
        restore_constants()
        _hypothesis_home(home)

    return leave


def run_fuzz(config: FuzzConfig, out: TextIO | None = None) -> FuzzResult:
    """Run the differential fuzzer; write bundles and ``fuzz.json`` under ``config.report_dir``."""
    from hypothesis.database import DirectoryBasedExampleDatabase

    out = out if out is not None else sys.stdout
    seed = config.seed if config.seed is not None else secrets.randbelow(2**32)
    result = FuzzResult(seed)
    print(f"maka-conformance fuzz: seed {seed} (re-run with --seed {seed})", file=out, flush=True)
    unknown = set(config.properties) - set(PROPERTIES)
    if unknown:
        result.harness_error = f"unknown properties {sorted(unknown)}; expected some of {list(PROPERTIES)}"
        return result
    report_dir = os.path.abspath(config.report_dir)
    db_dir = database_path(report_dir, config.database)
    workspace_root = os.path.join(report_dir, ".workspaces")
    shutil.rmtree(workspace_root, ignore_errors=True)
    os.makedirs(workspace_root)
    command = command_line(config.impl)
    impl = ProtocolTarget(command, cwd=workspace_root, timeout=config.timeout, max_batch=config.max_batch,
                          use_batch=config.batch)
    ref = ReferenceTarget()
    started = time.monotonic()
    leave_search_environment = enter_search_environment(report_dir, db_dir)
    summary: dict[str, Any] = {"seed": seed, "implementation": {"command": command}, "database": db_dir,
                               "properties": {}}
    try:
        try:
            impl._started()
        except Exception as exc:  # noqa: BLE001 - ProtocolFailure or OSError: the run cannot start
            result.harness_error = f"cannot start {impl.name}: {exc}"
            return result
        summary["implementation"]["handshake"] = impl.handshake
        os.makedirs(db_dir, exist_ok=True)  # created even when empty: a CI cache step can rely on it
        db = DirectoryBasedExampleDatabase(db_dir)
        for index, prop in enumerate(p for p in PROPERTIES if p in config.properties):
            remaining = None
            if config.time_budget is not None:
                left = config.time_budget - (time.monotonic() - started)
                shares = len([p for p in PROPERTIES if p in config.properties]) - index
                remaining = max(0.0, left / shares)
            budget = Budget.split(time.monotonic(), remaining)
            t0 = time.monotonic()
            if prop == "ledger":
                outcome = _ledger_search(config, seed, db, impl, ref, budget)
            else:
                outcome = _schedule_search(config, seed, db, impl, ref, budget, workspace_root)
            entry: dict[str, Any] = {"examples": outcome.examples, "seconds": round(time.monotonic() - t0, 3),
                                     "stopped": outcome.stopped, "bundle": None}
            if outcome.disagreement is not None:
                d = outcome.disagreement
                bundle = make_bundle(d, seed=seed, command=command, handshake=impl.handshake, shrink=outcome.shrink,
                                     stderr_tail=impl.stderr_tail())
                path = write_bundle(bundle, os.path.join(report_dir, "bundles"))
                result.bundles.append(path)
                entry.update(bundle=path, op=d.op, path=d.diff.get("path"), shrink=outcome.shrink,
                             referenceFailed=d.reference_failed)
                what = "the REFERENCE failed" if d.reference_failed else "disagreement"
                print(f"  {prop}: {what} in {d.op} at {d.diff.get('path')} ({outcome.shrink}; "
                      f"input size {d.size[0]}) -> {path}", file=out, flush=True)
            else:
                print(f"  {prop}: {outcome.examples} examples, no disagreement"
                      + (f" (stopped by the {outcome.stopped})" if outcome.stopped else ""), file=out, flush=True)
            summary["properties"][prop] = entry
        summary["batching"] = impl.batching
        summary["restarts"] = impl.restarts
    finally:
        leave_search_environment()
        impl.close()
        ref.close()
        stray = _stray_files(workspace_root)
        shutil.rmtree(workspace_root, ignore_errors=True)
    summary["strayFiles"] = stray
    summary["seconds"] = round(time.monotonic() - started, 3)
    summary["bundles"] = result.bundles
    if stray:
        print(f"  files written outside the per-example workspaces: {stray[:5]}", file=out)
        result.stray_files = stray
    result.summary = summary
    os.makedirs(report_dir, exist_ok=True)
    with open(os.path.join(report_dir, "fuzz.json"), "w", encoding="utf-8") as handle:
        json.dump(summary, handle, indent=1, ensure_ascii=True, default=str)
        handle.write("\n")
    print(f"maka-conformance fuzz: seed {seed}: {len(result.bundles)} disagreement(s) in {summary['seconds']} s; "
          f"report {os.path.join(report_dir, 'fuzz.json')}", file=out, flush=True)
    return result
