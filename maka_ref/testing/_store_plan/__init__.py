"""Machinery behind :mod:`maka_ref.testing.store_strategies` (private: import from that module).

The public module is a flat facade, as in Hypothesis; the strategy and its builders live
here, one job per module. Nothing here is API: names and layout may change without notice.
Each module imports only modules listed above it:

* ``model``: the plan and ground-truth value objects (``StoreWrite``, ``StoreWritePlan``,
  ``RunTruth``, ...), ``derive_operation_id`` and ``apply_write``.
* ``draft``: the mutable state of one plan while it is drawn (ids, clock, runs, operations).
* ``events``: builders of the single RuntimeEvents the writes carry.
* ``writes``: one queued step turned into a write, with the projection it must leave.
* ``retries``: exact retries (presentation noise, key order) and inserting writes.
* ``plans``: the ``store_write_plans`` strategy (runs, operations, interleaving, truth).

May import: ``maka_ref._codec``, ``maka_ref._store.writers``, ``maka_ref.testing._strategies``,
``maka_ref.testing.strategies``.
"""
