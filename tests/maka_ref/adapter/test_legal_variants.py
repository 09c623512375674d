"""Legal variants (issue 12): a correct implementation that words what the spec leaves free
differently must be certified, never failed.

Spec 20 §1.1 fixes the directive only through ``/Do not retry/i`` and ``/read-only/i``; §1.3
fixes diagnostic codes and their order, not their messages; §2 fixes a failpoint's id and
committed prefix, not its ``boundary`` paraphrase; protocol §2.2 compares errors by code.
Upstream's wording differs from the reference's in exactly these places, and the harness
used to fail it there (LEDGER-EQUIV-002/005/007, STORE-PROJ-004, STORE-REOPEN-003,
PHASE0-CRASH-P1…P4, CRASH-P1…P4, RUNTIME-CRASH-*: 25 clauses on the ``reworded`` variant).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from conformance._selftest import list_variants, variant_command
from conformance.certify import certify
from maka_ref.testing.contract import DIRECTIVE_PATTERNS, answer_form, directive_form, plan_form

#: The clauses that compare plans, failpoint catalogues or projected runs (each once failed
#: the ``reworded`` variant), at CI size.
WORDING_CLAUSES = ("EQUIV-002 or EQUIV-005 or EQUIV-007 or STORE-PROJ-004 or STORE-REOPEN-003 or PHASE0-CRASH "
                   "or CRASH-P3-prefix-kill or RUNTIME-CRASH-P3-t1 or failpoint-catalog")


def test_the_reworded_variant_really_rewords() -> None:
    from crashlab import ProtocolClient

    with ProtocolClient.start(variant_command("reworded").split()) as client:
        events = [{"id": "u", "invocationId": "i", "runId": "r", "sessionId": "s", "turnId": "t", "ts": 1,
                   "partial": False, "role": "user", "author": "user", "content": {"kind": "text", "text": "go"}},
                  {"id": "c", "invocationId": "i", "runId": "r", "sessionId": "s", "turnId": "t", "ts": 2,
                   "partial": False, "role": "model", "author": "agent",
                   "content": {"kind": "function_call", "id": "k", "name": "Bash", "args": {}}}]
        plan = client.call("ledger.plan", {"events": events}).result
        assert plan["diagnostics"][0] == {"code": "pending_tool_result", "message": "variant wording for pending_tool_result",
                                          "eventId": "c", "toolCallId": "k", "toolName": "Bash"}
        assert plan["directive"].startswith("VARIANT")
        catalogue = client.call("ledger.failpoint_catalog", {}).result
        assert catalogue["failpoints"][0]["boundary"] == "variant boundary of P0"
        refused = client.call("store.open", {"workspace": "/nonexistent/x", "readOnly": True})
        assert not refused.ok and refused.error["message"].startswith("variant message")


def test_the_harness_certifies_the_reworded_variant(tmp_path: Path) -> None:
    result = certify(variant_command("reworded"), keyword=WORDING_CLAUSES, workers=2, report_dir=tmp_path / "r")
    assert result.harness_error is None
    outcomes = {c.clause_id: c.outcome for r in result.reports for c in r.clauses}
    assert len(outcomes) >= 12, outcomes
    assert {o for o in outcomes.values()} == {"passed"}, {c: o for c, o in outcomes.items() if o != "passed"}


def test_the_harness_certifies_upstreams_choices(tmp_path: Path) -> None:
    """An unknown tool admitted through T1 and answered by T2 (spec 30 §6.5 does not list it as
    a preflight refusal), and a repaired header whose ``completedAt`` is after its terminal fact
    (spec 20 §4.1 step 3 does not say whose ts): upstream's choices, which the harness used to
    fail (RUNTIME-TOOLS-003, RECOVERY-REPAIR-004)."""
    result = certify(variant_command("upstream-choices"), keyword="RUNTIME-TOOLS-003 or RECOVERY-REPAIR-004",
                     workers=2, report_dir=tmp_path / "r")
    assert result.harness_error is None
    outcomes = {c.clause_id: c.outcome for r in result.reports for c in r.clauses}
    assert outcomes == {"RUNTIME-TOOLS-003": "passed", "RECOVERY-REPAIR-004": "passed"}, outcomes


def test_upstream_choices_really_differ(tmp_path: Path) -> None:
    from crashlab import ProtocolClient

    ws = tmp_path / "ws"
    ws.mkdir()
    script = {"userMessage": "go", "protocol": "t1_after_preflight_v1",
              "steps": [{"toolCalls": [{"id": "u", "name": "Frobnicate", "args": {"path": "x"}}]}, {"text": "done"}]}
    with ProtocolClient.start(variant_command("upstream-choices").split()) as client:
        turn = client.call("runtime.run_turn", {"workspace": str(ws), "script": script}).result
        (call,) = turn["toolCalls"]
        assert (call["toolName"], call["status"], call["boundary"], call["implementationStarted"]) == (
            "Frobnicate", "error", "t1_t2", False)
        run = client.call("store.project", {"workspace": str(ws)}).result["runs"][0]
    dispatched = [e for e in run["events"] if "toolDispatch" in (e.get("actions") or {})]
    assert len(dispatched) == 1  # admitted through T1
    assert not (ws / ".maka-effects.jsonl").exists() or (ws / ".maka-effects.jsonl").read_text() == ""


def test_plan_form_keeps_codes_and_drops_wording() -> None:
    plan = {"disposition": "blocked", "diagnostics": [{"code": "pending_tool_result", "message": "words", "eventId": "c"}],
            "directive": "Do not retry. Use read-only tools."}
    assert plan_form(plan) == {"disposition": "blocked", "diagnostics": [{"code": "pending_tool_result", "eventId": "c"}],
                               "directive": "<directive matching /Do not retry/i and /read-only/i>"}
    assert plan["diagnostics"][0]["message"] == "words"  # the input is not modified
    assert directive_form("retry freely with read-only tools") == "<directive not matching /Do not retry/i>"
    assert directive_form("nothing") == "<directive not matching /Do not retry/i, /read-only/i>"
    assert DIRECTIVE_PATTERNS == ("Do not retry", "read-only")
    # a code that differs still differs
    other = {**plan, "diagnostics": [{"code": "tool_not_dispatched", "message": "words", "eventId": "c"}]}
    assert plan_form(other) != plan_form(plan)
    assert answer_form("ledger.failpoint_catalog", {"failpoints": [{"id": "P0", "boundary": "b", "committedPrefix": "x"}]}) \
        == {"failpoints": [{"id": "P0", "committedPrefix": "x"}]}
    assert answer_form("ledger.resolve", {"x": 1}) == {"x": 1}


def test_selftest_reports_a_false_alarm(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A variant that fails a clause makes the self-test fail and names the clause."""
    from types import SimpleNamespace

    import conformance.certify
    from conformance._selftest import SelftestResult
    from conformance._selftest._run import _certify_variants

    calls = []

    def fake_certify(impl: str, **kw: object) -> SimpleNamespace:
        calls.append((impl, kw["keyword"]))
        clauses = [SimpleNamespace(clause_id="LEDGER-EQUIV-002", outcome="failed"),
                   SimpleNamespace(clause_id="LEDGER-EQUIV-001", outcome="passed"),
                   SimpleNamespace(clause_id="STORE-OPEN-001", outcome="not_claimed")]
        return SimpleNamespace(harness_error=None, duration_s=1.0,
                               reports=[SimpleNamespace(clauses=clauses, harness_errors=[])])

    monkeypatch.setattr(conformance.certify, "certify", fake_certify)
    outcomes = _certify_variants(["reworded"], full=False, workers=1, root=tmp_path, request_timeout=5,
                                 run_timeout=5, on_variant=None)
    assert calls == [(variant_command("reworded"), list_variants()[0]["keyword"])]
    (v,) = outcomes
    assert (v.status, v.false_alarms, v.clauses_run) == ("false_alarm", ["LEDGER-EQUIV-002"], 2)
    result = SelftestResult("default", "1", [], [], variants=outcomes)
    assert result.exit_code == 1
    data = result.to_json()
    assert data["falseAlarms"] == {"reworded": ["LEDGER-EQUIV-002"]}
    assert "| `reworded` |" in result.render_markdown() and "`LEDGER-EQUIV-002`" in result.render_markdown()
    assert [v["name"] for v in list_variants()] == ["reworded", "upstream-choices"]
