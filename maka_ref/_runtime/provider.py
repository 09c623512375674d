"""The scripted provider: a deterministic stand-in for a model, across processes.

Why scripted: the crash lab kills the loop mid-turn and a continuation later resumes it in a
*new process*. A real model cannot be asked "what did you say at step 2 last time"; a script
can, provided the step to answer is derived from durable facts only. So the provider keeps no
state at all: it answers the n-th model step with ``steps[n]``, where ``n`` is the number of
model steps already present in the history it is given (:func:`count_model_steps`). A fresh
process that rebuilds the history from the store therefore picks up exactly the right step.

Script format (``script.schema.json``, JSON Schema 2020-12, checked with ``jsonschema``)::

    {"userMessage": "...", "protocol": "t1_after_preflight_v1" | "legacy",
     "steps": [{"text": "..."} | {"toolCalls": [{"id", "name", "args"}, ...]}, ...]}

A step may also carry ``expectSystemText`` (strings): the provider then refuses to answer it
(``script_expectation_unmet``) unless the history it is given holds a ``role: system`` text
event containing each — a test's way to prove a runtime notice reached the model.

A text-only step ends the turn. Beyond the schema, provider tool-call ids must be unique
within the script (one invocation scopes call ids; a repeat would be ``duplicate_call``
corruption in the ledger). Asking past the last step raises :class:`ScriptExhaustedError`.

Counting model steps (:func:`count_model_steps`): a model step is the group of model events
the runtime committed for one provider answer. Our runtime stamps every model event of step
``n`` with ``refs.stepId = <runId>_step<n>``, so the count is the number of distinct step ids
among non-partial, model-visible ``role: model`` events. Model events without a ``stepId``
(foreign or legacy ledgers) fall back to one step per maximal run of consecutive such events.
"""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import Any, Final, Literal

import jsonschema

from maka_ref._codec.frozen import freeze
from maka_ref._codec.jsontext import check_strict_json, parse_json
from maka_ref._errors import InvalidJSONTextError, NotStrictJSONError
from maka_ref._events.predicates import has_model_visible_content
from maka_ref._runtime._schemacheck import Predicate, compile_schema
from maka_ref._runtime.errors import RuntimeLoopError, ScriptError, ScriptExhaustedError

__all__ = [
    "LEGACY_PROTOCOL",
    "PROTOCOLS",
    "SCHEMA_RESOURCE",
    "T1_PROTOCOL",
    "ModelStep",
    "Script",
    "ScriptedProvider",
    "ToolCallRequest",
    "count_model_steps",
    "load_script",
    "script_schema",
]

T1_PROTOCOL: Final = "t1_after_preflight_v1"
LEGACY_PROTOCOL: Final = "legacy"
PROTOCOLS: Final = (T1_PROTOCOL, LEGACY_PROTOCOL)
SCHEMA_RESOURCE: Final = "script.schema.json"
#: A script larger than this is refused before parsing (a guard, not a format rule).
MAX_SCRIPT_BYTES: Final = 16 * 1024 * 1024

Protocol = Literal["t1_after_preflight_v1", "legacy"]


@dataclass(frozen=True, slots=True)
class ToolCallRequest:
    """One provider tool call: provider call ``id``, tool ``name`` and raw ``args`` (any JSON)."""

    id: str
    name: str
    args: Any


@dataclass(frozen=True, slots=True)
class ModelStep:
    """The provider's answer for model step ``index``: text (ends the turn) or tool calls."""

    index: int
    text: str | None
    tool_calls: tuple[ToolCallRequest, ...]
    #: Strings a role-system text event of the history must contain before this step is
    #: answered (``expectSystemText``): how a test asserts that a runtime notice reached the model.
    expect_system_text: tuple[str, ...] = ()

    @property
    def ends_turn(self) -> bool:
        return not self.tool_calls


