"""The store clause modules (``conformance.suite.store.test_open``, ``test_store_append``,
``test_store_tool_writes``, ``test_store_bundle``, ``test_store_projections``, ``test_store_reopen``,
``test_phase0_crash_prefixes``) pass against the reference adapter.

They run exactly as ``maka-conformance certify`` runs them: a child ``pytest`` with the plugin
loaded explicitly (entry-point autoload off, so it is not registered twice), two xdist workers,
and the report written to a directory; the assertion reads ``report.json`` and requires every
clause to be *passed* (no failed, no error, no not_run, no not_claimed).
"""

from __future__ import annotations

from pathlib import Path

from tests.conformance.suite.support import assert_every_clause_passed, run_suite_modules

MODULES = (
    "conformance.suite.store.test_open",
    "conformance.suite.store.test_append",
    "conformance.suite.store.test_tool_writes",
    "conformance.suite.store.test_bundle",
    "conformance.suite.store.test_projections",
    "conformance.suite.store.test_reopen",
    "conformance.suite.test_phase0_crash_prefixes",
)
#: 61 writes (open/schema 4; append 11 + lanes 9; T1 14 + T2 10 + health gate 1; bundle 12) + 8 projections
#: + 5 reopen + 12 Phase 0 crash prefixes (P0–P11).
EXPECTED_CLAUSES = 86


def test_store_clauses_pass_against_the_reference(tmp_path: Path) -> None:
    report, proc = run_suite_modules(tmp_path, MODULES)
    ids = assert_every_clause_passed(report, proc, EXPECTED_CLAUSES)
    assert {f"PHASE0-CRASH-P{n}" for n in range(12)} <= set(ids)
