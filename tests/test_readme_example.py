"""The README's worked example (issue 4 "Done means") runs exactly as written.

The script is taken from the README text itself, so the example cannot drift from the
product. Real processes, a real SIGKILL at the failpoint, then fresh processes for repair and
resume.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil

README = Path(__file__).resolve().parents[1] / "README.md"


def _readme_script() -> dict:
    text = README.read_text(encoding="utf-8")
    match = re.search(r"cat > port.json <<'JSON'\n(.*?)\nJSON\n", text, re.S)
    assert match, "README must contain the worked example's script"
    return json.loads(match.group(1))


def _maka_ref(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "maka_ref", *args], capture_output=True, text=True, timeout=60,
                          env={**os.environ, **(env or {})})


def _run_until_failpoint(workspace: Path, script: Path, failpoint: str) -> None:
    proc = subprocess.Popen(
        [sys.executable, "-m", "maka_ref", "run", "--workspace", str(workspace), "--script", str(script)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, env={**os.environ, "MAKA_REF_FAILPOINT": failpoint},
    )
    try:
        assert proc.stderr is not None
        deadline = time.monotonic() + 30
        line = b""
        while time.monotonic() < deadline and not line.startswith(b"MAKA_FAILPOINT"):
            line = proc.stderr.readline()
            if not line and proc.poll() is not None:
                break
        assert line.startswith(b"MAKA_FAILPOINT"), f"failpoint {failpoint} not reached"
        proc.send_signal(signal.SIGKILL)
        assert proc.wait(timeout=10) == -signal.SIGKILL, "the child must die by SIGKILL, not exit"
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=10)
        for stream in (proc.stdout, proc.stderr):
            if stream is not None:
                stream.close()
    assert not psutil.pid_exists(proc.pid) or psutil.Process(proc.pid).status() == psutil.STATUS_ZOMBIE


def _workspace(tmp_path: Path) -> tuple[Path, Path]:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "config.json").write_text('{"port": 8080}\n', encoding="utf-8")
    script = tmp_path / "port.json"
    script.write_text(json.dumps(_readme_script()), encoding="utf-8")
    return ws, script


def test_crash_at_p6_repair_and_resume_finishes_the_change(tmp_path: Path) -> None:
    ws, script = _workspace(tmp_path)
    _run_until_failpoint(ws, script, "P6")
    assert _maka_ref("repair", "--workspace", str(ws)).returncode == 0
    resumed = _maka_ref("resume", "--workspace", str(ws), env={"MAKA_RUNTIME_SAFE_BOUNDARY_RESUME": "1"})
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert json.loads((ws / "config.json").read_text(encoding="utf-8")) == {"port": 9090}
    starts = [json.loads(line)["tool"] for line in (ws / ".maka-effects.jsonl").read_text().splitlines()]
    assert starts == ["Read", "Edit"], "each tool started exactly once across the crash"


def test_crash_inside_the_edit_parks_and_never_reruns_it(tmp_path: Path) -> None:
    ws, script = _workspace(tmp_path)
    _run_until_failpoint(ws, script, "P3#2")
    assert _maka_ref("repair", "--workspace", str(ws)).returncode == 0
    resumed = _maka_ref("resume", "--workspace", str(ws), env={"MAKA_RUNTIME_SAFE_BOUNDARY_RESUME": "1"})
    assert resumed.returncode == 3, resumed.stdout + resumed.stderr
    assert json.loads(resumed.stdout)["rejectionReasons"] == ["runtime_ledger_unreadable"]
    assert json.loads((ws / "config.json").read_text(encoding="utf-8")) == {"port": 8080}
    inspected = json.loads(_maka_ref("inspect", "--workspace", str(ws)).stdout)
    decisions = {d["toolCallId"]: (d["status"], d["reason"]) for d in inspected["runs"][0]["resolution"]["decisions"]}
    assert decisions["call-2"] == ("parked", "reconcile_matches_prior_state")  # repair reconciled it first
    starts = [json.loads(line)["tool"] for line in (ws / ".maka-effects.jsonl").read_text().splitlines()]
    assert starts == ["Read", "Edit"], "the parked Edit was not re-run"


def _readme_commands(failpoint: str) -> list[str]:
    """The shell lines of the README block that arms ``failpoint``."""
    text = README.read_text(encoding="utf-8")
    for block in re.findall(r"```sh\n(.*?)```", text, re.S):
        if f"MAKA_REF_FAILPOINT='{failpoint}'" in block:
            return [line.split("#")[0].strip() if not line.startswith("MAKA_REF_FAILPOINT") else line.strip()
                    for line in block.strip().splitlines()]
    raise AssertionError(f"README has no block arming {failpoint}")


def test_crash_after_the_edit_is_reconciled_and_resumed_once(tmp_path: Path) -> None:
    """The happy ending (issue 16 item 5): the README's own commands, in order."""
    commands = _readme_commands("P4#2")
    assert [c.split()[1] if c.startswith("maka-ref") else c.split()[0] for c in commands[2:]] == [
        "reconcile", "repair", "MAKA_RUNTIME_SAFE_BOUNDARY_RESUME=1", "cat"]
    ws, script = _workspace(tmp_path)
    _run_until_failpoint(ws, script, "P4#2")
    reconciled = _maka_ref("reconcile", "--workspace", str(ws))
    assert reconciled.returncode == 0, reconciled.stdout + reconciled.stderr
    [operation] = json.loads(reconciled.stdout)["operations"]
    assert (operation["outcome"], operation["observation"]) == ("completed", "matches_expected_state")
    assert _maka_ref("repair", "--workspace", str(ws)).returncode == 0
    resumed = _maka_ref("resume", "--workspace", str(ws), env={"MAKA_RUNTIME_SAFE_BOUNDARY_RESUME": "1"})
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert json.loads((ws / "config.json").read_text(encoding="utf-8")) == {"port": 9090}
    inspected = json.loads(_maka_ref("inspect", "--workspace", str(ws)).stdout)
    decisions = {d["toolCallId"]: (d["status"], d["reason"]) for run in inspected["runs"]
                 for d in (run.get("resolution") or {}).get("decisions", [])}
    assert decisions["call-2"] == ("completed", "recovery_bundle_completed")
    starts = [json.loads(line)["tool"] for line in (ws / ".maka-effects.jsonl").read_text().splitlines()]
    assert starts == ["Read", "Edit"], "the Edit started exactly once across the crash"
