"""The store's writers: every durable fact enters through one of them (spec 30 §2.2–§2.7).

* :mod:`.generic`           — generic appends, batch import and the terminal barrier (§2.2);
* :mod:`.tool`              — T1 ``commitToolPrepared`` and T2 ``commitToolOutcome`` (§2.3, §2.4);
* :mod:`.bundle`            — the recovery bundle writer ``commitToolRecoveryBundle`` (§2.5);
* :mod:`.outcome`           — the outcome step T2 and the bundle share (below both, so neither
                              imports the other);
* :mod:`.continuation`      — the continuation authority writer: durable claims and
                              continuation starts (§2.6);
* :mod:`.conversation_copy` — conversation-copy import (§2.2).

Each writer validates before the write lock, writes in one transaction through the insert
primitive, and leaves nothing behind when a step fails.

May import: ``maka_ref._codec``, ``maka_ref._events``, ``maka_ref._ledger``,
``maka_ref._store.claims``, ``maka_ref._store.engine``, ``maka_ref._store.errors``,
``maka_ref._store.evidence``, ``maka_ref._store.insert``, ``maka_ref._store.partials``, ``maka_ref._store.projections``,
``maka_ref._store.reads``, ``maka_ref._store.records``.
"""
