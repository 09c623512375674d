"""The maka-conformance wire protocol, version 1: JSON Schemas and a small loader.

Why a package of data files: implementers in other languages validate their adapter's
messages against the same schemas the harness uses (``docs/protocol.md`` is normative; the
schemas are its machine-readable form). This module only loads and applies them; it imports
``jsonschema`` lazily so that importing the constants stays cheap.

* :data:`PROTOCOL_VERSION`, :data:`CAPABILITIES` (capability → operations),
  :data:`OPERATIONS` (operation → capability), :data:`CAPABILITY_FREE_OPERATIONS` (``hello``
  and the optional ``batch`` of §4.5, which belong to no capability);
* :func:`load_schema` (a file of this package, parsed);
* :func:`validate_request`, :func:`validate_response`, :func:`validate_announcement`: a list
  of readable errors (``"$.result.decisions[0].status: … "``), empty when valid.

Index of the files: ``conformance/protocol/README.md``.

May import: ``maka_ref``.
"""

from __future__ import annotations

import json
from functools import lru_cache
from importlib import resources
from typing import Any, Mapping

__all__ = [
    "CAPABILITIES",
    "CAPABILITY_FREE_OPERATIONS",
    "OPERATIONS",
    "PROTOCOL_VERSION",
    "SCHEMA_BASE",
    "load_schema",
    "validate_announcement",
    "validate_request",
    "validate_response",
]

PROTOCOL_VERSION = 1

#: Capability → its operations (protocol §4), in the protocol's order.
CAPABILITIES: dict[str, tuple[str, ...]] = {
    "ledger.codec": ("ledger.args_hash", "ledger.encode", "ledger.decode", "ledger.predicates"),
    "ledger.resolver": (
        "ledger.lane", "ledger.generic_append", "ledger.scan", "ledger.validate_transition",
        "ledger.validate_bundle", "ledger.interpret", "ledger.resolve", "ledger.code_mode_commits",
    ),
    "ledger.plan": (
        "ledger.plan", "ledger.failpoint_catalog", "ledger.segment_replay", "ledger.composite_replay",
        "ledger.prefix_digest",
    ),
    "store": (
        "store.open", "store.close", "store.create_run", "store.update_run", "store.append",
        "store.commit_tool_prepared", "store.commit_tool_outcome", "store.commit_recovery_bundle",
        "store.read_events", "store.project", "store.rebuild_projections",
    ),
    "store.continuation": ("store.claim_continuation", "store.commit_continuation_start"),
    "runtime.loop": ("runtime.run_turn",),
    "runtime.repair": ("runtime.repair",),
    "runtime.continuation": ("runtime.resume",),
    "faults": ("faults.arm",),
    # Phase 3: the finalize-only reconciler (spec-phase3 §6; optional, no level requires it)
    "runtime.reconcile": (
        "runtime.reconcile", "reconcile.decode_evidence", "reconcile.encode_evidence", "reconcile.check_binding",
        "reconcile.classify", "reconcile.observe", "store.read_tool_evidence",
    ),
    # no operation: a promise about where and how the implementation keeps its durable files
    # (protocol §3), so that the crash lab may mount its power-loss filesystem there
    "faults.powerloss": (),
    # spec-phase4 §10: the Git checkpoint carrier, and the checkpoint-mode run and gated resume
    "workspace.checkpoint": (
        "checkpoint.policy_hash", "checkpoint.boundary_encode", "checkpoint.boundary_decode",
        "checkpoint.eligibility", "checkpoint.capture", "checkpoint.verify", "checkpoint.compare",
        "checkpoint.restore", "checkpoint.list", "checkpoint.collect", "checkpoint.run_turn", "checkpoint.resume",
    ),
}

#: Operation → its capability (``hello`` belongs to none).
OPERATIONS: dict[str, str] = {op: capability for capability, ops in CAPABILITIES.items() for op in ops}

#: Operations outside every capability: the handshake and the optional ``batch`` (protocol §4.5).
#: Kept out of :data:`OPERATIONS` so that its values stay exactly the claimable capabilities.
CAPABILITY_FREE_OPERATIONS: tuple[str, ...] = ("hello", "batch")

#: Base URI of the schemas' ``$id`` (never fetched: every reference resolves to a packaged file).
SCHEMA_BASE = "https://maka-conformance.invalid/protocol/"
_VECTOR_SCHEMA_URI = "https://maka-conformance.invalid/vectors/vector.schema.json"

