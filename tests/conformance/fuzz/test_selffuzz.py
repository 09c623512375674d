"""``maka-conformance fuzz --self`` (issue 7 item 4; docs/fuzzing.md "Fuzzing the reference itself").

A small budgeted run of every target is clean on the reference; a planted bug is found, shrunk
and written as a bundle; reads leave a corrupted store byte-identical; and the two read-path
bugs the self-fuzzer found stay fixed.
"""

from __future__ import annotations

import base64
import hashlib
import io
import json
import os
from pathlib import Path
from typing import Any

import pytest

from conformance._cli.main import run as cli_run
from conformance._fuzz._selffuzz import io as sio
from conformance._fuzz._selffuzz.core import SelfFuzzConfig, run_self_fuzz
from maka_ref._store import RuntimeStore, StoreError


def _run(tmp_path: Path, targets: tuple[str, ...], examples: int, seed: int = 7, budget: float | None = None) -> Any:
    out = io.StringIO()
    config = SelfFuzzConfig(examples=examples, seed=seed, time_budget=budget, report_dir=str(tmp_path / "report"),
                            targets=targets)
    return run_self_fuzz(config, out), out.getvalue()


@pytest.mark.parametrize("targets, examples", [(("codec", "ledger"), 60), (("store",), 60), (("adapter",), 60)])
def test_small_run_is_clean(tmp_path: Path, targets: tuple[str, ...], examples: int) -> None:
    result, text = _run(tmp_path, targets, examples)
    assert result.exit_code == 0, text
    assert text.startswith("maka-conformance fuzz --self: seed 7 (re-run with --seed 7)")
    summary = json.loads((tmp_path / "report" / "selffuzz.json").read_text())
    assert summary["seed"] == 7 and summary["bundles"] == []
    for name in targets:
        assert summary["targets"][name]["examples"] >= 1
    assert not (tmp_path / "report" / ".self-workspaces").exists()
    assert sorted(os.listdir(tmp_path)) == ["report"]  # nothing written outside the report directory


def test_planted_decoder_bug_is_found_shrunk_and_bundled(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import maka_ref

    real = maka_ref.decode_runtime_event

    def planted(value: Any) -> Any:
        if isinstance(value, list) and len(value) >= 2:
            raise KeyError("planted")
        return real(value)

    monkeypatch.setattr(maka_ref, "decode_runtime_event", planted)
    result, text = _run(tmp_path, ("codec",), 300, seed=11, budget=20)
    assert result.exit_code == 1, text
    assert "seed 11" in text and "FINDING in decode_runtime_event" in text
    [path] = result.bundles
    bundle = json.loads(Path(path).read_text())
    assert bundle["format"] == "maka-selffuzz-bundle/1" and bundle["seed"] == 11
    assert bundle["target"] == "codec" and bundle["check"] == "decode_runtime_event"
    assert bundle["exception"] == "builtins.KeyError" and "planted" in bundle["traceback"]
    value = bundle["input"]
    if isinstance(value, dict) and set(value) == {"base64"}:  # found as bytes: the JSON text of a list
        value = json.loads(base64.b64decode(value["base64"]))
    assert isinstance(value, list) and len(value) == 2  # shrunk to the smallest list that triggers it
    assert all(not isinstance(item, (list, dict)) for item in value)


def test_cli_self_flag(tmp_path: Path) -> None:
    out, err = io.StringIO(), io.StringIO()
    argv = ["fuzz", "--self", "--only-target", "codec", "--examples", "20", "--seed", "5", "--report-dir", str(tmp_path / "r")]
    assert cli_run(argv, stdout=out, stderr=err) == 0, out.getvalue() + err.getvalue()
    assert "seed 5" in out.getvalue()
    assert json.loads((tmp_path / "r" / "selffuzz.json").read_text())["targets"]["codec"]["examples"] >= 1
    assert cli_run(["fuzz", "--self", "--impl", "x", "--report-dir", str(tmp_path / "r")], stdout=out, stderr=err) == 2


def _hashes(root: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(root.iterdir())}


@pytest.fixture(scope="module")
def images(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, bytes]]:
    return sio.build_images(str(tmp_path_factory.mktemp("images")))


@pytest.mark.parametrize("image, corruption", [
    ("closed", {"kind": "flip", "file": "runtime.sqlite", "offset": 0, "length": 1, "data": b"\x00"}),
    ("closed", {"kind": "zero_page", "file": "runtime.sqlite", "offset": 2 * sio.PAGE, "length": 1, "data": b"\x00"}),
    ("closed", {"kind": "truncate", "file": "runtime.sqlite", "offset": 5000, "length": 1, "data": b"\x00"}),
    ("wal", {"kind": "overwrite", "file": "runtime.sqlite-wal", "offset": 32 + 24, "length": 8, "data": b"\xff" * 8}),
    ("wal", {"kind": "truncate", "file": "runtime.sqlite", "offset": 0, "length": 1, "data": b"\x00"}),
    ("wal", {"kind": "truncate", "file": "runtime.sqlite", "offset": 1, "length": 1, "data": b"\x00"}),
])
def test_reads_leave_corrupted_files_byte_identical(tmp_path: Path, images: Any, image: str, corruption: Any) -> None:
    case = {"image": image, "corruptions": [corruption]}
    sio.check_store(case, images, str(tmp_path))  # raises Finding on an escape or a changed file
    ws = tmp_path / "ws"
    ws.mkdir()
    for name, data in images[image].items():
        (ws / name).write_bytes(sio.corrupt(data, corruption) if name == corruption["file"] else data)
    before = _hashes(ws)
    try:
        RuntimeStore.open_read_only(ws).close()
    except StoreError:
        pass
    after = _hashes(ws)
    after.pop("runtime.sqlite-shm", None)
    assert after == before


