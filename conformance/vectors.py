"""Load and check the golden vectors in ``conformance/vectors/`` (see its README.md).

The vectors are JSON files that any implementation can run, in any language. This module is
the Python side: it loads the files (through :mod:`importlib.resources`, so it works from an
installed wheel), validates them against ``vector.schema.json``, and checks one vector against
an implementation given as a ``run(operation, input) -> result`` callable that returns the
result forms documented in the README.

Public API::

    load_vector_files() -> list[VectorFile]
    iter_vectors(group=None) -> Iterator[Vector]
    parse_json_text(text) -> Any          # JSON with IEEE-double number semantics
    json_equal(a, b) -> bool              # the comparison the vectors use
    check_vector(vector, run) -> list[str]  # empty list = pass
    PROTOCOL_OPERATIONS                     # vector operation -> wire protocol operation
    FAILING_OPERATIONS                      # operations whose failure is a result to compare

Nothing here imports ``maka_ref``: third parties can check their own implementation.
"""

from __future__ import annotations

import copy
import functools
import json
import math
from dataclasses import dataclass
from importlib import resources
from typing import Any, Callable, Iterator, Mapping, Sequence

__all__ = [
    "FAILING_OPERATIONS",
    "PROTOCOL_OPERATIONS",
    "Vector",
    "VectorFile",
    "VectorFormatError",
    "check_vector",
    "iter_vectors",
    "json_equal",
    "load_schema",
    "load_vector_files",
    "parse_json_text",
]

SCHEMA_FILE = "vector.schema.json"
_MAX_SAFE = 2**53

#: ``run(operation, input)``: returns the operation's result in the README's JSON form, or
#: ``{"error": {"message", "code"?, "detail"?}}`` when an operation of
#: :data:`FAILING_OPERATIONS` fails.
Runner = Callable[[str, Mapping[str, Any]], Any]

#: Vector operation → the wire-protocol operation that runs it (``docs/protocol.md`` §4): the
#: spec 10/20 operations are ``ledger.<operation>``; the Phase 3 evidence codec and observation
#: table are ``reconcile.*`` (§4.3.1), the Phase 4 boundary codec and policy hash
#: ``checkpoint.*`` (§4.6). The capability of each is the protocol's (``conformance.protocol``).
PROTOCOL_OPERATIONS: dict[str, str] = {
    **{op: f"ledger.{op}" for op in (
        "args_hash", "encode", "decode", "predicates", "lane", "generic_append", "scan", "validate_transition",
        "validate_bundle", "interpret", "resolve", "code_mode_commits", "plan", "failpoint_catalog",
        "segment_replay", "composite_replay", "prefix_digest")},
    "evidence_decode": "reconcile.decode_evidence",
    "evidence_encode": "reconcile.encode_evidence",
    "evidence_binding": "reconcile.check_binding",
    "classify": "reconcile.classify",
    "boundary_encode": "checkpoint.boundary_encode",
    "boundary_decode": "checkpoint.boundary_decode",
    "policy_hash": "checkpoint.policy_hash",
}
#: The operations whose failure (``ok: false`` on the wire) is an expected result: the spec
#: fixes the message (spec 10 §2) or the code and pointer (spec-phase3 §2.4, spec-phase4 §1.2,
#: §2.4). Every other operation answers refusals as results, never as failures.
FAILING_OPERATIONS: frozenset[str] = frozenset(
    {"args_hash", "encode", "decode", "evidence_encode", "boundary_encode", "boundary_decode", "policy_hash"}
)


class VectorFormatError(ValueError):
    """A vector file does not match ``vector.schema.json`` (or has a duplicate id)."""


@dataclass(frozen=True)
class Vector:
    """One golden vector; ``input`` and ``expect`` are plain JSON values (treat as read-only)."""

    group: str
    id: str
    spec: str
    description: str
    operation: str
    input: Mapping[str, Any]
    expect: Mapping[str, Any]


@dataclass(frozen=True)
class VectorFile:
    """One vector file: its name (``resolver.json``), group, description and vectors."""

    name: str
    group: str
    description: str
    vectors: tuple[Vector, ...]


# ---------------------------------------------------------------------------------------
# JSON with double semantics
# ---------------------------------------------------------------------------------------


def _parse_int(text: str) -> int | float:
    if text in ("-0",):
        return -0.0
    value = int(text)
    return value if abs(value) <= _MAX_SAFE else float(text)