#: Operation family → the file holding its ``<op>.params`` / ``<op>.result`` definitions.
_OPS_FILES = {"ledger": "ops.ledger.schema.json", "store": "ops.store.schema.json",
              "runtime": "ops.runtime.schema.json", "faults": "ops.faults.schema.json",
              "batch": "ops.batch.schema.json",
              "checkpoint": "ops.checkpoint.schema.json", "reconcile": "ops.reconcile.schema.json"}


def load_schema(name: str) -> dict[str, Any]:
    """The parsed schema file ``name`` of this package (e.g. ``"envelope.request.schema.json"``)."""
    if "/" in name or "\\" in name:
        raise ValueError(f"not a schema file name: {name!r}")
    return json.loads(resources.files(__name__).joinpath(name).read_text(encoding="utf-8"))


def ops_schema_file(op: str) -> str:
    """The file that defines ``<op>.params`` and ``<op>.result``."""
    if op == "hello":
        raise ValueError("hello has its own files: hello.params.schema.json, hello.result.schema.json")
    if op not in OPERATIONS and op not in CAPABILITY_FREE_OPERATIONS:
        raise KeyError(f"unknown operation {op!r}")
    return _OPS_FILES[op.split(".", 1)[0]]


@lru_cache(maxsize=1)
def _registry() -> Any:
    from referencing import Registry, Resource

    resources_: list[tuple[str, Any]] = []
    for entry in resources.files(__name__).iterdir():
        if entry.name.endswith(".schema.json"):
            resources_.append((SCHEMA_BASE + entry.name, Resource.from_contents(load_schema(entry.name))))
    vector = json.loads(resources.files("conformance").joinpath("vectors", "vector.schema.json").read_text(encoding="utf-8"))
    vector.setdefault("$schema", "https://json-schema.org/draft/2020-12/schema")
    resources_.append((_VECTOR_SCHEMA_URI, Resource.from_contents(vector)))
    return Registry().with_resources(resources_)


@lru_cache(maxsize=None)
def _validator(ref: str) -> Any:
    """A compiled validator for the schema at ``ref`` (an absolute URI with optional fragment)."""
    from jsonschema import Draft202012Validator

    return Draft202012Validator({"$ref": ref}, registry=_registry())


def _path(parts: Any) -> str:
    out = "$"
    for part in parts:
        out += f"[{part}]" if isinstance(part, int) else f".{part}"
    return out


def _errors(ref: str, instance: Any, prefix: tuple[Any, ...] = ()) -> list[str]:
    from jsonschema.exceptions import best_match

    found = list(_validator(ref).iter_errors(instance))
    if not found:
        return []
    messages: list[str] = []
    best = best_match(found)
    ordered = [best] + [e for e in sorted(found, key=lambda e: list(map(str, e.absolute_path))) if e is not best]
    for error in ordered:
        message = f"{_path(prefix + tuple(error.absolute_path))}: {error.message}"
        if message not in messages:
            messages.append(message)
    return messages


def _op_ref(op: str, part: str) -> str:
    if op == "hello":
        return f"{SCHEMA_BASE}hello.{part}.schema.json"
    return f"{SCHEMA_BASE}{ops_schema_file(op)}#/$defs/{op}.{part}"


def validate_request(message: Any) -> list[str]:
    """Errors of a request: the envelope, then the operation's params schema."""
    errors = _errors(SCHEMA_BASE + "envelope.request.schema.json", message)
    if errors:
        return errors
    op = message["op"]
    if op not in CAPABILITY_FREE_OPERATIONS and op not in OPERATIONS:
        return [f"$.op: unknown operation {op!r}"]
    return _errors(_op_ref(op, "params"), message["params"], ("params",))


def validate_response(op: str, message: Mapping[str, Any]) -> list[str]:
    """Errors of the response to ``op``: the envelope, then (when ``ok``) the result schema.

    An error response is valid for any ``op`` (``unknown_op`` answers an unknown one); a
    success for an operation the protocol does not define is an error.
    """
    errors = _errors(SCHEMA_BASE + "envelope.response.schema.json", message)
    if errors:
        return errors
    if message["ok"] is not True:
        return []
    if op not in CAPABILITY_FREE_OPERATIONS and op not in OPERATIONS:
        return [f"$.result: no result schema: unknown operation {op!r}"]
    return _errors(_op_ref(op, "result"), message["result"], ("result",))


def validate_announcement(message: Any) -> list[str]:
    """Errors of a failpoint announcement line (protocol §2.3)."""
    return _errors(SCHEMA_BASE + "announcement.schema.json", message)
