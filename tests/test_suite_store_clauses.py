"""The store clause modules (``conformance.suite.test_store_writes``, ``test_store_projections``,
``test_store_reopen``, ``test_phase0_crash_prefixes``) pass against the reference adapter.

They run exactly as ``maka-conformance certify`` runs them: a child ``pytest`` with the plugin
loaded explicitly (entry-point autoload off, so it is not registered twice), two xdist workers,
and the report written to a directory; the assertion reads ``report.json`` and requires every
clause to be *passed* (no failed, no error, no not_run, no not_claimed).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

MODULES = (
    "conformance.suite.test_store_writes",
    "conformance.suite.test_store_projections",
    "conformance.suite.test_store_reopen",
    "conformance.suite.test_phase0_crash_prefixes",
)
#: 60 writes (open/schema 4, append 11, lanes 9, T1 14, T2 10, bundle 12) + 8 projections
#: + 5 reopen + 12 Phase 0 crash prefixes (P0–P11).
EXPECTED_CLAUSES = 85


def test_store_clauses_pass_against_the_reference(tmp_path: Path) -> None:
    report_dir = tmp_path / "report"
    ini = tmp_path / "pytest.ini"
    ini.write_text("[pytest]\n", encoding="utf-8")
    argv = [sys.executable, "-m", "pytest", "-p", "conformance.plugin", "-p", "xdist.plugin", "-p", "no:cacheprovider",
            "-c", str(ini), "--rootdir", str(tmp_path), "-q", "--no-header", "-n", "2",
            "--maka-report-dir", str(report_dir), "--pyargs", *MODULES]
    env = dict(os.environ, PYTEST_DISABLE_PLUGIN_AUTOLOAD="1", PYTHONDONTWRITEBYTECODE="1")
    env.pop("PYTEST_ADDOPTS", None)
    proc = subprocess.run(argv, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    report_path = report_dir / "report.json"
    assert report_path.exists(), f"no report.json; pytest exit {proc.returncode}\n{proc.stdout[-4000:]}\n{proc.stderr[-4000:]}"
    report = json.loads(report_path.read_text(encoding="utf-8"))
    clauses = report["clauses"]
    not_passed = {c["clause_id"]: (c["outcome"], c.get("message")) for c in clauses if c["outcome"] != "passed"}
    assert not not_passed, f"clauses not passed: {json.dumps(not_passed, indent=1)}\n{proc.stdout[-4000:]}"
    ids = [c["clause_id"] for c in clauses]
    assert len(ids) == len(set(ids)) == EXPECTED_CLAUSES, sorted(ids)
    assert {f"PHASE0-CRASH-P{n}" for n in range(12)} <= set(ids)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    assert not report["harness_errors"], report["harness_errors"]
