"""The ``maka-ref`` command line: argument parsing, exit codes and printing over the pure core.

The only I/O in the core package lives here (reading ledger files, writing stdout/stderr).

May import: ``maka_ref._boundary``, ``maka_ref._checkpoint``, ``maka_ref._codec``,
``maka_ref._continuation``, ``maka_ref._errors``,
``maka_ref._events``, ``maka_ref._inspect``, ``maka_ref._ledger``, ``maka_ref._plan.phase0``,
``maka_ref._repair``, ``maka_ref._runtime``, ``maka_ref._store.engine``,
``maka_ref._store.errors``.
"""
