"""``runtime.reconcile`` of the reference adapter (docs/protocol.md §4.3.1, spec-phase3 §6), over
the wire: a Write killed at P4 (effect done, no T2) is reconciled in a new process into a
completed bundle without touching the file; a process that does not claim the capability
refuses both the operation and ``runtime.repair``'s ``reconcile`` parameter; the pure
``reconcile.*`` operations answer any input with a code (the golden vectors check their values)."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

from conformance.protocol import validate_response
from conformance.vectors import parse_json_text
from tests.maka_ref.adapter.test_protocol import SCRIPT, TIMEOUT, Adapter, _encode


def _killed_at(tmp_path: Path, point: str) -> dict[str, str]:
    ws = {"workspace": str(tmp_path / "ws")}
    Path(ws["workspace"]).mkdir()
    first = Adapter(tmp_path)
    first.hello()
    first.call("faults.arm", {"failpoint": point})
    first.send("runtime.run_turn", {**ws, "script": SCRIPT})
    assert first.read() == {"failpoint": point}
    assert first.kill() == -signal.SIGKILL
    return ws


def test_reconcile_completes_a_write_killed_after_its_effect_and_never_touches_the_file(tmp_path: Path) -> None:
    ws = _killed_at(tmp_path, "P4")
    target = Path(ws["workspace"]) / "notes.txt"
    stat = target.stat()
    second = Adapter(tmp_path)
    try:
        second.hello()
        result = second.call("runtime.reconcile", ws)
        assert not validate_response("runtime.reconcile", {"id": 0, "ok": True, "result": result})
        [item] = result["operations"]
        assert (item["outcome"], item["observation"], item["reasonCode"]) == (
            "completed", "matches_expected_state", "reconcile_matches_expected_state")
        assert target.read_bytes() == b"after" and target.stat().st_mtime_ns == stat.st_mtime_ns
        again = second.call("runtime.reconcile", {**ws, "operationId": item["operationId"]})
        assert [(i["outcome"], i.get("code")) for i in again["operations"]] == [
            ("already_settled", "reconcile_already_settled")]
        assert second.call("runtime.reconcile", ws) == {"operations": []}
        assert len(second.call("runtime.repair", ws)["repairs"]) == 1  # seals the killed run
        resumed = second.call("runtime.resume", ws)
        assert resumed["parked"] is False, resumed  # the settled Write is past; the turn continues
        effects = (Path(ws["workspace"]) / ".maka-effects.jsonl").read_text().splitlines()
        assert len(effects) == 1
        assert second.close() == 0
    finally:
        if second.proc.poll() is None:
            second.kill()


def test_repair_reconciles_only_when_asked(tmp_path: Path) -> None:
    ws = _killed_at(tmp_path, "P4")
    second = Adapter(tmp_path)
    try:
        second.hello()
        repaired = second.call("runtime.repair", {**ws, "reconcile": True})
        assert [r["outcome"] for r in repaired["reconciled"]] == ["completed"]
        assert second.call("runtime.reconcile", ws) == {"operations": []}
        assert second.call("runtime.repair", {**ws, "reconcile": "yes"}, ok=False)["code"] == "invalid_params"
        assert second.close() == 0
    finally:
        if second.proc.poll() is None:
            second.kill()


def test_unclaimed_reconcile_is_not_claimed(tmp_path: Path) -> None:
    ws = str(tmp_path)
    proc = subprocess.run(
        [sys.executable, "-m", "maka_ref.adapter", "--claim", "runtime.repair"], cwd=tmp_path, timeout=TIMEOUT,
        input=_encode({"id": 0, "op": "hello", "params": {"protocol": 1}})
        + _encode({"id": 1, "op": "runtime.reconcile", "params": {"workspace": ws}})
        + _encode({"id": 2, "op": "runtime.repair", "params": {"workspace": ws, "reconcile": True}}),
        capture_output=True,
    )
    assert proc.returncode == 0
    hello, reconcile, repair = (parse_json_text(line) for line in proc.stdout.decode().splitlines())
    assert "runtime.reconcile" not in hello["result"]["capabilities"]
    assert reconcile["error"]["code"] == "not_claimed" and repair["error"]["code"] == "not_claimed"


def test_pure_reconcile_operations_answer_every_input_with_a_schema_valid_value(tmp_path: Path) -> None:
    """The pure ``reconcile.*`` operations (protocol §4.3.1, spec-phase3 §2, §4.4): garbage is a
    code (a result for decode, binding and classify; an error value for encode, §2.4), never a
    traceback, and every answer matches ``ops.reconcile.schema.json``."""
    from conformance.vectors import iter_vectors

    (worked,) = [v for v in iter_vectors("evidence") if v.id == "evidence/write-canonical-text-and-digest"]
    record = dict(worked.input["evidence"])
    garbage: list[Any] = [None, 1, "x", [], {"protocol": "file_evidence_v1"}, {**record, "before": {"type": "absent", "x": [1]}}]
    requests: list[tuple[str, dict[str, Any], bool]] = []
    for value in garbage:
        requests += [("reconcile.decode_evidence", {"evidence": value}, True),
                     ("reconcile.decode_evidence", {"evidenceJson": value}, True),
                     ("reconcile.encode_evidence", {"evidence": value}, False),
                     ("reconcile.classify", {"evidence": record, "observed": value}, True),
                     ("reconcile.classify", {"evidence": value, "observed": {"type": "absent"}}, True)]
    requests += [("reconcile.decode_evidence", {}, False), ("reconcile.classify", {"evidence": record}, False),
                 ("reconcile.check_binding", {"evidence": record, "callEvent": {"id": 1}, "dispatchEvent": {}}, False)]
    lines = [_encode({"id": 0, "op": "hello", "params": {"protocol": 1}})]
    lines += [_encode({"id": i + 1, "op": op, "params": params}) for i, (op, params, _) in enumerate(requests)]
    proc = subprocess.run([sys.executable, "-m", "maka_ref.adapter"], cwd=tmp_path, timeout=TIMEOUT,
                          input=b"".join(lines), capture_output=True)
    assert proc.returncode == 0, proc.stderr
    replies = [parse_json_text(line) for line in proc.stdout.decode().splitlines()][1:]
    assert len(replies) == len(requests)
    for (op, params, answers), reply in zip(requests, replies):
        assert not validate_response(op, reply), (op, params, reply)
        if answers:
            assert reply["ok"] and reply["result"]["ok"] is False and reply["result"]["code"], (op, params, reply)
        else:
            assert not reply["ok"] and reply["error"]["code"] != "internal_error", (op, params, reply)
    encode_codes = {reply["error"]["code"] for (op, _, _), reply in zip(requests, replies) if op == "reconcile.encode_evidence"}
    assert encode_codes <= {"evidence_not_object", "evidence_missing_key", "evidence_state_invalid"}


def test_read_tool_evidence_answers_the_record_null_or_the_code_of_a_damaged_row(tmp_path: Path) -> None:
    """``store.read_tool_evidence`` (spec-phase3 §3.4, §6): the record T1 committed, ``null`` for an
    operation without one, and a row damaged on disk as the error value of its §2.2 code —
    never a traceback and never a guess."""
    import hashlib
    import sqlite3

    ws = _killed_at(tmp_path, "P4")
    second = Adapter(tmp_path)
    try:
        second.hello()
        [item] = second.call("runtime.reconcile", ws)["operations"]
        answer = second.call("store.read_tool_evidence", {**ws, "operationId": item["operationId"]})
        evidence = answer["evidence"]
        assert (evidence["toolName"], evidence["operationId"]) == ("Write", item["operationId"])
        after = (Path(ws["workspace"]) / "notes.txt").read_bytes()
        assert evidence["expectedAfter"]["contentDigest"] == "sha256:" + hashlib.sha256(after).hexdigest()
        assert answer["evidenceDigest"] == second.call("reconcile.decode_evidence", {"evidence": evidence})["evidenceDigest"]
        assert second.call("store.read_tool_evidence", {**ws, "operationId": "never"}) == {"evidence": None}
        assert second.call("store.read_tool_evidence", {**ws}, ok=False)["code"] == "invalid_params"
        second.call("store.close", ws)
        with sqlite3.connect(Path(ws["workspace"]) / "runtime.sqlite") as db:  # damage the row on disk
            db.execute("UPDATE runtime_tool_evidence SET evidence_json = '{\"protocol\": 1}'")
        damaged = second.call("store.read_tool_evidence", {**ws, "operationId": item["operationId"]}, ok=False)
        assert damaged["code"].startswith("evidence_") and damaged["code"] != "internal_error"
        assert second.close() == 0
    finally:
        if second.proc.poll() is None:
            second.kill()


def test_observe_reads_without_writing(tmp_path: Path) -> None:
    """``reconcile.observe`` (spec-phase3 §4.2): a regular file's state, a bad target as
    ``unreadable``/``target_invalid``, a missing workspace as ``invalid_params``; the file's bytes
    and mtime unchanged (atime is not part of the promise)."""
    target = tmp_path / "ws" / "a.txt"
    target.parent.mkdir()
    target.write_bytes(b"abc")
    before = target.stat()
    adapter = Adapter(tmp_path)
    try:
        adapter.hello()
        ws = str(target.parent)
        observed = adapter.call("reconcile.observe", {"workspace": ws, "targetPath": "a.txt"})["observed"]
        assert (observed["type"], observed["size"], observed["links"]) == ("regular", 3, 1)
        assert adapter.call("reconcile.observe", {"workspace": ws, "targetPath": "../a.txt"})["observed"] == {
            "type": "unreadable", "reason": "target_invalid"}
        missing = adapter.call("reconcile.observe", {"workspace": str(tmp_path / "nope"), "targetPath": "a"}, ok=False)
        assert missing["code"] == "invalid_params"
        assert adapter.close() == 0
    finally:
        if adapter.proc.poll() is None:
            adapter.kill()
    after = target.stat()
    assert (after.st_mtime_ns, after.st_ino, target.read_bytes()) == (before.st_mtime_ns, before.st_ino, b"abc")


def test_t1_evidence_parameter_needs_the_capability(tmp_path: Path) -> None:
    """spec-phase3 §6: T1's ``evidence`` belongs to ``runtime.reconcile``; a process that claims
    only ``store`` answers ``not_claimed`` and writes nothing (never a T1 silently without it)."""
    ws = tmp_path / "ws"
    ws.mkdir()
    proc = subprocess.run(
        [sys.executable, "-m", "maka_ref.adapter", "--claim", "store"], cwd=tmp_path, timeout=TIMEOUT,
        input=_encode({"id": 0, "op": "hello", "params": {"protocol": 1}})
        + _encode({"id": 1, "op": "store.commit_tool_prepared", "params": {"workspace": str(ws), "evidence": {}}}),
        capture_output=True,
    )
    assert proc.returncode == 0
    _, reply = (parse_json_text(line) for line in proc.stdout.decode().splitlines())
    assert reply["error"]["code"] == "not_claimed"
    assert list(ws.iterdir()) == []
