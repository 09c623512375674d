"""The mutant corpus of the self-test (issue 7; ``docs/selftest.md``).

Each mutant breaks exactly one clause-level promise of the contract by monkeypatching the
reference at adapter start-up: ``python -m maka_ref.adapter --mutant NAME``. The suite must
fail every one of them (``maka-conformance selftest``); a surviving mutant is a missing clause.

This package is imported **only** when ``--mutant`` or ``--list-mutants`` is given: nothing
in the normal code path refers to it. The interface is stable: ``MUTANTS`` (name → ``Mutant``),
``apply(name)``, ``render_list()``, ``names()``.

Modules, one per layer: :mod:`.codec`, :mod:`.resolver`, :mod:`.phase0`, :mod:`.store`,
:mod:`.runtime`, :mod:`.continuation`, :mod:`.crash`, :mod:`.checkpoint` (Phase 4, layers
``runtime`` and ``continuation``), :mod:`.reconcile` (Phase 3,
layer ``runtime``); :mod:`.powerloss` holds the crash layer's
mutants that only a power cut can kill (issue 15 item 3).

May import: ``maka_ref._boundary``, ``maka_ref._checkpoint``, ``maka_ref._codec``, ``maka_ref._ledger``, ``maka_ref._plan.phase0``,
``maka_ref._plan.prefix``, ``maka_ref._reconcile``, ``maka_ref._runtime``, ``maka_ref._store.agent_runs``,
``maka_ref._store.engine``, ``maka_ref._store.errors``, ``maka_ref._store.evidence``,
``maka_ref._store.insert``, ``maka_ref._store.legacy``.
"""

from __future__ import annotations

from maka_ref.adapter._mutants import checkpoint, codec, continuation, crash, phase0, powerloss, reconcile, resolver, runtime, store  # noqa: F401 (registration)
from maka_ref.adapter._mutants._registry import LAYERS, MUTANTS, Mutant

__all__ = ["LAYERS", "MUTANTS", "Mutant", "apply", "names", "render_list"]

_applied: list[str] = []


def names() -> list[str]:
    return sorted(MUTANTS, key=lambda n: (LAYERS.index(MUTANTS[n].layer), n))


def apply(name: str) -> None:
    """Apply mutant ``name`` to this process (raises ``KeyError`` for an unknown name)."""
    MUTANTS[name].apply()
    _applied.append(name)


def applied() -> list[str]:
    return list(_applied)


def render_list() -> str:
    lines = []
    for name in names():
        m = MUTANTS[name]
        lines.append(f"{name:<40} {m.layer:<13} {m.spec:<18} {m.description}")
    lines.append(f"{len(MUTANTS)} mutants")
    return "\n".join(lines) + "\n"
