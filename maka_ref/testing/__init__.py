"""Testing helpers that ship with the reference runtime (for our suite and for third parties).

Importing this package imports nothing heavy; each helper module is imported on its own:

* :mod:`maka_ref.testing.families`: the spec's fixture families (R and W of spec 10 §7) as
  builders of plain event dicts.
* :mod:`maka_ref.testing.strategies`: Hypothesis strategies for realistic and corrupt
  ledgers, with ground truth known by construction (requires ``hypothesis``).
* :mod:`maka_ref.testing.store_strategies`: Hypothesis strategies for sequences of durable
  store writes (T1, T2, bundles, retries), used by the projection-equivalence tests.
* :mod:`maka_ref.testing.process_race` and :mod:`maka_ref.testing.race_worker`: the
  multi-process race harness of spec 30 §7 (start-file barrier, timeouts, reaping).
* :mod:`maka_ref.testing.workspace_baseline`: the spec 30 §6.2 workspace-baseline fixture.

May import: ``maka_ref._codec``, ``maka_ref._events``, ``maka_ref._plan.prefix``,
``maka_ref._store``.
"""
