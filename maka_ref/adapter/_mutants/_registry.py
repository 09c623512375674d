"""The mutant registry: one :class:`Mutant` per deliberately broken behaviour.

A mutant is declared by decorating its ``apply`` function (whose docstring says what it
breaks) with :func:`mutant`; the decorator records the layer, the spec section, the clause
family that is expected to kill it and the *target selection* the default self-test runs it
against (a pytest ``-k`` expression and/or a level, see ``docs/selftest.md``). Declaring a
mutant imports nothing of ``maka_ref`` beyond this package: ``apply`` does its own imports.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass
from typing import Callable

__all__ = ["LAYERS", "MUTANTS", "Mutant", "mutant"]

#: The layers of the contract, in report order.
LAYERS = ("codec", "resolver", "phase0", "store", "runtime", "continuation", "crash")


@dataclass(frozen=True)
class Mutant:
    name: str
    layer: str
    spec: str
    family: str  # the clause family expected to kill it (documentation)
    keyword: str | None  # the default self-test's -k selection
    level: str | None  # the default self-test's --maka-level selection
    apply: Callable[[], None]
    #: A capability only some machines can exercise (``faults.powerloss``: FUSE). Where its
    #: clauses are all *not run*, the self-test reports the mutant *not gradable*.
    needs: str | None = None

    @property
    def description(self) -> str:
        return inspect.cleandoc(self.apply.__doc__ or "").split("\n\n")[0].replace("\n", " ")

    @property
    def doc(self) -> str:
        return inspect.cleandoc(self.apply.__doc__ or "")

    def to_json(self) -> dict[str, object]:
        return {"name": self.name, "layer": self.layer, "spec": self.spec, "family": self.family,
                "keyword": self.keyword, "level": self.level, "description": self.description,
                "needs": self.needs}


MUTANTS: dict[str, Mutant] = {}


def mutant(name: str, *, layer: str, spec: str, family: str, keyword: str | None = None,
           level: str | None = None, needs: str | None = None) -> Callable[[Callable[[], None]], Callable[[], None]]:
    if layer not in LAYERS:
        raise ValueError(f"unknown layer {layer!r}")

    def register(apply: Callable[[], None]) -> Callable[[], None]:
        if name in MUTANTS:
            raise ValueError(f"duplicate mutant {name!r}")
        if not (apply.__doc__ or "").strip():
            raise ValueError(f"mutant {name!r} has no docstring")
        MUTANTS[name] = Mutant(name, layer, spec, family, keyword, level, apply, needs)
        return apply

    return register
