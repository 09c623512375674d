"""``maka-conformance certify`` end to end, through the library API and the CLI (issue 5
items 5–7): exit codes, reports on disk, the claim gate, an implementation that cannot start,
``--dist each`` giving one result set per target, ``matrix`` and ``vectors export``."""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path

import psutil
import pytest

from conformance._cli.main import run as cli
from conformance.certify import EXIT_FAILED, EXIT_HARNESS, EXIT_OK, certify
from conformance.reports import RunReport

SUBSET = "args-hash"  # the args-hash golden vectors: fast, and enough to exercise the whole path


def _subset_size() -> int:
    from conformance.vectors import iter_vectors

    return sum(1 for v in iter_vectors() if "args-hash" in v.id)


def _report(directory: Path) -> dict:
    return json.loads((directory / "report.json").read_text(encoding="utf-8"))


def test_certify_reference_subset_passes_and_writes_every_report(tmp_path: Path) -> None:
    events: list[dict] = []
    result = certify(None, report_dir=tmp_path, workers=2, keyword=SUBSET, on_event=events.append)
    assert result.harness_error is None, result.harness_error
    assert result.exit_code == EXIT_OK
    for name in ("report.json", "junit.xml", "report.md", "report.html", "reports.json"):
        assert (tmp_path / name).is_file(), name
    data = _report(tmp_path)
    assert data["implementation"]["name"] == "maka-ref"
    assert data["spec_commit"] == "f19eede03"
    outcomes = {c["outcome"] for c in data["clauses"]}
    size = _subset_size()
    assert outcomes == {"passed"} and len(data["clauses"]) == size
    assert all("args-hash" in c["clause_id"] for c in data["clauses"])
    # the progress stream saw every clause, and the collected total first
    assert events[0] == {"event": "collected", "total": size}
    assert [e["done"] for e in events if e["event"] == "clause"] == list(range(1, size + 1))
    # a subset cannot certify a level whose other capabilities did not run
    assert data["level_reached"] is None


def test_certify_unstartable_implementation_is_a_clause_error_not_a_crash(tmp_path: Path) -> None:
    result = certify(f"{tmp_path}/does-not-exist --flag", report_dir=tmp_path / "r", workers=0, keyword=SUBSET)
    assert result.harness_error is None
    assert result.exit_code == EXIT_FAILED
    data = _report(tmp_path / "r")
    assert {c["outcome"] for c in data["clauses"]} == {"error"}
    assert any("could not be started" in e for e in data["harness_errors"])
    assert "spawn_failed" in data["clauses"][0]["message"] or "handshake" in data["clauses"][0]["message"]


def test_certify_not_claimed_capability_is_neither_passed_nor_failed(tmp_path: Path) -> None:
    adapter = f"{sys.executable} -m maka_ref.adapter --claim ledger.codec"
    result = certify(adapter, report_dir=tmp_path, workers=0, keyword="LEDGER-EQUIV-001 or args-hash/array-args")
    assert result.harness_error is None, result.harness_error
    assert result.exit_code == EXIT_OK  # every *claimed* clause passed
    by_id = {c["clause_id"]: c["outcome"] for c in _report(tmp_path)["clauses"]}
    assert by_id["LEDGER-EQUIV-001"] == "not_claimed"
    assert by_id["LEDGER-VEC:args-hash/array-args"] == "passed"


def test_certify_keyword_matching_nothing_is_a_harness_error(tmp_path: Path) -> None:
    result = certify(None, report_dir=tmp_path, workers=0, keyword="no-such-clause-anywhere")
    assert result.exit_code == EXIT_HARNESS
    assert result.harness_error and "pytest exit 5" in result.harness_error


def test_dist_each_gives_one_result_set_per_target(tmp_path: Path) -> None:
    result = certify(None, report_dir=tmp_path, workers=0, keyword="args-hash/array-args or args-hash/write-notes-other-key-order",
                     extra_pytest_args=["-p", "xdist.plugin", "--dist", "each", "--tx", "popen", "--tx", "popen"])
    assert result.harness_error is None, result.harness_error
    listing = json.loads((tmp_path / "reports.json").read_text())["reports"]
    assert len(listing) == 2
    assert len(result.reports) == 2
    for report in result.reports:
        assert len(report.clauses) == 2 and {c.outcome for c in report.clauses} == {"passed"}
    assert len({r.clauses[0].target for r in result.reports}) == 2


