"""The scripted provider: script format (JSON Schema), step selection from history, exhaustion,
and step selection from a durable history read in a new process (issue 4 item 1)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from maka_ref._runtime import (
    ScriptedProvider,
    ScriptError,
    ScriptExhaustedError,
    count_model_steps,
    load_script,
    script_schema,
)
from maka_ref._runtime.provider import SCHEMA_RESOURCE

from tests.maka_ref.runtime.support import LEGACY, T1, script, write_script

REPO = Path(__file__).resolve().parents[3]


def _model(event_id: str, step: str | None, kind: str = "text", **extra: Any) -> dict[str, Any]:
    content: dict[str, Any] = {"kind": "text", "text": "hi"}
    if kind == "function_call":
        content = {"kind": "function_call", "id": event_id, "name": "Read", "args": {"path": "a"}}
    event: dict[str, Any] = {"id": event_id, "role": "model", "author": "agent", "partial": False, "content": content}
    if step is not None:
        event["refs"] = {"stepId": step}
    event.update(extra)
    return event


USER = {"id": "u", "role": "user", "author": "user", "partial": False, "content": {"kind": "text", "text": "go"}}
RESPONSE = {"id": "r", "role": "tool", "author": "tool", "partial": False,
            "content": {"kind": "function_response", "id": "c", "name": "Read", "result": 1}}
DISPATCH = {"id": "d", "role": "system", "author": "system", "partial": False, "actions": {"toolDispatch": {}}}


def test_schema_file_is_a_valid_2020_12_schema_and_standalone() -> None:
    schema = script_schema()
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    text = (REPO / "maka_ref" / "_runtime" / SCHEMA_RESOURCE).read_text(encoding="utf-8")
    assert "conformance" not in text  # independent of the conformance package
    refs = [part.split('"')[0] for part in text.split('"$ref": "')[1:]]
    assert refs and all(ref.startswith("#/$defs/") for ref in refs)  # self-contained
    assert set(schema["properties"]) == {"userMessage", "protocol", "steps"}
    assert schema["properties"]["protocol"]["enum"] == [T1, LEGACY]


def test_load_from_path_and_mapping(tmp_path: Path) -> None:
    value = script(LEGACY, [{"toolCalls": [{"id": "c1", "name": "Read", "args": {"path": "a"}},
                                           {"id": "c2", "name": "X", "args": [1]}]}, {"text": "bye"}])
    loaded = load_script(write_script(tmp_path, value))
    assert loaded == load_script(value)
    assert loaded.protocol == LEGACY and loaded.user_message == "write the notes"
    assert [s.ends_turn for s in loaded.steps] == [False, True]
    assert [c.id for c in loaded.steps[0].tool_calls] == ["c1", "c2"]
    assert loaded.steps[0].tool_calls[1].args == [1]  # any JSON: preflight, not the loader, refuses it
    assert loaded.steps[1].text == "bye"
    assert loaded.to_json() == value


@pytest.mark.parametrize(
    ("value", "fragment"),
    [
        ({"protocol": T1, "steps": [{"text": "x"}]}, "userMessage"),
        ({"userMessage": "u", "protocol": "t2", "steps": [{"text": "x"}]}, "protocol"),
        ({"userMessage": "u", "protocol": T1, "steps": []}, "steps"),
        ({"userMessage": "u", "protocol": T1, "steps": [{"text": "x", "toolCalls": []}]}, "steps/0"),
        ({"userMessage": "u", "protocol": T1, "steps": [{"toolCalls": []}]}, "steps/0"),
        ({"userMessage": "u", "protocol": T1, "steps": [{"toolCalls": [{"id": "c", "name": "W"}]}]}, "steps/0"),
        ({"userMessage": "u", "protocol": T1, "steps": [{"text": ""}]}, "steps/0"),
        ({"userMessage": "u", "protocol": T1, "steps": [{"text": "x"}], "extra": 1}, "(root)"),
    ],
)
def test_schema_violations(value: dict[str, Any], fragment: str) -> None:
    with pytest.raises(ScriptError) as info:
        load_script(value)
    assert info.value.code == "invalid_script"
    assert fragment in info.value.message


def test_duplicate_call_ids_and_non_strict_args(tmp_path: Path) -> None:
    call = {"id": "c1", "name": "Read", "args": {"path": "a"}}
    with pytest.raises(ScriptError, match="reuses provider tool-call id 'c1'"):
        load_script(script(T1, [{"toolCalls": [call]}, {"toolCalls": [call]}, {"text": "x"}]))
    path = tmp_path / "neg.json"
    path.write_text('{"userMessage":"u","protocol":"legacy","steps":[{"toolCalls":'
                    '[{"id":"c","name":"Read","args":{"n":-0}}]},{"text":"x"}]}')
    with pytest.raises(ScriptError, match="not strict JSON"):
        load_script(path)


@pytest.mark.parametrize("text", ["{", '{"userMessage": NaN}', "\ufeff{}"])
def test_not_json(tmp_path: Path, text: str) -> None:
    path = tmp_path / "bad.json"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ScriptError) as info:
        load_script(path)
    assert info.value.code == "invalid_script"


def test_unreadable_script(tmp_path: Path) -> None:
    with pytest.raises(ScriptError) as info:
        load_script(tmp_path / "missing.json")
    assert info.value.code == "script_unreadable"


def test_count_model_steps_by_step_id() -> None:
    assert count_model_steps([]) == 0
    assert count_model_steps([USER]) == 0
    # one step with two calls, interleaved with dispatch and response (the T1 history shape)
    step0 = [_model("c1", "s0", "function_call"), DISPATCH, RESPONSE, _model("c2", "s0", "function_call"), RESPONSE]
    assert count_model_steps([USER, *step0]) == 1
    assert count_model_steps([USER, *step0, _model("t", "s1")]) == 2
    # partial, hidden, empty-text and error events are not model steps
    ignored = [
        _model("p", "s9", partial=True),
        _model("h", "s8", modelVisibility="hidden"),
        {**_model("e", "s7"), "content": {"kind": "text", "text": ""}},
        {**_model("x", "s6"), "content": {"kind": "error", "message": "m"}},
    ]
    assert count_model_steps([USER, *step0, *ignored]) == 1
    assert count_model_steps([USER, 42, None, "x"]) == 0  # never raises


def test_count_model_steps_without_step_ids() -> None:
    """Fallback: one step per maximal run of consecutive model events without a stepId."""
    a, b, c = _model("a", None), _model("b", None, "function_call"), _model("c", None)
    assert count_model_steps([USER, a, b]) == 1
    assert count_model_steps([USER, a, b, RESPONSE, c]) == 2


def test_provider_answers_step_n_and_exhausts() -> None:
    loaded = load_script(script(T1, [{"toolCalls": [{"id": "c", "name": "Read", "args": {}}]}, {"text": "end"}]))
    provider = ScriptedProvider(loaded, record=True)
    assert provider.next_step([USER]).index == 0
    assert provider.next_step([USER, _model("c", "s0", "function_call"), RESPONSE]).index == 1
    assert provider.next_step([USER, _model("c", "s0", "function_call"), RESPONSE]).text == "end"
    with pytest.raises(ScriptExhaustedError) as info:
        provider.next_step([USER, _model("c", "s0", "function_call"), RESPONSE, _model("t", "s1")])
    assert info.value.code == "script_exhausted"
    assert "2 step(s)" in info.value.message and "model step 2" in info.value.message
    assert len(provider.calls) == 4  # it records what it was asked with


_NEW_PROCESS_PROBE = """
import json, sqlite3, sys
from maka_ref._runtime import ScriptedProvider, load_script
from maka_ref._store.runtime_store import RuntimeStore
root, script_path = sys.argv[1], sys.argv[2]
conn = sqlite3.connect(f"file:{root}/runtime.sqlite?mode=ro", uri=True)
session_id, run_id = conn.execute("SELECT session_id, run_id FROM agent_runs").fetchone()
conn.close()
store = RuntimeStore.open_read_only(root)
events = store.read_run_events(session_id, run_id)
step = ScriptedProvider(load_script(script_path)).next_step(events)
print(json.dumps({"index": step.index, "text": step.text, "events": len(events)}))
"""


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX SIGKILL semantics")
@pytest.mark.parametrize("protocol", [T1, LEGACY])
def test_step_selection_from_durable_history_in_a_new_process(tmp_path: Path, protocol: str) -> None:
    """A run is killed at P7 (step 0's result committed and handed on); a *fresh* process
    rebuilds the history from the store and the provider answers step 1 (the text step)."""
    from tests.maka_ref.runtime.support import run_until_failpoint

    workspace = tmp_path / "ws"
    workspace.mkdir()
    script_path = write_script(tmp_path, script(protocol))
    child = run_until_failpoint(workspace, script_path, "P7")
    child.send_signal(signal.SIGKILL)
    assert child.wait(timeout=30) == -signal.SIGKILL
    probe = subprocess.run(
        [sys.executable, "-c", _NEW_PROCESS_PROBE, str(workspace), str(script_path)],
        capture_output=True, text=True, timeout=60, cwd=str(REPO), env=dict(os.environ, PYTHONPATH=str(REPO)),
    )
    assert probe.returncode == 0, probe.stderr
    answer = json.loads(probe.stdout)
    assert answer["index"] == 1 and answer["text"] == "done"
    assert answer["events"] == (4 if protocol == T1 else 3)  # user, call, [dispatch,] response
