"""The ``maka-conformance selftest`` subcommand (argument handling and printing only)."""

from __future__ import annotations

import argparse
from typing import TextIO

from conformance._selftest._run import MutantOutcome, list_mutants, run_selftest

EXIT_USAGE = 2


def run_selftest_command(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    if args.list:
        for m in list_mutants():
            sel = m["keyword"] or m["level"] or "whole suite"
            out.write(f"{m['name']:<42} {m['layer']:<13} {m['spec']:<22} {sel}\n")
        return 0
    names = [n.strip() for n in args.mutants.split(",") if n.strip()] if args.mutants else None
    known = {m["name"] for m in list_mutants()}
    unknown = [n for n in names or () if n not in known]
    if unknown:
        print(f"maka-conformance: error: unknown mutant(s): {', '.join(unknown)} "
              f"(see maka-conformance selftest --list)", file=err)
        return EXIT_USAGE

    def progress(m: MutantOutcome) -> None:
        detail = ", ".join(m.killed_by[:3]) + (" …" if len(m.killed_by) > 3 else "") if m.killed_by else (m.error or "")
        print(f"{m.status:<8} {m.name:<42} {m.duration_s:5.1f}s  {detail.splitlines()[0] if detail else ''}", file=err)

    result = run_selftest(names, full=args.full, workers=args.workers, report_dir=args.report_dir,
                          baseline=not args.no_baseline, on_mutant=progress)
    paths = result.write(args.report_dir)
    out.write(f"mutation score: {len(result.killed)}/{len(result.mutants)} = {result.score:.0%} "
              f"({result.mode}, {result.duration_s:.0f} s)\n")
    for m in result.survivors:
        out.write(f"SURVIVED: {m.name} ({m.layer}, spec {m.spec}): {m.description}\n")
    for m in result.errors:
        out.write(f"ERROR: {m.name}: {(m.error or '').splitlines()[0] if m.error else ''}\n")
    if result.baseline_error:
        out.write(f"BASELINE ERROR: {result.baseline_error.splitlines()[0]}\n")
    if result.baseline_failures:
        out.write(f"clauses failing on the reference itself (not counted): {', '.join(sorted(result.baseline_failures))}\n")
    none = result.clauses_killing_none()
    out.write(f"{len(none)} of {len(result.clauses_run)} clauses run kill no mutant\n")
    out.write(f"reports: {paths['json']} {paths['markdown']}\n")
    return result.exit_code
