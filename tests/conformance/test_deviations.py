"""Known upstream deviations (issue 12): the table in ``conformance/deviations.py`` and
``docs/deviations.md`` agree, every clause a deviation names exists, and a failure of such a
clause carries the explanation in its message (so every report shows it)."""

from __future__ import annotations

import re
from pathlib import Path
from types import SimpleNamespace

from conformance._suite.recording import Recorder
from conformance.deviations import DEVIATIONS, deviation_for, note_for

DOC = Path(__file__).resolve().parents[2] / "docs" / "deviations.md"


def test_the_doc_lists_every_deviation_and_its_clauses() -> None:
    text = DOC.read_text(encoding="utf-8")
    table_ids = re.findall(r"^\| \[(D-\d+)\]", text, flags=re.M)
    assert table_ids == [d.id for d in DEVIATIONS]
    for d in DEVIATIONS:
        assert f"## {d.id}\n" in text
        section = text.split(f"## {d.id}\n", 1)[1].split("\n## ", 1)[0]
        for clause_id in d.clauses:
            assert f"`{clause_id}`" in section, (d.id, clause_id)


def test_every_named_clause_exists(tmp_path: Path) -> None:
    from conformance._suite.catalogue import collect_clauses

    ids = {c["clauseId"] for c in collect_clauses()}
    for d in DEVIATIONS:
        for clause_id in d.clauses:
            assert clause_id in ids or any(i.startswith(clause_id) for i in ids), clause_id


def test_a_failure_carries_the_explanation() -> None:
    assert deviation_for("STORE-REOPEN-005") is DEVIATIONS[0]
    assert deviation_for("STORE-REOPEN-004") is None and note_for("LEDGER-EQUIV-001") == ""
    recorder = Recorder(None)
    report = SimpleNamespace(nodeid="n", when="call", passed=False, failed=True, skipped=False, duration=0.1,
                             longrepr="boom", user_properties=[
                                 ("maka_clause", {"clauseId": "STORE-SCHEMA-002"}),
                                 ("maka_message", "a refused read-only open changed ledger files")])
    recorder.on_report(report, "local")
    (record,) = recorder.records.values()
    assert record.outcome == "failed"
    assert record.message.startswith("a refused read-only open changed ledger files\n\nKnown upstream deviation D-1")
    assert "sqlite-runtime-store.ts:288" in record.message and "§10 #33" in record.message