@dataclass(frozen=True, slots=True)
class Script:
    """A validated script (see the module docstring)."""

    user_message: str
    protocol: Protocol
    steps: tuple[ModelStep, ...]

    def to_json(self) -> dict[str, Any]:
        steps: list[dict[str, Any]] = []
        for step in self.steps:
            if step.ends_turn:
                item: dict[str, Any] = {"text": step.text}
            else:
                item = {"toolCalls": [{"id": c.id, "name": c.name, "args": c.args} for c in step.tool_calls]}
            if step.expect_system_text:
                item["expectSystemText"] = list(step.expect_system_text)
            steps.append(item)
        return {"userMessage": self.user_message, "protocol": self.protocol, "steps": steps}


@lru_cache(maxsize=1)
def script_schema() -> Mapping[str, Any]:
    """The JSON Schema of a script (shipped next to this module)."""
    text = resources.files("maka_ref._runtime").joinpath(SCHEMA_RESOURCE).read_text(encoding="utf-8")
    schema = json.loads(text)
    jsonschema.Draft202012Validator.check_schema(schema)
    return schema


@lru_cache(maxsize=1)
def _validator() -> jsonschema.Draft202012Validator:
    return jsonschema.Draft202012Validator(script_schema())


@lru_cache(maxsize=1)
def _fast_check() -> Predicate | None:
    """The compiled exact check of the script schema (:mod:`maka_ref._runtime._schemacheck`)."""
    return compile_schema(script_schema())


def _schema_error(value: Any) -> "jsonschema.ValidationError | None":
    """``jsonschema``'s best error for ``value``, skipped when the compiled check says valid."""
    check = _fast_check()
    if check is not None and check(value):
        return None
    return jsonschema.exceptions.best_match(_validator().iter_errors(value))


