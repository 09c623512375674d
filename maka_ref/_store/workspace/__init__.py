"""The workspace: its identity and its baseline authority (spec 20 §6; spec 30 §1.2, §2.7).

* :mod:`.identity`  — ``resolve_workspace_identity``: the public resolvers;
* :mod:`.marker`    — the ``.maka-workspace.json`` marker: error vocabulary, format and the
                      crash- and race-safe file steps;
* :mod:`.git`       — the Git exclude rule for the marker;
* :mod:`.directory` — the ``--workspace`` directory check every command shares;
* :mod:`.facts`     — the baseline authority facts: identity, event shapes, envelope, lanes;
* :mod:`.scan`      — the canonical scan of the authority stream;
* :mod:`.authority` — the baseline authority writer and its storage-root binding;
* :mod:`.boundary`  — the Phase 4 workspace boundary writer (spec-phase4 §1.3, §4).

May import: ``maka_ref._codec``, ``maka_ref._durable``, ``maka_ref._errors``,
``maka_ref._events``, ``maka_ref._store.engine``, ``maka_ref._store.errors``,
``maka_ref._store.insert``, ``maka_ref._store.reads``, ``maka_ref._store.runtime_store``,
``maka_ref._store.writers``.
"""
