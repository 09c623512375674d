"""Private implementation of the wire-protocol client; the public names live in :mod:`crashlab`.

Layout (each module says why it exists): ``_process`` (POSIX: spawn, group kill, ``/proc``
tree scans), ``_cgroup`` (one cgroup v2 per session where the harness may create one),
``_lifeline`` (children die with the harness), ``_lines`` (stdout reader thread with the
16 MiB cap), ``_stderr`` (64 KiB tail), ``_messages`` (envelope and handshake rules),
``_results`` (value objects), ``_errors`` (:class:`ProtocolFailure`), ``_client`` (the session
state machine) and the package ``_zygote`` (pre-forked children of a ``python -m`` command:
the client handle, the fork server, its preload, status socket and child helpers).

May import: nothing of ours.
"""
