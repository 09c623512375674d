"""The ``maka-ref`` command line (issue 2, item 3).

Expected values are the spec's: e.g. ``[M, C, D, O]`` resolves to
completed/matching_response/normal_t2 (spec 10 §7.7 #67) and ``[M, C, D]`` is indeterminate,
blocked, with a verification directive (spec 10 §6.3 row 4b, spec 20 §1.5).
"""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path

import pytest

from maka_ref._cli.main import run
from maka_ref.testing import families as f


def _write_ledger(path: Path, events: list[dict]) -> Path:
    path.write_text("".join(json.dumps(e, ensure_ascii=False) + "\n" for e in events), encoding="utf-8")
    return path


def _run(argv: list[str], stdin: str | None = None, monkeypatch: pytest.MonkeyPatch | None = None) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    if stdin is not None:
        assert monkeypatch is not None
        monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(stdin.encode("utf-8"))))
    code = run(argv, stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


def test_resolve_prints_the_resolution_object(tmp_path: Path) -> None:
    """Spec 10 §7.7 #67: [M, C, D, O] → completed/matching_response/normal_t2."""
    ledger = _write_ledger(tmp_path / "l.jsonl", [f.w_marker(), f.w_call(), f.w_dispatch(), f.w_outcome()])
    code, out, err = _run(["resolve", str(ledger)])
    assert code == 0 and err == ""
    doc = json.loads(out)
    assert doc == {
        "toolBoundaryProtocol": "t1_after_preflight_v1",
        "decisions": [
            {
                "toolCallId": "provider-call-1",
                "toolName": "Write",
                "operationId": "operation-1",
                "status": "completed",
                "reason": "matching_response",
                "settlementOrigin": "normal_t2",
                "callRuntimeEventId": "call-event-1",
                "dispatchRuntimeEventId": "dispatch-event-1",
                "responseRuntimeEventId": "outcome-event-1",
                "responseIsError": False,
            }
        ],
        "issues": [],
        "hasCorruption": False,
        "requiresReconciliation": False,
    }
    assert out.count("\n") == 1, "one JSON document on one line"


def test_plan_prints_the_resume_plan_with_events(tmp_path: Path) -> None:
    """Spec 20 §1.1/§1.5: a dispatched call without response blocks and carries the directive."""
    events = [f.w_marker(), f.w_call(), f.w_dispatch()]
    ledger = _write_ledger(tmp_path / "l.jsonl", events)
    code, out, _ = _run(["plan", str(ledger)])
    assert code == 0
    plan = json.loads(out)
    assert plan["disposition"] == "blocked"
    assert plan["requiresVerification"] is True
    assert "directive" in plan
    assert plan["rejectionReasons"] == ["dangling_tool_state"]
    assert plan["sourceRuntimeEventHighWater"] == 3
    assert [e["id"] for e in plan["runtimeEvents"]] == ["initial-1", "call-event-1", "dispatch-event-1"]
    assert "call-event-1" not in [e["id"] for e in plan["replayRuntimeEvents"]]


def test_plan_expected_high_water_mismatch(tmp_path: Path) -> None:
    """Spec 20 §8 #8: [user] with expected high-water 2 → blocked, runtime_offset_mismatch."""
    ledger = _write_ledger(tmp_path / "l.jsonl", [f.r_initial()])
    code, out, _ = _run(["plan", str(ledger), "--expected-high-water", "2"])
    assert code == 0
    plan = json.loads(out)
    assert plan["disposition"] == "blocked"
    assert plan["rejectionReasons"] == ["runtime_offset_mismatch"]
    assert [d["code"] for d in plan["diagnostics"]] == ["runtime_offset_mismatch"]


def test_stdin_is_accepted(monkeypatch: pytest.MonkeyPatch) -> None:
    """LEDGER may be ``-``: the ledger is read from stdin."""
    text = json.dumps(f.r_initial()) + "\n"
    code, out, _ = _run(["resolve", "-"], stdin=text, monkeypatch=monkeypatch)
    assert code == 0
    assert json.loads(out)["decisions"] == []


def test_torn_last_line_is_an_error_not_a_shorter_prefix(tmp_path: Path) -> None:
    """Spec 20 §1.8: a torn row is storage corruption, never a committed prefix."""
    good = json.dumps(f.w_marker()) + "\n"
    torn = json.dumps(f.w_call())[:40]
    path = tmp_path / "torn.jsonl"
    path.write_text(good + torn, encoding="utf-8")
    code, out, err = _run(["plan", str(path)])
    assert code == 2
    doc = json.loads(out)
    assert doc["error"]["code"] == "invalid_json"
    assert doc["error"]["line"] == 2
    assert err.startswith("maka-ref: error: invalid_json") and err.count("\n") == 1


def test_schema_violation_is_invalid_runtime_event(tmp_path: Path) -> None:
    """Spec 10 §7.2 #21: ``status: null`` is a schema error."""
    bad = f.with_fields(f.w_call(), status=None)
    ledger = _write_ledger(tmp_path / "l.jsonl", [f.w_marker(), bad])
    code, out, _ = _run(["resolve", str(ledger)])
    assert code == 2
    assert json.loads(out)["error"]["code"] == "invalid_runtime_event"
    assert json.loads(out)["error"]["line"] == 2


def test_unreadable_input(tmp_path: Path) -> None:
    code, out, err = _run(["resolve", str(tmp_path / "missing.jsonl")])
    assert code == 2
    assert json.loads(out)["error"]["code"] == "unreadable_input"
    assert "line" not in json.loads(out)["error"]
    assert err


def test_usage_errors_use_the_error_envelope() -> None:
    code, out, err = _run(["plan"])
    assert code == 2
    assert json.loads(out)["error"]["code"] == "usage"
    code, out, _ = _run(["plan", "x.jsonl", "--expected-high-water", "-1"])
    assert code == 2 and json.loads(out)["error"]["code"] == "usage"
    code, out, _ = _run(["frobnicate"])
    assert code == 2 and json.loads(out)["error"]["code"] == "usage"


def test_encode_prints_golden_canonical_json(tmp_path: Path) -> None:
    """Spec 10 §2.2: the first golden encoding, byte for byte."""
    raw = {"turnId": "turn-1", "ts": 100, "sessionId": "sess-1", "runId": "run-1", "role": "system",
           "partial": False, "invocationId": "inv-1", "id": "evt-1", "author": "system"}
    ledger = _write_ledger(tmp_path / "l.jsonl", [raw])
    code, out, _ = _run(["encode", str(ledger)])
    assert code == 0
    assert out == (
        '{"author":"system","id":"evt-1","invocationId":"inv-1","partial":false,"role":"system",'
        '"runId":"run-1","sessionId":"sess-1","ts":100,"turnId":"turn-1"}\n'
    )


def test_encode_refuses_negative_zero(tmp_path: Path) -> None:
    """Spec 10 §2.4: ``ts: -0`` is not encodable."""
    path = tmp_path / "l.jsonl"
    path.write_text(json.dumps(f.r_initial()).replace('"ts": 1', '"ts": -0') + "\n", encoding="utf-8")
    code, out, _ = _run(["encode", str(path)])
    assert code == 2
    assert json.loads(out)["error"]["code"] == "invalid_runtime_event"


def test_args_hash_vector() -> None:
    """Spec 10 §2.6: hash(Write, {content, path}) in any key order."""
    code, out, _ = _run(["args-hash", "Write", '{"path":"notes.txt","content":"after"}'])
    assert code == 0
    assert out == "sha256:763712445cbfb7feebe3bd4ba14e29425f05e40b8cd14aef0896853dca24b4d9\n"


def test_args_hash_errors() -> None:
    code, out, _ = _run(["args-hash", "", "{}"])
    assert code == 2 and json.loads(out)["error"]["code"] == "invalid_tool_args"
    code, out, _ = _run(["args-hash", "X", "{not json"])
    assert code == 2 and json.loads(out)["error"]["code"] == "invalid_json"


def test_demo_runs_every_bundled_example() -> None:
    """The README's first command: every bundled example resolves and plans."""
    code, out, _ = _run(["demo"])
    assert code == 0
    assert out.count("== ") == 7
    assert "t1-completed.jsonl" in out and "plan: safe_replay" in out
    assert "corrupt-duplicate-call.jsonl" in out and "duplicate_call" in out


def test_python_dash_m_runs_in_a_real_process(tmp_path: Path) -> None:
    """``python -m maka_ref`` is the same command (a real child process, real exit code)."""
    ledger = _write_ledger(tmp_path / "l.jsonl", [f.w_marker(), f.w_call()])
    proc = subprocess.run(
        [sys.executable, "-m", "maka_ref", "resolve", str(ledger)], capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 0, proc.stderr
    decision = json.loads(proc.stdout)["decisions"][0]
    assert (decision["status"], decision["reason"]) == ("definitely_not_dispatched", "new_protocol_before_dispatch")


def test_reader_closing_the_pipe_early_is_not_a_crash() -> None:
    """``maka-ref demo | head -1``: no traceback, exit 0 (a real pipe closed by the reader).

    The output (hundreds of ledgers) is far larger than a pipe buffer, so the writer really
    hits the closed pipe.
    """
    from maka_ref._cli.demo import bundled_examples

    example = str(bundled_examples()[0][0])
    proc = subprocess.Popen(
        [sys.executable, "-m", "maka_ref", "demo", *([example] * 400)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdout is not None and proc.stderr is not None
    first = proc.stdout.readline()
    proc.stdout.close()
    stderr = proc.stderr.read()
    code = proc.wait(timeout=60)
    assert first.startswith(b"== ")
    assert b"Traceback" not in stderr
    assert code == 0
