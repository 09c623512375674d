"""The end-of-run summary of ``maka-conformance certify``: verdict and level first, then the
capability matrix of this run, then where the reports are. Plain text, so it reads the same
in a terminal and in a CI log."""

from __future__ import annotations

from typing import Any, TextIO

__all__ = ["print_summary"]

_COLUMNS = ("passed", "failed", "error", "not_claimed", "not_run")


def _table(rows: list[list[str]]) -> list[str]:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = []
    for n, row in enumerate(rows):
        lines.append("  " + "  ".join(cell.ljust(widths[i]) if i == 0 else cell.rjust(widths[i]) for i, cell in enumerate(row)).rstrip())
        if n == 0:
            lines.append("  " + "  ".join("-" * w for w in widths))
    return lines


def _report_summary(report: Any, out: TextIO) -> None:
    from conformance.reports import merge_matrix

    impl = report.implementation
    name = f"{impl.get('name') or '?'} {impl.get('version') or ''}".strip()
    counts = report.counts()
    verdict = (f"CERTIFIED at level {report.level_reached}" if report.level_reached else "NOT CERTIFIED")
    failed = counts["failed"] + counts["error"]
    if report.level_reached and failed:
        verdict = f"NOT CERTIFIED (level {report.level_reached} reached, but {failed} clause(s) failed above it)"
    print(f"verdict: {verdict}", file=out)
    print(f"implementation: {name}   protocol {impl.get('protocol')}   spec {report.spec_commit}", file=out)
    platform = report.platform
    print(f"platform: {platform.get('system')} {platform.get('machine')}, {report.python}   "
          f"{report.duration_s:.1f} s with {report.workers} worker(s)", file=out)
    print("clauses: " + ", ".join(f"{counts[k]} {k.replace('_', ' ')}" for k in _COLUMNS), file=out)
    def status(data: dict[str, Any]) -> str:
        return "yes" if data.get("reached") else ("not selected" if data.get("selected") is False else "no")

    print("levels:  " + "   ".join(f"{level} {status(data)}" for level, data in report.levels.items()), file=out)
    for level, data in report.levels.items():
        if not data.get("reached") and data.get("selected") is not False and data.get("reasons"):
            print(f"  {level} not reached: {data['reasons'][0]}", file=out)
            break
    matrix = merge_matrix([report])
    column = report.platform.get("system") if report.platform.get("system") in matrix.platforms else None
    column = column or next((p for p in matrix.platforms if any(matrix.cells[c][p] != "not run" for c in matrix.capabilities)), matrix.platforms[0])
    rows = [["capability", *(c.replace("_", " ") for c in _COLUMNS), f"status ({column})"]]
    for capability, table in report.capability_counts().items():
        rows.append([capability, *(str(table[k]) for k in _COLUMNS), matrix.cells.get(capability, {}).get(column, "-")])
    print("", file=out)
    for line in _table(rows):
        print(line, file=out)
    for error in report.harness_errors:
        print(f"harness error: {error}", file=out)


def print_summary(result: Any, out: TextIO) -> None:
    for n, report in enumerate(result.reports):
        if len(result.reports) > 1:
            print(f"\n== target {report.clauses[0].target if report.clauses else n}", file=out)
        _report_summary(report, out)
    print("", file=out)
    for kind in ("html", "markdown", "json", "junit"):
        if kind in result.report_paths:
            print(f"{kind:>8}: {result.report_paths[kind]}", file=out)
