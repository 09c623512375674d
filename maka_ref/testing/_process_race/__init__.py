"""Machinery behind :mod:`maka_ref.testing.process_race` (private: import from that module).

* :mod:`.types` — the race's value types;
* :mod:`.spawn` — starting the workers as real processes and collecting their results.

May import: nothing of ours.
"""
