"""Machinery behind :mod:`maka_ref.testing.race_worker` (private: import from that module).

* :mod:`.protocol` — the worker's command line and result lines;
* :mod:`.fixtures` — the ledgers and stores a race starts from;
* :mod:`.modes`    — what each worker does (complete, park, claim …).

May import: ``maka_ref._codec``, ``maka_ref._plan.prefix``, ``maka_ref._store``,
``maka_ref.testing.families``.
"""
