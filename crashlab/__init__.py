"""The crash lab: real SIGKILLs at named crash points, then a fresh process checks the files.

What it will hold: the wire-protocol client that spawns an implementation in its own process
group, talks to it with a timeout on every request and reaps its whole process tree; the
machine-readable catalogue of crash points (P0–P11, continuation points, storage crash
modes, recovery-bundle steps); trials in prefix and live mode; the ``torn``, ``pause`` and
``race`` fault modes; and the per-platform capability matrix.

Dependencies: ``crashlab`` uses ``maka_ref`` (the oracle and the reference implementation)
and is used by ``conformance``. It never imports ``conformance``.

Status: the wire-protocol client is here (``docs/crashlab-client.md``):
:class:`ProtocolClient` starts an implementation, shakes hands and sends requests with a
deadline each; every misbehaviour becomes a :class:`ProtocolFailure` whose ``verdict`` is one
of protocol §7, raised only after the whole process tree is killed and reaped. The misbehaving
adapters of :mod:`crashlab.testing.bad_adapter` exercise every verdict. The crash-point
catalogue and trials come next; the Phase 0 failpoint catalogue they build on already exists
as :data:`maka_ref.FAILPOINTS`.
"""

from crashlab._client._client import ProtocolClient, Validator
from crashlab._client._errors import VERDICTS, ProtocolFailure
from crashlab._client._lines import MAX_LINE_BYTES
from crashlab._client._process import SESSION_ENV
from crashlab._client._results import CloseReport, Handshake, KillProof, Reply
from crashlab._client._stderr import TAIL_BYTES

__all__ = [
    "MAX_LINE_BYTES",
    "SESSION_ENV",
    "TAIL_BYTES",
    "VERDICTS",
    "CloseReport",
    "Handshake",
    "KillProof",
    "ProtocolClient",
    "ProtocolFailure",
    "Reply",
    "Validator",
]
