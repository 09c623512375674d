"""Anchor vectors: upstream's own answers on thousands of generated ledgers (``conformance/vectors/anchor/``).

Why: the golden vectors are transcribed from the spec, and the spec was written from one
implementation — upstream Maka (``maka-agent/maka-agent``). Where the spec is silent or
ambiguous, upstream's behaviour is the contract (``docs/upstream.md``). Anchor vectors record
what upstream actually answers — resolution, tool-ledger scan, Phase 0 plan (its free wording
set aside), canonical encodings, argument hashes, prefix digests — on ledgers of every shape
the generators reach, so that any implementation, the reference included, can be checked
against upstream *without* upstream installed (``LEDGER-ANCHOR-*`` clauses; the reference's
own check is ``tests/conformance/vectors/test_anchor_vectors.py``).

Format: one gzip-compressed JSON-lines file per family (``<family>.jsonl.gz``). The first line is
the header ``{"kind": "maka-anchor", "version": 1, "family", "upstream": {"commit", "version",
"node"}, "generator": {...}, "cases": n}``; every other line is one case ``{"id", "tags",
"events", "expect"}``. ``expect`` holds, per operation, upstream's answer in the comparison
form of :func:`answer_form` below:

* ``ledger.resolve``, ``ledger.scan``: the result as upstream returned it;
* ``ledger.plan``: the result without the free wording (``maka_ref.testing.contract``), with
  ``runtimeEvents`` replaced by ``"=events"`` (it must be the input, unchanged) and
  ``replayRuntimeEvents`` by the indexes of the replayed input events;
* ``ledger.encode``: per event, ``{"sha256": <digest of the canonical JSON text>}`` or
  ``{"error": <the part of the message the spec fixes>}``;
* ``ledger.args_hash``: per ``function_call`` event whose name is a string, ``{"index", "hash"}``
  or ``{"index", "error"}``;
* ``ledger.prefix_digest``: for a ledger of one run, the result (``{"ok", "highWater",
  "digest", "eventIds"}`` or ``{"ok": false, "code"}``).

Loading needs nothing but the standard library; comparing uses the plan's contract form.
``python -m conformance._anchor record`` regenerates the files from a running upstream adapter
(``conformance/vectors/README.md``, "Anchor vectors").
"""

from __future__ import annotations

import functools
import gzip
import hashlib
import json
from dataclasses import dataclass
from importlib import resources
from typing import Any, Iterator, Mapping, Sequence

__all__ = [
    "ANCHOR_DIR",
    "AnchorCase",
    "AnchorFile",
    "EVENTS_MARK",
    "anchor_headers",
    "ask",
    "answer_form",
    "check_anchor_case",
    "iter_anchor_cases",
    "load_anchor_file",
    "load_anchor_files",
    "requests_of",
]

ANCHOR_DIR = "anchor"
EVENTS_MARK = "=events"
HEADER_KIND = "maka-anchor"
FORMAT_VERSION = 1
#: The operations recorded per case, in the order their requests are sent.
LEDGER_OPS = ("ledger.resolve", "ledger.scan", "ledger.plan")


@dataclass(frozen=True)
class AnchorCase:
    family: str
    id: str
    tags: tuple[str, ...]
    events: list[Any]
    expect: dict[str, Any]


@dataclass(frozen=True)
class AnchorFile:
    family: str
    header: dict[str, Any]
    cases: tuple[AnchorCase, ...]


def _parse(text: str) -> Any:
    """JSON with IEEE-double numbers (the anchors hold ``-0`` and big integers as upstream saw them)."""
    from conformance.vectors import parse_json_text

    return parse_json_text(text)


def _check_header(name: str, header: Any) -> dict[str, Any]:
    if not isinstance(header, dict) or header.get("kind") != HEADER_KIND or header.get("version") != FORMAT_VERSION:
        raise ValueError(f"{name}: not a version-{FORMAT_VERSION} anchor file")
    return header


def _names() -> list[str]:
    directory = resources.files("conformance").joinpath("vectors", ANCHOR_DIR)
    if not directory.is_dir():
        return []
    return sorted(p.name for p in directory.iterdir() if p.name.endswith(".jsonl.gz"))