def test_cli_certify_prints_verdict_and_capability_table(tmp_path: Path) -> None:
    out, err = io.StringIO(), io.StringIO()
    code = cli(["certify", "--report-dir", str(tmp_path), "-n", "0", "-k", "args-hash/array-args", "--progress", "plain"],
               stdout=out, stderr=err)
    assert code == EXIT_OK, err.getvalue()
    text = out.getvalue()
    assert text.startswith("verdict: ")
    assert "ledger.codec" in text and "capability" in text
    assert "maka-conformance: 1 clauses" in err.getvalue()


def test_cli_usage_errors_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli(["certify", "--level", "galaxy"]) == 2
    assert cli(["certify", "-n", "many"]) == 2
    assert cli([]) == 2
    assert "maka-conformance: error" in capsys.readouterr().err


def _fake_report(system: str, outcome: str) -> RunReport:
    from conformance.reports import ClauseResult

    return RunReport(suite_version="t", implementation={"name": "x", "version": "1", "capabilities": ["ledger.codec"]},
                     clauses=[ClauseResult("C-1", "ledger.codec", "ledger", outcome)],
                     platform={"system": system, "release": "", "machine": ""})


def test_cli_matrix_merges_platform_reports(tmp_path: Path) -> None:
    linux, mac = tmp_path / "linux.json", tmp_path / "mac.json"
    linux.write_text(_fake_report("Linux", "passed").to_json())
    mac.write_text(_fake_report("Darwin", "failed").to_json())
    out = io.StringIO()
    assert cli(["matrix", str(linux), str(mac), "--format", "json"], stdout=out) == 0
    cells = json.loads(out.getvalue())["cells"]["ledger.codec"]
    assert cells == {"Linux": "supported", "macOS": "failed", "Windows": "not run"}
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    err = io.StringIO()
    assert cli(["matrix", str(bad)], stdout=io.StringIO(), stderr=err) == 2
    assert "not a readable report.json" in err.getvalue()


def test_cli_vectors_export_writes_vectors_and_protocol_schemas(tmp_path: Path) -> None:
    out = io.StringIO()
    assert cli(["vectors", "export", str(tmp_path / "x")], stdout=out) == 0
    names = {p.relative_to(tmp_path / "x").as_posix() for p in (tmp_path / "x").rglob("*") if p.is_file()}
    assert {"vectors/resolver.json", "vectors/vector.schema.json", "vectors/README.md"} <= names
    assert "protocol/envelope.request.schema.json" in names and "protocol/script.schema.json" in names
    assert {"protocol.md", "protocol-codes.md", "adapter-guide.md", "levels.md"} <= names
    assert {"spec/10-ledger-codec-resolver.md", "spec/20-plan-continuation-repair.md", "spec/30-storage-crash-harness.md"} <= names
    exported = json.loads((tmp_path / "x" / "vectors" / "resolver.json").read_text())
    assert len(exported["vectors"]) == 83


def test_nothing_left_running_after_certify(tmp_path: Path) -> None:
    marker = f"certify-leftover-probe-{tmp_path.name}"
    code = f"import runpy  # {marker}\nrunpy.run_module('maka_ref.adapter', run_name='__main__')"
    import shlex

    result = certify(f"{shlex.quote(sys.executable)} -c {shlex.quote(code)}", report_dir=tmp_path, workers=2,
                     keyword="args-hash/array-args or args-hash/write-notes")
    assert result.exit_code == EXIT_OK, result.harness_error
    ran = _report(tmp_path)["implementation"]["command"]
    assert marker in " ".join(ran)  # the probe really was the implementation
    leftovers = [p.pid for p in psutil.process_iter(["pid", "cmdline"]) if marker in " ".join(p.info["cmdline"] or [])]
    assert leftovers == []