def parse_json_text(text: str) -> Any:
    """Parse JSON text as JavaScript would (spec 10 §2.4).

    Integers with magnitude ≤ 2^53 stay ``int``; larger ones become the nearest double;
    ``-0`` becomes ``-0.0``; a literal that overflows a double becomes ``±inf``. ``NaN`` and
    ``Infinity`` literals (not JSON) are refused.
    """

    def refuse(constant: str) -> Any:
        raise ValueError(f"not JSON: {constant}")

    return json.loads(text, parse_int=_parse_int, parse_float=float, parse_constant=refuse)


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def json_equal(a: Any, b: Any) -> bool:
    """JSON equality as the vectors use it.

    Same JSON type (booleans are not numbers); numbers equal as doubles (``1 == 1.0``, but
    ``0`` and ``-0.0`` differ); objects need the same key set; ``None`` equals only ``None``.
    Any :class:`~collections.abc.Mapping` / non-string sequence counts as object / array.
    """
    if a is b:  # the same object (JSON values hold no NaN): the common case of echoed events
        return True
    if a is None or b is None:
        return a is None and b is None
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if _is_number(a) or _is_number(b):
        if not (_is_number(a) and _is_number(b)):
            return False
        fa, fb = float(a), float(b)
        if fa == 0.0 and fb == 0.0:
            return math.copysign(1.0, fa) == math.copysign(1.0, fb)
        return fa == fb
    if isinstance(a, str) or isinstance(b, str):
        return isinstance(a, str) and isinstance(b, str) and a == b
    if isinstance(a, Mapping) or isinstance(b, Mapping):
        if not (isinstance(a, Mapping) and isinstance(b, Mapping)):
            return False
        if set(a.keys()) != set(b.keys()):
            return False
        return all(json_equal(a[k], b[k]) for k in a)
    if isinstance(a, Sequence) and isinstance(b, Sequence):
        return len(a) == len(b) and all(json_equal(x, y) for x, y in zip(a, b))
    return False


def _show(value: Any) -> str:
    try:
        text = json.dumps(value, ensure_ascii=False, default=repr)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= 2000 else text[:2000] + "…"


# ---------------------------------------------------------------------------------------
# Loading
# ---------------------------------------------------------------------------------------


def _vectors_dir() -> Any:
    return resources.files("conformance") / "vectors"


@functools.lru_cache(maxsize=1)
def _schema_text() -> str:
    return (_vectors_dir() / SCHEMA_FILE).read_text(encoding="utf-8")


def load_schema() -> dict[str, Any]:
    """The JSON Schema of the vector files (a fresh copy)."""
    return json.loads(_schema_text())


def _validate(name: str, doc: Any) -> None:
    import jsonschema

    validator = jsonschema.Draft202012Validator(load_schema())
    errors = sorted(validator.iter_errors(doc), key=lambda e: list(e.absolute_path))
    if errors:
        first = errors[0]
        where = "/".join(str(p) for p in first.absolute_path)
        raise VectorFormatError(f"{name}: {where}: {first.message} ({len(errors)} schema error(s))")
    group = doc["group"]
    if name != f"{group}.json":
        raise VectorFormatError(f"{name}: group {group!r} does not match the file name")
    for v in doc["vectors"]:
        if not v["id"].startswith(group + "/"):
            raise VectorFormatError(f"{name}: vector id {v['id']!r} does not start with {group + '/'!r}")


def load_vector_files(*, validate: bool = True) -> list[VectorFile]:
    """Every vector file, sorted by name; validated against the schema unless ``validate=False``.

    Raises :class:`VectorFormatError` on a schema violation or a vector id used twice.
    """
    out: list[VectorFile] = []
    seen: dict[str, str] = {}
    entries = sorted((e for e in _vectors_dir().iterdir() if e.name.endswith(".json") and e.name != SCHEMA_FILE),
                     key=lambda e: e.name)
    for entry in entries:
        doc = parse_json_text(entry.read_text(encoding="utf-8"))
        if validate:
            _validate(entry.name, doc)
        vectors = []
        for raw in doc["vectors"]:
            if raw["id"] in seen:
                raise VectorFormatError(f"{entry.name}: vector id {raw['id']!r} already used in {seen[raw['id']]}")
            seen[raw["id"]] = entry.name
            vectors.append(Vector(doc["group"], raw["id"], raw["spec"], raw["description"], raw["operation"],
                                  raw["input"], raw["expect"]))
        out.append(VectorFile(entry.name, doc["group"], doc["description"], tuple(vectors)))
    return out


def iter_vectors(group: str | None = None) -> Iterator[Vector]:
    """Every vector (of ``group`` only, when given), in file-name then file order."""
    for vf in load_vector_files():
        if group is None or vf.group == group:
            yield from vf.vectors


