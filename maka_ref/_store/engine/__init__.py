"""The SQLite engine under every store: connections, transactions, schema, faults (spec 30 §1, §6, §10).

* :mod:`.connection` — opening ``runtime.sqlite`` (WAL, ``synchronous=FULL``, busy timeout,
                       read-only opens) and the read/write transaction helpers;
* :mod:`.schema`     — runtime schema versions 1..12, the migration algorithm and the
                       capability gate;
* :mod:`.faults`     — store faults as stable codes (busy, read-only, full, corrupt, not a
                       regular file …): the store fails closed and says why;
* :mod:`.failpoints` — the named failpoint hooks inside write transactions (§6);
* :mod:`.rows`       — stored rows ↔ RuntimeEvents;
* :mod:`.gc_pause`   — pausing Python's cyclic collector around bulk decodes.

Nothing here knows a ledger rule; the rooms above build every rule on these pieces.

May import: ``maka_ref._codec``, ``maka_ref._events``, ``maka_ref._store.errors``.
"""
