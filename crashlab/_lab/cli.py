"""``crashlab sweep`` and ``crashlab replay`` (issue 6 item 6).

Exit codes: 0 every trial passed (or was not claimed), 1 a trial failed / was unreached /
errored, 2 a usage or harness error, 130 interrupted by SIGINT (sweep: a partial report
marked ``interrupted``). Progress: one plain line per finished trial, or a rich
progress bar when stdout is a terminal and ``rich`` is installed.
"""

from __future__ import annotations

import argparse
import os
import shlex
import sys
from pathlib import Path
from typing import Any, NoReturn, Sequence, TextIO

from crashlab._lab.model import FAULTS, MODES
from crashlab._lab.options import OptionError, check_common_options

__all__ = ["build_parser", "main"]

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2
EXIT_INTERRUPTED = 130  # SIGINT: one line on stderr; sweep writes a partial report marked interrupted


class _Usage(Exception):
    pass


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> Any:  # exit 2 through main, never SystemExit from a library call
        raise _Usage(message)


def _workers(text: str) -> int:
    if text == "auto":
        return max(1, os.cpu_count() or 1)
    return int(text)


def build_parser() -> argparse.ArgumentParser:
    """The ``crashlab`` argument parser (also used by the workflow check)."""
    return _parser()


def _parser() -> argparse.ArgumentParser:
    p = _Parser(prog="crashlab", description="Kill an implementation for real at every named crash point and check "
                                             "what a fresh process finds (docs/crashlab.md).")
    sub = p.add_subparsers(dest="command", required=True)
    s = sub.add_parser("sweep", help="run trials over the catalogue")
    s.add_argument("--impl", metavar="CMD", help="implementation command line (default: the reference adapter)")
    s.add_argument("--points", metavar="P0,P3,…", help="comma-separated catalogue ids (default: every point)")
    s.add_argument("--mode", choices=MODES, help="only this mode")
    s.add_argument("--fault", choices=FAULTS, help="only this fault")
    s.add_argument("--protocol", choices=("t1", "legacy"), help="only this tool-boundary protocol (live trials)")
    s.add_argument("--trials", type=int, default=1, help="repetitions of each trial (seeds S, S+1, …)")
    s.add_argument("--seed", type=int, default=0, help="first seed")
    s.add_argument("-n", dest="workers", type=_workers, default=1, help="trials run at once (a number or 'auto')")
    s.add_argument("--timeout", type=float, default=120.0, help="deadline of one trial, seconds")
    s.add_argument("--report-dir", default="crashlab-report", help="where the report and failure bundles go")
    s.add_argument("--list", action="store_true", help="list the trials and exit")
    s.add_argument("--no-prefork", dest="prefork", action="store_const", const=False, default=None,
                   help="spawn every process afresh, never from a pre-imported zygote "
                        "(same as CRASHLAB_NO_PREFORK=1)")
    r = sub.add_parser("replay", help="re-run the trial of a failure bundle")
    r.add_argument("bundle", help="a bundle directory (or its trial.json)")
    r.add_argument("--impl", metavar="CMD", help="run against this implementation instead of the bundle's")
    r.add_argument("--timeout", type=float, default=120.0)
    r.add_argument("--report-dir", default=None, help="write a new bundle here if the replay does not pass")
    r.add_argument("--timeline", action="store_true",
                   help="print the trial's timeline even when it passes (it is always printed when it does not)")
    return p


def _progress(total: int, out: TextIO) -> tuple[Any, Any]:
    """``(on_result, close)``: a rich bar on a TTY, plain lines otherwise."""
    if out.isatty():
        try:
            from rich.progress import Progress

            bar = Progress(transient=False)
            task = bar.add_task("crash trials", total=total)
            bar.start()

            def tick(result: Any) -> None:
                if result.outcome not in ("passed", "not_claimed"):
                    bar.console.print(f"[red]{result.outcome}[/red] {result.spec.trial_id}: {result.message[:200]}")
                bar.advance(task)

            return tick, bar.stop
        except ImportError:
            pass
    done = [0]

    def line(result: Any) -> None:
        done[0] += 1
        out.write(f"[{done[0]}/{total}] {result.outcome:<11} {result.spec.trial_id} ({result.duration_s:.1f} s)"
                  + (f": {result.message[:300]}" if result.outcome not in ("passed", "not_claimed") else "") + "\n")
        out.flush()

    return line, lambda: None


