"""``maka-conformance fuzz``: the whole run — seed, database, budget, both searches, reports.

Why the run is shaped this way:

* **One seed per run, printed first.** A search that found something must be re-runnable
  exactly (``--seed``), and a CI log is often all a person has.
* **A persistent example database** (``MAKA_FUZZ_DB`` or ``<report-dir>/.hypothesis/maka-fuzz``):
  the minimal example of every bucket is saved there and replayed before anything new is
  generated, so CI that caches this directory re-checks yesterday's disagreements first, at
  no cost when they are fixed (:mod:`._buckets`).
* **The handshake decides what is searched.** An operation of a capability the implementation
  does not claim is answered ``not_claimed`` (protocol §3), which is not a disagreement: the
  schedule search needs ``store``, ``ledger.resolve`` needs ``ledger.resolver`` and
  ``ledger.plan`` needs ``ledger.plan``; what cannot run is reported as skipped, with why.
* **Two searches**, ledgers then write schedules, sharing the time budget; each stops
  generating at 60 % of its share and may spend the rest shrinking. Neither stops at the first
  disagreement: every one is put in a bucket (operation, first differing path), and one
  example per bucket is shrunk and written as a bundle (:mod:`._buckets`). Ctrl-C stops the
  run and still writes every bucket found so far.
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
from typing import Any, Callable, Mapping, Sequence, TextIO

from conformance._fuzz._buckets import Bucket, BucketedOutcome, BucketTracker, run_bucketed
from conformance._fuzz._bundles import make_bundle, write_bundle
from conformance._fuzz._search import Budget
from conformance._fuzz._targets import ProtocolTarget, ReferenceTarget, command_line
from conformance.protocol import OPERATIONS

__all__ = ["DB_ENV", "SEARCH_MODES", "FuzzConfig", "FuzzResult", "database_path", "hypothesis_home", "run_fuzz"]

DB_ENV = "MAKA_FUZZ_DB"
PROPERTIES = ("ledger", "schedule")
SEARCH_MODES = ("fast", "hypothesis")


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
    #: How the ledger search generates: ``"fast"`` (seeded plain random draws of the same
    #: strategies, many ledgers per round trip, :mod:`._fast`) or ``"hypothesis"`` (every
    #: example drawn by Hypothesis's engine, shrunk by its shrinker).
    search: str = "fast"


@dataclass
class FuzzResult:
    seed: int
    bundles: list[str] = field(default_factory=list)
    summary: dict[str, Any] = field(default_factory=dict)
    harness_error: str | None = None
    #: Files left in the workspaces' root: written outside every per-example workspace.
    stray_files: list[str] = field(default_factory=list)
    #: SIGINT stopped a search: ``fuzz.json`` is a partial report (``"interrupted": true``).
    interrupted: bool = False

    @property
    def exit_code(self) -> int:
        if self.interrupted:
            return 130
        return 2 if self.harness_error else 1 if self.bundles or self.stray_files else 0


def database_path(report_dir: str, explicit: str | None = None) -> str:
    """Where Hypothesis keeps its examples: ``explicit``, else ``$MAKA_FUZZ_DB``, else under the report dir."""
    return explicit or os.environ.get(DB_ENV) or os.path.join(report_dir, ".hypothesis", "maka-fuzz")


#: The example database key of each search (its saved minimal examples, one per bucket).
_DB_KEYS = {"ledger": b"maka-fuzz:ledger:v2", "schedule": b"maka-fuzz:schedule:v2"}
#: ``--search fast``'s minimal ledgers: JSON (``kind``, ``events``, ``highWater``), no choice sequence.
_FAST_DB_KEY = b"maka-fuzz:ledger-fast:v1"


def _claimed_ledger_ops(handshake: Mapping[str, Any] | None) -> tuple[list[str], list[str]]:
    """(the ledger operations whose capability the handshake claims, the others)."""
    from conformance._fuzz._ledgers import LEDGER_OPS
    from conformance.protocol import OPERATIONS

    claims = set((handshake or {}).get("capabilities") or ())
    ops = [op for op in LEDGER_OPS if OPERATIONS[op] in claims]
    return ops, [op for op in LEDGER_OPS if op not in ops]


def _ledger_search(config: FuzzConfig, seed: int, db: Any, impl: Any, ref: Any, budget: Budget,
                   ops: Sequence[str]) -> BucketedOutcome:
    from hypothesis import given
    from hypothesis import seed as seed_

    from conformance._fuzz._ledgers import fuzz_ledgers, ledger_disagreements

    tracker = BucketTracker(budget)
    strategy = fuzz_ledgers()

    def make_test(body: Callable[[Any], None], settings: Any, key: bytes) -> Callable[[], None]:
        def ledger_example(case: Any) -> None:
            tracker.start_example()
            body(case)

        # settings outermost: ``@seed`` alone would switch the example database off
        test = settings(seed_(seed)(given(strategy)(ledger_example)))
        test._hypothesis_internal_database_key = key
        return test

    check = lambda case: ledger_disagreements(case, impl, ref, ops)  # noqa: E731
    if config.search != "fast":
        return run_bucketed(make_test, check, tracker, database=db, database_key=_DB_KEYS["ledger"],
                            examples=config.examples)
    return _fast_ledger_search(config, seed, db, impl, ref, ops, tracker, make_test, check)


def _fast_ledger_search(config: FuzzConfig, seed: int, db: Any, impl: Any, ref: Any, ops: Sequence[str],
                        tracker: BucketTracker, make_test: Any, check: Callable[[Any], Any]) -> BucketedOutcome:
    """``--search fast``: Hypothesis replays (and shrinks) what its database saved as before;
    the fast mode's own saved ledgers (JSON, under :data:`_FAST_DB_KEY`) are re-checked; then
    :func:`~._fast.fast_ledger_search` generates, many ledgers per round trip; each bucket's
    smallest case is shrunk by event deletion (:func:`~._fast.shrink_case`) and saved for the
    next run (an entry that no longer disagrees is deleted)."""
    from conformance._fuzz._buckets import bucket_key, shrink_limit
    from conformance._fuzz._fast import fast_ledger_search, shrink_case
    from conformance._fuzz._ledgers import LedgerCase, fuzz_ledgers, ledger_disagreements_many
    from conformance._fuzz._search import OutOfTime

    replayed = run_bucketed(make_test, check, tracker, database=db, database_key=_DB_KEYS["ledger"],
                            examples=config.examples, generate=False)
    if replayed.stopped is not None:
        return replayed
    known = set(tracker.buckets)
    saved: dict[Any, tuple[Any, bytes]] = {}
    tracker.phase = "replay"
    try:
        for raw in list(db.fetch(_FAST_DB_KEY)) if db is not None else ():
            tracker.start_example()
            try:
                data = json.loads(raw)
                case = LedgerCase(str(data["kind"]), list(data["events"]), data.get("highWater"))
            except (ValueError, KeyError, TypeError):  # unreadable (another version): forgotten
                db.delete(_FAST_DB_KEY, raw)
                continue
            found = check(case)
            if not found:  # fixed: forgotten
                db.delete(_FAST_DB_KEY, raw)
            for d in found:
                tracker.record(d, None)
                saved.setdefault(bucket_key(d), (case, raw))
    except OutOfTime:
        return BucketedOutcome(list(tracker.buckets.values()), tracker.examples, tracker.shrink_examples, "time budget")
    chunk = max(1, config.max_batch // max(1, len(ops))) if config.batch else 1
    smallest, stopped = fast_ledger_search(fuzz_ledgers(), seed,
                                           lambda cases: ledger_disagreements_many(cases, impl, ref, ops),
                                           tracker, examples=config.examples, chunk=chunk)
    for key, (case, _) in saved.items():
        smallest.setdefault(key, case)
    tracker.phase = "shrink"

    def counted(case: Any) -> Any:
        tracker.shrink_examples += 1
        return check(case)

    for key, bucket in tracker.buckets.items():
        if key in known or key not in smallest:
            continue
        final_case = smallest[key]
        if stopped is not None:
            bucket.shrink = f"not shrunk (stopped by the {stopped})" if stopped == "time budget" else "not shrunk (interrupted)"
        else:
            try:
                final_case, final, bucket.shrink = shrink_case(smallest[key], key, counted,
                                                               limit=shrink_limit(config.examples),
                                                               budget=tracker.budget)
            except KeyboardInterrupt:
                bucket.shrink, stopped = "stopped: interrupted", "interrupted"
                final = None
            if final is not None:
                bucket.final = final
        if db is not None:  # the next run re-checks it first
            entry = json.dumps({"kind": final_case.kind, "events": final_case.events,
                                "highWater": final_case.high_water}, ensure_ascii=True, sort_keys=True).encode()
            db.save(_FAST_DB_KEY, entry)
            if key in saved and saved[key][1] != entry:
                db.delete(_FAST_DB_KEY, saved[key][1])
    return BucketedOutcome(list(tracker.buckets.values()), tracker.examples, tracker.shrink_examples, stopped)


def _schedule_search(config: FuzzConfig, seed: int, db: Any, impl: Any, ref: Any, budget: Budget,
                     workspace_root: str) -> BucketedOutcome:
    from hypothesis import seed as seed_
    from hypothesis.stateful import get_state_machine_test

    from conformance._fuzz._schedules import Workspaces, schedule_disagreements, schedule_machine

    tracker = BucketTracker(budget)
    workspaces = Workspaces(workspace_root)

    def make_test(body: Callable[[Any], None], settings: Any, key: bytes) -> Callable[[], None]:
        machine = seed_(seed)(schedule_machine(body, tracker))  # its __init__ calls start_example
        test = get_state_machine_test(machine, settings=settings)
        test._hypothesis_internal_database_key = key
        return test

    count = config.schedule_examples if config.schedule_examples is not None else max(1, config.examples // 10)
    return run_bucketed(make_test, lambda steps: schedule_disagreements(steps, impl, ref, workspaces), tracker,
                        database=db, database_key=_DB_KEYS["schedule"], examples=count, steps=config.steps)


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


def _skipped(properties: Sequence[str], handshake: Mapping[str, Any] | None, ledger_ops: Sequence[str]) -> dict[str, str]:
    """Searches the handshake does not allow, with the reason (protocol §3: an operation of an
    unclaimed capability is answered ``not_claimed``, which is no disagreement)."""
    claims = set((handshake or {}).get("capabilities") or ())
    out = {}
    if "ledger" in properties and not ledger_ops:
        out["ledger"] = "ledger.resolver and ledger.plan not claimed"
    if "schedule" in properties and "store" not in claims:
        out["schedule"] = "store not claimed"
    return out


def _report_bucket(bucket: Bucket, prop: str, seed: int, command: list[str], impl: Any, report_dir: str,
                   result: "FuzzResult") -> dict[str, Any]:
    """Write ``bucket``'s bundle; its entry in ``fuzz.json``."""
    d = bucket.result
    bundle = make_bundle(d, seed=seed, command=command, handshake=impl.handshake, shrink=bucket.shrink,
                         stderr_tail=impl.stderr_tail(),
                         bucket={"op": bucket.op, "path": bucket.path, "count": bucket.count})
    path = write_bundle(bundle, os.path.join(report_dir, "bundles"))
    result.bundles.append(path)
    return {"op": bucket.op, "path": bucket.path, "count": bucket.count, "firstExample": bucket.first_example,
            "diff": bundle["diff"], "size": d.size[0], "shrink": bucket.shrink,
            "referenceFailed": bucket.reference_failed, "case": d.case, "bundle": path}


