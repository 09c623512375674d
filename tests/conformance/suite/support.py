"""Run some conformance clause modules against the reference adapter, exactly as
``maka-conformance certify`` runs the suite: a child ``pytest`` with the plugin loaded explicitly
(entry-point autoload off, so it is not registered twice), xdist workers, the report written to
a directory. The tests then read ``report.json``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any, Sequence


def run_suite_modules(tmp_path: Path, modules: Sequence[str], *, workers: int = 2) -> tuple[dict[str, Any], subprocess.CompletedProcess[str]]:
    report_dir = tmp_path / "report"
    ini = tmp_path / "pytest.ini"
    ini.write_text("[pytest]\n", encoding="utf-8")
    argv = [sys.executable, "-m", "pytest", "-p", "conformance.plugin", "-p", "xdist.plugin", "-p", "no:cacheprovider",
            "-c", str(ini), "--rootdir", str(tmp_path), "-q", "--no-header", "-n", str(workers),
            "--maka-report-dir", str(report_dir), "--pyargs", *modules]
    env = dict(os.environ, PYTEST_DISABLE_PLUGIN_AUTOLOAD="1", PYTHONDONTWRITEBYTECODE="1")
    env.pop("PYTEST_ADDOPTS", None)
    proc = subprocess.run(argv, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    report_path = report_dir / "report.json"
    assert report_path.exists(), f"no report.json; pytest exit {proc.returncode}\n{proc.stdout[-4000:]}\n{proc.stderr[-4000:]}"
    return json.loads(report_path.read_text(encoding="utf-8")), proc


def assert_every_clause_passed(report: dict[str, Any], proc: subprocess.CompletedProcess[str], expected: int) -> list[str]:
    """Every clause passed (no failed, error, not_run or not_claimed), ``expected`` unique ids,
    pytest exit 0, no harness errors; returns the ids."""
    clauses = report["clauses"]
    not_passed = {c["clause_id"]: (c["outcome"], c.get("message")) for c in clauses if c["outcome"] != "passed"}
    assert not not_passed, f"clauses not passed: {json.dumps(not_passed, indent=1)}\n{proc.stdout[-4000:]}"
    ids = [c["clause_id"] for c in clauses]
    assert len(ids) == len(set(ids)) == expected, sorted(ids)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    assert not report["harness_errors"], report["harness_errors"]
    return ids
