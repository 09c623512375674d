"""The live tool-loop failpoints P0–P11 (spec 20 §2) and where the loop reaches them.

Why a module: the P-points are armed and announced exactly like the store's hooks
(``MAKA_REF_FAILPOINT=P3`` → one stderr line ``MAKA_FAILPOINT P3``, then the thread blocks
until the process is killed; ``:raise`` and ``#n`` work too), because they *are* store hooks:
the loop calls :func:`maka_ref._store.engine.failpoints.failpoint` with the P id at each boundary.
This module only names them and records which ones the loop reaches today.

Placement (full table with the committed prefixes a kill leaves: ``docs/failpoints.md``,
section "Live tool-loop failpoints P0–P11"):

====  ==========================================  =============================================
id    T1 protocol (``t1_after_preflight_v1``)     legacy protocol
====  ==========================================  =============================================
P0    preflight passed, before T1                 preflight passed, before the call append
P1    right after T1 committed (call, dispatch    right after the generic call append
      and the prepared journal commit together)
P2    right before the implementation starts      same (no journal exists in legacy)
      (before the effect-log line)
P3    inside the implementation: effect-log line  same
      durable and the effect partially done
P4    implementation returned, before T2          implementation returned, before the response
                                                  append
P5    right after T2 committed (response and      right after the generic response append
      outcome journal commit together)
P6    before the result is handed to the          same
      provider (appended to its history)
P7    result handed on, before the next           same
      provider step
P8    before the terminal RuntimeEvent commit     same
P9    terminal event committed, before the        same
      terminal run-header update
====  ==========================================  =============================================

P10 (recovery-decision commit) and P11 (continuation-run creation) are not in the tool loop:
they sit in startup repair and Phase 1 continuation (:data:`NON_LOOP_FAILPOINTS`).

The five continuation crash points of spec 20 §4.9 / spec 30 §6.4
(:data:`CONTINUATION_FAILPOINTS`, in commit order) are after-commit points of the Phase 1
executor (:mod:`maka_ref._continuation.execute`). They are armed with the spec's own variable
``MAKA_RUNTIME_CONTINUATION_FAILPOINT=<name>`` (:mod:`maka_ref._continuation.crashpoints`):
the process writes ``READY:<name>`` to stdout and ``MAKA_FAILPOINT <name>`` to stderr, then
blocks until killed. Each site also calls the store hook ``failpoint(<name>)``, and the store's
``FAILPOINT_NAMES`` lists them, so ``MAKA_REF_FAILPOINT=<name>`` arms them too.
"""

from __future__ import annotations

from typing import Final

__all__ = ["CONTINUATION_FAILPOINTS", "LIVE_FAILPOINTS", "NON_LOOP_FAILPOINTS"]

#: Reached by the live loop of :func:`maka_ref._runtime.run_turn.run_turn`, in loop order.
LIVE_FAILPOINTS: Final = ("P0", "P1", "P2", "P3", "P4", "P5", "P6", "P7", "P8", "P9")
#: Named by spec 20 §2, reached outside the tool loop.
NON_LOOP_FAILPOINTS: Final = {
    "P10": "recovery-decision commit: startup repair, between the repair's terminal event and the "
    "header update (maka_ref._repair.terminal, maka_ref._repair.claim_saga)",
    "P11": "continuation-run creation: after the target run header is created, before the "
    "continuation-start commit (maka_ref._continuation.execute)",
}

#: Spec 20 §4.9 / spec 30 §6.4, in commit order: name → where the executor reaches it.
CONTINUATION_FAILPOINTS: Final = {
    "after_continuation_claim_committed": "the durable claim was acquired; before the header scan, "
    "the activation barrier and the target run header",
    "after_run_created": "the target header (`created`, exactly as claimed) and `run_created` are "
    "committed; before the continuation-start (same place as P11)",
    "after_continuation_start_committed": "the live `continuation_start_v2` (event_seq 1) is committed; "
    "before the header goes `running` and before the provider is called",
    "after_terminal_event_committed": "the target's terminal RuntimeEvent is durable; before the "
    "terminal header (same place as the continuation's P9)",
    "after_terminal_header_committed": "the terminal header and the `run_completed`/`run_failed` "
    "operational event are committed; before the executor returns",
}