# ----------------------------------------------------------------- regressions found by the self-fuzzer

def test_read_only_open_of_a_non_database_is_database_corrupt(tmp_path: Path, images: Any) -> None:
    """Was a bare ``sqlite3.DatabaseError: file is not a database`` (adapter: internal_error)."""
    data = bytearray(images["closed"]["runtime.sqlite"])
    data[0] ^= 0xFF
    (tmp_path / "runtime.sqlite").write_bytes(bytes(data))
    with pytest.raises(StoreError) as info:
        RuntimeStore.open_read_only(tmp_path)
    assert info.value.code == "database_corrupt"


def test_read_only_reads_of_a_malformed_database_are_database_corrupt(tmp_path: Path, images: Any) -> None:
    data = bytearray(images["closed"]["runtime.sqlite"])
    page = sio.PAGE
    for start in range(2 * page, len(data), page):  # every page but the schema: tables unreadable
        data[start:start + page] = b"\xa5" * page
    (tmp_path / "runtime.sqlite").write_bytes(bytes(data))
    try:
        store = RuntimeStore.open_read_only(tmp_path)
    except StoreError as exc:
        assert exc.code == "database_corrupt"
        return
    try:
        with pytest.raises(StoreError) as info:
            store.read_run_events("session-1", "run-1")
        assert info.value.code == "database_corrupt"
    finally:
        store.close()


@pytest.mark.parametrize("size", [0, 1])
def test_read_only_open_never_deletes_the_wal_of_an_empty_main_file(tmp_path: Path, images: Any, size: int) -> None:
    """SQLite deletes the ``-wal`` of an empty (0/1-byte) main file even through ``mode=ro``."""
    (tmp_path / "runtime.sqlite").write_bytes(images["wal"]["runtime.sqlite"][:size])
    (tmp_path / "runtime.sqlite-wal").write_bytes(images["wal"]["runtime.sqlite-wal"])
    before = _hashes(tmp_path)
    with pytest.raises(StoreError) as info:
        RuntimeStore.open_read_only(tmp_path)
    assert info.value.code == "database_corrupt"
    assert _hashes(tmp_path) == before


def test_adapter_read_only_open_of_a_corrupt_store_is_a_stable_error(tmp_path: Path, images: Any) -> None:
    from maka_ref.adapter._dispatch import Dispatcher
    from maka_ref.adapter._server import respond

    (tmp_path / "runtime.sqlite").write_bytes(b"not a database" * 400)
    dispatcher = Dispatcher()
    try:
        line = json.dumps({"id": 1, "op": "store.open", "params": {"workspace": str(tmp_path), "readOnly": True}})
        response = respond(dispatcher, line.encode())
    finally:
        dispatcher.close()
    assert response["ok"] is False and response["error"]["code"] == "database_corrupt"


@pytest.mark.parametrize("op", ["runtime.repair", "runtime.resume", "store.open", "store.project"])
@pytest.mark.parametrize("path", ["\\u0000", "/tmp/a\\u0000b", "/tmp/\\ud800"])
def test_adapter_unusable_workspace_path_is_invalid_params(op: str, path: str) -> None:
    """Was ``internal_error`` (``ValueError: embedded null byte`` / an unencodable surrogate)."""
    from maka_ref.adapter._dispatch import Dispatcher
    from maka_ref.adapter._server import respond

    dispatcher = Dispatcher()
    try:
        line = '{"id": 3, "op": "%s", "params": {"workspace": "%s"}}' % (op, path)
        response = respond(dispatcher, line.encode())
    finally:
        dispatcher.close()
    assert response == {"id": 3, "ok": False, "error": response["error"]}
    assert response["error"]["code"] == "invalid_params"


@pytest.mark.parametrize("op, params", [("ledger.segment_replay", {"events": None}),
                                        ("ledger.prefix_digest", {"events": 5}),
                                        ("ledger.composite_replay", {"segments": None}),
                                        ("ledger.composite_replay", {"segments": [3]})])
def test_adapter_wrong_typed_ledger_params_are_invalid_params(op: str, params: dict[str, Any]) -> None:
    """Was ``internal_error`` (``TypeError: 'NoneType' object is not iterable``)."""
    from maka_ref.adapter._dispatch import Dispatcher

    dispatcher = Dispatcher()
    try:
        assert dispatcher.handle(op, params)["error"]["code"] == "invalid_params"
    finally:
        dispatcher.close()
