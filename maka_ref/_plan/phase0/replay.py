"""Phase 0 provider-replay assembly (spec 20 §1.7).

Why a module of its own: the ResumePlan's ``replayRuntimeEvents`` is the legal provider-replay
subset of a committed prefix, and other layers (the crash lab, the conformance suite) want to
check it without building a whole plan.

The rule of spec 20 §1.7, exactly as upstream implements it (``collectPairedCallIds`` and
``buildResumeReplayRuntimeEvents``, ``packages/runtime/src/runtime-resume.ts:921-947`` and
``:1443-1467`` at f19eede03):

1. **Paired call ids.** Scan the events in order, skipping partial ones. A ``function_call``
   records ``content.id -> call`` (a later call with the same id overwrites the earlier one,
   whatever its invocation). A ``function_response`` marks its id *paired* iff a call with that
   id was already seen **and** the call's ``name`` equals the response's ``name``. Hidden
   events take part in the pairing (they are only dropped by the filter below).
2. **Filter**, keeping ledger order: drop partial events; drop ``modelVisibility: "hidden"``
   events; keep every event without ``content`` (terminal facts, permission requests,
   dispatch markers, continuation starts, other actions-only facts); keep a ``function_call``
   or ``function_response`` only if its id is paired; keep every other content kind (``text``,
   ``thinking``, ``error``) unchanged.

Call ids are *not* scoped by invocation: a provider call id reused in a later invocation
shares the pairing with the earlier one. (An earlier version of the reference scoped them by
``invocationId``; upstream does not, the spec's text does not, and nothing unsafe follows: a
reused id whose later call is unanswered leaves that call an unsettled operation, which
blocks the plan. ``docs/spec-choices.md``, "Phase 0 pairing".)

Phase 0 performs no suffix trimming (an interrupted assistant text after the last user message
is kept); trimming belongs to the v2 segment replay (§1.10).

Outside the well-typed domain (``docs/choices/plan.md``): a value that is not a JSON object is
dropped; ``content`` that is present and not an object is dropped. An absent ``content.id``
or ``content.name`` reads as "none" (``None``), as upstream's ``undefined`` does.

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



def phase0_replay_events(events: Iterable[Any]) -> tuple[Any, ...]:
    """The Phase 0 ``replayRuntimeEvents`` of ``events`` (spec 20 §1.7), as a tuple."""
    scanner = ReplayScanner(collect_plan_facts=False)
    scanner.feed(events)
    return scanner.result()[0]


class ReplayScanner:
    """The replay pass in pieces, shared with the ResumePlan builder (internal).

    ``feed`` the ledger in order (in one piece or several consecutive ones), then ``result``
    returns ``(replay, visible_calls, responses)``:

    * ``replay`` — the §1.7 replay events;
    * ``visible_calls`` — only with ``collect_plan_facts``: upstream's ``callsByEventId``
      (``runtime-resume.ts:851``): for each event id (``None`` for an event without one), the
      *last* ``function_call`` event carrying it that is not hidden — partial or not — as
      ``(event, content)``. A decision's ``callRuntimeEventId`` is looked up here;
    * ``responses`` — only with ``collect_plan_facts``: the non-partial, non-hidden
      ``function_response`` events, in ledger order (spec 20 §1.3 item 6), as ``(event,
      content)``.

    The pass builds the pairing and keeps the candidates; ``result`` then drops the call and
    response candidates whose id never became paired. A response paired when it is read is
    final (pairs are only ever added). The undecided candidates live in parallel lists rather
    than a list of tuples (fewer objects for the cyclic garbage collector to track).
    """

    __slots__ = ("_call_names", "_collect", "_kept", "_paired", "_pairing_ids", "_positions", "_responses",
                 "_visible_calls")

    def __init__(self, collect_plan_facts: bool) -> None:
        self._collect = collect_plan_facts
        self._call_names: dict[Any, Any] = {}  # provider call id -> name of the latest call (§1.7 step 1)
        self._paired: set[Any] = set()
        self._kept: list[Any] = []
        # Undecided candidates: position in ``_kept`` and pairing id.
        self._positions: list[int] = []
        self._pairing_ids: list[Any] = []
        self._visible_calls: dict[Any, tuple[dict[str, Any], dict[str, Any]]] = {}
        self._responses: list[tuple[dict[str, Any], dict[str, Any]]] = []

    def feed(self, events: Iterable[Any]) -> None:
        get = _get
        call_names = self._call_names
        paired = self._paired
        kept = self._kept
        keep = kept.append
        positions = self._positions
        pairing_ids = self._pairing_ids
        collect = self._collect
        visible_calls = self._visible_calls
        responses = self._responses

        for event in events:
            if not isinstance(event, dict):
                continue
            # Hot loop: the partial test (``partial === true``) and the hidden test
            # (``modelVisibility === "hidden"``; absent or any other value is visible) inline.
            partial = get(event, "partial") is True
            visibility = get(event, "modelVisibility")
            hidden = visibility is not None and type(visibility) is str and visibility == "hidden"
            content = get(event, "content")
            if content is None:
                if not partial and not hidden:
                    keep(event)
                continue
            if not isinstance(content, dict):
                continue
            kind = get(content, "kind")
            if type(kind) is not str or (kind != _FUNCTION_CALL and kind != _FUNCTION_RESPONSE):
                if not partial and not hidden:
                    keep(event)
                continue
            call_id = get(content, "id")
            if kind == _FUNCTION_CALL:
                if collect and not hidden:
                    event_id = get(event, "id")
                    if _hashable(event_id):
                        visible_calls[event_id] = (event, content)  # last wins, partial or not
                if partial:
                    continue
                if _hashable(call_id):
                    call_names[call_id] = get(content, "name")
                if not hidden:
                    positions.append(len(kept))
                    pairing_ids.append(call_id)
                    keep(event)
                continue
            # function_response
            if partial:
                continue
            if collect and not hidden:
                responses.append((event, content))
            if _hashable(call_id) and call_id in call_names and _same_name(call_names[call_id], get(content, "name")):
                paired.add(call_id)
                if not hidden:
                    keep(event)  # paired now, so paired at the end
                continue
            if not hidden:
                positions.append(len(kept))
                pairing_ids.append(call_id)
                keep(event)

    def result(self) -> tuple[tuple[Any, ...], dict[Any, tuple[dict[str, Any], dict[str, Any]]],
                              list[tuple[dict[str, Any], dict[str, Any]]]]:
        paired = self._paired
        unpaired = {position for position, call_id in zip(self._positions, self._pairing_ids)
                    if not _hashable(call_id) or call_id not in paired}
        kept = self._kept
        if not unpaired:
            return tuple(kept), self._visible_calls, self._responses
        replay: list[Any] = []
        start = 0
        for position in sorted(unpaired):
            replay += kept[start:position]
            start = position + 1
        replay += kept[start:]
        return tuple(replay), self._visible_calls, self._responses


def _same_name(call_name: Any, response_name: Any) -> bool:
    """``call.name === response.name`` on well-typed names (strings or absent)."""
    return type(call_name) is type(response_name) and call_name == response_name and (
        call_name is None or type(call_name) is str)


def _hashable(value: Any) -> bool:
    return value is None or type(value) in (str, int, float, bool)