def _sweep(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from crashlab._lab.catalogue import default_specs
    from crashlab._lab.sweep import run_sweep

    command = tuple(shlex.split(args.impl)) if args.impl else None
    points = [p.strip() for p in args.points.split(",") if p.strip()] if args.points else None
    if args.trials < 1 or args.workers < 1:
        raise _Usage("--trials and -n must be positive")
    try:
        specs = default_specs(points=points, modes=[args.mode] if args.mode else None,
                              faults=[args.fault] if args.fault else None, trials=args.trials, seed=args.seed,
                              command=command, protocols=[args.protocol] if args.protocol else None)
    except KeyError as exc:
        raise _Usage(str(exc.args[0])) from None
    if not specs:
        raise _Usage("no trial matches these filters (see docs/crashlab.md for which point supports which mode and fault)")
    if args.list:
        for spec in specs:
            out.write(spec.trial_id + "\n")
        return EXIT_OK
    out.write(f"crashlab: {len(specs)} trial(s), {args.workers} worker(s), report in {args.report_dir}\n")
    tick, stop = _progress(len(specs), out)
    try:
        report = run_sweep(specs, workers=args.workers, on_result=tick, report_dir=args.report_dir, timeout=args.timeout,
                           prefork=args.prefork)
    finally:
        stop()
    if report.interrupted:
        err.write(f"crashlab: interrupted: partial report of {len(report.results)} of {report.planned} trial(s) in "
                  f"{Path(args.report_dir) / 'crashlab-sweep.md'}\n")
        return EXIT_INTERRUPTED
    counts = ", ".join(f"{v} {k}" for k, v in report.counts().items() if v)
    out.write(f"crashlab: {counts} in {report.duration_s:.1f} s; report {Path(args.report_dir) / 'crashlab-sweep.md'} "
              f"(picture: {Path(args.report_dir) / 'crashlab-sweep.html'})\n")
    if any(r.outcome == "error" for r in report.results) and not any(r.outcome in ("failed", "unreached")
                                                                        for r in report.results):
        return EXIT_USAGE
    return EXIT_OK if report.ok else EXIT_FAILED


def _replay(args: argparse.Namespace, out: TextIO) -> int:
    from dataclasses import replace

    from crashlab._lab.bundles import load_bundle
    from crashlab._lab.engine import run_trial

    try:
        spec, recorded = load_bundle(args.bundle)
    except (OSError, ValueError, KeyError) as exc:
        raise _Usage(f"not a crashlab bundle: {args.bundle}: {exc}") from None
    if args.impl:
        spec = replace(spec, command=tuple(shlex.split(args.impl)))
    out.write(f"replaying {spec.trial_id} (recorded: {recorded.outcome}, seed {spec.seed})\n")
    result = run_trial(spec, timeout=args.timeout, bundle_dir=args.report_dir)
    out.write(f"{result.outcome} in {result.duration_s:.1f} s\n")
    for check in result.checks:
        if not check.ok:
            out.write(f"  FAILED {check.name}: {check.detail}\n")
    if result.message and result.outcome != "passed":
        out.write(f"  {result.message}\n")
    if result.outcome not in ("passed", "not_claimed") or args.timeline:
        from crashlab._lab.timeline import render_text

        out.write("timeline (seconds from the trial's start, who, step, what it saw):\n")
        out.write("".join(f"  {line}\n" for line in render_text(result.evidence.get("timeline") or []).splitlines()))
    if result.outcome == "error":
        return EXIT_USAGE
    return EXIT_OK if result.outcome in ("passed", "not_claimed", "not_run") else EXIT_FAILED


def console_main() -> NoReturn:
    """The ``crashlab`` console script: :func:`main`, ended by :func:`~crashlab._lab.ending.end_process`
    (an interrupted sweep exits 130, never by the signal)."""
    from crashlab._lab.ending import end_process, install_interrupt_watchdog

    install_interrupt_watchdog("crashlab")
    end_process(main())


def main(argv: Sequence[str] | None = None, out: TextIO | None = None, err: TextIO | None = None) -> int:
    out = out if out is not None else sys.stdout
    err = err if err is not None else sys.stderr
    try:
        args = _parser().parse_args(list(argv) if argv is not None else None)
        if not getattr(args, "list", False):
            check_common_options(args)
        return _sweep(args, out, err) if args.command == "sweep" else _replay(args, out)
    except (_Usage, OptionError) as exc:
        err.write(f"crashlab: error: {exc}\n")
        return EXIT_USAGE
    except KeyboardInterrupt:
        err.write("crashlab: interrupted\n")
        return EXIT_INTERRUPTED
    except BrokenPipeError:  # stdout closed by its reader (``crashlab sweep --list | head``)
        try:  # nothing more may reach the closed pipe, not even the interpreter's final flush
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        except (OSError, ValueError):
            pass
        err.write("crashlab: error: output_unwritable: stdout was closed\n")
        return EXIT_USAGE
