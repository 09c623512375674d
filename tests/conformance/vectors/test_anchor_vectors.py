"""The reference agrees with upstream on every anchor vector (issue 12 item 5).

``conformance/vectors/anchor/`` holds upstream Maka's answers (recorded from
``maka-agent/maka-agent`` at f19eede03 through ``examples/maka-ts-adapter``) on 5,000+ ledgers
of every generator family. This suite checks the reference in-process against them, so CI
proves agreement with upstream without upstream installed; ``LEDGER-ANCHOR-*`` clauses do the
same for any implementation over the wire protocol.
"""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from conformance.anchors import EVENTS_MARK, anchor_headers, check_anchor_case, iter_anchor_cases, load_anchor_files, requests_of
from maka_ref.adapter._dispatch import Dispatcher

UPSTREAM_COMMIT = "f19eede03a829c226be39f001b2684860a3aa1d5"
FAMILIES = ("corrupt", "edge", "healthy", "truncated", "vectors")


def _answers(dispatcher: Dispatcher, requests: list[Any], cache: dict[str, Any]) -> list[tuple[Any, Any]]:
    out = []
    for request in requests:
        key = json.dumps([request[0], request[1]], ensure_ascii=True, sort_keys=True)
        if key not in cache:
            cache[key] = dispatcher.handle(request[0], request[1])
        out.append((request, cache[key]))
    return out


def test_the_anchor_files_are_upstreams() -> None:
    files = {f.family: f for f in load_anchor_files()}
    assert sorted(files) == list(FAMILIES)
    assert sum(len(f.cases) for f in files.values()) >= 5000
    for f in files.values():
        upstream = f.header["upstream"]
        assert upstream["name"] == "maka-agent" and upstream["commit"] == UPSTREAM_COMMIT, upstream
        assert f.header["cases"] == len(f.cases)
    # collection reads the headers alone: they must be the very headers of the full read
    assert list(anchor_headers()) == [f.header for f in load_anchor_files()]
    # every edge family of the generator is represented
    from maka_ref.testing._strategies.edges import EDGE_FAMILIES

    tags = {t for c in files["edge"].cases for t in c.tags}
    assert set(EDGE_FAMILIES) <= tags, set(EDGE_FAMILIES) - tags


@pytest.mark.parametrize("family", FAMILIES)
def test_the_reference_agrees_with_upstream(family: str) -> None:
    dispatcher, cache = Dispatcher(), {}
    failures = []
    for case in iter_anchor_cases(family):
        diffs = check_anchor_case(case, _answers(dispatcher, requests_of(case.events), cache))
        if diffs:
            failures.append((case.id, case.tags, diffs[0]))
    assert not failures, f"{len(failures)} anchor cases differ; first: {failures[:3]}"


def test_a_difference_is_found_and_located() -> None:
    """The check is not vacuous: an anchor whose recorded answer differs is reported at its path."""
    case = next(c for c in iter_anchor_cases("edge") if c.expect["ledger.resolve"]["decisions"])
    dispatcher = Dispatcher()
    answered = _answers(dispatcher, requests_of(case.events), {})
    assert check_anchor_case(case, answered) == []
    altered = copy.deepcopy(case.expect)
    altered["ledger.resolve"]["decisions"][0]["status"] = "weird"
    altered["ledger.plan"]["runtimeEvents"] = EVENTS_MARK + "!"
    diffs = check_anchor_case(type(case)(case.family, case.id, case.tags, case.events, altered), answered)
    assert [(d["op"], d["path"]) for d in diffs] == [("ledger.plan", "$.runtimeEvents"),
                                                     ("ledger.resolve", "$.decisions[0].status")]


class _Reply:
    def __init__(self, ok: bool, result: Any = None, error: Any = None) -> None:
        self.ok, self.result, self.error = ok, result, error


class _Client:
    """Answers ``echo`` with its params; knows ``batch`` only when told to; records every call."""

    def __init__(self, batching: bool) -> None:
        self.batching, self.calls = batching, []

    def call(self, op: str, params: Any) -> _Reply:
        self.calls.append(op)
        if op == "batch":
            if not self.batching:
                return _Reply(False, error={"code": "unknown_op", "message": "no batch"})
            return _Reply(True, {"responses": [{"ok": True, "result": r["params"]} for r in params["requests"]]})
        return _Reply(True, params)


@pytest.mark.parametrize("batching", [True, False])
def test_ask_sends_each_distinct_request_once_batched_or_not(batching: bool) -> None:
    from conformance.anchors import BATCH, ask

    requests = [("echo", {"n": i % 300}, None) for i in range(900)]  # 300 distinct, each three times
    client = _Client(batching)
    answers = ask(client, requests)
    assert [a["result"]["n"] for a in answers] == [i % 300 for i in range(900)]
    if batching:
        assert client.calls == ["batch"] * -(-300 // BATCH)
    else:  # one refused batch, then every distinct request alone
        assert client.calls == ["batch"] + ["echo"] * 300