def _print_search(prop: str, outcome: BucketedOutcome, entry: Mapping[str, Any], out: TextIO) -> None:
    stopped = f" (stopped by the {outcome.stopped})" if outcome.stopped == "time budget" else \
        " (interrupted)" if outcome.stopped else ""
    buckets = entry["buckets"]
    if not buckets:
        print(f"  {prop}: {outcome.examples} examples, no disagreement{stopped}", file=out, flush=True)
        return
    print(f"  {prop}: {outcome.examples} examples, {len(buckets)} disagreement bucket(s){stopped}:", file=out, flush=True)
    unit = "events" if prop == "ledger" else "steps"
    for i, b in enumerate(buckets, 1):
        what = "the REFERENCE failed" if b["referenceFailed"] else "disagreement"
        print(f"    [{i}] {what} in {b['op']} at {b['path']}: {b['count']} example(s); smallest {b['size']} {unit} "
              f"({b['shrink']}) -> {b['bundle']}", file=out, flush=True)


def run_fuzz(config: FuzzConfig, out: TextIO | None = None) -> FuzzResult:
    """Run the differential fuzzer; write bundles and ``fuzz.json`` under ``config.report_dir``."""
    from hypothesis.database import DirectoryBasedExampleDatabase

    out = out if out is not None else sys.stdout
    seed = config.seed if config.seed is not None else secrets.randbelow(2**32)
    result = FuzzResult(seed)
    print(f"maka-conformance fuzz: seed {seed} (re-run with --seed {seed})", file=out, flush=True)
    if config.search not in SEARCH_MODES:
        result.harness_error = f"unknown search mode {config.search!r}; expected one of {list(SEARCH_MODES)}"
        return result
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
    summary: dict[str, Any] = {"seed": seed, "search": config.search, "implementation": {"command": command}, "database": db_dir,
                               "properties": {}}
    interrupted = False
    try:
        try:
            impl._started()
        except KeyboardInterrupt:  # before anything ran: the partial report says so
            interrupted = True
        except Exception as exc:  # noqa: BLE001 - ProtocolFailure or OSError: the run cannot start
            result.harness_error = f"cannot start {impl.name}: {exc}"
            return result
        summary["implementation"]["handshake"] = impl.handshake if not interrupted else None
        os.makedirs(db_dir, exist_ok=True)  # created even when empty: a CI cache step can rely on it
        db = DirectoryBasedExampleDatabase(db_dir)
        handshake = summary["implementation"]["handshake"]
        ledger_ops, unclaimed_ops = _claimed_ledger_ops(handshake)
        skipped = _skipped(config.properties, handshake, ledger_ops) if not interrupted else {}
        active = [p for p in PROPERTIES if p in config.properties and p not in skipped]
        for prop in (p for p in PROPERTIES if p in config.properties):
            if prop in skipped or interrupted:
                reason = skipped.get(prop) or "interrupted"
                summary["properties"][prop] = {"skipped": reason, "examples": 0, "buckets": [], "bundle": None}
                print(f"  {prop}: skipped ({reason})", file=out, flush=True)
                continue
            try:
                remaining = None
                if config.time_budget is not None:
                    left = config.time_budget - (time.monotonic() - started)
                    remaining = max(0.0, left / (len(active) - active.index(prop)))
                budget = Budget.split(time.monotonic(), remaining)
                t0 = time.monotonic()
                if prop == "ledger":
                    outcome = _ledger_search(config, seed, db, impl, ref, budget, ledger_ops)
                else:
                    outcome = _schedule_search(config, seed, db, impl, ref, budget, workspace_root)
                entry: dict[str, Any] = {"examples": outcome.examples, "shrinkExamples": outcome.shrink_examples,
                                         "seconds": round(time.monotonic() - t0, 3), "stopped": outcome.stopped}
                if prop == "ledger":
                    entry["ops"] = list(ledger_ops)
                    entry["skippedOps"] = {op: f"{OPERATIONS[op]} not claimed" for op in unclaimed_ops}
                entry["buckets"] = [_report_bucket(b, prop, seed, command, impl, report_dir, result) for b in outcome.buckets]
                entry["bundle"] = entry["buckets"][0]["bundle"] if entry["buckets"] else None
                _print_search(prop, outcome, entry, out)
                summary["properties"][prop] = entry
                interrupted = outcome.stopped == "interrupted"
            except KeyboardInterrupt:  # outside Hypothesis's own handling (setup, reporting)
                interrupted = True
                summary["properties"].setdefault(prop, {"examples": 0, "buckets": [], "bundle": None,
                                                        "stopped": "interrupted"})
        summary["batching"] = impl.batching
        summary["restarts"] = impl.restarts
        summary["requests"] = dict(sorted(impl.sent.items()))
    except KeyboardInterrupt:  # between the steps above (opening the database, choosing properties)
        interrupted = True
    finally:
        leave_search_environment()
        impl.close()
        ref.close()
        stray = _stray_files(workspace_root)
        shutil.rmtree(workspace_root, ignore_errors=True)
    summary["strayFiles"] = stray
    summary["interrupted"] = result.interrupted = interrupted
    summary["seconds"] = round(time.monotonic() - started, 3)
    summary["bundles"] = result.bundles
    summary["buckets"] = [{"property": prop, **b} for prop, entry in summary["properties"].items()
                          for b in entry.get("buckets", ())]
    if stray:
        print(f"  files written outside the per-example workspaces: {stray[:5]}", file=out)
        result.stray_files = stray
    result.summary = summary
    os.makedirs(report_dir, exist_ok=True)
    with open(os.path.join(report_dir, "fuzz.json"), "w", encoding="utf-8") as handle:
        json.dump(summary, handle, indent=1, ensure_ascii=True, default=str)
        handle.write("\n")
    print(f"maka-conformance fuzz: seed {seed}: {len(summary['buckets'])} disagreement bucket(s) in "
          f"{summary['seconds']} s; report {os.path.join(report_dir, 'fuzz.json')}", file=out, flush=True)
    return result
