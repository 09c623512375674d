"""Testing helpers that ship with the reference runtime (for our suite and for third parties).

* :mod:`maka_ref.testing.families`: the spec's fixture families (R and W of spec 10 §7) as
  builders of plain event dicts.
* :mod:`maka_ref.testing.strategies`: Hypothesis strategies for realistic and corrupt
  ledgers. Importing it requires ``hypothesis``; this package itself imports nothing heavy.
"""