def _read(name: str) -> AnchorFile:
    directory = resources.files("conformance").joinpath("vectors", ANCHOR_DIR)
    with directory.joinpath(name).open("rb") as raw, gzip.open(raw, "rt", encoding="utf-8") as handle:
        lines = handle.read().splitlines()
    header = _check_header(name, _parse(lines[0]))
    family = header["family"]
    cases = []
    for line in lines[1:]:
        data = _parse(line)
        cases.append(AnchorCase(family, data["id"], tuple(data.get("tags", ())), data["events"], data["expect"]))
    if len(cases) != header.get("cases"):
        raise ValueError(f"{name}: the header says {header.get('cases')} cases, the file holds {len(cases)}")
    return AnchorFile(family, header, tuple(cases))


@functools.lru_cache(maxsize=1)
def load_anchor_files() -> tuple[AnchorFile, ...]:
    """Every anchor file shipped with the package, in name order (read once per process;
    treat the cases as read-only)."""
    return tuple(_read(name) for name in _names())


@functools.lru_cache(maxsize=1)
def anchor_headers() -> tuple[dict[str, Any], ...]:
    """The header of every anchor file, in name order, reading only each file's first line.

    Why: collecting the ``LEDGER-ANCHOR-*`` clauses needs only the families and case counts;
    decompressing and parsing all cases (≈1.5 s) in every collecting process — the CLI and
    each worker — would add that to every certification, even one ``-k`` selects away."""
    directory = resources.files("conformance").joinpath("vectors", ANCHOR_DIR)
    headers = []
    for name in _names():
        with directory.joinpath(name).open("rb") as raw, gzip.open(raw, "rt", encoding="utf-8") as handle:
            headers.append(_check_header(name, _parse(handle.readline())))
    return tuple(headers)


def load_anchor_file(family: str) -> AnchorFile:
    """The anchor file of one family (all files are read once, on first use)."""
    for anchor_file in load_anchor_files():
        if anchor_file.family == family:
            return anchor_file
    raise KeyError(family)


def iter_anchor_cases(family: str | None = None) -> Iterator[AnchorCase]:
    for anchor_file in load_anchor_files():
        if family is None or anchor_file.family == family:
            yield from anchor_file.cases


# ---------------------------------------------------------------------------------------------
# Requests and the comparison form
# ---------------------------------------------------------------------------------------------


def _args_json(args: Any) -> str:
    return json.dumps(args, ensure_ascii=True, separators=(",", ":"), allow_nan=False)


def _single_run(events: Sequence[Any]) -> bool:
    keys = ("sessionId", "invocationId", "runId", "turnId")
    first = events[0] if events and isinstance(events[0], dict) else None
    return first is not None and all(
        isinstance(e, dict) and all(e.get(k) == first.get(k) for k in keys) for e in events)


def requests_of(events: Sequence[Any], *, prefix_digest: bool | None = None) -> list[tuple[str, dict[str, Any], Any]]:
    """The protocol requests of one case, as ``(op, params, slot)``: ``slot`` says where the
    answer goes in ``expect`` (``None`` for whole-ledger operations, an event index otherwise)."""
    out: list[tuple[str, dict[str, Any], Any]] = [(op, {"events": list(events)}, None) for op in LEDGER_OPS]
    for index, event in enumerate(events):
        out.append(("ledger.encode", {"event": event}, index))
    for index, event in enumerate(events):
        content = event.get("content") if isinstance(event, dict) else None
        if isinstance(content, dict) and content.get("kind") == "function_call" and isinstance(content.get("name"), str):
            try:
                args_json = _args_json(content.get("args"))
            except ValueError:  # a value JSON cannot carry: nothing to send
                continue
            out.append(("ledger.args_hash", {"toolName": content["name"], "argsJson": args_json}, index))
    if prefix_digest if prefix_digest is not None else (events and _single_run(events)):
        out.append(("ledger.prefix_digest", {"events": list(events)}, None))
    return out


#: Requests per ``batch`` line (protocol §4.5).
BATCH = 256


