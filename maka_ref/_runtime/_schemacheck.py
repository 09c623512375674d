"""An exact, compiled validity check for the small JSON Schema subset the runtime ships.

Why: ``jsonschema``'s ``iter_errors`` + ``best_match`` costs tens of microseconds per tool
call (preflight) and about a millisecond per ten-step script (``load_script``); issue 4's
loop-overhead target made that visible. The runtime's schemas (``script.schema.json`` and the
tools' ``args_schema``) use only a handful of keywords, so they compile to plain Python
predicates that give **exactly** ``jsonschema``'s yes/no answer (Draft 2020-12,
jsonschema 4.x semantics, spelled out per keyword below).

How it is used (never weaker than before): callers run the compiled predicate first and, only
when it answers "valid", skip ``jsonschema``; on "invalid" they run ``jsonschema`` as before
to produce the same error and message. A schema that uses any keyword outside the subset
does not compile (:func:`compile_schema` returns ``None``) and callers always use
``jsonschema``. ``tests/test_runtime_schemacheck.py`` checks the predicates against
``jsonschema`` on valid and invalid instances.

Supported keywords and their exact ``jsonschema`` meaning:

* boolean schemas ``true`` / ``false``;
* ``type`` with one of ``object`` (``isinstance(x, dict)``), ``array``
  (``isinstance(x, list)``), ``string`` (``isinstance(x, str)``);
* ``properties`` (objects only: each present property matches its subschema), ``required``
  (objects only: each name is a key), ``additionalProperties: false`` (objects only: every
  key is a ``properties`` name; ``patternProperties`` is not supported);
* ``minLength`` (strings only: ``len(x) >= n``), ``minItems`` (arrays only), ``items``
  (arrays only, a single subschema; ``prefixItems`` is not supported);
* ``enum`` of strings only (``jsonschema`` compares with ``==`` when either side is a string,
  so only strings can match);
* ``oneOf`` (exactly one branch matches: exact because every branch is exact);
* ``$ref`` to ``#/$defs/<name>`` of the root schema, alongside sibling keywords (2020-12);
  ``$id`` and ``$defs`` only at the root (a nested resource would change what ``#`` means);
* annotations that never affect validity: ``$schema``, ``$id``, ``$defs``, ``$comment``,
  ``title``, ``description``, ``default``, ``examples``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Final

__all__ = ["Predicate", "compile_schema"]

Predicate = Callable[[Any], bool]

_ANNOTATIONS: Final = frozenset({"$schema", "$id", "$defs", "$comment", "title", "description", "default", "examples"})
_TYPES: Final[Mapping[str, type]] = {"object": dict, "array": list, "string": str}


class _Unsupported(Exception):
    pass


def compile_schema(schema: Any) -> Predicate | None:
    """An exact validity predicate for ``schema``, or ``None`` when it leaves the subset."""
    try:
        return _Compiler(schema).compile(schema, root=True)
    except _Unsupported:
        return None


def _always(_value: Any) -> bool:
    return True


def _never(_value: Any) -> bool:
    return False


class _Compiler:
    def __init__(self, root: Any) -> None:
        self.defs = root.get("$defs", {}) if isinstance(root, Mapping) else {}
        if not isinstance(self.defs, Mapping):
            raise _Unsupported
        self.refs: dict[str, Predicate] = {}

    def compile(self, schema: Any, *, root: bool = False) -> Predicate:
        if schema is True:
            return _always
        if schema is False:
            return _never
        if not isinstance(schema, Mapping):
            raise _Unsupported
        checks: list[Predicate] = []
        for keyword in schema:
            if keyword not in _ANNOTATIONS and keyword not in _KEYWORDS:
                raise _Unsupported
        if not root and ("$id" in schema or "$defs" in schema):  # a nested resource moves "#/$defs"
            raise _Unsupported
        if "$ref" in schema:
            checks.append(self._ref(schema["$ref"]))
        if "type" in schema:
            kind = schema["type"]
            if not isinstance(kind, str) or kind not in _TYPES:
                raise _Unsupported
            cls = _TYPES[kind]
            checks.append(lambda value, _cls=cls: isinstance(value, _cls))
        object_check = self._object(schema)
        if object_check is not None:
            checks.append(object_check)
        if "minLength" in schema:
            checks.append(_min_length(_natural(schema["minLength"])))
        if "minItems" in schema:
            checks.append(_min_items(_natural(schema["minItems"])))
        if "items" in schema:
            checks.append(_items(self.compile(schema["items"])))
        if "enum" in schema:
            checks.append(_enum(schema["enum"]))
        if "oneOf" in schema:
            branches = schema["oneOf"]
            if not isinstance(branches, list) or not branches:
                raise _Unsupported
            checks.append(_one_of(tuple(self.compile(branch) for branch in branches)))
        return _all_of(tuple(checks))

    def _ref(self, ref: Any) -> Predicate:
        prefix = "#/$defs/"
        if not isinstance(ref, str) or not ref.startswith(prefix):
            raise _Unsupported
        name = ref[len(prefix) :]
        if "/" in name or "~" in name or "%" in name or name not in self.defs:
            raise _Unsupported
        if name not in self.refs:
            cell: list[Predicate] = []
            self.refs[name] = lambda value: cell[0](value)  # recursion-safe forward reference
            cell.append(self.compile(self.defs[name]))
        return self.refs[name]

    def _object(self, schema: Mapping[str, Any]) -> Predicate | None:
        properties = schema.get("properties", {})
        required = schema.get("required", [])
        additional = schema.get("additionalProperties", True)
        if not isinstance(properties, Mapping) or not isinstance(required, list):
            raise _Unsupported
        if not all(isinstance(name, str) for name in required) or additional not in (True, False):
            raise _Unsupported
        if type(additional) is not bool:  # 0/1 are not boolean schemas
            raise _Unsupported
        if not properties and not required and additional:
            return None
        compiled = tuple((name, self.compile(sub)) for name, sub in properties.items())
        names = frozenset(properties)
        needed = tuple(required)
        closed = additional is False

        def check(value: Any) -> bool:
            if not isinstance(value, dict):
                return True  # these keywords ignore non-objects
            for name in needed:
                if name not in value:
                    return False
            if closed:
                for key in value:
                    if key not in names:
                        return False
            for name, predicate in compiled:
                if name in value and not predicate(value[name]):
                    return False
            return True

        return check


_KEYWORDS: Final = frozenset(
    {"$ref", "type", "properties", "required", "additionalProperties", "minLength", "minItems", "items", "enum", "oneOf"}
)


def _natural(value: Any) -> int:
    if type(value) is not int or value < 0:
        raise _Unsupported
    return value


def _min_length(n: int) -> Predicate:
    return lambda value: not isinstance(value, str) or len(value) >= n


def _min_items(n: int) -> Predicate:
    return lambda value: not isinstance(value, list) or len(value) >= n


def _items(predicate: Predicate) -> Predicate:
    def check(value: Any) -> bool:
        if not isinstance(value, list):
            return True
        for item in value:
            if not predicate(item):
                return False
        return True

    return check


def _enum(values: Any) -> Predicate:
    if not isinstance(values, list) or not values or not all(type(v) is str for v in values):
        raise _Unsupported
    allowed = frozenset(values)
    return lambda value: isinstance(value, str) and value in allowed


def _one_of(branches: tuple[Predicate, ...]) -> Predicate:
    def check(value: Any) -> bool:
        matched = 0
        for branch in branches:
            if branch(value):
                matched += 1
                if matched > 1:
                    return False
        return matched == 1

    return check


def _all_of(checks: tuple[Predicate, ...]) -> Predicate:
    if not checks:
        return _always
    if len(checks) == 1:
        return checks[0]

    def check(value: Any) -> bool:
        for predicate in checks:
            if not predicate(value):
                return False
        return True

    return check
