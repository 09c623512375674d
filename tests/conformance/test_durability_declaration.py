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