# ---------------------------------------------------------------------------------------
# Checking
# ---------------------------------------------------------------------------------------


class _Mismatches(list):
    def expect(self, ok: bool, message: str) -> None:
        if not ok:
            self.append(message)


def _check_subset(out: _Mismatches, label: str, subset: Mapping[str, Any], actual: Any) -> None:
    if not isinstance(actual, Mapping):
        out.append(f"{label}: expected an object, got {_show(actual)}")
        return
    for key, value in subset.items():
        if key not in actual:
            out.append(f"{label}.{key}: missing, expected {_show(value)}")
        elif not json_equal(actual[key], value):
            out.append(f"{label}.{key}: expected {_show(value)}, got {_show(actual[key])}")


def _check_records(out: _Mismatches, label: str, matchers: Sequence[Mapping[str, Any]], actual: Any) -> None:
    if not isinstance(actual, Sequence) or isinstance(actual, str):
        out.append(f"{label}: expected a list, got {_show(actual)}")
        return
    if len(actual) != len(matchers):
        out.append(f"{label}: expected {len(matchers)} record(s), got {len(actual)}: {_show(actual)}")
        return
    for i, (matcher, record) in enumerate(zip(matchers, actual)):
        _check_subset(out, f"{label}[{i}]", matcher.get("subset", {}), record)
        if isinstance(record, Mapping):
            for key in matcher.get("absent", ()):
                out.expect(key not in record, f"{label}[{i}].{key}: expected absent, got {_show(record.get(key))}")


def _check_include(out: _Mismatches, label: str, wanted: Sequence[Any], actual: Sequence[Any]) -> None:
    for item in wanted:
        out.expect(any(json_equal(item, a) for a in actual), f"{label}: {_show(item)} not found in {_show(list(actual))}")


def _ids(events: Any) -> list[Any]:
    return [e.get("id") if isinstance(e, Mapping) else e for e in (events or [])]


def _exact(out: _Mismatches, label: str, expected: Any, actual: Any) -> None:
    out.expect(json_equal(actual, expected), f"{label}: expected {_show(expected)}, got {_show(actual)}")


def _get(actual: Any, key: str) -> Any:
    return actual.get(key) if isinstance(actual, Mapping) else None


