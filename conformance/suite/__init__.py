"""The clauses of the conformance suite, as pytest modules (run with ``maka-conformance
certify`` or ``pytest -p conformance.plugin --pyargs conformance.suite``).

Clause ids are stable: ``LEDGER-VEC:<vector id>`` for each golden vector, and
``<AREA>-<TOPIC>-<NNN>`` for the others. ``docs/clauses.md`` lists them with their spec
sections, capabilities and levels.

May import: ``conformance._fuzz``, ``conformance.anchors``, ``conformance.clauses``,
``conformance.protocol``, ``conformance.reports``, ``conformance.vectors``, ``crashlab``,
``maka_ref``.
"""
