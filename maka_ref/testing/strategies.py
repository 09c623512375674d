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

import copy
import functools
import json
from dataclasses import dataclass, replace
from typing import Any, Callable, Iterable, Literal, Sequence

from hypothesis import strategies as st

from maka_ref._codec.argshash import canonical_args_hash

__all__ = [
    "CORRUPTIONS",
    "CorruptLedger",
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

T1 = "t1_after_preflight_v1"
MAX_SAFE_INTEGER = 2**53
RECOVERY_MODES = ("replay_safe", "idempotent", "reconcile", "reattach", "outcome_unknown", "never_auto_retry")
Protocol = Literal["t1", "legacy"]

_PARK_REASON = {
    "matches_prior_state": "reconcile_matches_prior_state",
    "diverged": "reconcile_diverged",
    "unreadable": "reconcile_unreadable",
}


# =======================================================================================
# Ground truth value objects
# =======================================================================================


@dataclass(frozen=True)
class OperationTruth:
    """What is true about one tool operation of a healthy ledger, by construction.

    An operation is keyed by ``(invocation_id, tool_call_id)`` (spec 10 §4.3). Every field
    describes the events *present in the ledger* (after the crash cut and the epilogue).
    """

    invocation_id: str
    tool_call_id: str
    tool_name: str
    args: Any
    call_event_id: str
    #: The T1 operation id, only when the ledger holds the dispatch.
    operation_id: str | None = None
    dispatch_event_id: str | None = None
    recovery_mode: str | None = None
    #: The response of the normal path (T2 bound, or unbound pre-T1/legacy), if present.
    response_event_id: str | None = None
    response_is_error: bool = False
    #: True for a T2 response (refs carry operationId + toolCallId).
    response_bound: bool = False
    #: ``"completed"`` / ``"parked"`` when a recovery bundle settled the operation.
    bundle: Literal["completed", "parked"] | None = None
    observation: str | None = None
    reconcile_event_id: str | None = None
    outcome_event_id: str | None = None
    decision_event_id: str | None = None

    @property
    def has_dispatch(self) -> bool:
        return self.dispatch_event_id is not None

    @property
    def has_response(self) -> bool:
        return self.response_event_id is not None

    @property
    def call_only(self) -> bool:
        """Call, no dispatch, no response, no recovery facts: the cell the marker decides."""
        return not self.has_dispatch and not self.has_response and self.bundle is None

    @property
    def resolved(self) -> bool:
        """A committed result exists (normal response or completed bundle's outcome)."""
        return self.has_response or self.bundle == "completed"

    def expected_status(self, new_protocol: bool) -> str:
        """Spec 10 §6.3 rows 4–8 applied to what was built."""
        return self.expected_decision(new_protocol)["status"]

    def expected_decision(self, new_protocol: bool) -> dict[str, Any]:
        """The exact ``Decision.to_json()`` the spec requires for this operation (§6.1, §6.3)."""
        d: dict[str, Any] = {"toolCallId": self.tool_call_id, "toolName": self.tool_name}
        if self.operation_id is not None:
            d["operationId"] = self.operation_id
        d["callRuntimeEventId"] = self.call_event_id
        if self.dispatch_event_id is not None:
            d["dispatchRuntimeEventId"] = self.dispatch_event_id
        if self.bundle == "completed":
            d.update(status="completed", reason="recovery_bundle_completed", settlementOrigin="recovery_bundle")
            d["responseRuntimeEventId"] = self.outcome_event_id
            d["responseIsError"] = False
        elif self.bundle == "parked":
            assert self.observation is not None
            d.update(status="parked", reason=_PARK_REASON[self.observation], settlementOrigin="recovery_bundle")
        elif self.has_response:
            d.update(
                status="completed",
                reason="matching_response",
                settlementOrigin="normal_t2" if self.has_dispatch else "pre_t1_synthetic",
            )
            d["responseRuntimeEventId"] = self.response_event_id
            d["responseIsError"] = self.response_is_error
        elif self.has_dispatch:
            d.update(status="indeterminate", reason="dispatch_without_response")
        elif new_protocol:
            d.update(status="definitely_not_dispatched", reason="new_protocol_before_dispatch")
        else:
            d.update(status="indeterminate", reason="legacy_dispatch_unknown")
        return d

    def expected_plan_status(self, new_protocol: bool) -> str:
        """Spec 20 §1.1 status mapping of the expected decision."""
        d = self.expected_decision(new_protocol)
        status = d["status"]
        if status == "completed":
            return "failed" if d.get("responseIsError") else "succeeded"
        if status == "definitely_not_dispatched":
            return "not_dispatched"
        return status


@dataclass(frozen=True)
class Ledger:
    """A healthy ledger of one run plus its ground truth.

    ``events`` are plain dicts, in physical order. Treat them as read-only (or use
    :meth:`event_list` for a private deep copy); every example gets freshly built dicts.
    """

    events: tuple[dict[str, Any], ...]
    #: The protocol the run was built with. ``new_protocol`` says whether the resolver must
    #: see the marker (an empty ledger has no first event, hence no marker).
    protocol: Protocol
    #: Ground truth per operation, in scanner creation order (order of the call events).
    operations: tuple[OperationTruth, ...]
    #: Events of the uncut run, and how many of them the crash cut kept.
    full_run_length: int = 0
    cut: int = 0
    #: Ids of events appended after the cut (recovery bundles, repair terminal event).
    epilogue_event_ids: tuple[str, ...] = ()
    terminal_event_id: str | None = None
    #: True when provider call ids may repeat across invocations (never within one).
    call_ids_reused: bool = False

    @property
    def new_protocol(self) -> bool:
        return self.protocol == "t1" and len(self.events) > 0

    @property
    def crashed(self) -> bool:
        return self.cut < self.full_run_length

    def event_list(self) -> list[dict[str, Any]]:
        """A deep copy of the events (safe to modify)."""
        return copy.deepcopy(list(self.events))

    def event_index(self) -> dict[str, int]:
        return {e["id"]: i for i, e in enumerate(self.events)}

    def expected_decisions(self) -> list[dict[str, Any]]:
        return [op.expected_decision(self.new_protocol) for op in self.operations]

    def expected_resolution(self) -> dict[str, Any]:
        """The exact ``Resolution.to_json()`` the spec requires (spec 10 §6.1–§6.3)."""
        decisions = self.expected_decisions()
        out: dict[str, Any] = {}
        if self.new_protocol:
            out["toolBoundaryProtocol"] = T1
        out["decisions"] = decisions
        out["issues"] = []
        out["hasCorruption"] = False
        out["requiresReconciliation"] = any(d["status"] == "indeterminate" for d in decisions)
        return out

    def expected_replay_ids(self) -> list[str]:
        """Spec 20 §1.7 on a healthy ledger: drop partial events and the call/response
        events of operations without a committed result; keep everything else in order.

        With ``call_ids_reused`` this assumes call ids are paired per invocation (calls are
        keyed by ``(invocationId, call id)``, spec 20 §0.2); §1.7's literal "pairing by call
        id" would let an unanswered call ride on another invocation's pair."""
        unresolved: set[str] = set()
        for op in self.operations:
            if not op.resolved:
                unresolved.add(op.call_event_id)
        out = []
        for e in self.events:
            if e.get("partial"):
                continue
            if e.get("modelVisibility") == "hidden":
                continue
            if e["id"] in unresolved:
                continue
            out.append(e["id"])
        return out

    def to_jsonl(self) -> str:
        return "".join(_jsonl_line(e) + "\n" for e in self.events)


@dataclass(frozen=True)
class CorruptLedger:
    """A healthy ledger with one corruption applied.

    ``witness`` is what the spec guarantees to appear: ``("issue", code, eventId)`` in the
    resolver's issues, or ``("decision", reason, callRuntimeEventId)`` for a decision.
    """

    events: tuple[dict[str, Any], ...]
    corruption: str
    detail: str
    witness: tuple[str, str, str]
    base: Ledger

    def event_list(self) -> list[dict[str, Any]]:
        return copy.deepcopy(list(self.events))


@dataclass(frozen=True)
class TornJsonl:
    """JSON-lines bytes whose last line is torn (a strict, non-empty prefix of its bytes)."""

    data: bytes
    ledger: Ledger
    #: Number of complete lines before the torn one; the torn line is number ``intact + 1``.
    intact_lines: int
    #: How many bytes of the last line were kept (1 ≤ kept < its full length).
    kept_bytes: int

    @property
    def torn_line_number(self) -> int:
        return self.intact_lines + 1


def _jsonl_line(event: Any) -> str:
    return json.dumps(event, ensure_ascii=False, separators=(",", ":"), allow_nan=False)


# =======================================================================================
# Small value strategies
# =======================================================================================

_PHRASES = (
    "run it",
    "please update the notes",
    "Read notes.txt and summarise it",
    "fix the failing test in tests/test_io.py",
    "日本語のテキストを要約して",
    "emoji 😀 and fullwidth ！ and é",
    "line\nbreak\ttab",
    'quote " backslash \\ slash /',
    "separators \u2028 and \u2029",
    "control \x00\x1f and DEL \x7f",
    "",
    " ",
    "𝔘𝔫𝔦𝔠𝔬𝔡𝔢 astral",
    "__proto__",
)


@functools.lru_cache(maxsize=None)
def texts(*, max_size: int = 40) -> st.SearchStrategy[str]:
    """Realistic message text: phrases, ASCII words, and arbitrary unicode incl. astral
    characters (never lone surrogates: event text is well-formed in real runs)."""
    return st.one_of(
        st.sampled_from(_PHRASES),
        st.text(alphabet=st.characters(min_codepoint=32, max_codepoint=126), max_size=max_size),
        st.text(alphabet=st.characters(codec="utf-8"), max_size=max_size),
    )


@functools.lru_cache(maxsize=None)
def _names() -> st.SearchStrategy[str]:
    return st.one_of(
        st.sampled_from(("a", "path", "content", "0", "10", "2", "01", "-1", "1.5", "__proto__", "é", "😀", "！", "Z", "z")),
        st.text(alphabet=st.characters(codec="utf-8"), max_size=8),
    )


@functools.lru_cache(maxsize=None)
def _safe_floats() -> st.SearchStrategy[float]:
    # -0.0 is not encodable in an event (spec 10 §2.4): map it to 0.0.
    return st.floats(allow_nan=False, allow_infinity=False).map(lambda x: 0.0 if x == 0 else x)


@functools.lru_cache(maxsize=None)
def _event_json(max_leaves: int = 12) -> st.SearchStrategy[Any]:
    """Strict JSON that is encodable inside an event: safe integers, finite floats, no -0,
    well-formed unicode strings (astral included), nested objects and arrays."""
    scalars = st.one_of(
        st.none(),
        st.booleans(),
        st.integers(-MAX_SAFE_INTEGER, MAX_SAFE_INTEGER),
        _safe_floats(),
        texts(max_size=16),
    )
    return st.recursive(
        scalars,
        lambda children: st.one_of(
            st.lists(children, max_size=4),
            st.dictionaries(_names(), children, max_size=4),
        ),
        max_leaves=max_leaves,
    )


@functools.lru_cache(maxsize=None)
def json_values(
    *,
    lone_surrogates: bool = True,
    big_integers: bool = True,
    negative_zero: bool = True,
    max_leaves: int = 16,
) -> st.SearchStrategy[Any]:
    """Arbitrary JSON values (``dict``/``list``/``str``/``int``/``float``/``bool``/``None``).

    Includes astral characters, lone surrogates, integers beyond 2^53 (and beyond the double
    range when ``big_integers``), every finite float and ``-0.0``. Switch the awkward parts
    off when a property needs event-encodable values.
    """
    alphabet = st.characters() if lone_surrogates else st.characters(codec="utf-8")
    strings = st.one_of(st.text(alphabet=alphabet, max_size=12), st.sampled_from(_PHRASES))
    ints = st.integers(-MAX_SAFE_INTEGER, MAX_SAFE_INTEGER)
    if big_integers:
        ints = st.one_of(ints, st.integers(-(2**80), 2**80), st.sampled_from((2**53 + 1, 12345678901234567890, 10**400)))
    floats = st.floats(allow_nan=False, allow_infinity=False)
    if not negative_zero:
        floats = floats.map(lambda x: 0.0 if x == 0 else x)
    scalars = st.one_of(st.none(), st.booleans(), ints, floats, strings)
    keys = st.one_of(_names(), st.text(alphabet=alphabet, max_size=6))
    return st.recursive(
        scalars,
        lambda children: st.one_of(st.lists(children, max_size=5), st.dictionaries(keys, children, max_size=5)),
        max_leaves=max_leaves,
    )


@functools.lru_cache(maxsize=None)
def _paths() -> st.SearchStrategy[str]:
    return st.one_of(
        st.sampled_from(("notes.txt", "src/app.py", "docs/ré sumé.md", "data/😀.json", "/etc/hosts", "C:\\tmp\\x.txt")),
        st.builds(lambda d, f: f"{d}/{f}", st.sampled_from(("src", "tests", "tmp", "ノート")), texts(max_size=10)),
    )


@functools.lru_cache(maxsize=None)
def tool_calls() -> st.SearchStrategy[tuple[str, Any]]:
    """``(tool name, args)`` pairs shaped like real tools, plus tools with arbitrary nested
    arguments, schema-like arguments (``required``/``enum`` arrays, whose hash sorts them,
    spec 10 §2.6), ``__proto__`` keys, array-index-like keys and non-object arguments."""
    small_int = st.integers(0, 10**6)
    return st.one_of(
        st.tuples(
            st.just("Bash"),
            st.fixed_dictionaries(
                {"command": st.one_of(st.sampled_from(("ls -la", "pytest -q", "echo 'é😀' > out.txt")), texts())},
                optional={"timeout": small_int, "description": texts(max_size=20)},
            ),
        ),
        st.tuples(st.just("Write"), st.fixed_dictionaries({"path": _paths(), "content": texts()})),
        st.tuples(
            st.just("Read"),
            st.fixed_dictionaries({"path": _paths()}, optional={"offset": small_int, "limit": small_int}),
        ),
        st.tuples(
            st.just("Edit"),
            st.fixed_dictionaries(
                {"path": _paths(), "old_string": texts(), "new_string": texts()},
                optional={"replace_all": st.booleans()},
            ),
        ),
        st.tuples(
            st.just("WebFetch"),
            st.fixed_dictionaries(
                {"url": st.sampled_from(("https://example.com/a?b=1&c=ü", "http://[::1]:8080/"))},
                optional={"headers": st.dictionaries(_names(), texts(max_size=10), max_size=3)},
            ),
        ),
        st.tuples(
            st.just("TodoWrite"),
            st.fixed_dictionaries(
                {
                    "todos": st.lists(
                        st.fixed_dictionaries(
                            {
                                "content": texts(max_size=20),
                                "status": st.sampled_from(("pending", "in_progress", "completed")),
                                "priority": st.integers(1, 3),
                            }
                        ),
                        max_size=3,
                    )
                }
            ),
        ),
        st.tuples(
            st.just("define_schema"),
            st.fixed_dictionaries(
                {
                    "type": st.just("object"),
                    "required": st.lists(st.one_of(texts(max_size=6), st.integers(-5, 20)), max_size=5),
                    "properties": st.dictionaries(
                        _names(),
                        st.fixed_dictionaries({"enum": st.lists(st.one_of(st.none(), st.booleans(), st.integers(-3, 12), texts(max_size=4)), max_size=4)}),
                        max_size=3,
                    ),
                }
            ),
        ),
        st.tuples(st.just("exec"), st.fixed_dictionaries({"code": texts()})),
        st.tuples(st.sampled_from(("mcp__db__query", "mcp__server__tool_ü")), _event_json()),
        st.tuples(st.just("Search"), st.one_of(st.none(), texts(), st.lists(texts(max_size=5), max_size=3))),
    )


@functools.lru_cache(maxsize=None)
def tool_results() -> st.SearchStrategy[Any]:
    """Realistic ``function_response.result`` values."""
    return st.one_of(
        st.sampled_from(("ok", "", "permission denied", "file written", "exit code 1\nstderr: boom")),
        texts(),
        st.fixed_dictionaries({"ok": st.booleans()}, optional={"bytes": st.integers(0, 10**9), "stdout": texts()}),
        _event_json(max_leaves=8),
    )


@functools.lru_cache(maxsize=None)
def _ints(lo: int, hi: int) -> st.SearchStrategy[int]:
    return st.integers(lo, hi)


@functools.lru_cache(maxsize=None)
def _pick(options: tuple[Any, ...]) -> st.SearchStrategy[Any]:
    return st.sampled_from(options)


_BOOL = st.booleans()
_ERROR_RESULTS = st.sampled_from(("permission denied", "Tool unavailable", {"error": "boom"})).map(copy.deepcopy)
_DURATIONS = st.one_of(st.integers(0, 60_000), st.just(12.5))
_STATE_DELTA_KEYS = st.lists(st.sampled_from(("activityKind", "displayName", "intent")), min_size=1, max_size=3, unique=True)
_MODES = st.one_of(st.just("reconcile"), st.sampled_from(RECOVERY_MODES))


# =======================================================================================
# Event builders (producer conventions, spec 10 §1.6)
# =======================================================================================


@dataclass(frozen=True)
class _Spine:
    session_id: str
    run_id: str
    turn_id: str
    invocation_id: str

    def envelope(self, event_id: str, ts: float, role: str, author: str, partial: bool = False) -> dict[str, Any]:
        return {
            "id": event_id,
            "invocationId": self.invocation_id,
            "runId": self.run_id,
            "sessionId": self.session_id,
            "turnId": self.turn_id,
            "ts": ts,
            "partial": partial,
            "role": role,
            "author": author,
        }


@dataclass
class _Op:
    spine: _Spine
    tool_call_id: str
    name: str
    args: Any
    operation_id: str
    fate: str  # "t2" | "unbound"
    recovery_mode: str
    call: dict[str, Any] | None = None
    dispatch: dict[str, Any] | None = None
    response: dict[str, Any] | None = None
    response_is_error: bool = False
    bundle: str | None = None
    observation: str | None = None
    reconcile: dict[str, Any] | None = None
    outcome: dict[str, Any] | None = None
    decision: dict[str, Any] | None = None


class _Builder:
    """Mutable state while one run is drawn: id counters, clock, events, operations."""

    def __init__(self, draw: Callable[[Any], Any], call_id_reuse: bool) -> None:
        self.draw = draw
        self.n_event = 0
        self.n_op = 0
        self.n_call = 0
        self.id_style = draw(_pick(("seq", "run", "uuid", "unicode")))
        self.seed = draw(_ints(0, 2**32 - 1))
        self.session_id = draw(_pick(("session-1", "sess_01HZX", "séance-😀")))
        self.run_id = draw(_pick(("run-1", "run_7f3a", "r")))
        self.ts = draw(st.one_of(st.just(1), _ints(1_600_000_000_000, 1_900_000_000_000)))
        self.events: list[dict[str, Any]] = []
        self.ops: list[_Op] = []
        self.call_id_reuse = call_id_reuse
        self.call_ids_by_invocation: dict[str, set[str]] = {}

    def tick(self) -> float:
        step = self.draw(_pick((0, 1, 1, 7, 250, 0.5)))
        self.ts = self.ts + step
        return self.ts

    def event_id(self) -> str:
        self.n_event += 1
        n = self.n_event
        if self.id_style == "seq":
            return f"evt-{n:06d}"
        if self.id_style == "run":
            return f"{self.run_id}/{n}"
        if self.id_style == "uuid":
            return f"{self.seed:08x}-{n:04x}-4{n % 4096:03x}-8000-{(self.seed * 31 + n) % 16**12:012x}"
        return f"événement-{n}"

    def operation_id(self) -> str:
        self.n_op += 1
        n = self.n_op
        if self.id_style == "uuid":
            return f"op_{self.seed:08x}{n:04x}"
        return f"operation-{n}"

    def call_id(self, invocation_id: str) -> str:
        used = self.call_ids_by_invocation.setdefault(invocation_id, set())
        if self.call_id_reuse:
            k = self.draw(_ints(1, 4))
            while f"call_{k}" in used:
                k += 1
            cid = f"call_{k}"
        else:
            self.n_call += 1
            style = self.draw(_pick(("toolu", "call", "plain")))
            cid = {"toolu": f"toolu_01{self.n_call:04d}Xy", "call": f"call_{self.n_call}", "plain": f"provider-call-{self.n_call}"}[style]
        used.add(cid)
        return cid

    def add(self, event: dict[str, Any]) -> dict[str, Any]:
        self.events.append(event)
        return event


def _user_text(b: _Builder, spine: _Spine, text: str, marker: bool) -> dict[str, Any]:
    e = spine.envelope(b.event_id(), b.tick(), "user", "user")
    e["content"] = {"kind": "text", "text": text}
    if marker:
        e["actions"] = {"runtimeProtocol": {"toolBoundary": T1}}
    return e


def _model_text(b: _Builder, spine: _Spine, text: str, partial: bool = False) -> dict[str, Any]:
    e = spine.envelope(b.event_id(), b.tick(), "model", "agent", partial=partial)
    e["content"] = {"kind": "text", "text": text}
    return e


def _thinking(b: _Builder, spine: _Spine) -> dict[str, Any]:
    e = spine.envelope(b.event_id(), b.tick(), "model", "agent")
    e["content"] = {"kind": "thinking", "text": b.draw(texts())}
    if b.draw(_BOOL):
        e["content"]["signature"] = "sig_" + str(b.draw(_ints(0, 10**6)))
    return e


def _token_usage(b: _Builder, spine: _Spine) -> dict[str, Any]:
    e = spine.envelope(b.event_id(), b.tick(), "system", "system")
    e["actions"] = {"tokenUsage": {"input": b.draw(_ints(0, 200_000)), "output": b.draw(_ints(0, 8_000))}}
    return e


def _error_event(b: _Builder, spine: _Spine) -> dict[str, Any]:
    e = spine.envelope(b.event_id(), b.tick(), "model", "agent")
    e["content"] = {"kind": "error", "message": "provider stream interrupted", "code": "stream_error"}
    return e


def _call_event(b: _Builder, op: _Op) -> dict[str, Any]:
    e = op.spine.envelope(b.event_id(), b.tick(), "model", "agent")
    if b.draw(_BOOL):
        e["origin"] = "provider"
        e["modelVisibility"] = "visible"
    e["content"] = {"kind": "function_call", "id": op.tool_call_id, "name": op.name, "args": op.args}
    refs: dict[str, Any] = {"toolCallId": op.tool_call_id}
    if op.fate == "t2":
        refs["operationId"] = op.operation_id
    if b.draw(_ints(0, 3)) == 0:
        refs["stepId"] = f"step-{b.n_event}"
    style = b.draw(_ints(0, 3))
    if style == 0 and op.fate == "unbound":
        pass  # no refs at all (legacy / generic lane)
    else:
        e["refs"] = refs
    if b.draw(_ints(0, 3)) == 0:
        keys = b.draw(_STATE_DELTA_KEYS)
        e["actions"] = {"stateDelta": {k: b.draw(texts(max_size=12)) for k in keys}}
    return e


def _dispatch_event(b: _Builder, op: _Op) -> dict[str, Any]:
    assert op.call is not None
    e = op.spine.envelope(f"{op.operation_id}_dispatch", op.call["ts"], "system", "system")
    if b.draw(_BOOL):
        e["modelVisibility"] = "visible"
    e["actions"] = {
        "toolDispatch": {
            "protocol": T1,
            "operationId": op.operation_id,
            "providerToolCallId": op.tool_call_id,
            "toolName": op.name,
            "canonicalArgsHash": canonical_args_hash(op.name, op.args),
            "recoveryMode": op.recovery_mode,
        }
    }
    e["refs"] = {"operationId": op.operation_id, "toolCallId": op.tool_call_id}
    return e


def _response_event(b: _Builder, op: _Op, *, event_id: str, bound: bool, is_error: bool, error_key: bool) -> dict[str, Any]:
    e = op.spine.envelope(event_id, b.tick(), "tool", "tool")
    if b.draw(_BOOL):
        e["origin"] = "provider"
    result = b.draw(tool_results()) if not is_error else b.draw(_ERROR_RESULTS)
    content: dict[str, Any] = {"kind": "function_response", "id": op.tool_call_id, "name": op.name, "result": result}
    if is_error:
        content["isError"] = True
    elif error_key:
        content["isError"] = False
    e["content"] = content
    if bound:
        e["refs"] = {"operationId": op.operation_id, "toolCallId": op.tool_call_id}
    elif b.draw(_BOOL):
        e["refs"] = {"toolCallId": op.tool_call_id}
    if b.draw(_ints(0, 3)) == 0:
        e["actions"] = {"stateDelta": {"durationMs": b.draw(_DURATIONS)}}
    return e


def _recovery_fact(spine: _Spine, event_id: str, ts: float, op: _Op, kind: str, payload: dict[str, Any]) -> dict[str, Any]:
    e = spine.envelope(event_id, ts, "system", "system")
    e["actions"] = {"toolRecovery": {"kind": kind, "version": 1, "payload": payload}}
    e["refs"] = {"operationId": op.operation_id, "toolCallId": op.tool_call_id}
    return e


def _terminal_event(b: _Builder, spine: _Spine, status: str, recovered: bool) -> dict[str, Any]:
    """Spec 20 §4.2 terminal shape."""
    e = spine.envelope(b.event_id(), b.tick(), "system", "system")
    e["status"] = status
    state: dict[str, Any] = {}
    if recovered:
        state.update(recovered=True, recoveryReason="process_restart")
    if status == "failed":
        state["failureClass"] = "runtime_crash"
        e["content"] = {"kind": "error", "code": "runtime_crash", "reason": "runtime_crash", "message": "runtime crashed"}
    if status == "aborted":
        state["abortSource"] = "unknown"
    e["actions"] = {"endInvocation": True, "stateDelta": state}
    return e


# =======================================================================================
# Healthy ledgers
# =======================================================================================


def _interleave(draw: Callable[[Any], Any], queues: list[list[Any]]) -> list[Any]:
    """A random merge of the queues that keeps each queue's own order."""
    queues = [list(q) for q in queues if q]
    out: list[Any] = []
    while queues:
        i = draw(_ints(0, len(queues) - 1)) if len(queues) > 1 else 0
        out.append(queues[i].pop(0))
        if not queues[i]:
            queues.pop(i)
    return out


def _run_step(
    draw: Callable[[Any], Any], b: _Builder, spine: _Spine, max_calls: int, dispatch_weight: int, min_calls: int = 0
) -> None:
    if draw(_ints(0, 3)) == 0:
        b.add(_thinking(b, spine))
    if draw(_ints(0, 3)) == 0:  # a streaming chunk later superseded
        b.add(_model_text(b, spine, draw(texts(max_size=10)), partial=True))
    if draw(_BOOL):
        b.add(_model_text(b, spine, draw(texts())))
    n_calls = draw(_ints(min_calls, max(min_calls, max_calls)))
    ops: list[_Op] = []
    for _ in range(n_calls):
        name, args = draw(tool_calls())
        fate = "t2" if draw(_ints(0, 9)) < dispatch_weight else "unbound"
        mode = draw(_MODES)
        op = _Op(spine, b.call_id(spine.invocation_id), name, args, b.operation_id(), fate, mode)
        b.ops.append(op)
        ops.append(op)
    calls_upfront = draw(_BOOL)
    if calls_upfront:
        for op in ops:
            op.call = b.add(_call_event(b, op))
    # Execution: per operation [call?] → dispatch → response (T2), or [call?] → synthetic
    # response (pre-T1 refusal / legacy). Operations interleave (parallel tool calls).
    queues: list[list[tuple[str, _Op]]] = []
    for op in ops:
        q: list[tuple[str, _Op]] = [] if calls_upfront else [("call", op)]
        if op.fate == "t2":
            q.append(("dispatch", op))
        q.append(("response", op))
        queues.append(q)
    for what, op in _interleave(draw, queues):
        if what == "call":
            op.call = b.add(_call_event(b, op))
        elif what == "dispatch":
            op.dispatch = b.add(_dispatch_event(b, op))
        else:
            bound = op.fate == "t2"
            is_error = draw(_ints(0, 4)) == 0 if bound else draw(_ints(0, 3)) > 0
            eid = f"{op.operation_id}_response" if bound else b.event_id()
            op.response = b.add(_response_event(b, op, event_id=eid, bound=bound, is_error=is_error, error_key=draw(_BOOL)))
            op.response_is_error = is_error
    if draw(_ints(0, 5)) == 0:
        b.add(_token_usage(b, spine))
    if draw(_ints(0, 9)) == 0:
        b.add(_error_event(b, spine))


def _protocol_choice(protocol: Protocol | Sequence[Protocol]) -> tuple[Protocol, ...]:
    if isinstance(protocol, str):
        protocol = (protocol,)
    choices = tuple(protocol)
    for p in choices:
        if p not in ("t1", "legacy"):
            raise ValueError(f"unknown protocol {p!r}; expected 't1' or 'legacy'")
    if not choices:
        raise ValueError("protocol must name at least one of 't1', 'legacy'")
    return choices


@st.composite
def ledgers(
    draw: Callable[[Any], Any],
    protocol: Protocol | Sequence[Protocol] = ("t1", "legacy"),
    *,
    max_turns: int = 3,
    max_steps: int = 2,
    max_calls: int = 3,
    dispatch_weight: int = 7,
    crash: bool = True,
    recovery: bool | Literal["always"] = True,
    terminal: bool = True,
    call_id_reuse: bool | None = False,
    min_events: int = 0,
) -> Ledger:
    """Healthy ledgers of one run, with ground truth (see :class:`Ledger`).

    * ``protocol``: ``"t1"`` (marker on the first event), ``"legacy"`` (no marker), or a
      sequence to choose from.
    * ``max_turns``: turns (each a user text and its own invocation); ``max_steps`` model
      steps per turn; ``max_calls`` tool calls per step.
    * ``dispatch_weight``: out of 10, how many calls take the T1/T2 path (the rest are
      unbound call + synthetic response pairs, i.e. pre-T1 refusals / legacy pairs).
    * ``crash``: allow a crash cut (two runs in three are cut; the ledger is then a prefix of
      the run, cut anywhere or, more often, right after a call or a T1 dispatch).
    * ``recovery``: after a crash, allow recovery bundles and a repair terminal event;
      ``"always"`` forces a crash right after some T1 dispatch (its mode set to
      ``reconcile``) and a recovery bundle for that operation.
    * ``terminal``: allow a terminal event at the end of an uncut run.
    * ``call_id_reuse``: ``True`` reuses provider call ids across invocations (never within
      one, spec 10 §7.4 #37), ``None`` lets Hypothesis choose, ``False`` keeps them unique.
    * ``min_events``: the crash cut keeps at least this many events.
    """
    protocols = _protocol_choice(protocol)
    proto: Protocol = draw(_pick(protocols))
    reuse = draw(_BOOL) if call_id_reuse is None else call_id_reuse
    b = _Builder(draw, reuse)

    shared_turn = draw(_BOOL)
    n_turns = draw(_ints(1, max(1, max_turns)))
    spines: list[_Spine] = []
    for t in range(n_turns):
        turn_id = "turn-1" if shared_turn else f"turn-{t + 1}"
        spine = _Spine(b.session_id, b.run_id, turn_id, f"invocation-{t + 1}")
        spines.append(spine)
        b.add(_user_text(b, spine, draw(texts()), marker=(t == 0 and proto == "t1")))
        for _ in range(draw(_ints(1, max(1, max_steps)))):
            _run_step(draw, b, spine, max_calls, dispatch_weight)
    if recovery == "always" and not any(op.fate == "t2" for op in b.ops):
        _run_step(draw, b, spines[-1], max_calls, 10, min_calls=1)
    full_length = len(b.events)
    if terminal and draw(_BOOL):
        b.add(_terminal_event(b, spines[-1], "completed", recovered=False))
        full_length += 1

    # Crash cut: any prefix (every single event is its own durable commit here).
    cut = full_length
    lo = min(max(min_events, 0), full_length)
    forced: _Op | None = None
    if recovery == "always":
        position = {id(e): i for i, e in enumerate(b.events)}
        t2_ops = [op for op in b.ops if op.fate == "t2"]
        forced = draw(st.sampled_from([op for op in t2_ops if position[id(op.dispatch)] + 1 >= lo] or t2_ops))
        assert forced.dispatch is not None
        forced.recovery_mode = "reconcile"
        forced.dispatch["actions"]["toolDispatch"]["recoveryMode"] = "reconcile"
        cut = position[id(forced.dispatch)] + 1
    elif crash and draw(_ints(0, 2)) > 0:
        # Crashes cluster at tool boundaries: right after a T1 dispatch (killed while the
        # tool runs) or right after a call (killed before T1); otherwise anywhere.
        where = draw(_pick(("anywhere", "after_dispatch", "after_call")))
        lane = "toolDispatch" if where == "after_dispatch" else "function_call"
        boundaries = [
            i + 1
            for i, e in enumerate(b.events[:full_length])
            if i + 1 >= lo
            and (lane in e.get("actions", {}) or e.get("content", {}).get("kind") == lane)
        ]
        if where != "anywhere" and boundaries:
            cut = draw(st.sampled_from(boundaries))
        else:
            cut = draw(_ints(lo, full_length))
    kept = b.events[:cut]
    kept_ids = {id(e) for e in kept}

    # Recovery epilogue (only after a real crash): atomic bundles, then a repair terminal.
    epilogue: list[dict[str, Any]] = []
    if recovery and cut < full_length and kept:
        for op in b.ops:
            if (
                op.dispatch is not None
                and id(op.dispatch) in kept_ids
                and (op.response is None or id(op.response) not in kept_ids)
                and op.recovery_mode == "reconcile"
            ):
                choices = ("none", "completed", "matches_prior_state", "diverged", "unreadable")
                choice = draw(_pick(choices[1:] if op is forced else choices))
                if choice == "none":
                    continue
                epilogue.extend(_bundle(draw, b, op, choice))
        last_spine = _spine_of(kept[-1])
        if draw(_BOOL):
            epilogue.append(_terminal_event(b, last_spine, draw(_pick(("failed", "aborted"))), recovered=True))

    events = kept + epilogue
    present = {id(e) for e in events}
    operations: list[tuple[int, OperationTruth]] = []
    index = {id(e): i for i, e in enumerate(events)}
    for op in b.ops:
        if op.call is None or id(op.call) not in present:
            continue
        has_dispatch = op.dispatch is not None and id(op.dispatch) in present
        has_response = op.response is not None and id(op.response) in present
        truth = OperationTruth(
            invocation_id=op.spine.invocation_id,
            tool_call_id=op.tool_call_id,
            tool_name=op.name,
            args=op.args,
            call_event_id=op.call["id"],
            operation_id=op.operation_id if has_dispatch else None,
            dispatch_event_id=op.dispatch["id"] if has_dispatch else None,
            recovery_mode=op.recovery_mode if has_dispatch else None,
            response_event_id=op.response["id"] if has_response else None,
            response_is_error=op.response_is_error if has_response else False,
            response_bound=has_response and op.fate == "t2",
            bundle=op.bundle,  # type: ignore[arg-type]
            observation=op.observation,
            reconcile_event_id=op.reconcile["id"] if op.reconcile else None,
            outcome_event_id=op.outcome["id"] if op.outcome else None,
            decision_event_id=op.decision["id"] if op.decision else None,
        )
        operations.append((index[id(op.call)], truth))
    operations.sort(key=lambda pair: pair[0])
    terminal_id = None
    if events and ("status" in events[-1] or events[-1].get("actions", {}).get("endInvocation") is True):
        terminal_id = events[-1]["id"]
    return Ledger(
        events=tuple(events),
        protocol=proto,
        operations=tuple(t for _, t in operations),
        full_run_length=full_length,
        cut=cut,
        epilogue_event_ids=tuple(e["id"] for e in epilogue),
        terminal_event_id=terminal_id,
        call_ids_reused=reuse,
    )


def _spine_of(event: dict[str, Any]) -> _Spine:
    return _Spine(event["sessionId"], event["runId"], event["turnId"], event["invocationId"])


def _bundle(draw: Callable[[Any], Any], b: _Builder, op: _Op, choice: str) -> list[dict[str, Any]]:
    """An atomic recovery bundle for ``op`` (spec 10 §5.1, §5.2)."""
    assert op.call is not None and op.dispatch is not None
    observation = "matches_expected_state" if choice == "completed" else choice
    digest = "sha256:" + draw(_pick(("a" * 64, "0123456789abcdef" * 4, "f" * 64)))
    reconcile = _recovery_fact(
        op.spine,
        f"{op.operation_id}_reconcile",
        b.tick(),
        op,
        "maka.tool.reconcile_result",
        {
            "protocol": "tool_reconcile_v1",
            "operationId": op.operation_id,
            "observation": observation,
            "observationSchema": "state_identity_v1",
            "observationDigest": digest,
        },
    )
    out = [reconcile]
    evidence = [op.call["id"], op.dispatch["id"], reconcile["id"]]
    if choice == "completed":
        outcome = _response_event(b, op, event_id=f"{op.operation_id}_response", bound=True, is_error=False, error_key=draw(_BOOL))
        out.append(outcome)
        op.outcome = outcome
        payload = {
            "protocol": "tool_recovery_v1",
            "operationId": op.operation_id,
            "disposition": "completed",
            "reasonCode": "reconcile_matches_expected_state",
            "outcomeEventId": outcome["id"],
            "evidenceEventIds": evidence + [outcome["id"]],
        }
    else:
        payload = {
            "protocol": "tool_recovery_v1",
            "operationId": op.operation_id,
            "disposition": "parked",
            "reasonCode": _PARK_REASON[choice],
            "evidenceEventIds": evidence,
        }
    decision = _recovery_fact(op.spine, f"{op.operation_id}_decision", b.tick(), op, "maka.tool.recovery_decision", payload)
    out.append(decision)
    op.reconcile, op.decision = reconcile, decision
    op.bundle = "completed" if choice == "completed" else "parked"
    op.observation = observation
    return out


def runtime_events(**ledger_kwargs: Any) -> st.SearchStrategy[dict[str, Any]]:
    """Single healthy RuntimeEvents of every lane, drawn from realistic ledgers."""
    ledger_kwargs.setdefault("min_events", 1)
    return ledgers(**ledger_kwargs).filter(lambda l: len(l.events) > 0).flatmap(lambda l: st.sampled_from(l.events))


# =======================================================================================
# Ledger transformations (plain functions; usable outside Hypothesis)
# =======================================================================================


def strip_marker(ledger: Ledger) -> Ledger:
    """The same ledger without ``actions.runtimeProtocol`` on event 0 (``actions`` dropped
    when it becomes empty); ground truth is unchanged, the protocol becomes legacy."""
    events = ledger.event_list()
    if events:
        actions = events[0].get("actions")
        if isinstance(actions, dict) and "runtimeProtocol" in actions:
            del actions["runtimeProtocol"]
            if not actions:
                del events[0]["actions"]
    return replace(ledger, events=tuple(events), protocol="legacy")


def add_marker(ledger: Ledger) -> Ledger:
    """The same ledger with the valid T1 marker on event 0 (spec 10 §3)."""
    events = ledger.event_list()
    if events:
        events[0].setdefault("actions", {})["runtimeProtocol"] = {"toolBoundary": T1}
    return replace(ledger, events=tuple(events), protocol="t1")


def append_response(ledger: Ledger, op: OperationTruth, *, is_error: bool = False, result: Any = "ok") -> Ledger:
    """Append (at the end) the response that settles ``op``: a T2 response bound with
    ``refs {operationId, toolCallId}`` when the op was dispatched, else an unbound synthetic
    response. Ground truth is updated accordingly."""
    if op.bundle is not None or op.has_response:
        raise ValueError("operation already has a response or recovery facts")
    call = next(e for e in ledger.events if e["id"] == op.call_event_id)
    existing = {e["id"] for e in ledger.events}
    base_id = f"{op.operation_id}_response" if op.has_dispatch else f"{op.call_event_id}-response"
    event_id = base_id
    while event_id in existing:
        event_id += "'"
    ts = max((e["ts"] for e in ledger.events), default=1)
    e: dict[str, Any] = {
        "id": event_id,
        "invocationId": call["invocationId"],
        "runId": call["runId"],
        "sessionId": call["sessionId"],
        "turnId": call["turnId"],
        "ts": ts,
        "partial": False,
        "role": "tool",
        "author": "tool",
        "content": {"kind": "function_response", "id": op.tool_call_id, "name": op.tool_name, "result": copy.deepcopy(result)},
    }
    if is_error:
        e["content"]["isError"] = True
    if op.has_dispatch:
        e["refs"] = {"operationId": op.operation_id, "toolCallId": op.tool_call_id}
    new_op = replace(op, response_event_id=event_id, response_is_error=is_error, response_bound=op.has_dispatch)
    ops = tuple(new_op if o is op else o for o in ledger.operations)
    return replace(ledger, events=tuple(ledger.event_list() + [e]), operations=ops)


# =======================================================================================
# Corrupt ledgers
# =======================================================================================

#: Every corruption ``corrupt_ledgers`` can apply. Each is guaranteed by the spec to make
#: ``hasCorruption`` true (spec 10 §4.4, §5.5, §6.2); its witness is the guaranteed signal.
CORRUPTIONS: tuple[str, ...] = (
    "duplicate_event",  # §2.5/§4.3 step 1: duplicate_event_id
    "reorder_dispatch_before_call",  # §4.3 step 6: event_order_conflict
    "reorder_response_before_call",  # §4.3 step 7: orphan_response
    "reorder_response_before_dispatch",  # §4.3 step 6: event_order_conflict (dispatch after response)
    "reorder_reconcile_before_dispatch",  # §4.3 step 8: unbound recovery fact
    "drop_call",  # §4.3 steps 6/7: event_order_conflict / orphan_response
    "drop_dispatch_of_bundle",  # §4.3 step 8: event_order_conflict
    "drop_bundle_event",  # §5.4/§5.5: recovery_fact_corruption
    "identity_drift",  # §4.3 step 2: invocation_identity_conflict
    "misplaced_marker",  # §3 case 2: protocol_marker_invalid
    "invalid_marker",  # §3 case 1: protocol_marker_invalid
    "flipped_hash",  # §4.3 step 6: canonical_args_hash_conflict
    "duplicate_call_id",  # §4.3 step 5: duplicate_call
    "duplicate_response",  # §4.3 step 7: duplicate_response
    "mismatched_names",  # §4.3 steps 6/7: identity_conflict
    "unbound_t2_response",  # §4.3 step 7 / §8.10: identity_conflict
    "reused_operation_id",  # §4.3 step 6: duplicate_operation
    "lane_smuggling",  # §4.1: semantic_lane_conflict
    "partial_tool_fact",  # §4.1: semantic_lane_conflict
)

_NEEDS_BUNDLE = frozenset({"reorder_reconcile_before_dispatch", "drop_dispatch_of_bundle", "drop_bundle_event"})
_NEEDS_TWO_DISPATCHES = frozenset({"reused_operation_id"})


def _lane_of(e: dict[str, Any]) -> str:
    content = e.get("content") or {}
    actions = e.get("actions") or {}
    if content.get("kind") == "function_call":
        return "function_call"
    if content.get("kind") == "function_response":
        return "function_response"
    if "toolDispatch" in actions:
        return "tool_dispatch"
    if "toolRecovery" in actions:
        return "recovery"
    return "ordinary"


def _applicable(ledger: Ledger) -> list[str]:
    ev = ledger.events
    ops = ledger.operations
    out = ["duplicate_event", "invalid_marker"]
    if len(ev) >= 2:
        out.append("misplaced_marker")
    if any(op.has_dispatch for op in ops):
        out += ["reorder_dispatch_before_call", "flipped_hash"]
    if any(op.has_response for op in ops):
        out += ["reorder_response_before_call", "duplicate_response"]
    if any(op.has_response and op.has_dispatch for op in ops):
        out += ["reorder_response_before_dispatch", "unbound_t2_response"]
    if any(op.bundle for op in ops):
        out += ["reorder_reconcile_before_dispatch", "drop_dispatch_of_bundle", "drop_bundle_event"]
    if any(op.has_dispatch or op.has_response for op in ops):
        out += ["drop_call", "mismatched_names"]
    if ops:
        out.append("duplicate_call_id")
    if sum(op.has_dispatch for op in ops) >= 2:
        out.append("reused_operation_id")
    per_inv: dict[str, int] = {}
    for e in ev:
        per_inv[e["invocationId"]] = per_inv.get(e["invocationId"], 0) + 1
    if any(n >= 2 for n in per_inv.values()):
        out.append("identity_drift")
    if any(_lane_of(e) != "ordinary" for e in ev):
        out += ["lane_smuggling", "partial_tool_fact"]
    return out


def _find(events: list[dict[str, Any]], event_id: str) -> int:
    return next(i for i, e in enumerate(events) if e["id"] == event_id)


def _fresh_id(events: Iterable[dict[str, Any]], base: str) -> str:
    used = {e["id"] for e in events}
    candidate = base
    n = 1
    while candidate in used:
        n += 1
        candidate = f"{base}-{n}"
    return candidate


def _apply(draw: Callable[[Any], Any], ledger: Ledger, name: str) -> tuple[list[dict[str, Any]], str, tuple[str, str, str]]:
    ev = ledger.event_list()
    ops = ledger.operations

    def pick_op(pred: Callable[[OperationTruth], bool]) -> OperationTruth:
        return draw(st.sampled_from([op for op in ops if pred(op)]))

    if name == "duplicate_event":
        i = draw(st.integers(0, len(ev) - 1))
        j = draw(st.integers(0, len(ev)))
        ev.insert(j, copy.deepcopy(ev[i]))
        return ev, f"copy of {ev[i if j > i else i + 1]['id']} inserted at {j}", ("issue", "duplicate_event_id", ev[j]["id"])

    if name == "reorder_dispatch_before_call":
        op = pick_op(lambda o: o.has_dispatch)
        d = ev.pop(_find(ev, op.dispatch_event_id))  # type: ignore[arg-type]
        c = _find(ev, op.call_event_id)
        j = draw(st.integers(0, c))
        ev.insert(j, d)
        return ev, f"{d['id']} moved to {j}", ("issue", "event_order_conflict", d["id"])

    if name == "reorder_response_before_call":
        op = pick_op(lambda o: o.has_response)
        r = ev.pop(_find(ev, op.response_event_id))  # type: ignore[arg-type]
        c = _find(ev, op.call_event_id)
        j = draw(st.integers(0, c))
        ev.insert(j, r)
        return ev, f"{r['id']} moved to {j}", ("issue", "orphan_response", r["id"])

    if name == "reorder_response_before_dispatch":
        op = pick_op(lambda o: o.has_response and o.has_dispatch)
        r = ev.pop(_find(ev, op.response_event_id))  # type: ignore[arg-type]
        c = _find(ev, op.call_event_id)
        d = _find(ev, op.dispatch_event_id)  # type: ignore[arg-type]
        j = draw(st.integers(c + 1, d))
        ev.insert(j, r)
        return ev, f"{r['id']} moved between call and dispatch", ("issue", "event_order_conflict", op.dispatch_event_id)  # type: ignore[return-value]

    if name == "reorder_reconcile_before_dispatch":
        op = pick_op(lambda o: o.bundle is not None)
        rc = ev.pop(_find(ev, op.reconcile_event_id))  # type: ignore[arg-type]
        d = _find(ev, op.dispatch_event_id)  # type: ignore[arg-type]
        j = draw(st.integers(0, d))
        ev.insert(j, rc)
        return ev, f"{rc['id']} moved to {j}", ("issue", "event_order_conflict", rc["id"])

    if name == "drop_call":
        op = pick_op(lambda o: o.has_dispatch or o.has_response)
        ev.pop(_find(ev, op.call_event_id))
        if op.has_dispatch:
            return ev, f"dropped call {op.call_event_id}", ("issue", "event_order_conflict", op.dispatch_event_id)  # type: ignore[return-value]
        return ev, f"dropped call {op.call_event_id}", ("issue", "orphan_response", op.response_event_id)  # type: ignore[return-value]

    if name == "drop_dispatch_of_bundle":
        op = pick_op(lambda o: o.bundle is not None)
        ev.pop(_find(ev, op.dispatch_event_id))  # type: ignore[arg-type]
        return ev, f"dropped dispatch {op.dispatch_event_id}", ("issue", "event_order_conflict", op.reconcile_event_id)  # type: ignore[return-value]

    if name == "drop_bundle_event":
        op = pick_op(lambda o: o.bundle is not None)
        victims = [op.reconcile_event_id, op.decision_event_id] + ([op.outcome_event_id] if op.outcome_event_id else [])
        victim = draw(st.sampled_from(victims))
        ev.pop(_find(ev, victim))  # type: ignore[arg-type]
        return ev, f"dropped bundle event {victim}", ("decision", "recovery_fact_corruption", op.call_event_id)

    if name == "identity_drift":
        counts: dict[str, list[int]] = {}
        for i, e in enumerate(ev):
            counts.setdefault(e["invocationId"], []).append(i)
        inv = draw(st.sampled_from(sorted(k for k, v in counts.items() if len(v) >= 2)))
        positions = counts[inv]
        k = draw(st.integers(0, len(positions) - 1))
        i = positions[k]
        key = draw(st.sampled_from(("runId", "turnId", "sessionId")))
        ev[i][key] = ev[i][key] + "-drifted"
        # The first event of the invocation fixes its spine; the first disagreeing one is flagged.
        flagged = ev[positions[1]]["id"] if k == 0 else ev[i]["id"]
        return ev, f"{key} of {ev[i]['id']} changed", ("issue", "invocation_identity_conflict", flagged)

    if name == "misplaced_marker":
        i = draw(st.integers(1, len(ev) - 1))
        actions = ev[i].setdefault("actions", {})
        actions["runtimeProtocol"] = {"toolBoundary": T1}
        return ev, f"marker added to event {i}", ("issue", "protocol_marker_invalid", ev[i]["id"])

    if name == "invalid_marker":
        value = draw(st.sampled_from(("future_protocol", "t1_after_preflight_v2", "T1_AFTER_PREFLIGHT_V1", "", " t1_after_preflight_v1")))
        ev[0].setdefault("actions", {})["runtimeProtocol"] = {"toolBoundary": value}
        return ev, f"first event marker = {value!r}", ("issue", "protocol_marker_invalid", ev[0]["id"])

    if name == "flipped_hash":
        op = pick_op(lambda o: o.has_dispatch)
        d = ev[_find(ev, op.dispatch_event_id)]  # type: ignore[arg-type]
        td = d["actions"]["toolDispatch"]
        old = td["canonicalArgsHash"]
        variant = draw(st.sampled_from(("flip", "other_args", "garbage")))
        if variant == "flip":
            pos = draw(st.integers(len("sha256:"), len(old) - 1))
            new_char = "0" if old[pos] != "0" else "1"
            new = old[:pos] + new_char + old[pos + 1 :]
        elif variant == "other_args":
            new = canonical_args_hash(op.tool_name, {"different": [op.args]})
        else:
            new = "sha256:wrong"
        td["canonicalArgsHash"] = new
        return ev, f"hash of {d['id']} {variant}", ("issue", "canonical_args_hash_conflict", d["id"])

    if name == "duplicate_call_id":
        op = pick_op(lambda o: True)
        c = _find(ev, op.call_event_id)
        dup = copy.deepcopy(ev[c])
        dup["id"] = _fresh_id(ev, f"{op.call_event_id}-again")
        if draw(st.booleans()):
            dup["content"]["args"] = {"retry": True}
        j = draw(st.integers(c + 1, len(ev)))
        ev.insert(j, dup)
        return ev, f"second call {dup['id']} for {op.tool_call_id}", ("issue", "duplicate_call", dup["id"])

    if name == "duplicate_response":
        op = pick_op(lambda o: o.has_response)
        r = _find(ev, op.response_event_id)  # type: ignore[arg-type]
        dup = copy.deepcopy(ev[r])
        dup["id"] = _fresh_id(ev, f"{op.response_event_id}-again")
        j = draw(st.integers(r + 1, len(ev)))
        ev.insert(j, dup)
        return ev, f"second response {dup['id']}", ("issue", "duplicate_response", dup["id"])

    if name == "mismatched_names":
        choices = []
        if any(o.has_response for o in ops):
            choices.append("response")
        if any(o.has_dispatch for o in ops):
            choices += ["dispatch", "call"]
        if any(o.has_response and not o.has_dispatch for o in ops):
            choices.append("call_of_pair")
        where = draw(st.sampled_from(choices))
        if where == "response":
            op = pick_op(lambda o: o.has_response)
            e = ev[_find(ev, op.response_event_id)]  # type: ignore[arg-type]
            e["content"]["name"] = op.tool_name + "_renamed"
            return ev, f"response {e['id']} renamed", ("issue", "identity_conflict", e["id"])
        if where == "dispatch":
            op = pick_op(lambda o: o.has_dispatch)
            e = ev[_find(ev, op.dispatch_event_id)]  # type: ignore[arg-type]
            e["actions"]["toolDispatch"]["toolName"] = op.tool_name + "_renamed"
            return ev, f"dispatch {e['id']} renamed", ("issue", "identity_conflict", e["id"])
        if where == "call":
            op = pick_op(lambda o: o.has_dispatch)
            e = ev[_find(ev, op.call_event_id)]
            e["content"]["name"] = op.tool_name + "_renamed"
            return ev, f"call {e['id']} renamed", ("issue", "identity_conflict", op.dispatch_event_id)  # type: ignore[return-value]
        op = pick_op(lambda o: o.has_response and not o.has_dispatch)
        e = ev[_find(ev, op.call_event_id)]
        e["content"]["name"] = op.tool_name + "_renamed"
        return ev, f"call {e['id']} renamed", ("issue", "identity_conflict", op.response_event_id)  # type: ignore[return-value]

    if name == "unbound_t2_response":
        op = pick_op(lambda o: o.has_response and o.has_dispatch)
        e = ev[_find(ev, op.response_event_id)]  # type: ignore[arg-type]
        if draw(st.booleans()):
            e["refs"] = {"toolCallId": op.tool_call_id}
        else:
            e.pop("refs", None)
        return ev, f"refs.operationId removed from {e['id']}", ("issue", "identity_conflict", e["id"])

    if name == "reused_operation_id":
        dispatched = [o for o in ops if o.has_dispatch]
        order = {o.dispatch_event_id: _find(ev, o.dispatch_event_id) for o in dispatched}  # type: ignore[arg-type]
        dispatched.sort(key=lambda o: order[o.dispatch_event_id])
        i = draw(st.integers(1, len(dispatched) - 1))
        first, second = dispatched[draw(st.integers(0, i - 1))], dispatched[i]
        e = ev[order[second.dispatch_event_id]]
        e["actions"]["toolDispatch"]["operationId"] = first.operation_id
        e["refs"]["operationId"] = first.operation_id
        return ev, f"{e['id']} reuses {first.operation_id}", ("issue", "duplicate_operation", e["id"])

    if name in ("lane_smuggling", "partial_tool_fact"):
        i = draw(st.sampled_from([k for k, e in enumerate(ev) if _lane_of(e) != "ordinary"]))
        e = ev[i]
        lane = _lane_of(e)
        if name == "partial_tool_fact":
            e["partial"] = True
            return ev, f"{e['id']} made partial", ("issue", "semantic_lane_conflict", e["id"])
        smuggle = ["status", "branch", "extra_action_key"]
        if lane == "function_call":
            smuggle += ["wrong_role", "artifactDelta", "empty_actions"]
        if lane == "function_response":
            smuggle += ["endInvocation", "wrong_author"]
        if lane in ("tool_dispatch", "recovery"):
            smuggle += ["content", "stepId_ref", "wrong_role"]
        how = draw(st.sampled_from(smuggle))
        if how == "status":
            e["status"] = draw(st.sampled_from(("completed", "streaming", "failed")))
        elif how == "branch":
            e["branch"] = "child-1"
        elif how == "extra_action_key":
            e.setdefault("actions", {})["transferToAgent"] = "other-agent"
        elif how == "wrong_role":
            e["role"] = "tool" if lane == "function_call" else "model"
        elif how == "artifactDelta":
            e.setdefault("actions", {})["artifactDelta"] = {"file": "v2"}
        elif how == "empty_actions":
            e["actions"] = {}
        elif how == "endInvocation":
            e.setdefault("actions", {})["endInvocation"] = True
        elif how == "wrong_author":
            e["author"] = "agent"
        elif how == "content":
            e["content"] = {"kind": "text", "text": "smuggled"}
        elif how == "stepId_ref":
            e["refs"]["stepId"] = "step-1"
        return ev, f"{how} on {lane} event {e['id']}", ("issue", "semantic_lane_conflict", e["id"])

    raise ValueError(f"unknown corruption {name!r}")


@st.composite
def corrupt_ledgers(
    draw: Callable[[Any], Any],
    corruptions: Sequence[str] = CORRUPTIONS,
    **ledger_kwargs: Any,
) -> CorruptLedger:
    """A healthy ledger (``ledger_kwargs`` go to :func:`ledgers`) with one corruption from
    ``corruptions`` applied. The corruption is drawn first, uniformly; a ledger it cannot be
    applied to is rejected (``hypothesis.assume``), so properties using this strategy may
    need ``suppress_health_check=[HealthCheck.filter_too_much]`` for rare corruptions."""
    unknown = set(corruptions) - set(CORRUPTIONS)
    if unknown or not corruptions:
        raise ValueError(f"unknown corruptions: {sorted(unknown)}" if unknown else "no corruption requested")
    # The corruption is chosen first (uniformly), then a ledger it applies to.
    name = draw(_pick(tuple(sorted(set(corruptions), key=CORRUPTIONS.index))))
    kwargs = dict(ledger_kwargs)
    kwargs.setdefault("min_events", 1)
    if name in _NEEDS_BUNDLE:
        kwargs["recovery"] = "always"
    if name in _NEEDS_TWO_DISPATCHES:
        kwargs.setdefault("dispatch_weight", 10)
    base = draw(ledgers(**kwargs))
    from hypothesis import assume

    assume(name in _applicable(base))
    events, detail, witness = _apply(draw, base, name)
    return CorruptLedger(events=tuple(events), corruption=name, detail=detail, witness=witness, base=base)


# =======================================================================================
# Torn JSON lines
# =======================================================================================


@st.composite
def torn_jsonl(draw: Callable[[Any], Any], **ledger_kwargs: Any) -> TornJsonl:
    """The JSON-lines bytes of a non-empty ledger whose last line is cut at a byte offset
    strictly inside it (possibly inside a multi-byte UTF-8 sequence). Lines are compact JSON
    with raw UTF-8 (not necessarily canonical)."""
    ledger_kwargs.setdefault("min_events", 1)
    ledger = draw(ledgers(**ledger_kwargs).filter(lambda l: len(l.events) > 0))
    lines = [_jsonl_line(e).encode("utf-8") for e in ledger.events]
    last = lines[-1]
    kept = draw(st.integers(1, len(last) - 1))
    data = b"".join(line + b"\n" for line in lines[:-1]) + last[:kept]
    return TornJsonl(data=data, ledger=ledger, intact_lines=len(lines) - 1, kept_bytes=kept)


# =======================================================================================
# Garbage
# =======================================================================================


class _Opaque:
    """A non-JSON object that survives ``copy.deepcopy`` as itself (so equality checks of a
    snapshot against the original still hold)."""

    def __deepcopy__(self, memo: dict[int, Any]) -> _Opaque:
        return self

    def __repr__(self) -> str:
        return "<opaque>"


_OPAQUE = _Opaque()
_NAN = float("nan")

_WRONG_VALUES: tuple[Any, ...] = (
    None,
    0,
    -1,
    1.5,
    True,
    False,
    "",
    "x",
    T1,
    [],
    {},
    [None],
    {"kind": "function_call"},
    {"toolBoundary": T1},
    _NAN,
    float("inf"),
    2**70,
    10**400,
    _OPAQUE,
    b"bytes",
    ("tuple",),
    frozenset({1}),
    {1: "non-str key"},
    "\ud800",
)

_GARBAGE_PATHS: tuple[tuple[str, ...], ...] = (
    ("id",),
    ("invocationId",),
    ("runId",),
    ("sessionId",),
    ("turnId",),
    ("ts",),
    ("partial",),
    ("role",),
    ("author",),
    ("status",),
    ("branch",),
    ("modelVisibility",),
    ("content",),
    ("content", "kind"),
    ("content", "id"),
    ("content", "name"),
    ("content", "args"),
    ("content", "result"),
    ("content", "isError"),
    ("actions",),
    ("actions", "runtimeProtocol"),
    ("actions", "runtimeProtocol", "toolBoundary"),
    ("actions", "toolDispatch"),
    ("actions", "toolDispatch", "operationId"),
    ("actions", "toolDispatch", "providerToolCallId"),
    ("actions", "toolDispatch", "toolName"),
    ("actions", "toolDispatch", "canonicalArgsHash"),
    ("actions", "toolDispatch", "recoveryMode"),
    ("actions", "toolRecovery"),
    ("actions", "toolRecovery", "kind"),
    ("actions", "toolRecovery", "payload"),
    ("actions", "toolRecovery", "payload", "operationId"),
    ("actions", "toolRecovery", "payload", "evidenceEventIds"),
    ("actions", "toolRecovery", "payload", "outcomeEventId"),
    ("actions", "toolRecovery", "payload", "disposition"),
    ("actions", "endInvocation"),
    ("actions", "stateDelta"),
    ("refs",),
    ("refs", "operationId"),
    ("refs", "toolCallId"),
    ("refs", "parentToolCallId"),
)


def _set_path(event: dict[str, Any], path: tuple[str, ...], value: Any) -> None:
    node: Any = event
    for key in path[:-1]:
        child = node.get(key) if isinstance(node, dict) else None
        if not isinstance(child, dict):
            child = {}
            node[key] = child
        node = child
    node[path[-1]] = value


def _decode_or_none(event: dict[str, Any]) -> Any:
    try:
        from maka_ref._events.schema import decode_runtime_event
    except ImportError:  # pragma: no cover - the events layer is part of the package
        return None
    try:
        return decode_runtime_event(event)
    except Exception:  # noqa: BLE001 - any refusal just means "keep the raw dict"
        return None


def _wrong_values() -> st.SearchStrategy[Any]:
    # A fresh copy per draw, so no mutable value is shared between examples (NaN and the
    # opaque object survive deepcopy as themselves).
    return st.sampled_from(_WRONG_VALUES).map(copy.deepcopy)


@st.composite
def garbage_event_lists(draw: Callable[[Any], Any], max_extras: int = 4) -> list[Any]:
    """Lists mixing healthy events (raw and decoded/frozen), events with wrong-typed or
    unhashable fields, random JSON values, ``None`` and non-JSON Python objects.

    Non-JSON leaves are chosen so that ``copy.deepcopy`` keeps them equal (NaN and opaque
    objects are shared, not copied), which lets never-mutate properties compare a snapshot.
    """
    base = draw(ledgers(max_turns=2, max_calls=2))
    out: list[Any] = []
    for e in base.events:
        action = draw(st.sampled_from(("keep", "keep", "decoded", "wrong_field", "wrong_field", "drop_key", "replace")))
        if action == "keep":
            out.append(e)
        elif action == "decoded":
            decoded = _decode_or_none(e)
            out.append(decoded if decoded is not None else e)
        elif action == "wrong_field":
            bad = copy.deepcopy(e)
            for _ in range(draw(st.integers(1, 3))):
                _set_path(bad, draw(st.sampled_from(_GARBAGE_PATHS)), draw(_wrong_values()))
            out.append(bad)
        elif action == "drop_key":
            bad = copy.deepcopy(e)
            key = draw(st.sampled_from(sorted(bad)))
            del bad[key]
            out.append(bad)
        else:
            out.append(draw(_wrong_values()))
    extras = draw(
        st.lists(
            st.one_of(
                json_values(max_leaves=6),
                _wrong_values(),
                st.dictionaries(st.sampled_from([p[0] for p in _GARBAGE_PATHS]), _wrong_values(), max_size=6),
            ),
            max_size=max_extras,
        )
    )
    for x in extras:
        out.insert(draw(st.integers(0, len(out))), x)
    return out
