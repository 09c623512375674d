"""``maka-conformance fuzz --self``: fuzzing the reference itself (issue 7 item 4).

Why a mode of ``fuzz`` rather than a command of its own: it shares every convention of the
differential fuzzer (``docs/fuzzing.md``) — the seed printed first and recorded everywhere,
``--time-budget`` (each target stops generating at 60 % of its share and may shrink until the
end of it), the example database under ``$MAKA_FUZZ_DB`` or ``<report-dir>/.hypothesis``, and
bundles under ``<report-dir>/bundles``. What differs is the oracle: there is no second
implementation, only promises the reference makes about itself — *nothing raises where a
result or a stable error is due, no input is mutated, and nothing on disk changes on a read*
(:mod:`._selffuzz_targets`, :mod:`._selffuzz_io`).

Targets, in order: ``codec``, ``ledger``, ``store``, ``adapter``, ``cli`` (the ``maka-ref``
commands as processes on hostile workspaces, :mod:`._selffuzz_cli`). ``--examples N`` is per
target; the time budget is shared equally (what one target leaves is passed on). Each target
has its own example database directory (``<db>/self-<target>``), so a saved failure is replayed
only by the target that found it. Scratch workspaces live under ``<report-dir>/.self-workspaces``
and are removed at the end.
"""

from __future__ import annotations

import hashlib
import json
import os
import secrets
import shutil
import sys
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence, TextIO

from conformance._fuzz._search import Budget, Tracker, fuzz_settings, run_search
from conformance._fuzz._selffuzz.targets import Finding, to_wire

__all__ = ["BUNDLE_FORMAT", "SELF_TARGETS", "SelfFuzzConfig", "SelfFuzzResult", "run_self_fuzz"]

BUNDLE_FORMAT = "maka-selffuzz-bundle/1"
SELF_TARGETS = ("codec", "ledger", "store", "adapter", "cli")


@dataclass
class SelfFuzzConfig:
    examples: int = 200
    seed: int | None = None
    time_budget: float | None = None
    report_dir: str = "maka-fuzz-report"
    database: str | None = None
    targets: Sequence[str] = SELF_TARGETS


@dataclass
class SelfFuzzResult:
    seed: int
    bundles: list[str] = field(default_factory=list)
    summary: dict[str, Any] = field(default_factory=dict)
    harness_error: str | None = None
    #: SIGINT stopped the run: ``selffuzz.json`` is a partial report (``"interrupted": true``)
    #: holding the targets that ran and what they found.
    interrupted: bool = False

    @property
    def exit_code(self) -> int:
        if self.interrupted:
            return 130
        return 2 if self.harness_error else 1 if self.bundles else 0


def _target(name: str, scratch: str) -> tuple[Any, Callable[[Any], None]]:
    """(strategy, check) of one target; the store images are built here, once per run."""
    from conformance._fuzz._selffuzz import io
    from conformance._fuzz._selffuzz import targets as pure

    if name == "codec":
        return pure.codec_inputs(), pure.check_codec
    if name == "ledger":
        return pure.ledger_lists(), pure.check_ledger_lists
    if name == "store":
        images = io.build_images(scratch)
        return io.store_cases(), lambda case: io.check_store(case, images, scratch)
    if name == "cli":
        from conformance._fuzz._selffuzz import cli

        workspaces = cli.build_cli_images(scratch)
        return cli.cli_cases(), lambda case: cli.check_cli(case, workspaces, scratch)
    ops = io.adapter_ops()
    return io.adapter_lines(ops), lambda case: io.check_adapter(case, scratch)


def _search(name: str, config: SelfFuzzConfig, seed: int, db_dir: str, budget: Budget, scratch: str) -> Any:
    from hypothesis import given
    from hypothesis import seed as seed_
    from hypothesis.database import DirectoryBasedExampleDatabase

    strategy, check = _target(name, scratch)
    tracker = Tracker(budget)

    def body(case: Any) -> None:
        tracker.start_example()
        try:
            check(case)
        except Finding as finding:
            tracker.record(finding)
            raise

    body.__name__ = body.__qualname__ = f"selffuzz_{name}"
    path = os.path.join(db_dir, f"self-{name}")
    os.makedirs(path, exist_ok=True)
    test = seed_(seed)(fuzz_settings(config.examples, DirectoryBasedExampleDatabase(path))(given(strategy)(body)))
    return run_search(test, tracker)


def make_bundle(finding: Finding, *, seed: int, shrink: str) -> dict[str, Any]:
    return {
        "format": BUNDLE_FORMAT,
        "seed": seed,
        "target": finding.prop,
        "check": finding.op,
        "input": to_wire(finding.input),
        "message": finding.message,
        "exception": finding.exc_type,
        "traceback": finding.traceback,
        "shrink": shrink,
        "rerun": f"maka-conformance fuzz --self --only-target {finding.prop} --seed {seed}",
    }


