"""The ``maka-conformance selftest`` subcommand (argument handling and printing only)."""

from __future__ import annotations

import argparse
from typing import TextIO

from conformance._selftest._run import MutantOutcome, VariantOutcome, list_mutants, list_variants, run_selftest

EXIT_USAGE = 2


def run_selftest_command(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    if args.list:
        for m in list_mutants():
            sel = m["keyword"] or m["level"] or "whole suite"
            out.write(f"{m['name']:<42} {m['layer']:<13} {m['spec']:<22} {sel}\n")
        for v in list_variants():
            out.write(f"{v['name']:<42} {'variant':<13} {v['spec']:<22} {v['keyword'] or 'whole suite'}\n")
        return 0
    names = [n.strip() for n in args.mutants.split(",") if n.strip()] if args.mutants else None
    known = {m["name"] for m in list_mutants()}
    unknown = [n for n in names or () if n not in known]
    if unknown:
        print(f"maka-conformance: error: unknown mutant(s): {', '.join(unknown)} "
              f"(see maka-conformance selftest --list)", file=err)
        return EXIT_USAGE

    variants: list[str] | None = None
    if args.variants is not None:
        variants = [] if args.variants.strip() == "none" else [n.strip() for n in args.variants.split(",") if n.strip()]
        unknown_variants = [n for n in variants if n not in {v["name"] for v in list_variants()}]
        if unknown_variants:
            print(f"maka-conformance: error: unknown variant(s): {', '.join(unknown_variants)} "
                  f"(see maka-conformance selftest --list)", file=err)
            return EXIT_USAGE

    def progress(m: MutantOutcome) -> None:
        detail = ", ".join(m.killed_by[:3]) + (" …" if len(m.killed_by) > 3 else "") if m.killed_by else (m.error or "")
        print(f"{m.status:<8} {m.name:<42} {m.duration_s:5.1f}s  {detail.splitlines()[0] if detail else ''}", file=err)

    def variant_progress(v: VariantOutcome) -> None:
        detail = ", ".join(v.false_alarms[:3]) + (" …" if len(v.false_alarms) > 3 else "") if v.false_alarms \
            else (v.error or f"{v.clauses_run} clauses passed")
        print(f"{v.status:<8} variant {v.name:<34} {v.duration_s:5.1f}s  {detail.splitlines()[0]}", file=err)

    result = run_selftest(names, full=args.full, workers=args.workers, report_dir=args.report_dir,
                          baseline=not args.no_baseline, on_mutant=progress, variants=variants,
                          on_variant=variant_progress)
    paths = result.write(args.report_dir)
    if result.interrupted:
        print(f"maka-conformance: interrupted: partial self-test report of {len(result.mutants)} of "
              f"{result.planned} mutants in {paths['json']}", file=err)
        return result.exit_code
    out.write(f"mutation score: {len(result.killed)}/{len(result.graded)} = {result.score:.0%} "
              f"({result.mode}, {result.duration_s:.0f} s)\n")
    for m in result.not_gradable:
        out.write(f"NOT GRADABLE: {m.name}: {(m.error or '').splitlines()[0] if m.error else ''}\n")
    for m in result.survivors:
        out.write(f"SURVIVED: {m.name} ({m.layer}, spec {m.spec}): {m.description}\n")
    for m in result.errors:
        out.write(f"ERROR: {m.name}: {(m.error or '').splitlines()[0] if m.error else ''}\n")
    if result.baseline_error:
        out.write(f"BASELINE ERROR: {result.baseline_error.splitlines()[0]}\n")
    if result.baseline_failures:
        out.write(f"clauses failing on the reference itself (not counted): {', '.join(sorted(result.baseline_failures))}\n")
    for v in result.false_alarms:
        out.write(f"FALSE ALARM: legal variant {v.name} failed {', '.join(v.false_alarms)}\n")
    if result.variants:
        out.write(f"legal variants: {len(result.variants) - len(result.false_alarms)}/{len(result.variants)} passed\n")
    none = result.clauses_killing_none()
    out.write(f"{len(none)} of {len(result.clauses_run)} clauses run kill no mutant\n")
    out.write(f"reports: {paths['json']} {paths['markdown']}\n")
    return result.exit_code
