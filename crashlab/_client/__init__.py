"""Private implementation of the wire-protocol client; the public names live in :mod:`crashlab`.

Layout (each module says why it exists): ``_process`` (POSIX: spawn, group kill, tree
scans; its helpers ``_process_kill`` and ``_process_proc``), ``_lines`` (stdout reader thread with the 16 MiB cap), ``_stderr`` (64 KiB tail),
``_messages`` (envelope and handshake rules), ``_results`` (value objects), ``_errors``
(:class:`ProtocolFailure`), ``_client`` (the session state machine), ``_zygote`` and
``_zygote_server`` (pre-forked children of a ``python -m`` command: the client handle and the
fork server, with ``_zygote_preload``, ``_zygote_status`` and ``_zygote_child``).

May import: nothing of ours.
"""
