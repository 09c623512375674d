"""The ledger clauses (``LEDGER-*``, spec 10, 20 §1): golden vectors, recorded anchor vectors and
equivalence with the reference on generated ledgers.

The golden vectors include the pure Phase 3 and Phase 4 families (spec-phase3 §2, §4;
spec-phase4 §1.2, §2.4), whose clauses belong to the optional capabilities
``runtime.reconcile`` and ``workspace.checkpoint``.

May import: ``conformance._fuzz._selffuzz``, ``conformance.anchors``, ``conformance.clauses``,
``conformance.protocol``, ``conformance.reports``, ``conformance.vectors``, ``maka_ref``.
"""
