"""``junit.xml``: the report in the format every CI system understands.

Mapping (docs/reports.md): one ``<testsuite>`` per capability, one ``<testcase>`` per clause
(``classname`` = capability, ``name`` = clause id); ``failed`` → ``<failure>`` with the
message and the structured diff, ``error`` → ``<error>``, ``not_claimed`` / ``not_run`` →
``<skipped>``; the stderr tail goes to ``<system-err>``. Harness errors become a last
``harness`` suite of errors so that CI goes red on them. Text from implementations can hold
any character, so everything is passed through :func:`xml_safe` first: XML 1.0 cannot carry
most control characters, even escaped.
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

from ._model import ClauseResult, RunReport
from ._text import platform_line, stderr_tail
from ._text import visible as xml_safe


def _el(parent: ET.Element, tag: str, text: str | None = None, **attrs: object) -> ET.Element:
    el = ET.SubElement(parent, tag, {k: xml_safe(v) for k, v in attrs.items()})
    if text is not None:
        el.text = xml_safe(text)
    return el


def _failure_text(clause: ClauseResult) -> str:
    parts = [clause.message] if clause.message else []
    if clause.diff:
        diff = clause.diff
        parts.append(f"first difference at {diff.get('path', '$')}")
        for side in ("expected", "actual"):
            value = "(missing)" if diff.get("missing") == side else json.dumps(
                diff.get(side), indent=2, ensure_ascii=False
            )
            parts.append(f"{side}: {value}")
    if clause.spec:
        parts.append(f"spec: {clause.spec}")
    return "\n".join(parts)


def _testcase(suite: ET.Element, clause: ClauseResult) -> None:
    case = _el(suite, "testcase", classname=clause.capability, name=clause.clause_id,
               time=f"{clause.duration_s:.3f}")
    props = _el(case, "properties")
    for name in ("title", "spec", "level", "target"):
        if getattr(clause, name):
            _el(props, "property", name=name, value=getattr(clause, name))
    first_line = next((line for line in clause.message.splitlines() if line.strip()), "")
    if clause.outcome == "failed":
        _el(case, "failure", _failure_text(clause), message=first_line or "failed",
            type="failure")
    elif clause.outcome == "error":
        _el(case, "error", _failure_text(clause), message=first_line or "error", type="error")
    elif clause.outcome == "not_claimed":
        _el(case, "skipped", message="not claimed")
    elif clause.outcome == "not_run":
        _el(case, "skipped", message=clause.message or "not run")
    if clause.stderr_tail:
        _el(case, "system-err", stderr_tail(clause.stderr_tail))


def _suite_attrs(clauses: list[ClauseResult]) -> dict[str, object]:
    return {
        "tests": len(clauses),
        "failures": sum(c.outcome == "failed" for c in clauses),
        "errors": sum(c.outcome == "error" for c in clauses),
        "skipped": sum(c.outcome in ("not_claimed", "not_run") for c in clauses),
        "time": f"{sum(c.duration_s for c in clauses):.3f}",
    }


def junit_tree(report: RunReport) -> ET.ElementTree:
    """The JUnit document of ``report`` (no I/O; the tests parse it back)."""
    root = ET.Element("testsuites")
    impl = report.implementation
    totals = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    for capability, clauses in report.by_capability().items():
        if not clauses:
            continue
        attrs = _suite_attrs(clauses)
        suite = _el(root, "testsuite", name=capability, timestamp=report.started_at, **attrs)
        props = _el(suite, "properties")
        for name, value in (("implementation", impl.get("name", "")),
                            ("implementation.version", impl.get("version", "")),
                            ("platform", platform_line(report)),
                            ("spec_commit", report.spec_commit),
                            ("level_reached", report.level_reached or "none")):
            _el(props, "property", name=name, value=value)
        for clause in clauses:
            _testcase(suite, clause)
        for key in totals:
            totals[key] += int(attrs[key])  # type: ignore[call-overload]
    if report.harness_errors:
        suite = _el(root, "testsuite", name="harness", tests=len(report.harness_errors),
                    failures=0, errors=len(report.harness_errors), skipped=0, time="0.000")
        for index, error in enumerate(report.harness_errors):
            case = _el(suite, "testcase", classname="harness", name=f"harness-error-{index}",
                       time="0.000")
            _el(case, "error", error, message=error.splitlines()[0] if error else "error",
                type="harness")
        totals["tests"] += len(report.harness_errors)
        totals["errors"] += len(report.harness_errors)
    for key, value in totals.items():
        root.set(key, str(value))
    root.set("name", xml_safe(f"maka-conformance {report.suite_version}"))
    root.set("time", f"{report.duration_s:.3f}")
    ET.indent(root)
    return ET.ElementTree(root)


def write_junit(report: RunReport, path: Path) -> Path:
    junit_tree(report).write(path, encoding="utf-8", xml_declaration=True)
    return path
