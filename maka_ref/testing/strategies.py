"""Hypothesis strategies for realistic, corrupt, torn and garbage ledgers.

Why this module ships in the package: the property suites of this repository, the crash lab
and third-party runtimes all need the same thing, namely many *realistic* RuntimeEvent
ledgers together with what is true about them *by construction*, so that a property can
compare an implementation's answer with an oracle that does not share its code.

Importing this module requires ``hypothesis`` (it is imported by tests only; the pure core
never imports it, and :mod:`maka_ref.testing` does not import it either).

Strategies (all return plain ``dict`` events, freshly built for every example):

``ledgers(protocol=("t1", "legacy"), ...)``
    Healthy ledgers of one run, as a :class:`Ledger`: the initial user event (carrying the
    ``t1_after_preflight_v1`` marker under the new protocol, spec 10 §3), assistant
    text/thinking, partial streaming chunks, token-usage and error events, tool calls with
    provider call ids unique per invocation and realistic arguments (nested objects,
    unicode incl. astral characters, numbers), T1 dispatches with the correct
    ``canonicalArgsHash`` and a recovery mode, T2 responses bound with refs (some of them
    errors), unbound pre-T1 call + synthetic response pairs (no dispatch), an optional
    terminal event. The ledger is any prefix of a full run (a crash cut). After a crash the
    recovery epilogue may append, for dispatched operations with mode ``reconcile`` and no
    response, an atomic recovery bundle (reconcile + outcome + completed decision, or
    reconcile + parked decision, with the exact evidence lists of spec 10 §5.2), and a
    repair terminal event. :class:`Ledger.operations` is the ground truth per operation.

``corrupt_ledgers()``
    A healthy ledger with one named corruption applied (:data:`CORRUPTIONS`), as a
    :class:`CorruptLedger`. Only corruptions for which the spec guarantees ``hasCorruption``
    are produced, and each carries a *witness* (an issue or a decision reason the spec says
    must appear).

``edge_ledgers(ill_typed=False)``
    Ledgers of the shapes real stores hold beyond the spec's catalogue, as an
    :class:`EdgeLedger`: one to three invocations whose identities are drawn from tiny pools
    (so call ids, operation ids and tool names collide, and ``""`` is a tool name), then up to
    four *edge edits* of :data:`EDGE_FAMILIES` (call-id reuse, a response or dispatch in
    another invocation or run, drift of each identity field, duplicate operations with other
    names or hashes, missing keys, hidden calls, late markers, ...). No ground truth: the
    point is to compare implementations on them (the equivalence clauses, the fuzzer). Its
    events are well typed (every field the spec names is absent or of its JSON type), so
    answers must agree exactly; with ``ill_typed=True`` the edits may leave that domain
    (wrong JSON types, a recovery fact without payload), where any protocol-valid answer is
    acceptable: use those for never-crash checks only.

``torn_jsonl()``
    JSON-lines bytes of a ledger whose last line is cut at an arbitrary byte offset.

``json_values()`` / ``garbage_event_lists()``
    Arbitrary JSON (astral characters, lone surrogates, big integers, floats, ``-0.0``) and
    lists mixing decoded events, random dicts, non-dicts and wrong-typed fields, for
    never-raise properties.

Building blocks: ``texts()``, ``tool_calls()``, ``tool_results()``, ``runtime_events()``,
and the plain helpers :func:`strip_marker`, :func:`add_marker`, :func:`append_response`.

Everything here follows spec 10 §1.6 (producer conventions), §4.1 (lanes), §5.1–§5.2
(recovery facts and bundles); ``docs/testing-helpers.md`` shows how to use it.
"""

from __future__ import annotations

from maka_ref.testing._strategies.constants import MAX_SAFE_INTEGER, RECOVERY_MODES, T1, Protocol
from maka_ref.testing._strategies.corruptions import CORRUPTIONS, corrupt_ledgers
from maka_ref.testing._strategies.edges import EDGE_FAMILIES, EdgeLedger, edge_ledgers
from maka_ref.testing._strategies.garbage import garbage_event_lists
from maka_ref.testing._strategies.jsonl import torn_jsonl
from maka_ref.testing._strategies.ledger_model import CorruptLedger, Ledger, OperationTruth, TornJsonl
from maka_ref.testing._strategies.ledgers import ledgers, runtime_events
from maka_ref.testing._strategies.transforms import add_marker, append_response, strip_marker
from maka_ref.testing._strategies.values import json_values, texts, tool_calls, tool_results

__all__ = [
    "CORRUPTIONS",
    "CorruptLedger",
    "EDGE_FAMILIES",
    "EdgeLedger",
    "Ledger",
    "MAX_SAFE_INTEGER",
    "OperationTruth",
    "Protocol",
    "RECOVERY_MODES",
    "T1",
    "TornJsonl",
    "add_marker",
    "append_response",
    "corrupt_ledgers",
    "edge_ledgers",
    "garbage_event_lists",
    "json_values",
    "ledgers",
    "runtime_events",
    "strip_marker",
    "texts",
    "tool_calls",
    "tool_results",
    "torn_jsonl",
]
