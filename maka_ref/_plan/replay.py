"""Phase 0 provider-replay assembly (spec 20 §1.7).

Why a module of its own: the ResumePlan's ``replayRuntimeEvents`` is the legal provider-replay
subset of a committed prefix, and other layers (the crash lab, the conformance suite) want to
check it without building a whole plan.

The rule of spec 20 §1.7, with one scoping decision where it is silent:

1. **Paired call ids.** Scan the events in order, skipping partial ones. A ``function_call``
   records ``content.id -> call`` (a later call with the same id overwrites the earlier one).
   A ``function_response`` marks its id *paired* iff a call with that id was already seen
   **and** the call's ``name`` equals the response's ``name``. Hidden events take part in the
   pairing (they are only dropped by the filter below).

   Call ids are scoped by ``invocationId`` (provider call ids are unique only within one
   invocation; the resolver keys calls by ``(invocationId, call id)``, spec 20 §0.2). Without
   the scope, a call id reused in a later invocation would let an *unanswered* call ride on
   an earlier invocation's pair, breaking the §1.7 guarantee that "an unresolved call never
   appears in replay". For ledgers whose call ids are unique this is exactly the spec's rule.
2. **Filter**, keeping ledger order: drop partial events; drop ``modelVisibility: "hidden"``
   events; keep every event without ``content`` (terminal facts, permission requests,
   dispatch markers, continuation starts, other actions-only facts); keep a ``function_call``
   or ``function_response`` only if its id is paired; keep every other content kind (``text``,
   ``thinking``, ``error``) unchanged.

Phase 0 performs no suffix trimming (an interrupted assistant text after the last user message
is kept); trimming belongs to the v2 segment replay (§1.10).

Where the spec is silent (non-RuntimeEvent input; see ``docs/choices/plan.md``):

* a value that is not a JSON object (not a ``dict``) is dropped: it is neither a canonical
  fact nor provider input;
* ``content`` that is present but ``None`` counts as "no content" (kept); ``content`` that is
  present and not an object is dropped;
* a call or response whose ``id`` is not a string is never paired (so it is dropped), and a
  pair needs both names to be strings and equal;
* an ``invocationId`` that is not a string counts as one shared "no invocation" scope.

Pure: no I/O, never raises on odd events, never mutates or copies them (the result holds the
input objects themselves).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

__all__ = ["phase0_replay_events"]

_FUNCTION_CALL = "function_call"
_FUNCTION_RESPONSE = "function_response"

_get = dict.get  # the base-class read: a dict subclass cannot make it raise


def _is_hidden(event: dict[str, Any]) -> bool:
    """``modelVisibility === "hidden"`` (absent or any other value means visible)."""
    visibility = _get(event, "modelVisibility")
    return type(visibility) is str and visibility == "hidden"


def phase0_replay_events(events: Iterable[Any]) -> tuple[Any, ...]:
    """The Phase 0 ``replayRuntimeEvents`` of ``events`` (spec 20 §1.7), as a tuple."""
    return _replay_scan(events, None)[0]


def _replay_scan(
    events: Iterable[Any], wanted_ids: set[str] | frozenset[str] | None
) -> tuple[tuple[Any, ...], dict[str, dict[str, Any]], list[dict[str, Any]]]:
    """One pass shared with the ResumePlan builder (so a plan reads the ledger only once).

    Returns ``(replay, found, responses)``:

    * ``replay`` — the §1.7 replay events;
    * ``found`` — for each id in ``wanted_ids``, the first non-partial ``function_call`` event
      carrying it. The resolver only names call events the scanner accepted, and the scanner
      accepts only the first event of an id and never a partial call, so this is the event the
      resolver meant; any other naming is treated by the planner as "not a visible call";
    * ``responses`` — the non-partial, non-hidden ``function_response`` events, in ledger
      order (spec 20 §1.3 item 6).

    One pass builds the pairing and the candidates; a final pass over the candidates resolves
    calls and responses whose pairing depends on later events. (Candidates live in two parallel
    lists rather than a list of pairs: allocating a million small tuples would wake the cyclic
    garbage collector over the whole ledger.)
    """
    get = _get
    # invocation -> provider call id -> name of the latest call seen (§1.7 step 1)
    call_names: dict[str | None, dict[str, Any]] = {}
    # invocation -> paired provider call ids
    paired: dict[str | None, set[str]] = {}
    kept: list[Any] = []
    keys: list[str | None] = []  # pairing id of each kept candidate; None = keep unconditionally
    scopes: list[str | None] = []  # invocation of each kept candidate (meaningful with a key)
    keep = kept.append
    key = keys.append
    scope = scopes.append
    found: dict[str, dict[str, Any]] = {}
    responses: list[dict[str, Any]] = []

    for event in events:
        if not isinstance(event, dict):
            continue
        # Hot loop: the partial test (``partial === true``, exactly
        # ``_events.predicates.is_partial_event``) and ``_is_hidden`` are inlined.
        if get(event, "partial") is True:
            continue
        visibility = get(event, "modelVisibility")
        hidden = type(visibility) is str and visibility == "hidden"
        content = get(event, "content")
        if content is None:
            if not hidden:
                keep(event)
                key(None)
                scope(None)
            continue
        if not isinstance(content, dict):
            continue
        kind = get(content, "kind")
        if type(kind) is str and (kind == _FUNCTION_CALL or kind == _FUNCTION_RESPONSE):
            if kind == _FUNCTION_RESPONSE:
                if not hidden:
                    responses.append(event)
            elif wanted_ids:
                event_id = get(event, "id")
                if type(event_id) is str and event_id in wanted_ids and event_id not in found:
                    found[event_id] = event
            call_id = get(content, "id")
            if type(call_id) is not str:
                continue
            invocation = get(event, "invocationId")
            if type(invocation) is not str:
                invocation = None
            if kind == _FUNCTION_CALL:
                names = call_names.get(invocation)
                if names is None:
                    names = call_names[invocation] = {}
                names[call_id] = get(content, "name")
            else:
                names = call_names.get(invocation)
                if names is not None and call_id in names:
                    name = get(content, "name")
                    call_name = names[call_id]
                    if type(name) is str and type(call_name) is str and name == call_name:
                        ids = paired.get(invocation)
                        if ids is None:
                            ids = paired[invocation] = set()
                        ids.add(call_id)
            if not hidden:
                keep(event)
                key(call_id)
                scope(invocation)
            continue
        if not hidden:
            keep(event)
            key(None)
            scope(None)

    no_ids: frozenset[str] = frozenset()
    replay = tuple(
        [event for event, k, inv in zip(kept, keys, scopes) if k is None or k in paired.get(inv, no_ids)]
    )
    return replay, found, responses
