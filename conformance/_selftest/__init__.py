"""``maka-conformance selftest``: grade the suite by the mutants it kills (issue 7).

Every mutant of the corpus (``maka_ref/adapter/_mutants``) is certified as an implementation
under test, ``python -m maka_ref.adapter --mutant NAME``, through :func:`conformance.certify`.
A mutant is **killed** when at least one clause *fails* or *errors* on it; it **survived**
when every selected clause passed. The mutation score is killed / total and must be 100%: a
survivor is a missing clause (add it; never delete the mutant). See ``docs/selftest.md``.

Two sizes:

* default: each mutant against the clauses of its target area (the ``-k`` selection it
  declares), which must still kill it; a few seconds per mutant;
* ``full``: each mutant against the whole suite, which builds the complete kill matrix
  (about as long as one full certification per mutant).

A **baseline** run of the same selections against the unmutated reference comes first: a
clause that fails on the reference itself proves nothing, so it is reported and its
failures are not counted as kills.

Library API: :func:`run_selftest` → :class:`SelftestResult` (``to_json``, ``render_markdown``,
``write``); the CLI only parses arguments and prints.
"""

from conformance._selftest._run import (
    MutantOutcome,
    SelftestResult,
    list_mutants,
    mutant_command,
    run_selftest,
)

__all__ = ["MutantOutcome", "SelftestResult", "list_mutants", "mutant_command", "run_selftest"]