def check_vector(vector: Vector, run: Runner) -> list[str]:
    """Run ``vector`` through ``run`` and return the mismatches (an empty list means pass).

    ``run(operation, input)`` must return the operation's result in the README's JSON form.
    It receives a private deep copy of the input; modifying it is reported as a mismatch.
    Exceptions raised by ``run`` propagate.
    """
    out = _Mismatches()
    expect = vector.expect
    op = vector.operation
    given = copy.deepcopy(dict(vector.input))
    actual = run(op, given)
    out.expect(json_equal(given, vector.input), "the operation modified its input")

    failed = isinstance(actual, Mapping) and "error" in actual and op in FAILING_OPERATIONS
    if "error" in expect:
        want = expect["error"]
        if not failed:
            out.append(f"expected the operation to fail with {_show(want)}, got {_show(actual)}")
        else:
            for key in ("code", "detail"):
                if key in want:
                    found = _get(actual["error"], key)
                    out.expect(json_equal(found, want[key]), f"error {key}: expected {_show(want[key])}, got {_show(found)}")
            message = _get(actual["error"], "message")
            if "message" in want:
                out.expect(message == want["message"], f"error message: expected {want['message']!r}, got {message!r}")
            if "messageContains" in want:
                out.expect(isinstance(message, str) and want["messageContains"] in message,
                           f"error message: expected to contain {want['messageContains']!r}, got {message!r}")
        return list(out)
    if failed:
        out.append(f"the operation failed: {_show(actual)}")
        return list(out)

    # --- simple exact matchers on one key of the result ------------------------------
    for key in ("hash", "canonicalJson", "event", "terminal", "modelVisible", "lane", "hasCorruption",
                "commits", "blockReason", "blockedSegmentIndex"):
        if key in expect:
            if key not in (actual or {}):
                out.append(f"{key}: missing from the result {_show(actual)}")
            else:
                _exact(out, key, expect[key], actual[key])
    if "failpoints" in expect:
        rows = _get(actual, "failpoints") or []
        reduced = [{"id": _get(f, "id"), "committedPrefix": _get(f, "committedPrefix")} for f in rows]
        _exact(out, "failpoints", expect["failpoints"], reduced)

    # --- whole-result matchers ---------------------------------------------------------
    for key in ("appendCheck", "transition", "bundle", "interpretation", "resolution"):
        if key in expect:
            _exact(out, key, expect[key], actual)
    for key in ("transitionSubset", "bundleSubset", "resolutionSubset", "planSubset", "resultSubset"):
        if key in expect:
            _check_subset(out, key.removesuffix("Subset"), expect[key], actual)
    for key in expect.get("absentKeys", ()):
        out.expect(key not in (actual or {}), f"{key}: expected absent, got {_show(_get(actual, key))}")
    for key in expect.get("presentKeys", ()):
        out.expect(key in (actual or {}), f"{key}: expected present")

    # --- issues (scan, resolve) --------------------------------------------------------
    issues = _get(actual, "issues") or []
    codes = [_get(i, "code") for i in issues]
    if "issues" in expect:
        _exact(out, "issues", expect["issues"], issues)
    if "issuesBrief" in expect:
        _exact(out, "issuesBrief", expect["issuesBrief"], [{"code": _get(i, "code"), "eventId": _get(i, "eventId")} for i in issues])
    if "issuesInclude" in expect:
        _check_include(out, "issues", expect["issuesInclude"], issues)
    if "issueCodes" in expect:
        _exact(out, "issueCodes", expect["issueCodes"], codes)
    if "issueCodesInclude" in expect:
        _check_include(out, "issueCodes", expect["issueCodesInclude"], codes)
    if "operationCount" in expect:
        _exact(out, "operationCount", expect["operationCount"], len(_get(actual, "operations") or []))
    if "decisions" in expect:
        _check_records(out, "decisions", expect["decisions"], _get(actual, "decisions"))

    # --- plan ---------------------------------------------------------------------------
    if op == "plan":
        if "operations" in expect:
            _check_records(out, "operations", expect["operations"], _get(actual, "operations"))
        if "diagnostics" in expect:
            _check_records(out, "diagnostics", expect["diagnostics"], _get(actual, "diagnostics"))
        diag_codes = [_get(d, "code") for d in _get(actual, "diagnostics") or []]
        if "diagnosticCodes" in expect:
            _exact(out, "diagnosticCodes", expect["diagnosticCodes"], diag_codes)
        if "diagnosticCodesInclude" in expect:
            _check_include(out, "diagnosticCodes", expect["diagnosticCodesInclude"], diag_codes)
        if "rejectionReasonsInclude" in expect:
            _check_include(out, "rejectionReasons", expect["rejectionReasonsInclude"], _get(actual, "rejectionReasons") or [])
        if "replayEventIds" in expect:
            _exact(out, "replayEventIds", expect["replayEventIds"], _ids(_get(actual, "replayRuntimeEvents")))
        if "directiveContains" in expect:
            directive = _get(actual, "directive")
            if not isinstance(directive, str):
                out.append(f"directive: expected a string, got {_show(directive)}")
            else:
                for text in expect["directiveContains"]:
                    out.expect(text.casefold() in directive.casefold(), f"directive: {text!r} not found in {directive!r}")
        if expect.get("deterministic"):
            again = run(op, copy.deepcopy(dict(vector.input)))
            out.expect(json_equal(actual, again), "two runs on the same input gave different results")

    # --- segment / composite replay ------------------------------------------------------
    if op in ("segment_replay", "composite_replay"):
        blocked = _get(actual, "blocked")
        if "blockReason" not in expect:
            out.expect(blocked is False, f"expected the replay not to be blocked, got {_show(actual)}")
        else:
            out.expect(blocked is True, f"expected the replay to be blocked, got {_show(actual)}")
        for key in ("trimmedSuffixEventIds", "replayEventIds", "providerItemEventIds", "runtimeContextEventIds",
                    "boundaryRunIds"):
            if key in expect:
                if key not in (actual or {}):
                    out.append(f"{key}: missing from the result {_show(actual)}")
                else:
                    _exact(out, key, expect[key], actual[key])

    # --- prefix digest ---------------------------------------------------------------------
    if op == "prefix_digest" and "digest" in expect:
        if _get(actual, "ok") is not True:
            out.append(f"digest: expected a valid prefix (ok: true), got {_show(actual)}")
        else:
            _exact(out, "digest", expect["digest"], _get(actual, "digest"))

    # --- args hash equality without a value ----------------------------------------------
    if "sameHashAs" in expect:
        other = run("args_hash", copy.deepcopy(dict(expect["sameHashAs"])))
        if "error" in (other or {}) or "hash" not in (actual or {}):
            out.append(f"sameHashAs: could not compare {_show(actual)} with {_show(other)}")
        else:
            _exact(out, "sameHashAs", other["hash"], actual["hash"])
    return list(out)
