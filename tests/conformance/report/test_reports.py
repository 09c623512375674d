"""Result model round trips and the four report files (JSON, JUnit, Markdown, HTML)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from html.parser import HTMLParser
from pathlib import Path

import pytest

from conformance.reports import (
    CAPABILITIES,
    OUTCOMES,
    SPEC_COMMIT,
    ClauseResult,
    RunReport,
    diff_json,
    junit_tree,
    render_html,
    render_markdown,
    write_reports,
)

INJECTED = "<script>alert('pwned')</script>"


#: The capabilities of :func:`sample_report`'s clauses, in protocol order.
SAMPLE_CAPABILITIES = ["ledger.codec", "ledger.resolver", "ledger.plan", "store", "runtime.loop", "faults",
                       "runtime.repair", "runtime.continuation"]


def sample_report() -> RunReport:
    """A run that reaches ``durable``: live fails (loop) and errors (faults), recovery is not
    claimed. Messages carry markup, control characters and backticks on purpose."""
    impl = {"name": "maka-ref", "version": "0.1.0",
            "capabilities": [*CAPABILITIES[:6], "x.custom"],
            "failpoints": ["P0", "P1"], "command": ["maka-ref", "serve"]}
    clauses = [
        ClauseResult("LEDGER-CODEC-001", "ledger.codec", "ledger", "passed",
                     title="Args hash is stable", spec="10 §2.4", duration_s=0.01),
        ClauseResult("LEDGER-RESOLVE-014", "ledger.resolver", "ledger", "passed",
                     spec="10 §6.1", duration_s=0.02),
        ClauseResult("LEDGER-VEC-resolver/s48-new-protocol-call-only", "ledger.resolver",
                     "ledger", "passed", spec="10 §6.1", evidence={"vector": "s48"}),
        ClauseResult("LEDGER-PLAN-003", "ledger.plan", "ledger", "passed", spec="20 §3"),
        ClauseResult("STORE-APPEND-002", "store", "durable", "passed", spec="30 §2.3"),
        ClauseResult(
            "LIVE-LOOP-007", "runtime.loop", "live", "failed",
            title=f"Tool result survives SIGKILL {INJECTED}", spec="20 §2", duration_s=2.5,
            message=f"resume plan differs\n{INJECTED}\x01 & more ``` fence",
            diff=diff_json({"decisions": [{"kind": "replay"}]},
                           {"decisions": [{"kind": "reexecute"}]}),
            stderr_tail="\n".join(f"line {i}\x07" for i in range(200)) + f"\n{INJECTED}",
            target="popen//python=python3",
        ),
        ClauseResult("FAULTS-P1-001", "faults", "live", "error", message="worker crashed"),
        ClauseResult("REPAIR-001", "runtime.repair", "recovery", "not_claimed", spec="20 §4"),
        ClauseResult("CONT-001", "runtime.continuation", "recovery", "not_claimed"),
    ]
    return RunReport(suite_version="0.1.0", implementation=impl, clauses=clauses,
                     duration_s=93.2, workers=2, started_at="2025-01-02T03:04:05Z",
                     platform={"system": "Linux", "release": "6.1", "machine": "x86_64"},
                     python="CPython 3.11.7", selection={"level": None, "keyword": None})


# -- model ---------------------------------------------------------------------------------


def test_defaults_and_constants() -> None:
    report = RunReport(suite_version="0.1.0", implementation={"name": "x"})
    assert report.spec_commit == SPEC_COMMIT == "f19eede03"
    assert report.protocol_version == 1
    assert report.platform["system"] in ("Linux", "Darwin", "Windows") or report.platform["system"]
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", report.started_at)
    assert report.counts() == dict.fromkeys(OUTCOMES, 0)


def test_json_round_trip() -> None:
    report = sample_report().finalized()
    text = report.to_json()
    again = RunReport.from_json(text)
    assert again == report
    assert again.to_json() == text
    data = json.loads(text)
    assert data["report_format"] == 1 and data["level_reached"] == "durable"
    assert data["clauses"][5]["diff"]["path"] == "$.decisions[0].kind"


def test_json_makes_odd_values_valid_json() -> None:
    clause = ClauseResult("A", "store", "durable", "failed",
                          evidence={"t": (1, 2), "inf": float("inf"), "nan": float("nan"),
                                    "neg0": -0.0, 3: object.__new__(object)},
                          diff={"path": "$", "expected": float("-inf"), "actual": 1})
    data = json.loads(RunReport(suite_version="1", implementation={},
                                clauses=[clause]).to_json())
    evidence = data["clauses"][0]["evidence"]
    assert evidence["t"] == [1, 2] and evidence["inf"] == "Infinity" and evidence["nan"] == "NaN"
    assert str(evidence["neg0"]) == "-0.0" and evidence["3"].startswith("<object")
    assert data["clauses"][0]["diff"]["expected"] == "-Infinity"


def test_unknown_outcome_and_level_are_refused() -> None:
    with pytest.raises(ValueError, match="outcome"):
        ClauseResult("A", "store", "durable", "skipped")
    with pytest.raises(ValueError, match="level"):
        ClauseResult("A", "store", "storage", "passed")


def test_from_json_ignores_unknown_keys_but_not_other_formats() -> None:
    data = json.loads(sample_report().to_json())
    data["future_field"] = 1
    data["clauses"][0]["future_field"] = 2
    assert RunReport.from_dict(data).clauses[0].clause_id == "LEDGER-CODEC-001"
    data["report_format"] = 2
    with pytest.raises(ValueError, match="report_format"):
        RunReport.from_dict(data)


def test_counts_and_by_capability() -> None:
    report = sample_report()
    assert report.counts() == {"passed": 5, "failed": 1, "not_claimed": 2, "error": 1,
                               "not_run": 0}
    groups = report.by_capability()
    # protocol order; store.continuation has no clause in the sample and is not claimed
    assert list(groups) == [*SAMPLE_CAPABILITIES, "x.custom"]
    assert [c.clause_id for c in groups["ledger.resolver"]] == [
        "LEDGER-RESOLVE-014", "LEDGER-VEC-resolver/s48-new-protocol-call-only"]
    assert groups["x.custom"] == []
    assert report.capability_counts()["faults"]["error"] == 1
    assert report.unknown_capabilities == ["x.custom"]


# -- files ---------------------------------------------------------------------------------


def test_write_reports_writes_four_consistent_files(tmp_path: Path) -> None:
    report = sample_report()
    paths = write_reports(report, tmp_path / "out")
    assert {k: p.name for k, p in paths.items()} == {
        "json": "report.json", "junit": "junit.xml", "markdown": "report.md",
        "html": "report.html"}
    assert report.level_reached is None  # the caller's object is not modified
    loaded = RunReport.from_json(paths["json"].read_text(encoding="utf-8"))
    assert loaded.level_reached == "durable"
    assert loaded.levels["live"]["reasons"] == ["runtime.loop: 1 failed (LIVE-LOOP-007)",
                                                "faults: 1 error (FAULTS-P1-001)"]
    assert "CERTIFIED at level durable" in paths["markdown"].read_text(encoding="utf-8")
    assert "CERTIFIED at level durable" in paths["html"].read_text(encoding="utf-8")


def test_lone_surrogate_still_writes_valid_files(tmp_path: Path) -> None:
    report = sample_report()
    report.clauses[5].stderr_tail = "bad \udc80 bytes"
    paths = write_reports(report, tmp_path)
    assert RunReport.from_json(paths["json"].read_bytes()).clauses[5].stderr_tail.endswith("bytes")
    ET.parse(paths["junit"])


def test_junit_structure_and_counts(tmp_path: Path) -> None:
    report = sample_report().finalized()
    path = write_reports(report, tmp_path)["junit"]
    root = ET.parse(path).getroot()  # control characters were made parseable
    assert root.tag == "testsuites"
    assert (root.get("tests"), root.get("failures"), root.get("errors"), root.get("skipped")) == (
        "9", "1", "1", "2")
    suites = {s.get("name"): s for s in root.iter("testsuite")}
    assert list(suites) == SAMPLE_CAPABILITIES  # x.custom has no clause: no suite
    assert sum(int(s.get("tests")) for s in suites.values()) == len(report.clauses)
    resolver = suites["ledger.resolver"]
    assert [c.get("name") for c in resolver.iter("testcase")] == [
        "LEDGER-RESOLVE-014", "LEDGER-VEC-resolver/s48-new-protocol-call-only"]
    failure = suites["runtime.loop"].find("testcase/failure")
    assert failure is not None and failure.get("message") == "resume plan differs"
    assert "$.decisions[0].kind" in failure.text and '"reexecute"' in failure.text
    assert "\\x01" in failure.text
    assert suites["faults"].find("testcase/error").get("message") == "worker crashed"
    skipped = suites["runtime.repair"].find("testcase/skipped")
    assert skipped.get("message") == "not claimed"
    err = suites["runtime.loop"].find("testcase/system-err").text
    assert err.endswith(INJECTED) and "line 199\\x07" in err and "line 0\\x07" not in err


def test_junit_harness_errors_become_errors() -> None:
    report = sample_report()
    report.harness_errors = ["worker gw1 crashed\nTraceback…"]
    root = junit_tree(report.finalized()).getroot()
    assert root.get("errors") == "2" and root.get("tests") == "10"
    harness = [s for s in root.iter("testsuite") if s.get("name") == "harness"][0]
    assert harness.find("testcase/error").get("message") == "worker gw1 crashed"


def test_not_run_is_skipped_in_junit() -> None:
    report = RunReport(suite_version="1", implementation={"capabilities": ["store"]},
                       clauses=[ClauseResult("S-1", "store", "durable", "not_run")])
    case = junit_tree(report).getroot().find("testsuite/testcase")
    assert case.find("skipped").get("message") == "not run"


# -- Markdown ------------------------------------------------------------------------------


def test_markdown_sections_in_order() -> None:
    text = render_markdown(sample_report().finalized())
    headings = re.findall(r"^##? .*$", text, flags=re.M)
    assert headings == [
        "# maka-conformance report", "## Summary: **CERTIFIED at level durable**",
        "## Levels", "## Capabilities", "## Failures (2)", "## All clauses (9)"]
    summary = text.split("## Levels")[0]
    for needle in ("maka-ref 0.1.0", "Linux 6.1 (x86\\_64)", "5 passed, 1 failed", "93.2 s"):
        assert needle in summary
    failures = text.split("## Failures")[1].split("## All clauses")[0]
    assert failures.index("LIVE-LOOP-007") < failures.index("FAULTS-P1-001")
    assert "First difference at `$.decisions[0].kind`" in failures
    assert "````\n" in failures  # the message holds ``` so the fence is longer
    assert "… (161 earlier lines omitted)" in failures
    assert "\x01" not in text and "\x07" not in text


def test_markdown_not_certified_and_table_safety() -> None:
    report = sample_report()
    report.clauses[0] = ClauseResult("A|B", "ledger.codec", "ledger", "failed",
                                     title="pipe | in title")
    text = render_markdown(report.finalized())
    assert "## Summary: **NOT CERTIFIED**" in text
    assert "`A\\|B`" in text and "pipe \\| in title" in text


# -- HTML ----------------------------------------------------------------------------------


class _Outline(HTMLParser):
    """Collects headings, section ids, open/close balance and script tags."""

    VOID = {"meta", "br", "hr", "img", "link", "input"}

    def __init__(self) -> None:
        super().__init__()
        self.stack: list[str] = []
        self.sections: list[str] = []
        self.headings: list[str] = []
        self.scripts = 0
        self.external = 0
        self._heading: list[str] | None = None
        self.errors: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        attr = dict(attrs)
        if tag == "script":
            self.scripts += 1
        if tag in ("link", "img") or (attr.get("src") or "").startswith("http"):
            self.external += 1
        if tag == "section":
            self.sections.append(attr.get("id") or "")
        if tag in ("h1", "h2"):
            self._heading = []
        if tag not in self.VOID:
            self.stack.append(tag)

    def handle_endtag(self, tag: str) -> None:
        if not self.stack or self.stack[-1] != tag:
            self.errors.append(f"unbalanced </{tag}> (open: {self.stack[-3:]})")
            return
        self.stack.pop()
        if tag in ("h1", "h2") and self._heading is not None:
            self.headings.append("".join(self._heading).strip())
            self._heading = None

    def handle_data(self, data: str) -> None:
        if self._heading is not None:
            self._heading.append(data)


def _outline(html: str) -> _Outline:
    parser = _Outline()
    parser.feed(html)
    parser.close()
    return parser


def test_html_is_well_formed_and_ordered() -> None:
    html = render_html(sample_report().finalized())
    outline = _outline(html)
    assert outline.errors == [] and outline.stack == []
    assert outline.sections == ["summary", "levels", "capabilities", "failures", "clauses"]
    assert outline.headings == ["maka-conformance report", "Summary", "Levels", "Capabilities",
                                "Failures (2)", "All clauses (9)"]
    assert outline.scripts == 0 and outline.external == 0
    assert html.startswith("<!DOCTYPE html>") and "<style>" in html


def test_html_escapes_everything_from_the_implementation() -> None:
    html = render_html(sample_report().finalized())
    assert INJECTED not in html
    assert "&lt;script&gt;alert(&#x27;pwned&#x27;)&lt;/script&gt;" in html
    assert "\x01" not in html and "\\x01" in html


def test_html_summary_content_and_collapsed_clause_list() -> None:
    html = render_html(sample_report().finalized())
    summary = html.split('<section id="levels">')[0]
    assert 'class="verdict ok"' in summary and "CERTIFIED at level durable" in summary
    assert "maka-ref 0.1.0" in summary and "Linux 6.1 (x86_64)" in summary
    clauses = html.split('<section id="clauses">')[1]
    assert clauses.startswith("<h2>All clauses (9)</h2><details><summary>")
    failures = html.split('<section id="failures">')[1].split('<section id="clauses">')[0]
    assert "$.decisions[0].kind" in failures and "<details><summary>stderr" in failures


def test_html_not_certified_with_harness_errors() -> None:
    report = sample_report()
    report.harness_errors = [f"handshake failed {INJECTED}"]
    html = render_html(report.finalized())
    assert 'class="verdict bad"' in html and "NOT CERTIFIED" in html
    assert "Harness errors (1)" in html and INJECTED not in html


def test_import_is_light() -> None:
    code = ("import sys, conformance.reports; "
            "bad = [m for m in sys.modules if m.split('.')[0] in "
            "('pytest', 'maka_ref', 'crashlab', 'rich', 'jsonschema')]; print(bad)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, cwd=Path(__file__).resolve().parents[3])
    assert out.stdout.strip() == "[]"


def test_html_clause_list_links_failures_to_their_entry() -> None:
    html = render_html(sample_report().finalized())
    assert 'id="clause-LIVE-LOOP-007"' in html
    assert '<a href="#clause-LIVE-LOOP-007"><code>LIVE-LOOP-007</code></a>' in html
    assert 'href="#clause-LEDGER-CODEC-001"' not in html  # passed clauses are not linked
