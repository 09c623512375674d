"""How a mutant changes the reference: replace one function everywhere it is bound.

Why not plain ``setattr(module, name, new)``: many modules bind core functions with
``from x import f`` at import time, so patching the defining module alone would leave those
copies untouched. :func:`replace` therefore loads the adapter (which imports nearly every
module of ``maka_ref``), then swaps every binding of the *same object* in every loaded
``maka_ref`` module. Modules imported later read the patched attribute of the defining module.
Class methods are patched on the class itself (:func:`replace_method`).
"""

from __future__ import annotations

import importlib
import sys
from typing import Any, Callable

__all__ = ["replace", "replace_method", "wrap", "wrap_method"]


def _load_everything() -> None:
    importlib.import_module("maka_ref.adapter._dispatch")


def replace(module_name: str, name: str, new: Any) -> Any:
    """Bind ``new`` wherever ``module_name.name`` is bound in ``maka_ref``; return the original."""
    _load_everything()
    module = importlib.import_module(module_name)
    old = getattr(module, name)
    for mod_name, mod in list(sys.modules.items()):
        if mod is None or not (mod_name == "maka_ref" or mod_name.startswith("maka_ref.")):
            continue
        namespace = getattr(mod, "__dict__", {})
        for key, value in list(namespace.items()):
            if value is old:
                setattr(mod, key, new)
    return old


def wrap(module_name: str, name: str, factory: Callable[[Any], Any]) -> Any:
    """``replace`` with ``factory(original)``; returns the original."""
    _load_everything()
    module = importlib.import_module(module_name)
    old = getattr(module, name)
    replace(module_name, name, factory(old))
    return old


def replace_method(cls: type, name: str, new: Any) -> Any:
    old = cls.__dict__[name]
    setattr(cls, name, new)
    return old


def wrap_method(cls: type, name: str, factory: Callable[[Any], Any]) -> Any:
    old = cls.__dict__[name]
    inner = old.__func__ if isinstance(old, (classmethod, staticmethod)) else old
    new = factory(inner)
    if isinstance(old, classmethod):
        new = classmethod(new)
    elif isinstance(old, staticmethod):
        new = staticmethod(new)
    setattr(cls, name, new)
    return old
