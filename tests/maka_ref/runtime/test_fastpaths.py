"""The live loop's fast paths (issue 4 loop overhead) give exactly the slow paths' answers.

* ``_schemacheck``: the compiled script / tool-argument checks agree with ``jsonschema`` on
  valid and invalid instances (and ``load_script`` / ``preflight`` errors are unchanged);
* ``paths.confine``: the no-symlink fast path agrees with the full rule 5 (written out here
  from the docstring: ``realpath``, ``commonpath``, ``relpath``) for symlinks inside, out of,
  and above the workspace, missing and non-directory components, non-canonical roots; the
  filesystem is checked on every call (nothing about it is cached);
* ``events.frozen_event`` equals ``FrozenDict(event)``;
* the loop hashes each call once and still hands T1 the real hash;
* the summary's event ids are the store's ``read_run_events`` ids, in order.
"""

from __future__ import annotations

import copy
import itertools
import os
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from maka_ref._codec.argshash import canonical_args_hash
from maka_ref._codec.frozen import FrozenDict, FrozenList, freeze
from maka_ref._runtime import ScriptError, run_turn
from maka_ref._runtime import events as ev
from maka_ref._runtime import provider as provider_mod
from maka_ref._runtime import paths as paths_mod
from maka_ref._runtime._schemacheck import compile_schema
from maka_ref._runtime.ids import RunIds
from maka_ref._runtime.paths import ConfinementError, confine
from maka_ref._runtime.tools import TOOLS
from maka_ref._store.runtime_store import RuntimeStore

from tests.maka_ref.runtime.support import T1, script

# ----------------------------------------------------------------------------- schemas

_CALL = {"id": "c1", "name": "Write", "args": {"path": "a", "content": "x"}}


def _script_variants() -> list[Any]:
    good = {"userMessage": "hi", "protocol": T1, "steps": [{"toolCalls": [_CALL]}, {"text": "done"}]}
    out: list[Any] = [good, {**good, "protocol": "legacy"}, {**good, "steps": [{"text": "t"}]}]
    bad_steps: list[Any] = [
        [], [{}], [{"text": ""}], [{"text": 1}], [{"text": "a", "toolCalls": [_CALL]}], [{"toolCalls": []}],
        [{"toolCalls": [{**_CALL, "extra": 1}]}], [{"toolCalls": [{"id": "c", "name": "W"}]}],
        [{"toolCalls": [{**_CALL, "id": ""}]}], [{"toolCalls": [{**_CALL, "name": 3}]}], [{"toolCalls": _CALL}],
        [{"toolCalls": [_CALL], "x": 1}], [{"text": "a", "x": 1}], ["text"], [None], ({"text": "t"},),
        [{"toolCalls": ({**_CALL},)}], [{"text": "a"}, {"toolCalls": [{**_CALL, "args": None}]}],
        [{"toolCalls": [{**_CALL, "args": [1, {"a": float("nan")}]}]}],
    ]
    out += [{**good, "steps": steps} for steps in bad_steps]
    out += [
        {**good, "userMessage": ""}, {**good, "userMessage": 5}, {**good, "protocol": "T1"}, {**good, "protocol": None},
        {**good, "protocol": ["legacy"]}, {**good, "extra": True}, {1: "x", **good},
        {k: v for k, v in good.items() if k != "steps"}, {k: v for k, v in good.items() if k != "userMessage"},
        [], "script", None, 3, FrozenDict(good), freeze(good),
    ]
    return out


def test_script_check_agrees_with_jsonschema() -> None:
    schema = provider_mod.script_schema()
    check = compile_schema(schema)
    assert check is not None
    validator = jsonschema.Draft202012Validator(schema)
    variants = _script_variants()
    assert any(check(v) for v in variants) and not all(check(v) for v in variants)
    for value in variants:
        assert check(value) == validator.is_valid(value), value


def test_load_script_errors_unchanged() -> None:
    """Invalid scripts still fail with jsonschema's best error (the fast check only skips it)."""
    validator = jsonschema.Draft202012Validator(provider_mod.script_schema())
    for value in _script_variants():
        if not isinstance(value, dict) or validator.is_valid(value):
            continue
        error = jsonschema.exceptions.best_match(validator.iter_errors(value))
        where = "/".join(str(part) for part in error.absolute_path) or "(root)"
        with pytest.raises(ScriptError) as info:
            provider_mod.load_script(value)
        assert info.value.message == f"Script does not match script.schema.json at {where}: {error.message}"


