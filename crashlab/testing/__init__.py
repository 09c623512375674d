"""Testing helpers that ship with the crash lab.

* :mod:`crashlab.testing.bad_adapter`: a minimal correct adapter and a zoo of misbehaving
  ones (hangs, garbage, floods, escaped grandchildren, …), one per verdict of protocol §7,
  runnable as ``python -m crashlab.testing.bad_adapter MODE``. Use them to check that a
  harness (ours or yours) turns each misbehaviour into its verdict without hanging.

May import: nothing of ours.
"""
