"""``maka-conformance``: certify an implementation, merge platform reports, export vectors.

Exit codes (every subcommand): 0 success (certify: every claimed clause passed), 1 a clause
failed, 2 a usage or harness error, 130 interrupted by SIGINT (one line on stderr; certify,
fuzz and selftest write a partial report marked interrupted). The work is done by library functions that the tests
call directly; this module parses arguments and prints.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any, NoReturn, Sequence, TextIO

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2
EXIT_INTERRUPTED = 130  # SIGINT (Ctrl-C): one line on stderr, a partial report where the command writes one
LEVELS = ("ledger", "durable", "live", "recovery")


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        print(f"maka-conformance: error: {message}", file=sys.stderr)
        raise SystemExit(EXIT_USAGE)


def _workers(text: str) -> str:
    if text == "auto" or (text.isdigit() and int(text) >= 0):
        return text
    raise argparse.ArgumentTypeError("expected a number of workers or 'auto'")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="maka-conformance", description="conformance harness for crash-safe resume of agent runtimes")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    p = sub.add_parser("certify", help="run the conformance suite against an implementation and write its reports")
    p.add_argument("--impl", metavar="CMD", help="command line of the implementation (default: the bundled reference runtime)")
    p.add_argument("--level", choices=LEVELS, help="certify up to this level only (default: every level)")
    p.add_argument("--report-dir", default="maka-conformance-report", metavar="DIR", help="where the reports go (default: %(default)s)")
    p.add_argument("-n", "--workers", type=_workers, default="auto", metavar="N", help="parallel workers, or 'auto' (default), or 0 for none")
    p.add_argument("-k", dest="keyword", metavar="EXPR", help="only clauses matching this pytest -k expression")
    p.add_argument("--timeout", type=float, default=30.0, metavar="SECONDS", help="deadline of each protocol request (default 30)")
    p.add_argument("--progress", choices=("auto", "plain", "rich", "none"), default="auto", help="progress display (default: a live bar on a terminal, plain lines otherwise)")
    p = sub.add_parser("clauses", help="list the clauses of the suite (id, spec section, capability, level)")
    p.add_argument("--level", choices=LEVELS, help="only clauses up to this level")
    p.add_argument("-k", dest="keyword", metavar="EXPR", help="only clauses matching this pytest -k expression")
    p.add_argument("--format", choices=("text", "markdown", "json"), default="text")
    p = sub.add_parser("matrix", help="merge per-platform report.json files into one capability matrix "
                                      "(and the crash matrix of their crash-lab clauses)")
    p.add_argument("reports", nargs="+", metavar="REPORT.json")
    p.add_argument("--format", choices=("text", "markdown", "json", "html"), default="text",
                   help="html: one offline page with the crash matrix picture")
    _add_selftest_parser(sub)
    p = sub.add_parser("vectors", help="golden vectors for implementers in other languages")
    vsub = p.add_subparsers(dest="vectors_command", required=True, parser_class=_Parser)
    e = vsub.add_parser("export", help="write the golden vectors, their schema and the protocol schemas to DIR")
    e.add_argument("directory", metavar="DIR")
    from conformance._fuzz._cli import add_parsers as _add_fuzz_parsers  # fuzz, replay (docs/fuzzing.md)

    _add_fuzz_parsers(sub)
    return parser


def _cmd_certify(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from conformance._suite.progress import make_progress
    from conformance.certify import EXIT_HARNESS, certify

    progress = make_progress(err, mode=args.progress)
    if progress is not None:
        progress.start(args.impl or "the bundled reference runtime (python -m maka_ref.adapter)")
    try:
        result = certify(args.impl, level=args.level, report_dir=args.report_dir, workers=args.workers,
                         keyword=args.keyword, request_timeout=args.timeout,
                         on_event=progress.on_event if progress is not None else None)
    finally:
        if progress is not None:
            progress.finish()
    if result.interrupted:
        done = sum(len(r.clauses) for r in result.reports)
        print(f"maka-conformance: interrupted: partial report ({done} clauses finished) in {result.report_dir}",
              file=err)
        return EXIT_INTERRUPTED
    if result.harness_error is not None:
        print(f"maka-conformance: error: {result.harness_error}", file=err)
        return EXIT_HARNESS
    from conformance._cli.summary import print_summary

    print_summary(result, out)
    return result.exit_code


def _cmd_clauses(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    import json

    from conformance._suite.catalogue import collect_clauses, render_markdown

    try:
        clauses = collect_clauses(level=args.level, keyword=args.keyword)
    except (RuntimeError, OSError) as exc:
        print(f"maka-conformance: error: {exc}", file=err)
        return EXIT_USAGE
    if args.format == "json":
        out.write(json.dumps(clauses, indent=1, ensure_ascii=False) + "\n")
    elif args.format == "markdown":
        out.write(render_markdown(clauses))
    else:
        for c in clauses:
            out.write(f"{c['clauseId']:<60} {c['capability']:<22} {c['level']:<9} {c['spec']}\n")
        out.write(f"{len(clauses)} clauses\n")
    return EXIT_OK


def _cmd_matrix(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    import json

    from conformance.reports import (
        RunReport,
        crash_platforms,
        merge_crash_matrix,
        merge_matrix,
        render_matrix_html,
        render_matrix_markdown,
        render_matrix_text,
    )

    reports = []
    for name in args.reports:
        try:
            reports.append(RunReport.from_json(Path(name).read_text(encoding="utf-8")))
        except (OSError, ValueError, KeyError, TypeError) as exc:
            print(f"maka-conformance: error: {name}: not a readable report.json ({exc})", file=err)
            return EXIT_USAGE
    matrix = merge_matrix(reports)
    crash = merge_crash_matrix(reports)
    if args.format == "json":
        data = matrix.to_dict()
        if crash is not None:
            data["crash"] = crash.to_json()
        out.write(json.dumps(data, indent=2, ensure_ascii=False) + "\n")
    elif args.format == "html":
        out.write(render_matrix_html(matrix, crash))
    elif args.format == "markdown":
        out.write(render_matrix_markdown(matrix))
        if crash is not None:
            from crashlab._lab.crashmatrix import render_markdown

            out.write("\n## Crash matrix\n\n" + render_markdown(crash, per=crash_platforms(crash)))
    else:
        out.write(render_matrix_text(matrix))
        if crash is not None:
            from crashlab._lab.crashmatrix import render_text

            out.write("\ncrash matrix\n" + render_text(crash, per=crash_platforms(crash)))
    return EXIT_OK


def _cmd_vectors(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from conformance._cli.export import export_vectors

    try:
        written = export_vectors(args.directory)
    except OSError as exc:
        print(f"maka-conformance: error: cannot write {args.directory}: {exc}", file=err)
        return EXIT_USAGE
    print(f"wrote {len(written)} files to {os.path.abspath(args.directory)}", file=out)
    return EXIT_OK


def _add_selftest_parser(sub: Any) -> None:
    p = sub.add_parser("selftest", help="run the suite against the mutant corpus (each must fail) and the legal "
                                        "variants (each must pass); report the mutation score and false alarms")
    p.add_argument("--mutants", metavar="A,B", help="only these mutants (comma-separated; default: all)")
    p.add_argument("--full", action="store_true", help="every mutant against the whole suite (complete kill matrix)")
    p.add_argument("-n", "--workers", type=_workers, default="2", metavar="N", help="mutants certified at once, each in one process (default 2; auto = CPU count)")
    p.add_argument("--report-dir", default="maka-conformance-selftest", metavar="DIR", help="where the reports go (default: %(default)s)")
    p.add_argument("--no-baseline", action="store_true", help="skip the baseline run against the unmutated reference")
    p.add_argument("--variants", metavar="A,B",
                   help="only these legal variants (comma-separated; default: all; 'none' for none)")
    p.add_argument("--list", action="store_true", help="list the mutant and legal-variant corpora and exit")


def _cmd_selftest(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from conformance._selftest._cli import run_selftest_command

    return run_selftest_command(args, out, err)


def _fuzz_commands() -> dict[str, Any]:
    from conformance._fuzz._cli import cmd_fuzz, cmd_replay

    return {"fuzz": cmd_fuzz, "replay": cmd_replay}


def run(argv: Sequence[str] | None = None, *, stdout: TextIO | None = None, stderr: TextIO | None = None) -> int:
    """Run the CLI and return its exit code (what the tests call)."""
    out = stdout if stdout is not None else sys.stdout
    err = stderr if stderr is not None else sys.stderr
    try:
        args = build_parser().parse_args(argv)
    except SystemExit as exc:
        return int(exc.code) if isinstance(exc.code, int) else EXIT_USAGE
    if args.command in ("certify", "fuzz", "replay", "selftest") and not getattr(args, "list", False):
        from crashlab._lab.options import OptionError, check_common_options

        try:
            check_common_options(args)
        except OptionError as exc:
            print(f"maka-conformance: error: {exc}", file=err)
            return EXIT_USAGE
    handler: Any = {"certify": _cmd_certify, "clauses": _cmd_clauses, "matrix": _cmd_matrix,
                    "vectors": _cmd_vectors, "selftest": _cmd_selftest, **_fuzz_commands()}[args.command]
    try:
        return int(handler(args, out, err))
    except KeyboardInterrupt:  # a command without its own partial report: still one line, no traceback
        print("maka-conformance: interrupted", file=err)
        return EXIT_INTERRUPTED


def main(argv: Sequence[str] | None = None) -> NoReturn:
    from crashlab._lab.ending import end_process, install_interrupt_watchdog

    install_interrupt_watchdog("maka-conformance")
    end_process(run(argv))