@pytest.mark.parametrize("name", sorted(TOOLS))
def test_tool_argument_check_agrees_with_jsonschema(name: str) -> None:
    tool = TOOLS[name]
    check = compile_schema(tool.args_schema)
    assert check is not None, "the shipped tool schemas stay inside the compiled subset"
    validator = jsonschema.Draft202012Validator(tool.args_schema)
    fields = list(tool.args_schema["properties"])
    values: list[Any] = ["x", "", 1, None, True, ["x"], {"a": "b"}]
    instances: list[Any] = [None, [], "path", 1, FrozenList(["a"])]
    for present in itertools.product([False, True], repeat=len(fields)):
        base = {f: "ok" for f, p in zip(fields, present) if p}
        instances += [dict(base), FrozenDict(base), {**base, "more": "x"}, {**base, 7: "x"}]
        for field in base:
            instances += [{**base, field: value} for value in values]
    for value in instances:
        assert check(value) == validator.is_valid(value), value


@pytest.mark.parametrize(
    "schema",
    [
        {"type": "integer"},
        {"type": ["string", "null"]},
        {"type": "object", "patternProperties": {"^a": {}}},
        {"type": "object", "additionalProperties": {"type": "string"}},
        {"type": "array", "prefixItems": [True]},
        {"enum": [1, "a"]},
        {"$ref": "https://example.com/x"},
        {"maxLength": 3},
        {"$defs": {"a": {"type": "string"}}, "properties": {"x": {"$id": "urn:x", "$ref": "#/$defs/a"}}},
    ],
)
def test_unsupported_keywords_do_not_compile(schema: Any) -> None:
    assert compile_schema(schema) is None


def test_unsupported_tool_schema_falls_back_to_jsonschema(tmp_path: Path) -> None:
    class Odd(type(TOOLS["Read"])):  # type: ignore[misc]
        args_schema = {"type": "object", "required": ["path"], "properties": {"path": {"type": "string", "maxLength": 3}}}

    tool = Odd()
    assert tool._valid is None
    root = Path(os.path.realpath(tmp_path))
    tool.preflight(root, {"path": "abc"})
    with pytest.raises(Exception) as info:
        tool.preflight(root, {"path": "abcd"})
    assert getattr(info.value, "code", None) == "invalid_tool_arguments"


# ----------------------------------------------------------------------------- confinement


def _reference_confine(root: str, path: str) -> str:
    """Rule 5 as the module docstring states it (the pre-fast-path implementation)."""
    parts = [part for part in path.split("/") if part not in ("", ".")]
    resolved = os.path.realpath(os.path.join(root, *parts))
    inside = os.path.commonpath([root, resolved]) == root and resolved != root
    if not inside:
        raise ConfinementError("escape", code="path_symlink_escape")
    if os.path.relpath(resolved, root).split(os.sep)[0].casefold() in paths_mod.RESERVED_NAMES:
        raise ConfinementError("reserved", code="path_reserved")
    return resolved


def _outcome(fn: Any, root: Any, path: str) -> tuple[str, str]:
    try:
        return ("ok", str(fn(root, path)))
    except ConfinementError as exc:
        return ("error", exc.code)


@pytest.fixture()
def tree(tmp_path: Path) -> Path:
    base = Path(os.path.realpath(tmp_path))
    root = base / "ws"
    (root / "dir" / "sub").mkdir(parents=True)
    (root / "file.txt").write_text("x")
    (base / "outside").mkdir()
    os.symlink(root / "dir", root / "link_in")
    os.symlink(base / "outside", root / "link_out")
    os.symlink("runtime.sqlite", root / "link_reserved")
    os.symlink("missing", root / "dangling")
    os.symlink("loop_b", root / "loop_a")
    os.symlink("loop_a", root / "loop_b")
    os.symlink(root, base / "alias")
    return root


PATHS = [
    "a.txt", "dir/x", "dir/sub/y", "dir//./sub/z", "new/deep/file", "file.txt/below", "link_in/x", "link_in",
    "link_out/x", "link_out", "link_reserved", "dangling", "dangling/x", "loop_a/x", "dir/q", "DIR/x",
]


def test_confine_fast_path_agrees_with_rule_5(tree: Path) -> None:
    roots = [str(tree), str(tree.parent / "alias"), str(tree) + "/", str(tree) + "/.", "/" + str(tree)]
    for root in roots:
        for path in PATHS:
            ref = _outcome(_reference_confine, root, path)
            assert _outcome(paths_mod.confined_text, root, path) == ref, (root, path)
            assert _outcome(confine, root, path) == (ref if ref[0] == "error" else ("ok", str(Path(ref[1])))), (root, path)


def test_confine_fast_path_sees_a_symlink_swapped_in_later(tree: Path) -> None:
    """Nothing about the filesystem is cached: preflight's answer is not reused by the re-check."""
    root = str(tree)
    assert confine(root, "swap/x") == Path(root, "swap", "x")
    outside = tree.parent / "outside"
    os.symlink(outside, tree / "swap")
    with pytest.raises(ConfinementError) as info:
        confine(root, "swap/x")
    assert info.value.code == "path_symlink_escape"


