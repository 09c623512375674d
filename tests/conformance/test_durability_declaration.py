"""The handshake's ``durability`` (protocol §3, issue 15 item 4): how an implementation makes
its files durable. The schema accepts exactly its shape, the reference declares it, and a
certification records it in ``report.json`` so a platform matrix can show it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from conformance.protocol import validate_response

BASE = {"protocol": 1, "implementation": {"name": "x", "version": "1"}, "capabilities": []}


def _errors(result: dict[str, Any]) -> list[str]:
    return validate_response("hello", {"id": 0, "ok": True, "result": result})


def test_the_field_is_optional_and_its_shape_is_checked() -> None:
    assert _errors(dict(BASE)) == []
    assert _errors({**BASE, "durability": {"sync": "F_FULLFSYNC", "directorySync": False}}) == []
    assert _errors({**BASE, "durability": {"sync": "fsync", "directorySync": True, "details": "WAL, FULL"}}) == []


@pytest.mark.parametrize("durability", [
    {"directorySync": True},  # no sync
    {"sync": "", "directorySync": True},  # an empty name
    {"sync": "fsync", "directorySync": "yes"},  # not a boolean
    {"sync": "fsync"},  # no directorySync
    "fsync",  # not an object
])
def test_a_malformed_declaration_is_a_protocol_violation(durability: Any) -> None:
    assert _errors({**BASE, "durability": durability}), durability


def test_the_reference_declares_it_and_the_report_records_it(tmp_path: Path) -> None:
    from conformance.certify import certify

    certify(None, report_dir=tmp_path, workers=0, keyword="args-hash/array-args")
    implementation = json.loads((tmp_path / "report.json").read_text())["implementation"]
    durability = implementation["durability"]
    assert durability["sync"] == "fsync" and durability["directorySync"] is True
    assert "synchronous=FULL" in durability["details"]


#: The reference with another (or no) durability declaration: ``DURABILITY`` is what ``hello`` sends.
_DECLARING = '''
import sys
from maka_ref.adapter import _dispatch
from maka_ref.adapter._server import main
value = {value}
_hello = _dispatch.Dispatcher.hello
def hello(self, params):
    result = _hello(self, params)
    result.pop("durability")
    if value is not None:
        result["durability"] = value
    return result
_dispatch.Dispatcher.hello = hello
main(sys.argv[1:])
'''


def _clause(tmp_path: Path, value: Any) -> dict[str, Any]:
    import shlex
    import sys

    from conformance.certify import certify

    adapter = tmp_path / "adapter.py"
    adapter.write_text(_DECLARING.format(value=repr(value)))
    certify(f"{shlex.quote(sys.executable)} {shlex.quote(str(adapter))}", report_dir=tmp_path / "report", workers=0,
            keyword="STORE-DURABILITY-001")
    [found] = [c for c in json.loads((tmp_path / "report" / "report.json").read_text())["clauses"]
               if c["clause_id"] == "STORE-DURABILITY-001"]
    return found


def test_the_clause_passes_the_reference(tmp_path: Path) -> None:
    found = _clause(tmp_path, {"sync": "fsync", "directorySync": True})
    assert found["outcome"] == "passed" and found["capability"] == "store" and found["level"] == "durable", found
    markdown = (tmp_path / "report" / "report.md").read_text()
    assert "- Durability (declared): fsync, directories synced" in markdown
    assert "Durability (declared)" in (tmp_path / "report" / "report.html").read_text()


@pytest.mark.parametrize("value, words", [
    ({}, "declares no durability"),  # the sentinel below: no field at all
    ({"sync": "none", "directorySync": False}, "is 'none'"),
])
def test_an_undeclared_or_null_sync_fails_the_clause_with_the_fix(tmp_path: Path, value: Any, words: str) -> None:
    found = _clause(tmp_path, value or None)
    assert found["outcome"] == "failed" and words in found["message"], found
    if value is None or not value:
        assert "- Durability (declared): not declared" in (tmp_path / "report" / "report.md").read_text()
