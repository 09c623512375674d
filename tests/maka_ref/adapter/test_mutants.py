"""The mutant corpus (issue 7 item 1): every mutant applies cleanly, the registry is complete,
and the normal adapter never imports it."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from maka_ref.adapter import _mutants

HELLO = json.dumps({"id": 0, "op": "hello", "params": {"protocol": 1}}) + "\n"

#: The layers the issue names, each with at least one mutant.
ISSUE_LAYERS = ("codec", "resolver", "phase0", "store", "runtime", "continuation", "crash")


def _adapter(*args: str, stdin: str = HELLO, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "maka_ref.adapter", *args], input=stdin, capture_output=True,
                          text=True, timeout=timeout)


def test_registry_has_at_least_30_documented_mutants_covering_every_layer() -> None:
    assert len(_mutants.MUTANTS) >= 30
    assert {m.layer for m in _mutants.MUTANTS.values()} == set(ISSUE_LAYERS)
    for name, m in _mutants.MUTANTS.items():
        assert m.name == name and name.startswith(m.layer + "-"), name
        assert m.description and m.spec and m.family, name
        assert m.keyword or m.level, f"{name} declares no target selection for the default selftest"
        assert "Killed by" in m.doc, f"{name}: the docstring must say which clauses kill it"
    assert _mutants.names() == sorted(_mutants.MUTANTS, key=lambda n: (ISSUE_LAYERS.index(_mutants.MUTANTS[n].layer), n))


@pytest.mark.parametrize("name", _mutants.names())
def test_every_mutant_applies_and_answers_hello(name: str) -> None:
    done = _adapter("--mutant", name)
    assert done.returncode == 0, done.stderr[-2000:]
    reply = json.loads(done.stdout.splitlines()[0])
    assert reply["id"] == 0 and reply["ok"] is True, reply
    assert reply["result"]["implementation"]["name"] == "maka-ref"


def test_unknown_mutant_exits_2_with_the_list() -> None:
    done = _adapter("--mutant", "no-such-mutant", stdin="")
    assert done.returncode == 2
    assert "unknown mutant 'no-such-mutant'" in done.stderr
    assert all(name in done.stderr for name in _mutants.MUTANTS)
    assert done.stdout == ""


def test_list_mutants() -> None:
    done = _adapter("--list-mutants", stdin="")
    assert done.returncode == 0
    assert [line.split()[0] for line in done.stdout.splitlines()[:-1]] == _mutants.names()
    assert done.stdout.splitlines()[-1] == f"{len(_mutants.MUTANTS)} mutants"


_PROBE = """
import atexit, sys
def report():
    loaded = sorted(m for m in sys.modules if m.startswith("maka_ref.adapter._mutants"))
    sys.stderr.write("MUTANT_MODULES=" + ",".join(loaded) + "\\n")
atexit.register(report)
from maka_ref.adapter._server import main
main(sys.argv[1:])
"""


@pytest.mark.parametrize("args", [[], ["--claim", "ledger.codec"]])
def test_without_mutant_nothing_of_the_corpus_is_imported(args: list[str]) -> None:
    stdin = HELLO + json.dumps({"id": 1, "op": "ledger.args_hash", "params": {"toolName": "Read", "argsJson": "{}"}}) + "\n"
    done = subprocess.run([sys.executable, "-c", _PROBE, *args], input=stdin, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr[-2000:]
    assert len(done.stdout.splitlines()) == 2
    assert "MUTANT_MODULES=\n" in done.stderr, done.stderr[-500:]


def test_with_mutant_only_that_mutant_is_applied() -> None:
    done = subprocess.run([sys.executable, "-c", _PROBE + "\n", "--mutant", "codec-collation-dropped"], input=HELLO,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "maka_ref.adapter._mutants" in done.stderr


def test_mutated_behaviour_differs_from_the_reference() -> None:
    """One smoke check through the wire that a mutant really changes an answer."""
    request = json.dumps({"id": 1, "op": "ledger.args_hash",
                          "params": {"toolName": "T", "argsJson": json.dumps({"required": ["b", "B", "a"]})}}) + "\n"
    plain = _adapter(stdin=HELLO + request).stdout.splitlines()[1]
    mutated = _adapter("--mutant", "codec-collation-dropped", stdin=HELLO + request).stdout.splitlines()[1]
    assert json.loads(plain)["ok"] and json.loads(mutated)["ok"]
    assert json.loads(plain)["result"] != json.loads(mutated)["result"]