def write_bundle(bundle: dict[str, Any], directory: str) -> str:
    text = json.dumps(bundle, indent=1, ensure_ascii=True, sort_keys=False, default=repr)
    digest = hashlib.sha256(json.dumps(bundle["input"], sort_keys=True, ensure_ascii=True,
                                       default=repr).encode()).hexdigest()[:12]
    os.makedirs(directory, exist_ok=True)
    check = "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in bundle["check"])[:40]
    path = os.path.join(directory, f"self-{bundle['target']}-{check}-{digest}.json")
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(text + "\n")
    return path


def run_self_fuzz(config: SelfFuzzConfig, out: TextIO | None = None) -> SelfFuzzResult:
    """Run every target; write bundles and ``selffuzz.json`` under ``config.report_dir``."""
    from conformance._fuzz._runner import database_path, enter_search_environment

    out = out if out is not None else sys.stdout
    seed = config.seed if config.seed is not None else secrets.randbelow(2**32)
    result = SelfFuzzResult(seed)
    print(f"maka-conformance fuzz --self: seed {seed} (re-run with --seed {seed})", file=out, flush=True)
    unknown = set(config.targets) - set(SELF_TARGETS)
    if unknown:
        result.harness_error = f"unknown targets {sorted(unknown)}; expected some of {list(SELF_TARGETS)}"
        return result
    targets = [t for t in SELF_TARGETS if t in config.targets]
    report_dir = os.path.abspath(config.report_dir)
    db_dir = database_path(report_dir, config.database)
    scratch = os.path.join(report_dir, ".self-workspaces")
    shutil.rmtree(scratch, ignore_errors=True)
    os.makedirs(scratch)
    os.makedirs(db_dir, exist_ok=True)
    leave_search_environment = enter_search_environment(report_dir, db_dir)
    started = time.monotonic()
    summary: dict[str, Any] = {"seed": seed, "mode": "self", "database": db_dir, "targets": {}}
    try:
        for index, name in enumerate(targets):
            remaining = None
            if config.time_budget is not None:
                left = config.time_budget - (time.monotonic() - started)
                remaining = max(0.0, left / (len(targets) - index))
            t0 = time.monotonic()
            try:
                outcome = _search(name, config, seed, db_dir, Budget.split(t0, remaining), scratch)
            except KeyboardInterrupt:  # outside Hypothesis's own handling (building a target's images)
                result.interrupted = True
                summary["targets"][name] = {"examples": 0, "stopped": "interrupted", "bundle": None}
                break
            except Exception as exc:  # noqa: BLE001 - the harness itself (a strategy, the images) failed
                result.harness_error = f"target {name}: {type(exc).__name__}: {exc}"
                summary["targets"][name] = {"harnessError": result.harness_error}
                break
            seconds = time.monotonic() - t0
            entry: dict[str, Any] = {"examples": outcome.examples, "seconds": round(seconds, 3),
                                     "examplesPerSecond": round(outcome.examples / seconds, 1) if seconds else None,
                                     "stopped": outcome.stopped, "bundle": None}
            finding = outcome.disagreement
            if finding is not None:
                bundle = make_bundle(finding, seed=seed, shrink=outcome.shrink)
                path = write_bundle(bundle, os.path.join(report_dir, "bundles"))
                result.bundles.append(path)
                entry.update(bundle=path, check=finding.op, exception=finding.exc_type, message=finding.message,
                             shrink=outcome.shrink)
                print(f"  {name}: FINDING in {finding.op}: {finding.message[:200]} ({outcome.shrink}) -> {path}",
                      file=out, flush=True)
            else:
                print(f"  {name}: {outcome.examples} examples ({entry['examplesPerSecond']}/s), nothing raised"
                      + (f" (stopped by the {outcome.stopped})" if outcome.stopped else ""), file=out, flush=True)
            summary["targets"][name] = entry
            if outcome.stopped == "interrupted":  # Ctrl-C stops the run, not only the target it landed in
                result.interrupted = True
                break
    except KeyboardInterrupt:  # while a finding was being written or reported: what is done is kept
        result.interrupted = True
    finally:
        leave_search_environment()
        shutil.rmtree(scratch, ignore_errors=True)
    summary["seconds"] = round(time.monotonic() - started, 3)
    summary["bundles"] = result.bundles
    summary["interrupted"] = result.interrupted
    why = "interrupted" if result.interrupted else "harness error"
    for name in targets:  # targets kept from running are named, not silently absent
        summary["targets"].setdefault(name, {"examples": 0, "stopped": f"not run ({why})", "bundle": None})
    result.summary = summary
    with open(os.path.join(report_dir, "selffuzz.json"), "w", encoding="utf-8") as handle:
        json.dump(summary, handle, indent=1, ensure_ascii=True, default=str)
        handle.write("\n")
    print(f"maka-conformance fuzz --self: seed {seed}: {len(result.bundles)} finding(s) in {summary['seconds']} s; "
          f"report {os.path.join(report_dir, 'selffuzz.json')}", file=out, flush=True)
    return result
