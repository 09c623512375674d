"""Deep-immutable JSON containers: ``FrozenDict``, ``FrozenList``, ``freeze`` and ``thaw``.

Why: a decoded RuntimeEvent is shared by the scanner, the resolver, the planners and the
stores; if any of them could mutate it, the canonical bytes and the in-memory value could
drift apart silently. Freezing makes such a bug fail loudly (``TypeError``) at the mutation.

Why subclasses of ``dict``/``list`` (and not ``MappingProxyType``/tuples): frozen values must
still *be* JSON values for everything downstream — ``json.dumps`` serialises them, they
compare equal to plain dicts/lists, ``isinstance(x, dict)`` holds, and the strict-JSON checks
accept them. The guard is against accidental mutation through the normal API; deliberate
bypasses such as ``dict.__setitem__(frozen, k, v)`` are not prevented.

The constructors freeze their contents deeply, so every ``FrozenDict``/``FrozenList`` is
frozen all the way down (for JSON content) and ``freeze`` can reuse frozen subtrees as is.
Non-JSON leaves (sets, arbitrary objects) are left untouched: validation is not this
module's job.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable
from typing import Any, NoReturn

__all__ = ["FrozenDict", "FrozenList", "freeze", "thaw"]


def _immutable(self: object, *args: object, **kwargs: object) -> NoReturn:
    raise TypeError(f"{type(self).__name__} is immutable")


class FrozenDict(dict):  # type: ignore[type-arg]
    """A ``dict`` whose mutating methods raise ``TypeError``; values are frozen deeply."""

    __slots__ = ()

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        if len(args) == 1 and not kwargs and isinstance(args[0], dict):
            source = args[0]  # common case (freeze): no intermediate copy
        else:
            source = dict(*args, **kwargs)
        dict.__init__(self, {k: freeze(v) for k, v in source.items()})

    __setitem__ = _immutable
    __delitem__ = _immutable
    update = _immutable
    pop = _immutable
    popitem = _immutable
    clear = _immutable
    setdefault = _immutable
    __ior__ = _immutable

    @classmethod
    def fromkeys(cls, iterable: Iterable[Any], value: Any = None) -> FrozenDict:
        return cls(dict.fromkeys(iterable, value))

    def __repr__(self) -> str:
        return f"FrozenDict({dict.__repr__(self)})"

    # Pickling a dict subclass normally replays __setitem__, which we forbid.
    def __reduce__(self) -> tuple[Any, ...]:
        return (FrozenDict, (dict(self),))

    def __copy__(self) -> FrozenDict:
        return self  # immutable: a shallow copy may share

    def __deepcopy__(self, memo: dict[int, Any]) -> FrozenDict:
        result = FrozenDict({k: copy.deepcopy(v, memo) for k, v in self.items()})
        memo[id(self)] = result
        return result


class FrozenList(list):  # type: ignore[type-arg]
    """A ``list`` whose mutating methods raise ``TypeError``; items are frozen deeply."""

    __slots__ = ()

    def __init__(self, iterable: Iterable[Any] = ()) -> None:
        list.__init__(self, [freeze(v) for v in iterable])

    __setitem__ = _immutable
    __delitem__ = _immutable
    __iadd__ = _immutable
    __imul__ = _immutable
    append = _immutable
    extend = _immutable
    insert = _immutable
    remove = _immutable
    pop = _immutable
    clear = _immutable
    sort = _immutable
    reverse = _immutable

    def __repr__(self) -> str:
        return f"FrozenList({list.__repr__(self)})"

    def __reduce__(self) -> tuple[Any, ...]:
        return (FrozenList, (list(self),))

    def __copy__(self) -> FrozenList:
        return self

    def __deepcopy__(self, memo: dict[int, Any]) -> FrozenList:
        result = FrozenList([copy.deepcopy(v, memo) for v in self])
        memo[id(self)] = result
        return result


def freeze(value: Any) -> Any:
    """Deep-convert a JSON value: dict → FrozenDict, list/tuple → FrozenList, rest unchanged."""
    cls = type(value)
    if cls is FrozenDict or cls is FrozenList:
        return value  # constructors guarantee these are frozen all the way down
    if isinstance(value, dict):
        return FrozenDict(value)
    if isinstance(value, (list, tuple)):
        return FrozenList(value)
    return value


def thaw(value: Any) -> Any:
    """Deep-convert back to plain, mutable ``dict``/``list`` (a fresh copy of the containers)."""
    if isinstance(value, dict):
        return {k: thaw(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [thaw(v) for v in value]
    return value
