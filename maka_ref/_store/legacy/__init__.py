"""The optional legacy JSONL profile: reading and importing runs written as JSON lines (spec 30 §5).

* :mod:`.profile`     — the profile: tree and strict imports, the ``jsonl`` reader;
* :mod:`.decode`      — the line decoder (bytes → events) and the profile's errors;
* :mod:`.json_prefix` — the incomplete-prefix classifier (a torn last line);
* :mod:`.layout`      — the on-disk layout and the file fingerprint (§5.1);
* :mod:`.readers`     — the reader interface of §5.2 rule 4 and its ``sqlite`` reader;
* :mod:`.sources`     — the ``runtime_import_sources`` table;
* :mod:`.reports`     — the import results as plain values.

It sits above the store facade: an import is a client of ``RuntimeStore`` like any other.

May import: ``maka_ref._codec``, ``maka_ref._errors``, ``maka_ref._events``,
``maka_ref._store.errors``, ``maka_ref._store.partials``, ``maka_ref._store.runtime_store``.
"""
