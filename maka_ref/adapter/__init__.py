"""The reference adapter: ``maka_ref`` behind the conformance wire protocol (``docs/protocol.md``).

``python -m maka_ref.adapter`` reads one JSON request per line on stdin and answers one JSON
response per line on stdout, claiming every capability of protocol version 1 and listing its
failpoints in ``hello``. It is how the harness certifies the reference itself, and a worked
example for implementers in other languages.

Modules (each small, private):

* :mod:`._server`      the stdin/stdout loop, framing, the private protocol stdout;
* :mod:`._wire`        line decoding (double semantics) and lossless response encoding;
* :mod:`._dispatch`    the operation table, ``hello``, errors as values;
* :mod:`._ledger_ops`  ``ledger.*`` = the golden-vector operations (one mapping, also used by
  ``tests/conformance/vectors/test_golden_vectors.py``);
* :mod:`._store_ops`   ``store.*`` over ``RuntimeStore`` / ``AgentRunStore`` / ``inspect``;
* :mod:`._runtime_ops` ``runtime.*`` over ``run_turn`` / ``repair_workspace`` / ``resume_session``;
* :mod:`._reconcile_ops` the pure ``reconcile.*`` operations of ``runtime.reconcile`` (the
  Phase 3 evidence codec, binding and observation table, spec-phase3 §2, §4.4–§4.5);
* :mod:`._checkpoint_ops` ``checkpoint.*`` over the Git carrier and ``maka_ref._boundary``'s
  checkpoint-mode run and gated resume (spec-phase4 §10);
* :mod:`._faults`      ``faults.arm`` and the failpoint announcement;
* :mod:`._params`, :mod:`._errors` typed params and protocol error values.

Nothing here imports ``conformance`` or ``crashlab``.

May import: ``maka_ref._boundary``, ``maka_ref._checkpoint``, ``maka_ref._codec``, ``maka_ref._continuation``, ``maka_ref._durable``, ``maka_ref._events``,
``maka_ref._inspect``,
``maka_ref._ledger``, ``maka_ref._plan.phase0``, ``maka_ref._plan.prefix``, ``maka_ref._reconcile``,
``maka_ref._repair``, ``maka_ref._runtime``, ``maka_ref._store``.
"""

from maka_ref.adapter._dispatch import CAPABILITIES, PROTOCOL_VERSION
from maka_ref.adapter._ledger_ops import VECTOR_RUNNERS, run_vector_operation

__all__ = ["CAPABILITIES", "PROTOCOL_VERSION", "VECTOR_RUNNERS", "run_vector_operation"]