def test_confine_fast_path_checks_the_root_ancestors(tree: Path, tmp_path: Path) -> None:
    """A symlink *above* the root is resolved as realpath would (then the path escapes)."""
    base = Path(os.path.realpath(tmp_path))
    real = base / "real"
    (real / "ws").mkdir(parents=True)
    os.rename(real, base / "moved")
    os.symlink(base / "moved", real)  # <base>/real is now a symlink: the root text is not canonical any more
    root = str(real / "ws")
    assert _outcome(confine, root, "a") == _outcome(_reference_confine, root, "a") == ("error", "path_symlink_escape")


def test_root_prefixes_only_for_canonical_text() -> None:
    assert paths_mod._root_prefixes("/a/b") == ("/a", "/a/b")
    assert paths_mod._root_prefixes("/") == ()
    for text in ("a/b", "//a", "/a/", "/a/./b", "/a/../b", "/a//b"):
        assert paths_mod._root_prefixes(text) is None, text


# ----------------------------------------------------------------------------- events, hash, summary


def test_frozen_event_equals_frozendict() -> None:
    ids = RunIds.from_seed("fast")
    args = freeze({"path": "p", "content": "c", "n": [1, {"a": None}]})
    events = [
        ev.call_event(ids, 5, 0, "toolop_x", "c1", "Write", args, bound=True),
        ev.call_event(ids, 5, 0, "toolop_x", "c1", "Write", {"raw": [1, 2]}, bound=False),
        ev.dispatch_event(ids, 5, "toolop_x", "c1", "Write", "sha256:0", "reconcile"),
        ev.response_event(ids, 5, "toolop_x", "c1", "Write", {"path": "p", "list": [1]}, True, bound=True),
        ev.response_event(ids, 5, "toolop_x", "c1", "Write", "text", False, bound=False),
        ev.terminal_event(ids, 5, "failed", failure_class="x", message="m"),
        ev.user_event(ids, 5, "hi", T1),
    ]
    for event in events:
        before = copy.deepcopy(event)
        fast, slow = ev.frozen_event(event), FrozenDict(event)
        assert fast == slow and event == before

        def shape(value: Any) -> Any:
            if isinstance(value, dict):
                return (type(value), {k: shape(v) for k, v in value.items()})
            if isinstance(value, list):
                return (type(value), [shape(v) for v in value])
            return (type(value), value)

        assert shape(fast) == shape(slow)
        with pytest.raises(TypeError):
            fast["id"] = "x"  # type: ignore[index]


def test_loop_hashes_each_call_once_and_t1_carries_the_real_hash(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from maka_ref._runtime import tool_runtime

    calls: list[Any] = []
    real = tool_runtime.canonical_args_hash

    def counting(name: str, args: Any) -> str:
        calls.append(args)
        return real(name, args)

    monkeypatch.setattr(tool_runtime, "canonical_args_hash", counting)
    seen: list[str] = []
    original = RuntimeStore.commit_tool_prepared

    def spy(self: RuntimeStore, data: Any) -> Any:
        seen.append(data.canonical_args_hash)
        return original(self, data)

    monkeypatch.setattr(RuntimeStore, "commit_tool_prepared", spy)
    steps = [{"toolCalls": [{"id": f"c{n}", "name": "Write", "args": {"path": f"f{n}", "content": str(n)}}]} for n in range(3)]
    summary = run_turn(tmp_path, script(T1, steps + [{"text": "done"}]), seed="hashonce")
    assert summary.status == "completed"
    assert len(calls) == 3
    assert seen == [real("Write", {"path": f"f{n}", "content": str(n)}) for n in range(3)]


def test_lane_called_directly_still_hashes(tmp_path: Path) -> None:
    """A lane entered without ``execute`` (e.g. a wrapper) computes the hash itself."""
    from maka_ref._runtime.tool_runtime import ToolRuntime

    runtime = ToolRuntime.__new__(ToolRuntime)
    runtime._preflight_hash = None
    call = provider_mod.ToolCallRequest("c", "Write", freeze({"path": "p", "content": "x"}))
    assert runtime._args_hash(call) == canonical_args_hash("Write", call.args)
    other = provider_mod.ToolCallRequest("c", "Write", freeze({"path": "p", "content": "x"}))
    runtime._preflight_hash = (other, "sha256:not-this-one")
    assert runtime._args_hash(call) == canonical_args_hash("Write", call.args)
    assert runtime._preflight_hash is None


def test_summary_event_ids_are_the_ledger_ids_in_order(tmp_path: Path) -> None:
    steps = [{"toolCalls": [{"id": "c1", "name": "Write", "args": {"path": "f", "content": "x"}},
                            {"id": "c2", "name": "Write", "args": {"path": "../escape", "content": "x"}}]},
             {"text": "done"}]
    summary = run_turn(tmp_path, script(T1, steps), seed="summaryids")
    store = RuntimeStore.open(summary.workspace)
    try:
        expected = tuple(event["id"] for event in store.read_run_events(summary.session_id, summary.run_id))
    finally:
        store.close()
    assert summary.event_ids == expected and len(expected) == 8
