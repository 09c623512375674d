"""What ``certify`` says about implementations that are wrong or misbehave (issue 5 items 3,
4, 6): a wrong answer is a failed clause with a structured diff in every report; a hanging or
broken implementation is a verdict within its timeout with nothing left running; a plugin that
imports nothing heavy at load."""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
import time
from pathlib import Path

import psutil

from conformance.certify import EXIT_FAILED, certify

TAMPER = '''
import maka_ref.adapter._ledger_ops as ops
real = ops.VECTOR_RUNNERS["resolve"]
def wrong(input_):
    result = real(input_)
    for decision in result.get("decisions", []):
        decision["status"] = "definitely_not_dispatched"   # the classic unsafe lie
    return result
ops.VECTOR_RUNNERS["resolve"] = wrong
import sys
print("tampered resolver loaded", file=sys.stderr)
from maka_ref.adapter._server import main
main()
'''


def _report(directory: Path) -> dict:
    return json.loads((directory / "report.json").read_text(encoding="utf-8"))


def test_a_wrong_resolution_fails_its_clauses_with_a_json_path_diff(tmp_path: Path) -> None:
    script = tmp_path / "tampered_adapter.py"
    script.write_text(TAMPER, encoding="utf-8")
    impl = f"{shlex.quote(sys.executable)} {shlex.quote(str(script))}"
    result = certify(impl, report_dir=tmp_path / "r", workers=0,
                     keyword="LEDGER-EQUIV-001 or resolver/s59-completed-bundle or args-hash/array-args")
    assert result.harness_error is None, result.harness_error
    assert result.exit_code == EXIT_FAILED
    clauses = {c["clause_id"]: c for c in _report(tmp_path / "r")["clauses"]}
    assert clauses["LEDGER-VEC:args-hash/array-args"]["outcome"] == "passed"
    equiv = clauses["LEDGER-EQUIV-001"]
    assert equiv["outcome"] == "failed"
    assert equiv["diff"]["path"].startswith("$.decisions[") and equiv["diff"]["path"].endswith(".status")
    assert equiv["diff"]["actual"] == "definitely_not_dispatched"
    assert "tampered resolver loaded" in equiv["stderr_tail"]
    vector = clauses["LEDGER-VEC:resolver/s59-completed-bundle"]
    assert vector["outcome"] == "failed" and vector["diff"] is not None
    markdown = (tmp_path / "r" / "report.md").read_text(encoding="utf-8")
    assert "NOT CERTIFIED" in markdown and "LEDGER-EQUIV-001" in markdown and equiv["diff"]["path"] in markdown
    html = (tmp_path / "r" / "report.html").read_text(encoding="utf-8")
    assert equiv["diff"]["path"] in html
    junit = (tmp_path / "r" / "junit.xml").read_text(encoding="utf-8")
    assert 'failures="2"' in junit or "failures=\"2\"" in junit.replace("'", '"')


def _marked(mode: str, marker: str) -> str:
    return f"{shlex.quote(sys.executable)} -m crashlab.testing.bad_adapter {mode} {marker}"


def _survivors(marker: str) -> list[int]:
    return [p.pid for p in psutil.process_iter(["pid", "cmdline"]) if marker in " ".join(p.info["cmdline"] or [])]


def test_a_hanging_implementation_gets_timeout_verdicts_and_nothing_survives(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("BAD_ADAPTER_CLAIMS", "ledger.codec")
    marker = f"hang-probe-{tmp_path.name}"
    started = time.monotonic()
    result = certify(_marked("hang", marker), report_dir=tmp_path, workers=0, request_timeout=1.0,
                     keyword="args-hash/array-args or args-hash/write-notes")
    elapsed = time.monotonic() - started
    assert result.harness_error is None, result.harness_error
    assert result.exit_code == EXIT_FAILED
    clauses = _report(tmp_path)["clauses"]
    assert len(clauses) == 3 and {c["outcome"] for c in clauses} == {"failed"}
    assert all(c["evidence"].get("verdict") == "timeout" for c in clauses)
    assert elapsed < 60  # three 1-second timeouts plus process start-up, never a hang
    assert _survivors(marker) == []


def test_a_handshake_failure_is_an_error_for_every_clause(tmp_path: Path) -> None:
    marker = f"old-protocol-probe-{tmp_path.name}"
    result = certify(_marked("old_protocol", marker), report_dir=tmp_path, workers=0, keyword="args-hash/array-args")
    assert result.exit_code == EXIT_FAILED
    data = _report(tmp_path)
    assert [c["outcome"] for c in data["clauses"]] == ["error"]
    assert "handshake_failed" in data["clauses"][0]["message"]
    assert data["level_reached"] is None and data["harness_errors"]
    assert _survivors(marker) == []


def test_a_grandchild_left_running_is_reported_and_killed(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("BAD_ADAPTER_CLAIMS", "ledger.codec")
    marker = f"grandchild-probe-{tmp_path.name}"
    result = certify(_marked("grandchild", marker), report_dir=tmp_path, workers=0, keyword="args-hash/array-args")
    data = _report(tmp_path)
    assert result.exit_code == EXIT_FAILED
    assert any("outlived" in e or "left" in e for e in data["harness_errors"]), data["harness_errors"]
    assert _survivors(marker) == []


def test_the_plugin_imports_nothing_heavy_at_load() -> None:
    code = ("import sys, conformance.plugin; "
            "print(sorted({m.split('.')[0] for m in sys.modules} & {'maka_ref','crashlab','jsonschema','hypothesis','rich','psutil'}))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert out.stdout.strip() == "[]"
