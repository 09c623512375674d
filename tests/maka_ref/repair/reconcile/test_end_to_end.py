"""Crash inside an Edit with a real SIGKILL, reconcile, resume (spec-phase3 §5.5, scenario 21).

Real processes only: ``maka-ref run`` armed at a failpoint of the Edit, killed with SIGKILL (the
kill is proven real: -9, reaped, no descendant), then ``maka-ref reconcile``, ``maka-ref repair``
and ``maka-ref resume`` as separate processes. The effect log shows the Edit started once.
"""

from __future__ import annotations

import json
from pathlib import Path

from tests.maka_ref.runtime.support import (
    cli,
    effect_lines,
    kill_and_reap,
    run_until_failpoint,
    write_script,
)

PORT_SCRIPT = {
    "userMessage": "Change the server port in config.json to 9090.",
    "protocol": "t1_after_preflight_v1",
    "steps": [
        {"toolCalls": [{"id": "call-1", "name": "Read", "args": {"path": "config.json"}}]},
        {"toolCalls": [{"id": "call-2", "name": "Edit", "args": {"path": "config.json", "old": "8080", "new": "9090"}}]},
        {"toolCalls": [{"id": "call-3", "name": "Write", "args": {"path": "done.txt", "content": "ok"}}]},
        {"text": "The port is now 9090."},
    ],
}


def crashed_edit(tmp_path: Path, point: str) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "config.json").write_bytes(b'{"port": 8080}\n')
    script_path = write_script(tmp_path, PORT_SCRIPT)
    child = run_until_failpoint(ws, script_path, point, announced=point.split("#")[0])
    kill_and_reap(child)
    return ws


def tools_started(ws: Path) -> list[str]:
    return [line["tool"] for line in effect_lines(ws)]


def test_edit_killed_after_its_rename_is_reconciled_and_resumed_once(tmp_path: Path) -> None:
    ws = crashed_edit(tmp_path, "P4#2")  # the 2nd P4: the Edit's effect done, no T2
    assert (ws / "config.json").read_bytes() == b'{"port": 9090}\n'
    assert tools_started(ws) == ["Read", "Edit"]
    done = cli("reconcile", "--workspace", str(ws))
    assert done.returncode == 0, done.stderr
    [operation] = json.loads(done.stdout)["operations"]
    assert (operation["outcome"], operation["observation"]) == ("completed", "matches_expected_state")
    assert (ws / "config.json").read_bytes() == b'{"port": 9090}\n'
    repaired = cli("repair", "--workspace", str(ws))
    assert repaired.returncode == 0 and "reconciled" not in json.loads(repaired.stdout)  # already settled
    resumed = cli("resume", "--workspace", str(ws), flag=True)
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert json.loads(resumed.stdout)["status"] == "completed"
    assert tools_started(ws) == ["Read", "Edit", "Write"]  # the Edit started exactly once
    assert (ws / "done.txt").read_text() == "ok" and (ws / "config.json").read_bytes() == b'{"port": 9090}\n'


def test_repair_alone_reconciles_before_sealing(tmp_path: Path) -> None:
    ws = crashed_edit(tmp_path, "P4#2")
    repaired = cli("repair", "--workspace", str(ws))
    assert repaired.returncode == 0
    [item] = json.loads(repaired.stdout)["reconciled"]
    assert item["outcome"] == "completed"
    resumed = cli("resume", "--workspace", str(ws), flag=True)
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert tools_started(ws) == ["Read", "Edit", "Write"]


def test_edit_killed_before_its_rename_parks_and_is_never_redone(tmp_path: Path) -> None:
    ws = crashed_edit(tmp_path, "P3#2")  # the Edit's temporary file durable, rename not done
    temps = sorted(p.name for p in ws.iterdir() if p.name.endswith(".tmp"))
    assert len(temps) == 1  # a real kill leaves the temporary file
    done = cli("reconcile", "--workspace", str(ws))
    assert done.returncode == 0
    [operation] = json.loads(done.stdout)["operations"]
    assert (operation["outcome"], operation["reasonCode"]) == ("parked", "reconcile_matches_prior_state")
    assert (ws / "config.json").read_bytes() == b'{"port": 8080}\n'  # no redo
    assert sorted(p.name for p in ws.iterdir() if p.name.endswith(".tmp")) == temps
    assert cli("repair", "--workspace", str(ws)).returncode == 0
    resumed = cli("resume", "--workspace", str(ws), flag=True)
    assert resumed.returncode == 3 and json.loads(resumed.stdout)["parked"] is True
    assert tools_started(ws) == ["Read", "Edit"]
