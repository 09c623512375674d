"""The insert primitive and the gate every writer passes (spec 30 §2.1).

* :mod:`.primitive`   — ``insert_event``: identity, steering, sealed-run, continuation-claim
                        and partial-completion checks, then the row;
* :mod:`.health`      — the store-wide tool-ledger health gate and the §2.1 transition check
                        (``HealthGate``, ``assert_tool_ledger_transition``);
* :mod:`.facts`, :mod:`.transitions`, :mod:`.run_rows` — per-connection caches that let the
                        gate skip work it has already proved (passing T1/T2 verdicts, each
                        invocation's scanned ledger, the rows this connection wrote), each
                        invalidated by SQLite's ``data_version``.

The writers (:mod:`maka_ref._store.writers`) call this room; it calls none of them.

May import: ``maka_ref._events``, ``maka_ref._ledger``, ``maka_ref._store.claims``,
``maka_ref._store.engine``, ``maka_ref._store.errors``, ``maka_ref._store.partials``.
"""
