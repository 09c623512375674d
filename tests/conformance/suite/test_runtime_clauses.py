"""The runtime clause modules (``conformance.suite.test_runtime_loop``, ``test_runtime_crash``,
``test_recovery``) pass against the reference adapter.

They run exactly as ``maka-conformance certify`` runs them: a child ``pytest`` with the plugin
loaded explicitly (entry-point autoload off, so it is not registered twice), two xdist workers,
and the report written to a directory; the assertion reads ``report.json``.
"""

from __future__ import annotations

from pathlib import Path

from tests.conformance.suite.support import assert_every_clause_passed, run_suite_modules

MODULES = (
    "conformance.suite.test_runtime_loop",
    "conformance.suite.test_runtime_crash",
    "conformance.suite.test_recovery",
)
#: 7 loop/tools + 20 crash (P0–P9 × 2 protocols) + 4 repair + 12 resume.
EXPECTED_CLAUSES = 43


def test_runtime_clauses_pass_against_the_reference(tmp_path: Path) -> None:
    report, proc = run_suite_modules(tmp_path, MODULES)
    assert_every_clause_passed(report, proc, EXPECTED_CLAUSES)
