"""Conformance suite for crash-safe resume of agent runtimes.

Layering (each layer uses only the ones below it; nothing below imports this package):

1. data: ``vectors/`` (golden vectors + schema, loader :mod:`conformance.vectors`),
   ``protocol/`` (the wire protocol's JSON Schemas, validators :mod:`conformance.protocol`),
   ``docs/`` (packaged copies of the spec, the protocol documents and the adapter guide);
2. results: :mod:`conformance.reports` (clause results, the level rule, JSON / JUnit /
   Markdown / HTML reports, the platform matrix, the first-difference JSON diff);
3. clauses: :mod:`conformance.clauses` (the ``clause`` marker and comparison helpers for
   writing clauses) and the suite itself in ``conformance/suite/``;
4. the pytest plugin :mod:`conformance.plugin` (``pytest11`` entry point; ``--maka-impl``,
   the claim gate, recording; imports nothing heavy at load);
5. :mod:`conformance.certify` (run the suite in a child pytest with a deadline and read the
   reports), the mutant self-test (``_selftest``) and differential fuzzing (``_fuzz``);
6. the ``maka-conformance`` command line (``_cli``), a thin layer over 2–5.

Dependencies between packages (one direction only): ``conformance`` → ``crashlab`` →
``maka_ref``. The suite talks to an implementation under test only through ``crashlab``'s
wire-protocol client; it uses ``maka_ref`` as the oracle for differential checks.

Extension points: write clauses with :func:`conformance.clauses.clause` and run them with
``pytest -p conformance.plugin``; point the suite at any implementation with ``--maka-impl``
(``docs/adapter-guide.md``); merge reports from several platforms with
:func:`conformance.reports.merge_matrix`.

May import: ``crashlab``, ``maka_ref``.
"""
