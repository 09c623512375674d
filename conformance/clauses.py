"""Helpers for writing clauses (public): the ``clause`` marker, the mismatch exception that
carries a structured diff, and comparison helpers.

A clause is a pytest test with one ``clause(...)`` marker and the ``maka`` fixture::

    from conformance.clauses import clause, expect_equal

    @clause("LEDGER-EQUIV-001", spec="10 §6.1", capability="ledger.resolver",
            title="resolution equals the reference's")
    def test_resolution(maka):
        reply = maka.call("ledger.resolve", {"events": events})
        expect_equal(reference_resolution, reply.result, what="resolution")

Third parties can add their own clause modules the same way and run them with
``pytest -p conformance.plugin``.
"""

from __future__ import annotations

from typing import Any, Mapping

from conformance._suite.clause import ClauseInfo, ClauseMismatch, clause, level_of

__all__ = ["ClauseInfo", "ClauseMismatch", "clause", "expect_equal", "expect_ok", "level_of"]


def expect_equal(expected: Any, actual: Any, *, what: str, evidence: Mapping[str, Any] | None = None) -> None:
    """Raise :class:`ClauseMismatch` with the first differing JSON path unless equal
    (JSON equality: ``1 == 1.0``, ``0 != -0``, booleans are not numbers)."""
    from conformance.reports import diff_json

    diff = diff_json(expected, actual)
    if diff is not None:
        raise ClauseMismatch(f"{what} differs at {diff['path']}", diff=diff, evidence=evidence)


def expect_ok(reply: Any, op: str) -> Mapping[str, Any]:
    """The result of a successful reply, or a clause failure naming the error code."""
    if not reply.ok:
        error = reply.error or {}
        raise ClauseMismatch(f"{op} answered an error: {error.get('code')}: {error.get('message')}",
                             evidence={"error": dict(error)})
    return reply.result or {}
