"""Issue 13 item 3: no command prints a traceback; every failure is one JSON error and exit 2.

Why here and not in the command's own tests: these are the hostile inputs — values the codec
reads but cannot write back, an output stream that refuses bytes or is not there — that a
careless or hostile caller produces, each run through the real console script in a real
process, so what is asserted is what a user sees (stdout, stderr, exit status).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[2] / "maka_ref" / "examples"


def _maka_ref(*args: str, **kwargs: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "maka_ref", *args], capture_output=True, text=True,
                          timeout=60, **kwargs)  # type: ignore[call-overload]


def _ledger_with_huge_number(tmp_path: Path) -> Path:
    text = (EXAMPLES / "legacy-call-only.jsonl").read_text()
    lines = [json.loads(line) for line in text.splitlines()]
    calls = [e for e in lines if e["content"]["kind"] == "function_call"]
    calls[0]["content"]["args"] = {"path": "notes.txt", "content": "@HUGE@"}
    path = tmp_path / "huge.jsonl"
    path.write_text("".join(json.dumps(e) + "\n" for e in lines).replace('"@HUGE@"', "1e400"))
    return path


def test_plan_of_a_ledger_with_1e400_in_args_answers_like_resolve(tmp_path: Path) -> None:
    """Spec 10 §2.4: ``1e400`` parses as +infinity, as JavaScript reads it. ``resolve`` answers
    and ``plan`` must too (the adapter already writes it back as ``1e400``); ``encode`` refuses
    the event (§2.2: not losslessly serializable) with a JSON error, never a traceback."""
    ledger = _ledger_with_huge_number(tmp_path)
    plan = _maka_ref("plan", str(ledger))
    assert "Traceback" not in plan.stderr, plan.stderr
    assert plan.returncode == 0, (plan.returncode, plan.stdout, plan.stderr)
    document = json.loads(plan.stdout)  # Python reads 1e400 back as inf, like JSON.parse
    args = [op["args"] for op in document["operations"]]
    assert {"path": "notes.txt", "content": float("inf")} in args
    assert "1e400" in plan.stdout
    encode = _maka_ref("encode", str(ledger))
    assert encode.returncode == 2 and "Traceback" not in encode.stderr
    assert json.loads(encode.stdout)["error"]["code"] == "invalid_runtime_event"


@pytest.mark.parametrize("how", ["dev-full", "closed"])
def test_an_unwritable_stdout_is_one_error_line_and_exit_2(how: str) -> None:
    """A result that cannot be written is an error (exit 2, ``output_unwritable`` on stderr),
    not a traceback and not a silent success."""
    ledger = str(EXAMPLES / "t1-completed.jsonl")
    if how == "dev-full":
        with open("/dev/full", "w") as full:
            done = subprocess.run([sys.executable, "-m", "maka_ref", "resolve", ledger], stdout=full,
                                  stderr=subprocess.PIPE, text=True, timeout=60)
    else:
        done = subprocess.run([sys.executable, "-c",
                               "import os, sys; os.close(1); sys.argv[0] = 'maka-ref'; "
                               "from maka_ref._cli.main import main; main(sys.argv[1:])", "resolve", ledger],
                              stderr=subprocess.PIPE, text=True, timeout=60)
    assert "Traceback" not in done.stderr, done.stderr
    assert done.returncode == 2, (done.returncode, done.stderr)
    assert done.stderr.count("\n") == 1 and "output_unwritable" in done.stderr, done.stderr


def test_an_unwritable_stdout_and_stderr_still_exit_2() -> None:
    ledger = str(EXAMPLES / "t1-completed.jsonl")
    with open("/dev/full", "w") as full:
        done = subprocess.run([sys.executable, "-m", "maka_ref", "resolve", ledger], stdout=full, stderr=full,
                              timeout=60)
    assert done.returncode == 2


def test_a_closed_pipe_reader_is_still_not_an_error() -> None:
    """``maka-ref demo | head -1`` (the reader leaves early) stays exit 0 without a traceback."""
    done = subprocess.run(f"{sys.executable} -m maka_ref demo | head -c 10 >/dev/null; "
                          "echo ${PIPESTATUS[0]}", shell=True, executable="/bin/bash",
                          capture_output=True, text=True, timeout=60, env={**os.environ})
    assert "Traceback" not in done.stderr, done.stderr
    assert done.stdout.strip() == "0"


def test_an_unmapped_exception_is_internal_error_not_a_traceback(monkeypatch: pytest.MonkeyPatch) -> None:
    """The last line of defence: a bug in a command (here a planted ``RuntimeError``) is still
    one JSON error and exit 2; ``MAKA_REF_TRACEBACK=1`` adds the traceback for debugging."""
    import io

    from maka_ref._cli import main as cli

    def broken(args: object, out: object) -> int:
        raise RuntimeError("planted\nbug")

    monkeypatch.setitem(cli._COMMANDS, "resolve", broken)
    out, err = io.StringIO(), io.StringIO()
    assert cli.run(["resolve", "-"], stdout=out, stderr=err) == 2
    assert json.loads(out.getvalue()) == {"error": {"code": "internal_error", "message": "RuntimeError: planted bug"}}
    assert err.getvalue() == "maka-ref: error: internal_error: RuntimeError: planted bug\n"
    monkeypatch.setenv("MAKA_REF_TRACEBACK", "1")
    err = io.StringIO()
    assert cli.run(["resolve", "-"], stdout=io.StringIO(), stderr=err) == 2
    assert "Traceback" in err.getvalue() and "planted" in err.getvalue()


def test_a_lone_surrogate_in_a_script_runs_and_its_sidecar_reads_back(tmp_path: Path) -> None:
    """A script is JSON, and ``"\\ud800"`` is valid JSON text whose string cannot be encoded as
    UTF-8. The run stores it like any text (the canonical codec escapes it, spec 10 §2.3); the
    script sidecar that a later ``resume`` replays must keep it too (it used to raise
    ``UnicodeEncodeError`` before the run started)."""
    from maka_ref._continuation.sidecar import read_script_sidecar

    workspace = tmp_path / "ws"
    workspace.mkdir()
    script = tmp_path / "s.json"
    script.write_text('{"userMessage": "hi \\ud800 there", "protocol": "t1_after_preflight_v1", '
                      '"steps": [{"text": "ok"}]}')
    done = _maka_ref("run", "--workspace", str(workspace), "--script", str(script))
    assert "Traceback" not in done.stderr and done.returncode == 0, (done.stdout, done.stderr)
    run_id = json.loads(done.stdout)["runId"]
    assert read_script_sidecar(workspace, run_id).to_json()["userMessage"] == "hi \ud800 there"