def _read_script_text(path: str | os.PathLike[str]) -> str:
    """The script's text: a regular file (a symlink to one is fine) of at most
    :data:`MAX_SCRIPT_BYTES`. Opened with ``O_NONBLOCK`` and checked with ``fstat`` on the open
    descriptor, so a FIFO (which would block the open), a device or a directory is refused
    (``script_not_regular_file``) before anything is read."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except IsADirectoryError:
        fd = None
    except OSError as exc:
        raise ScriptError(f"Cannot read script {os.fspath(path)}: {exc.strerror or exc}", code="script_unreadable") from None
    if fd is None or not stat.S_ISREG(os.fstat(fd).st_mode):
        if fd is not None:
            os.close(fd)
        raise ScriptError(f"Script {os.fspath(path)} is not a regular file", code="script_not_regular_file")
    try:
        with os.fdopen(fd, "rb") as handle:
            data = handle.read(MAX_SCRIPT_BYTES + 1)
    except OSError as exc:
        raise ScriptError(f"Cannot read script {os.fspath(path)}: {exc.strerror or exc}", code="script_unreadable") from None
    if len(data) > MAX_SCRIPT_BYTES:
        raise ScriptError(f"Script {os.fspath(path)} is larger than {MAX_SCRIPT_BYTES} bytes")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ScriptError(f"Script {os.fspath(path)} is not UTF-8", detail=str(exc)) from None


def load_script(source: "Script | Mapping[str, Any] | str | os.PathLike[str]") -> Script:
    """Load and validate a script from a path, a JSON-like mapping, or an existing :class:`Script`.

    Text is parsed with the codec's strict JSON reader (no NaN/Infinity, JavaScript number
    semantics), then validated against ``script.schema.json``; raises :class:`ScriptError`.
    """
    if isinstance(source, Script):
        return source
    if isinstance(source, Mapping):
        value: Any = source
    else:
        text = _read_script_text(source)
        try:
            value = parse_json(text)
        except InvalidJSONTextError as exc:
            raise ScriptError(f"Script is not JSON: {exc.message}", detail=exc.detail) from None
    error = _schema_error(value)
    if error is not None:
        where = "/".join(str(part) for part in error.absolute_path) or "(root)"
        raise ScriptError(f"Script does not match script.schema.json at {where}: {error.message}", detail=where)
    steps: list[ModelStep] = []
    seen_ids: set[str] = set()
    for index, raw in enumerate(value["steps"]):
        expect = tuple(raw.get("expectSystemText", ()))
        if "text" in raw:
            steps.append(ModelStep(index, raw["text"], (), expect))
            continue
        calls: list[ToolCallRequest] = []
        for position, call in enumerate(raw["toolCalls"]):
            if call["id"] in seen_ids:
                raise ScriptError(
                    f"Script reuses provider tool-call id {call['id']!r}",
                    code="invalid_script",
                    detail=f"steps/{index}/toolCalls/{position}/id",
                )
            seen_ids.add(call["id"])
            try:  # the call event must be losslessly encodable (no -0, NaN, ±Infinity)
                check_strict_json(call["args"], negative_zero="reject")
            except NotStrictJSONError as exc:
                raise ScriptError(
                    f"Script tool-call arguments are not strict JSON: {exc.message}",
                    detail=f"steps/{index}/toolCalls/{position}/args{exc.detail or ''}",
                ) from None
            calls.append(ToolCallRequest(call["id"], call["name"], freeze(call["args"])))
        steps.append(ModelStep(index, None, tuple(calls), expect))
    return Script(value["userMessage"], value["protocol"], tuple(steps))


def count_model_steps(history: Sequence[Any]) -> int:
    """The number of model steps already in ``history`` (see the module docstring). Never raises."""
    step_ids: set[str] = set()
    anonymous = 0
    in_anonymous_run = False
    for event in history:
        if not _is_model_step_event(event):
            in_anonymous_run = False
            continue
        refs = event.get("refs")
        step_id = refs.get("stepId") if isinstance(refs, dict) or isinstance(refs, Mapping) else None
        if isinstance(step_id, str) and step_id:
            step_ids.add(step_id)
            in_anonymous_run = False
        elif not in_anonymous_run:
            anonymous += 1
            in_anonymous_run = True
    return len(step_ids) + anonymous


def _is_model_step_event(event: Any) -> bool:
    return (
        (isinstance(event, dict) or isinstance(event, Mapping))  # dict first: no ABC check in the hot case
        and event.get("role") == "model"
        and event.get("partial") is not True
        and has_model_visible_content(event)
    )


class ScriptedProvider:
    """Answers model steps from a :class:`Script`; stateless apart from an optional record of
    the histories it was asked with (``calls``), which tests use to prove what was handed on."""

    def __init__(self, script: Script, *, record: bool = False) -> None:
        self.script = script
        self._record = record
        self.calls: list[tuple[Any, ...]] = []

    def next_step(self, history: Sequence[Any]) -> ModelStep:
        """``steps[n]`` for ``n = count_model_steps(history)``; past the end → ScriptExhaustedError."""
        if self._record:
            self.calls.append(tuple(history))
        index = count_model_steps(history)
        if index >= len(self.script.steps):
            raise ScriptExhaustedError(
                f"The script has {len(self.script.steps)} step(s) but model step {index} was requested "
                "(the last step must be a text-only step that ends the turn)",
                detail=f"steps/{index}",
            )
        step = self.script.steps[index]
        if step.expect_system_text:
            _check_system_text(history, step)
        return step


def _check_system_text(history: Sequence[Any], step: ModelStep) -> None:
    """``expectSystemText``: every string occurs in some non-partial ``role: system`` text event
    of ``history`` (what the model was shown), else the run fails ``script_expectation_unmet``."""
    texts = [
        event["content"].get("text", "") for event in history
        if isinstance(event, Mapping) and event.get("role") == "system" and event.get("partial") is not True
        and isinstance(event.get("content"), Mapping) and event["content"].get("kind") == "text"
    ]
    missing = [wanted for wanted in step.expect_system_text if not any(wanted in text for text in texts)]
    if missing:
        raise RuntimeLoopError(
            f"model step {step.index} expected a system notice containing {missing[0]!r}; the history holds "
            f"{len(texts)} system text event(s)", code="script_expectation_unmet", detail=f"steps/{step.index}")