def ask(client: Any, requests: Sequence[tuple[str, dict[str, Any], Any]]) -> list[dict[str, Any]]:
    """Every request's response envelope (``{"ok", "result"|"error"}``), in order.

    ``client`` is anything with ``call(op, params)`` answering a reply with ``ok``, ``result``
    and ``error`` (the suite's implementation session, a crash-lab client). Identical requests
    are sent once: an anchor ledger's events recur across its operations and across cases, and
    every pure operation's answer depends on its params alone. Requests go as ``batch`` lines
    when the implementation offers ``batch`` (optional, protocol §4.5), else one by one."""
    unique: dict[str, int] = {}
    distinct: list[tuple[str, dict[str, Any]]] = []
    slots = []
    for op, params, _ in requests:
        key = json.dumps([op, params], ensure_ascii=True, sort_keys=True)
        if key not in unique:
            unique[key] = len(distinct)
            distinct.append((op, params))
        slots.append(unique[key])
    answers: list[dict[str, Any]] = []
    batching = True
    for start in range(0, len(distinct), BATCH):
        chunk = distinct[start:start + BATCH]
        if batching:
            reply = client.call("batch", {"requests": [{"op": op, "params": params} for op, params in chunk]})
            responses = (reply.result or {}).get("responses") if reply.ok else None
            if isinstance(responses, list) and len(responses) == len(chunk):
                answers.extend(r if isinstance(r, dict) else {"ok": False, "error": {"code": "not_an_object"}}
                               for r in responses)
                continue
            batching = False  # unknown_op (batch is optional): these requests and the rest one by one
        for op, params in chunk:
            reply = client.call(op, params)
            answers.append({"ok": True, "result": reply.result} if reply.ok else {"ok": False, "error": dict(reply.error or {})})
    return [answers[slot] for slot in slots]


def _replay_indexes(events: Sequence[Any], replay: Any) -> Any:
    """The input indexes of ``replay`` (an ordered sub-list of ``events``, compared as JSON),
    or the replay itself when it is not one (so the comparison shows it)."""
    from conformance.vectors import json_equal

    if not isinstance(replay, list):
        return replay
    out, start = [], 0
    for item in replay:
        for index in range(start, len(events)):
            if json_equal(events[index], item):
                out.append(index)
                start = index + 1
                break
        else:
            return {"notAnOrderedSubsetOfTheInput": replay}
    return out


def answer_form(op: str, events: Sequence[Any], response: Mapping[str, Any]) -> Any:
    """One protocol response in the anchors' comparison form (see the module docstring)."""
    from conformance.vectors import json_equal
    from maka_ref.testing.contract import error_message_form, plan_form

    if response.get("ok") is not True:
        error = response.get("error") if isinstance(response.get("error"), Mapping) else {}
        if op in ("ledger.encode", "ledger.args_hash"):  # the spec fixes (part of) the message here
            return {"error": error_message_form(error.get("message"))}
        return {"errorCode": error.get("code")}
    result = response.get("result")
    if op == "ledger.plan" and isinstance(result, Mapping):
        form = dict(plan_form(result))
        form["runtimeEvents"] = EVENTS_MARK if json_equal(result.get("runtimeEvents"), list(events)) \
            else {"differsFromTheInput": result.get("runtimeEvents")}
        form["replayRuntimeEvents"] = _replay_indexes(events, result.get("replayRuntimeEvents"))
        return form
    if op == "ledger.encode" and isinstance(result, Mapping) and isinstance(result.get("canonicalJson"), str):
        return {"sha256": hashlib.sha256(result["canonicalJson"].encode("utf-8", "surrogatepass")).hexdigest()}
    if op == "ledger.args_hash" and isinstance(result, Mapping):
        return {"hash": result.get("hash")}
    return result


def expectation(events: Sequence[Any], answered: Sequence[tuple[tuple[str, dict[str, Any], Any], Mapping[str, Any]]]) -> dict[str, Any]:
    """``expect`` of a case from ``(request, response)`` pairs (see :func:`requests_of`)."""
    expect: dict[str, Any] = {}
    for (op, _params, slot), response in answered:
        form = answer_form(op, events, response)
        if slot is None:
            expect[op] = form
        elif op == "ledger.encode":
            expect.setdefault(op, []).append(form)
        else:
            expect.setdefault(op, []).append({"index": slot, **form})
    return expect


def check_anchor_case(case: AnchorCase, answered: Sequence[tuple[tuple[str, dict[str, Any], Any], Mapping[str, Any]]]) -> list[dict[str, Any]]:
    """The differences between an implementation's answers and upstream's for ``case``: a
    list of ``{"op", "path", "expected", "actual"}`` (empty: it agrees with upstream)."""
    from conformance.reports import diff_json

    actual = expectation(case.events, answered)
    out = []
    for op in sorted(set(case.expect) | set(actual)):
        diff = diff_json(case.expect.get(op), actual.get(op))
        if diff is not None:
            out.append({"op": op, **diff})
    return out
