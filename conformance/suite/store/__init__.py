"""The store clauses (``STORE-*``, spec 30): open, append, T1/T2 tool writes, recovery bundles,
projections, continuation claims and reopening, each against the implementation over the wire.

May import: ``conformance.clauses``, ``conformance.suite._store_support``,
``conformance.vectors``, ``maka_ref._plan``.
"""
