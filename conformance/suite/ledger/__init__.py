"""The ledger clauses (``LEDGER-*``, spec 10, 20 §1): golden vectors, recorded anchor vectors and
equivalence with the reference on generated ledgers.

May import: ``conformance._fuzz._selffuzz``, ``conformance.anchors``, ``conformance.clauses``,
``conformance.protocol``, ``conformance.reports``, ``conformance.vectors``, ``maka_ref``.
"""
