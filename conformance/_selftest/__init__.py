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

The other direction: every **legal variant** of ``maka_ref/adapter/_variants`` (a correct
implementation that words or chooses what the spec leaves free differently) is certified on
its selection and must pass; a clause it fails is a **false alarm** (the suite compares
something the contract does not fix) and fails the self-test like a survivor does.

A **baseline** run of the same selections against the unmutated reference comes first: a
clause that fails on the reference itself proves nothing, so it is reported and its
failures are not counted as kills.

Library API: :func:`run_selftest` → :class:`SelftestResult` (``to_json``, ``render_markdown``,
``write``); the CLI only parses arguments and prints.

May import: ``conformance.certify``, ``maka_ref.adapter``.
"""

from conformance._selftest._run import (
    MutantOutcome,
    SelftestResult,
    VariantOutcome,
    list_mutants,
    list_variants,
    mutant_command,
    run_selftest,
    variant_command,
)

__all__ = ["MutantOutcome", "SelftestResult", "VariantOutcome", "list_mutants", "list_variants", "mutant_command",
           "run_selftest", "variant_command"]
