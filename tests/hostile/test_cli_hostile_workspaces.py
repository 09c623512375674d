"""Issue 13 items 3 and 6: every ``maka-ref`` command on every class of hostile workspace.

Why a deterministic sweep beside the self-fuzz target: the target (``fuzz --self --only-target
cli``) combines damages at random and is the long-running search; this test pins that *each*
attack class, alone, meets each kind of command — a writer that must repair (``run`` on an
interrupted store), a writer on a settled store (``resume``), the read-only inspector, and the
ledger readers on hostile inputs — and keeps the promise of :func:`check_cli`: no hang, no leaked
process, no traceback, exit 0/2/3 (``run``: also 1), one JSON document, a stable code that is not
``internal_error``, nothing outside the workspace changed, and reads byte-identical.

The oracle is the target's own (``conformance/_fuzz/_selffuzz/cli.py``): one definition of the
promise, so this test and the fuzzer cannot drift apart; ``test_the_oracle_catches_*`` prove the
oracle is not vacuous.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from conformance._fuzz._selffuzz import cli
from conformance._fuzz._selffuzz.targets import Finding

WORKSPACE_COMMANDS = (("interrupted", "run"), ("completed", "resume"), ("interrupted", "inspect"))


@pytest.fixture(scope="module")
def images(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, str], str]:
    scratch = str(tmp_path_factory.mktemp("cli-images"))
    return cli.build_cli_images(scratch), scratch


def _case(image: str, damages: list[str], command: str, input_: str = "example") -> dict[str, Any]:
    return {"image": image, "damages": damages, "command": command, "input": input_, "seed": 12345}


@pytest.mark.parametrize("image, command", WORKSPACE_COMMANDS)
@pytest.mark.parametrize("damage", cli.DAMAGES)
def test_each_damage_meets_each_kind_of_command(images: Any, damage: str, image: str, command: str) -> None:
    built, scratch = images
    cli.check_cli(_case(image, [damage], command), built, scratch)


@pytest.mark.parametrize("command", ("resolve", "plan", "encode"))
@pytest.mark.parametrize("input_", cli.LEDGER_INPUTS)
def test_each_hostile_ledger_input_meets_each_ledger_command(images: Any, input_: str, command: str) -> None:
    built, scratch = images
    cli.check_cli(_case("fresh", [], command, input_), built, scratch)


def _fake(behaviour: str) -> Any:
    """A stand-in for the command process that breaks one promise (the oracle must see it)."""

    def run(args: list[str], cwd: str, env: dict[str, str], timeout: float) -> tuple[Any, str, str, bool, list[int]]:
        ok = '{"ok":true}\n'
        if behaviour == "escape":
            with open(os.path.join(cwd, "outside", "canary.txt"), "ab") as handle:
                handle.write(b"changed")
            return 0, ok, "", False, []
        if behaviour == "read-wrote":
            with open(os.path.join(cwd, "ws", "new-file"), "wb") as handle:
                handle.write(b"x")
            return 0, ok, "", False, []
        return {
            "hang": (None, "", "", True, []),
            "leak": (0, ok, "", False, [4242]),
            "traceback": (1, "", "Traceback (most recent call last):\n  boom\n", False, []),
            "exit": (7, ok, "", False, []),
            "stdout": (0, ok + ok, "", False, []),
            "internal_error": (2, '{"error":{"code":"internal_error","message":"bug"}}\n', "", False, []),
            "unstable": (2, '{"error":{"code":"Not A Code","message":"x"}}\n', "", False, []),
        }[behaviour]

    return run


@pytest.mark.parametrize("behaviour", ("escape", "read-wrote", "hang", "leak", "traceback", "exit", "stdout",
                                       "internal_error", "unstable"))
def test_the_oracle_catches_each_broken_promise(images: Any, monkeypatch: pytest.MonkeyPatch, behaviour: str) -> None:
    built, scratch = images
    monkeypatch.setattr(cli, "_maka_ref", _fake(behaviour))
    with pytest.raises(Finding):
        cli.check_cli(_case("completed", [], "inspect"), built, scratch)


def test_the_oracle_passes_a_well_behaved_command(images: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    built, scratch = images
    monkeypatch.setattr(cli, "_maka_ref", lambda *a, **k: (2, '{"error":{"code":"database_corrupt","message":"m"}}\n',
                                                          "maka-ref: error: database_corrupt: m\n", False, []))
    cli.check_cli(_case("completed", [], "inspect"), built, scratch)
