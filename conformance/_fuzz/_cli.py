"""The ``fuzz`` and ``replay`` subcommands of ``maka-conformance`` (parsing and printing only).

Why a module here rather than in ``conformance/_cli/main.py``: the main CLI file is shared by
several subcommands; keeping ours in one place leaves it two lines to call.
Exit codes: ``fuzz`` 0 nothing found, 1 a disagreement (or a stray file; with ``--self``: a
finding; with ``--coverage``: a reachable code the generators missed), 2 a harness error,
130 interrupted by SIGINT (``fuzz.json`` then is a partial report, ``"interrupted": true``);
``replay`` 0 agree, 1 disagree, 2 error.
"""

from __future__ import annotations

import argparse
import os
from typing import Any, TextIO

__all__ = ["add_parsers", "cmd_fuzz", "cmd_replay"]


def add_parsers(sub: Any) -> None:
    p = sub.add_parser("fuzz", help="differential fuzzing: generated ledgers and write schedules vs the reference")
    p.add_argument("--impl", metavar="CMD", help="command line of the implementation (default: the bundled reference runtime)")
    p.add_argument("--examples", type=int, default=None, metavar="N",
                   help="ledgers to generate (default 200; write schedules: N/10 unless --schedules; "
                        "with --coverage: per generator, default 1000)")
    p.add_argument("--schedules", type=int, default=None, metavar="M", help="write schedules to generate (default: N/10, at least 1)")
    p.add_argument("--seed", type=int, default=None, metavar="S", help="the run's seed (default: random; always printed)")
    p.add_argument("--time-budget", type=float, default=None, metavar="SECONDS",
                   help="stop generating (at 60%% of each search's share) and shrinking within this time")
    p.add_argument("--report-dir", default="maka-fuzz-report", metavar="DIR",
                   help="bundles, fuzz.json and (unless $MAKA_FUZZ_DB) the example database (default: %(default)s)")
    p.add_argument("--only", choices=("ledger", "schedule"), help="run one search only")
    p.add_argument("--no-batch", action="store_true", help="send requests one at a time (never the batch operation)")
    p.add_argument("--search", choices=("fast", "hypothesis"), default="fast",
                   help="how the ledger search generates: fast (seeded plain random draws of the same strategies, "
                        "many ledgers per round trip; new buckets shrunk by event deletion) or hypothesis (every "
                        "example drawn and shrunk by Hypothesis, minimal examples saved in the database); default fast")
    p.add_argument("--timeout", type=float, default=30.0, metavar="SECONDS", help="deadline of each protocol request (default 30)")
    p.add_argument("--self", dest="self_fuzz", action="store_true",
                   help="fuzz the reference itself (arbitrary bytes and JSON into every entry point; "
                        "--examples is per target; --impl, --schedules, --only, --no-batch do not apply)")
    p.add_argument("--only-target", action="append", choices=("codec", "ledger", "store", "adapter", "cli"),
                   metavar="TARGET",
                   help="with --self: run only this target (repeatable: codec, ledger, store, adapter, cli)")
    p.add_argument("--coverage", action="store_true",
                   help="measure which of the spec's codes the ledger generators reach (the reference in process; "
                        "prints a table, writes coverage.json in the report dir; --examples per generator, "
                        "default 1000; --seed, default 0)")
    p = sub.add_parser("replay", help="re-run a fuzz failure bundle (exit 0 agree, 1 disagree, 2 error)")
    p.add_argument("bundle", metavar="BUNDLE")
    p.add_argument("--impl", metavar="CMD", help="command line of the implementation (default: the one recorded in the bundle)")
    p.add_argument("--as-vector", action="store_true", help="print the bundle as a golden vector JSON object instead")
    p.add_argument("--timeout", type=float, default=30.0, metavar="SECONDS", help="deadline of each protocol request (default 30)")


