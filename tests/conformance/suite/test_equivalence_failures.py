"""How an equivalence clause reports an implementation that is wrong in several ways (issue 12
item 3): every distinct failure is shrunk on its own and the clause failure shows each one's
example and first difference (before, the report said "Hypothesis found 2 distinct failures"
and nothing else, or showed only one of them).

The implementation here is a small in-process fake (the clause only needs ``maka.call``): the
reference's answers with two independent bugs planted in ``ledger.plan``. A second fake shows
that the robustness clauses (LEDGER-ROBUST-001/002, ill-typed ledgers, answers never compared)
fail an implementation that crashes or answers ``ok: false`` without a code.
"""

from __future__ import annotations

import copy
import re
from types import SimpleNamespace
from typing import Any

import pytest

from conformance.clauses import ClauseMismatch
from conformance.reports import ClauseResult, RunReport, render_html, render_markdown
from conformance.suite.ledger import test_equivalence as equivalence


class TwoBugs:
    """``ledger.plan`` with two bugs: a tool operation's status is always ``not_dispatched``,
    and the high-water of a plan without operations is one too many."""

    def __init__(self) -> None:
        from maka_ref.adapter._dispatch import Dispatcher

        self._reference = Dispatcher()

    def call(self, op: str, params: dict[str, Any] | None = None, **_: Any) -> Any:
        answer = self._reference.handle(op, dict(params or {}))
        result = copy.deepcopy(answer.get("result"))
        if op == "ledger.plan" and answer.get("ok"):
            if result["operations"]:
                result["operations"][0]["status"] = "not_dispatched" if result["operations"][0]["status"] != \
                    "not_dispatched" else "succeeded"
            else:
                result["sourceRuntimeEventHighWater"] += 1
        return SimpleNamespace(ok=answer.get("ok"), result=result, error=answer.get("error"))

    def close(self) -> None:
        self._reference.close()


@pytest.fixture()
def two_bugs() -> Any:
    fake = TwoBugs()
    yield fake
    fake.close()


def test_every_distinct_failure_is_reported_with_its_example_and_first_difference(two_bugs: TwoBugs) -> None:
    with pytest.raises(ClauseMismatch) as caught:
        equivalence.test_plan_equals_reference_generated(two_bugs)
    mismatch = caught.value
    failures = mismatch.evidence["failures"]
    paths = sorted(re.sub(r"\[\d+\]", "[*]", f["diff"]["path"]) for f in failures)
    assert paths == ["$.operations[*].status", "$.sourceRuntimeEventHighWater"]
    assert "Hypothesis found 2 distinct failures" in mismatch.message
    for failure in failures:
        events = failure["example"]["events"]
        assert isinstance(events, list)
        # each example is shrunk for its own failure: an operation for the first bug, none for the second
        has_call = any((e.get("content") or {}).get("kind") == "function_call" for e in events)
        assert has_call == failure["diff"]["path"].startswith("$.operations")
        assert f"first difference at {failure['diff']['path']}" in mismatch.message
    assert mismatch.message.count("example: {\"events\"") == 2
    assert mismatch.diff == failures[0]["diff"]

    # and the reports show them: the message (every failure) and the first one's diff
    clause = ClauseResult("LEDGER-EQUIV-005", "ledger.plan", "ledger", "failed", message=mismatch.message,
                          diff=mismatch.diff, evidence=mismatch.evidence)
    report = RunReport("test", {"name": "two-bugs", "capabilities": ["ledger.plan"]}, [clause]).finalized()
    for text in (render_markdown(report), render_html(report)):
        for failure in failures:
            assert f"first difference at {failure['diff']['path']}" in text


def test_a_single_kind_of_failure_stays_one_plain_mismatch(two_bugs: TwoBugs) -> None:
    """Resolve is not broken in the fake: the edge clause passes. A property with one kind of
    failure (one path) reports that failure alone, with its diff, as before."""
    from maka_ref.testing.strategies import ledgers

    equivalence.test_resolve_equals_reference_edge(two_bugs)

    def only_operations(events: Any) -> None:
        if two_bugs.call("ledger.plan", {"events": events}).result["operations"]:
            raise ClauseMismatch("plan differs at $.operations[0].status",
                                 diff={"path": "$.operations[0].status", "expected": "a", "actual": "b"},
                                 evidence={"events": events})

    with pytest.raises(ClauseMismatch) as caught:
        equivalence._property(lambda: ledgers().map(lambda l: list(l.events)), only_operations, "a ledger")
    assert "distinct failures" not in caught.value.message
    assert caught.value.diff == {"path": "$.operations[0].status", "expected": "a", "actual": "b"}
    assert len(caught.value.evidence["events"]) >= 2  # the shrunk example: a user event and a call


class FragileOnIllTypedLedgers:
    """The reference, except that it "crashes" (the session's verdict) on a tool name that is
    not a string, and answers ``ok: false`` without a code to a recovery fact without payload."""

    def __init__(self) -> None:
        from maka_ref.adapter._dispatch import Dispatcher

        self._reference = Dispatcher()

    def call(self, op: str, params: dict[str, Any] | None = None, **_: Any) -> Any:
        events = (params or {}).get("events") or []
        contents = [e.get("content") for e in events if isinstance(e, dict) and isinstance(e.get("content"), dict)]
        if any("name" in c and not isinstance(c["name"], str) for c in contents):
            raise ClauseMismatch(f"the implementation misbehaved on {op}: exited: exit status 1",
                                 evidence={"verdict": "exited"})
        facts = [(e.get("actions") or {}).get("toolRecovery") for e in events
                 if isinstance(e, dict) and isinstance(e.get("actions"), dict)]
        if any(isinstance(f, dict) and "payload" not in f for f in facts):
            return SimpleNamespace(ok=False, result=None, error={"code": "", "message": "no payload"})
        answer = self._reference.handle(op, dict(params or {}))
        return SimpleNamespace(ok=answer.get("ok"), result=answer.get("result"), error=answer.get("error"))


def test_the_robustness_clauses_fail_an_implementation_that_does_not_answer() -> None:
    fragile = FragileOnIllTypedLedgers()
    with pytest.raises(ClauseMismatch) as caught:
        equivalence.test_resolve_and_scan_answer_ill_typed_ledgers(fragile)
    message = caught.value.message
    assert "Hypothesis found 2 distinct failures" in message, message
    assert "exited" in message and "answered ok: false without a code" in message
    with pytest.raises(ClauseMismatch):
        equivalence.test_plan_answers_ill_typed_ledgers(fragile)
