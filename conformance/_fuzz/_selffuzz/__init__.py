"""``maka-conformance fuzz --self``: fuzzing our own product for crashes, hangs and leaks (docs/fuzzing.md).

* :mod:`.core`    — the run, its budget and the failure bundles;
* :mod:`.targets` — the pure targets (``codec``, ``ledger``), the shared ``Finding`` and the ``call`` guard;
* :mod:`.io`      — the targets with files and processes (``store``, ``adapter``);
* :mod:`.cli`     — the ``maka-ref`` commands as real processes in hostile workspaces.

May import: ``conformance._fuzz._runner``, ``conformance._fuzz._search``,
``conformance.protocol``, ``maka_ref``.
"""