def cmd_fuzz(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from conformance._fuzz import FuzzConfig, run_fuzz

    if getattr(args, "coverage", False):
        return _cmd_coverage(args, out, err)
    examples = args.examples if args.examples is not None else 200
    if getattr(args, "self_fuzz", False):
        from conformance._fuzz._selffuzz.core import SELF_TARGETS, SelfFuzzConfig, run_self_fuzz

        if args.impl or args.only or args.no_batch or args.schedules is not None:
            print("maka-conformance: error: --self fuzzes the reference in process: "
                  "--impl, --only, --schedules and --no-batch do not apply", file=err)
            return 2
        self_config = SelfFuzzConfig(examples=examples, seed=args.seed, time_budget=args.time_budget,
                                     report_dir=args.report_dir, targets=tuple(args.only_target or SELF_TARGETS))
        self_result = run_self_fuzz(self_config, out)
        if self_result.interrupted:
            print("maka-conformance: interrupted: partial self-fuzz report in "
                  f"{os.path.join(args.report_dir, 'selffuzz.json')}", file=err)
        elif self_result.harness_error is not None:
            print(f"maka-conformance: error: {self_result.harness_error}", file=err)
        return self_result.exit_code
    if args.only_target:
        print("maka-conformance: error: --only-target needs --self", file=err)
        return 2
    config = FuzzConfig(impl=args.impl, examples=examples, schedule_examples=args.schedules, seed=args.seed,
                        time_budget=args.time_budget, report_dir=args.report_dir, batch=not args.no_batch,
                        timeout=args.timeout, properties=(args.only,) if args.only else ("ledger", "schedule"),
                        search=args.search)
    result = run_fuzz(config, out)
    if result.interrupted:
        print(f"maka-conformance: interrupted: partial fuzz report in {os.path.join(args.report_dir, 'fuzz.json')}",
              file=err)
    elif result.harness_error is not None:
        print(f"maka-conformance: error: {result.harness_error}", file=err)
    return result.exit_code


def _cmd_coverage(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """``fuzz --coverage``: :func:`~conformance._fuzz._coverage.measure_coverage`, printed and
    written as ``<report-dir>/coverage.json``. Exit 0, or 1 when a reachable code is missed by
    the union of the generators (the fuzzer's own mix), 2 on a usage error."""
    import json
    import os

    from conformance._fuzz._coverage import measure_coverage, render_coverage

    misplaced = [flag for flag, given in (("--impl", args.impl), ("--self", args.self_fuzz), ("--only", args.only),
                                          ("--schedules", args.schedules is not None), ("--no-batch", args.no_batch),
                                          ("--only-target", args.only_target),
                                          ("--time-budget", args.time_budget is not None))
                 if given]
    if misplaced:
        print(f"maka-conformance: error: --coverage measures the generators with the reference in process: "
              f"{', '.join(misplaced)} do not apply", file=err)
        return 2
    examples = args.examples if args.examples is not None else 1000
    seed = args.seed if args.seed is not None else 0
    if examples < 1:
        print("maka-conformance: error: --examples must be at least 1", file=err)
        return 2
    from conformance._fuzz._runner import database_path, enter_search_environment

    print(f"maka-conformance fuzz --coverage: {examples} examples per generator, seed {seed}", file=out, flush=True)
    report_dir = os.path.abspath(args.report_dir)
    leave = enter_search_environment(report_dir, database_path(report_dir))  # Hypothesis's caches: not in the cwd
    try:
        report = measure_coverage(examples, seed)
    finally:
        leave()
    out.write(render_coverage(report))
    os.makedirs(report_dir, exist_ok=True)
    path = os.path.join(report_dir, "coverage.json")
    with open(path, "w", encoding="utf-8") as handle:
        json.dump(report.to_json(), handle, indent=1, ensure_ascii=True)
        handle.write("\n")
    missing = report.missing("union")
    print(f"maka-conformance fuzz --coverage: {len(missing)} reachable code(s) missed by the union; report {path}",
          file=out, flush=True)
    return 1 if missing else 0


def cmd_replay(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    import json
    import shutil
    import tempfile

    from conformance._fuzz._bundles import bundle_as_vector, load_bundle, replay_bundle
    from conformance._fuzz._targets import ProtocolTarget, ReferenceTarget, command_line

    try:
        bundle = load_bundle(args.bundle)
        if args.as_vector:
            out.write(json.dumps(bundle_as_vector(bundle), indent=1, ensure_ascii=True) + "\n")
            return 0
    except (OSError, ValueError, KeyError, TypeError) as exc:
        print(f"maka-conformance: error: {exc}", file=err)
        return 2
    command = command_line(args.impl) if args.impl else list((bundle.get("implementation") or {}).get("command") or
                                                             command_line(None))
    root = tempfile.mkdtemp(prefix="maka-replay-")
    impl = ProtocolTarget(command, cwd=root, timeout=args.timeout)
    ref = ReferenceTarget()
    try:
        try:
            impl._started()
        except Exception as exc:  # noqa: BLE001 - ProtocolFailure / OSError
            print(f"maka-conformance: error: cannot start {impl.name}: {exc}", file=err)
            return 2
        found = replay_bundle(bundle, impl, ref, root)
    finally:
        impl.close()
        ref.close()
        shutil.rmtree(root, ignore_errors=True)
    where = f"{bundle['property']} bundle, {bundle['op']}"
    if found is None:
        print(f"agree: {impl.name} answers like the reference ({where})", file=out)
        return 0
    print(f"DISAGREE: {impl.name}: {found}", file=out)
    print(json.dumps({"diff": found.diff}, ensure_ascii=True), file=out)
    return 1
