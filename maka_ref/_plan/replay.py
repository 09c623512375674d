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

#: ``(event, hidden, content.name, content.args)`` of a call; ``(event, content.id,
#: content.name)`` of a response (see ``ReplayScanner``).
_FirstCall = tuple[dict[str, Any], bool, Any, Any]
_Response = tuple[dict[str, Any], Any, Any]


def phase0_replay_events(events: Iterable[Any]) -> tuple[Any, ...]:
    """The Phase 0 ``replayRuntimeEvents`` of ``events`` (spec 20 §1.7), as a tuple."""
    scanner = ReplayScanner(collect_plan_facts=False)
    scanner.feed(events)
    return scanner.result()[0]


class ReplayScanner:
    """The replay pass in pieces, shared with the ResumePlan builder (internal).

    ``feed`` the ledger in order (in one piece or several consecutive ones), then ``result``
    returns ``(replay, first_calls, responses)``:

    * ``replay`` — the §1.7 replay events;
    * ``first_calls`` — only with ``collect_plan_facts``: for each event id, the first
      non-partial ``function_call`` event carrying it, as ``(event, hidden, content.name,
      content.args)``. The resolver only names call events the scanner accepted, and the
      scanner accepts only the first event of an id and never a partial call, so this is the
      event a decision's ``callRuntimeEventId`` means; any other naming is treated by the
      planner as "not a visible call";
    * ``responses`` — only with ``collect_plan_facts``: the non-partial, non-hidden
      ``function_response`` events, in ledger order (spec 20 §1.3 item 6), as ``(event,
      content.id, content.name)``.

    The fields the planner needs later are read here, while the event is in the CPU cache
    (``content.get``; absent reads as None), so the planner does not fetch the events again.

    The pass builds the pairing and keeps the candidates; ``result`` then drops the call and
    response candidates whose pairing was still unknown when they were read and never came.
    A response paired when it is read is final (pairs are only ever added). The undecided
    candidates live in parallel lists rather than a list of tuples (fewer objects for the
    cyclic garbage collector to track).
    """

    __slots__ = (
        "_call_names",
        "_collect",
        "_first_calls",
        "_kept",
        "_paired",
        "_pairing_ids",
        "_positions",
        "_responses",
        "_scopes",
    )

    def __init__(self, collect_plan_facts: bool) -> None:
        self._collect = collect_plan_facts
        # invocation -> provider call id -> name of the latest call seen (§1.7 step 1)
        self._call_names: dict[str | None, dict[str, Any]] = {}
        # invocation -> paired provider call ids
        self._paired: dict[str | None, set[str]] = {}
        self._kept: list[Any] = []
        # Undecided candidates: position in ``_kept``, pairing id and invocation.
        self._positions: list[int] = []
        self._pairing_ids: list[str] = []
        self._scopes: list[str | None] = []
        self._first_calls: dict[str, _FirstCall] = {}
        self._responses: list[_Response] = []

    def feed(self, events: Iterable[Any]) -> None:
        get = _get
        call_names = self._call_names
        paired = self._paired
        kept = self._kept
        keep = kept.append
        positions = self._positions
        pairing_ids = self._pairing_ids
        scopes = self._scopes
        collect = self._collect
        first_calls = self._first_calls
        responses = self._responses

        for event in events:
            if not isinstance(event, dict):
                continue
            # Hot loop: the partial test (``partial === true``, exactly
            # ``_events.predicates.is_partial_event``) and the hidden test
            # (``modelVisibility === "hidden"``; absent or any other value is visible) inline.
            if get(event, "partial") is True:
                continue
            visibility = get(event, "modelVisibility")
            hidden = visibility is not None and type(visibility) is str and visibility == "hidden"
            content = get(event, "content")
            if content is None:
                if not hidden:
                    keep(event)
                continue
            if not isinstance(content, dict):
                continue
            kind = get(content, "kind")
            if type(kind) is str and (kind == _FUNCTION_CALL or kind == _FUNCTION_RESPONSE):
                call_id = get(content, "id")
                name = get(content, "name")
                if collect:
                    if kind == _FUNCTION_RESPONSE:
                        if not hidden:
                            responses.append((event, call_id, name))
                    else:
                        event_id = get(event, "id")
                        if type(event_id) is str and event_id not in first_calls:
                            first_calls[event_id] = (event, hidden, name, get(content, "args"))
                if type(call_id) is not str:
                    continue
                invocation = get(event, "invocationId")
                if type(invocation) is not str:
                    invocation = None
                names = call_names.get(invocation)
                if kind == _FUNCTION_CALL:
                    if names is None:
                        names = call_names[invocation] = {}
                    names[call_id] = name
                elif names is not None and call_id in names:
                    call_name = names[call_id]
                    if type(name) is str and type(call_name) is str and name == call_name:
                        ids = paired.get(invocation)
                        if ids is None:
                            ids = paired[invocation] = set()
                        ids.add(call_id)
                        if not hidden:
                            keep(event)  # paired now, so paired at the end
                        continue
                if not hidden:
                    positions.append(len(kept))
                    pairing_ids.append(call_id)
                    scopes.append(invocation)
                    keep(event)
                continue
            if not hidden:
                keep(event)

    def result(self) -> tuple[tuple[Any, ...], dict[str, _FirstCall], list[_Response]]:
        paired = self._paired
        no_ids: frozenset[str] = frozenset()
        unpaired = {
            position
            for position, call_id, invocation in zip(self._positions, self._pairing_ids, self._scopes)
            if call_id not in paired.get(invocation, no_ids)
        }
        kept = self._kept
        if not unpaired:
            return tuple(kept), self._first_calls, self._responses
        replay: list[Any] = []
        start = 0
        for position in sorted(unpaired):
            replay += kept[start:position]
            start = position + 1
        replay += kept[start:]
        return tuple(replay), self._first_calls, self._responses
