"""The crash lab: real SIGKILLs at named crash points, then a fresh process checks the files.

What it holds: the wire-protocol client that spawns an implementation in its own process
group (pre-forked from a zygote for ``python -m`` implementations), talks to it with a timeout
on every request and reaps its whole process tree; the machine-readable catalogue of crash
points (P0–P11, continuation points, storage crash modes, recovery-bundle steps); trials in
prefix and live mode; the ``kill``, ``torn``, ``pause`` and ``race`` fault modes; sweeps,
failure bundles and replay. Layering: ``_client`` (processes and the protocol) below ``_lab``
(catalogue, drivers, oracles, faults, engine, sweep, CLI).

Dependencies: ``crashlab`` uses ``maka_ref`` (the oracle and the reference implementation)
and is used by ``conformance``. It never imports ``conformance``.

The crash lab (``docs/crashlab.md``): :func:`run_trial` runs one :class:`TrialSpec` (a
catalogue point, a mode, a fault, a seed) against an implementation and returns a
:class:`TrialResult`; :func:`run_sweep` runs many on a thread pool; :func:`catalogue` lists
the crash points of ``crashlab/catalogue.json``; ``crashlab sweep`` / ``crashlab replay`` are
the command line.

The wire-protocol client is here (``docs/crashlab-client.md``):
:class:`ProtocolClient` starts an implementation, shakes hands and sends requests with a
deadline each; every misbehaviour becomes a :class:`ProtocolFailure` whose ``verdict`` is one
of protocol §7, raised only after the whole process tree is killed and reaped. The misbehaving
adapters of :mod:`crashlab.testing.bad_adapter` exercise every verdict. The Phase 0 failpoint catalogue the crash lab builds on is
:data:`maka_ref.FAILPOINTS`.

May import: ``maka_ref``.
"""

from crashlab._client._client import ProtocolClient, Validator
from crashlab._client._errors import VERDICTS, ProtocolFailure
from crashlab._client._lines import MAX_LINE_BYTES
from crashlab._client._process import SESSION_ENV
from crashlab._client._results import CloseReport, Handshake, KillProof, Reply
from crashlab._client._stderr import TAIL_BYTES
from crashlab._lab.bundles import load_bundle, write_bundle
from crashlab._lab.catalogue import CrashPoint, catalogue, crash_point, default_specs, variant_of
from crashlab._lab.drive import crash_script
from crashlab._lab.effects import FIRST, MORE, read_effects, starts_by_operation
from crashlab._lab.engine import reference_command, run_trial
from crashlab._lab.model import FAULTS, MODES, OUTCOMES, Check, TrialResult, TrialSpec
from crashlab._lab.oracles import label, labels, operation_id_of
from crashlab._lab.sweep import SweepReport, run_sweep

__all__ = [
    "FAULTS",
    "FIRST",
    "MORE",
    "MODES",
    "OUTCOMES",
    "Check",
    "CrashPoint",
    "SweepReport",
    "TrialResult",
    "TrialSpec",
    "catalogue",
    "crash_point",
    "crash_script",
    "default_specs",
    "label",
    "labels",
    "load_bundle",
    "operation_id_of",
    "read_effects",
    "reference_command",
    "run_sweep",
    "run_trial",
    "starts_by_operation",
    "variant_of",
    "write_bundle",
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
