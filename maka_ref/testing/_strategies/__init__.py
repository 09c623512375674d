"""Machinery behind :mod:`maka_ref.testing.strategies` (private: import from that module).

The public module is a flat facade, as in Hypothesis; the strategies themselves live here,
one job per module. Nothing here is API: names and layout may change without notice.
Each module imports only modules listed above it:

* ``constants``: protocol strings and enum tuples shared by everything else.
* ``ledger_model``: the value objects the strategies return, with their ground truth.
* ``values``: small value strategies (text, JSON, tool calls and results).
* ``builder``: the mutable state of one run being drawn (ids, clock, operations).
* ``events``: builders of single RuntimeEvents and of recovery bundles.
* ``ledgers``: healthy ledgers (crash cut, recovery epilogue) and ``runtime_events``.
* ``transforms``: plain ledger helpers (marker on/off, append a response).
* ``corruption_edits``: how each named corruption edits events, and its witness.
* ``corruptions``: the corruption catalogue and the ``corrupt_ledgers`` strategy.
* ``jsonl``: torn JSON-lines bytes.
* ``garbage``: never-raise inputs (wrong-typed fields, non-JSON objects).

May import: ``maka_ref._codec``, ``maka_ref._events``.
"""
