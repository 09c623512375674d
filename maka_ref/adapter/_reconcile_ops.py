"""``reconcile.*``: the pure operations of the ``runtime.reconcile`` capability (``docs/protocol.md``
§4.3.1, docs/spec-phase3.md §2, §4.4–§4.5, §6).

Why pure operations next to ``runtime.reconcile``: the evidence codec and the observation table
are functions of their inputs alone, so another implementation can be checked against the
golden vectors (``conformance/vectors/evidence.json``, ``observation.json``) without a store, a
crash or a file. Each operation is a thin mapping onto ``maka_ref._reconcile``:

* ``reconcile.decode_evidence`` (spec-phase3 §2.2): ``{"ok": true, "evidenceJson",
  "evidenceDigest"}`` or ``{"ok": false, "code"}`` — a *result*, never a protocol error,
  because decoding answers a code for every input;
* ``reconcile.encode_evidence`` (spec-phase3 §2.4): the canonical text and digest, or the error
  value whose code is the §2.2 code (encode *raises*: a record that does not decode is never
  written);
* ``reconcile.check_binding`` (spec-phase3 §2.3): the record against its T1 call and dispatch
  events, ``{"ok": true}`` or ``{"ok": false, "code"}`` (a §2.2 code when the record does not
  decode, else the first §2.3 code);
* ``reconcile.classify`` (spec-phase3 §4.4, §4.5): evidence × observed state → the row, its
  decision and the ``observationDigest``; an input that does not decode is ``{"ok": false,
  "code"}`` with the §2.2 code or ``observed_state_invalid``;
* ``reconcile.observe`` (spec-phase3 §4.1–§4.3): what the reconciler's observer sees at a
  canonical target now — the one operation here that touches a file system, and only to read
  it (no link followed, nothing written, no ``fsync``: the clause checks bytes and ``mtime``).

``store.read_tool_evidence`` (spec-phase3 §3.4, §6) belongs to the same capability but reads the
session's store, so it lives with the other store operations (``_store_ops``).
"""

from __future__ import annotations

from typing import Any, Callable, Mapping

from maka_ref.adapter._errors import OpError, invalid_params

__all__ = ["RECONCILE_OPERATIONS"]

Params = Mapping[str, Any]


def _decoded(params: Params) -> Any:
    """The record of ``params.evidence`` (a JSON value) or ``params.evidenceJson`` (text)."""
    from maka_ref._reconcile import decode_evidence, decode_evidence_text

    if ("evidence" in params) == ("evidenceJson" in params):
        raise invalid_params("exactly one of params.evidence and params.evidenceJson is required")
    if "evidenceJson" in params:
        return decode_evidence_text(params["evidenceJson"])
    return decode_evidence(params["evidence"])


def _required(params: Params, *keys: str) -> None:
    for key in keys:
        if key not in params:
            raise invalid_params(f"params.{key} is required")


def decode_evidence(params: Params) -> dict[str, Any]:
    """spec-phase3 §2.2 (+ §2.1 for a record): a result for every input."""
    from maka_ref._reconcile import Invalid, encode_evidence, evidence_digest

    record = _decoded(params)
    if isinstance(record, Invalid):
        return {"ok": False, "code": record.code}
    return {"ok": True, "evidenceJson": encode_evidence(record), "evidenceDigest": evidence_digest(record)}


def encode_evidence(params: Params) -> dict[str, Any]:
    """spec-phase3 §2.4: the canonical text of a record that decodes; otherwise the §2.2 code."""
    from maka_ref._reconcile import Invalid, decode_evidence, encode_evidence, evidence_digest

    _required(params, "evidence")
    record = decode_evidence(params["evidence"])
    if isinstance(record, Invalid):
        raise OpError(record.code, f"file evidence is invalid: {record.code}", {"detail": record.detail})
    return {"evidenceJson": encode_evidence(record), "evidenceDigest": evidence_digest(record)}


def check_binding(params: Params) -> dict[str, Any]:
    """spec-phase3 §2.3 over decoded RuntimeEvents (an event that does not decode is ``invalid_params``)."""
    from maka_ref import MakaRefError, decode_runtime_event
    from maka_ref._codec import thaw
    from maka_ref._reconcile import Invalid, check_binding as bind, decode_evidence

    _required(params, "evidence", "callEvent", "dispatchEvent")
    events = []
    for key in ("callEvent", "dispatchEvent"):
        try:
            events.append(thaw(decode_runtime_event(params[key])))
        except MakaRefError as exc:
            raise invalid_params(f"params.{key} is not a RuntimeEvent: {exc.message}") from None
    record = decode_evidence(params["evidence"])
    if isinstance(record, Invalid):
        return {"ok": False, "code": record.code}
    problem = bind(record, events[0], events[1])
    return {"ok": True} if problem is None else {"ok": False, "code": problem.code}


def classify(params: Params) -> dict[str, Any]:
    """spec-phase3 §4.4 (the row and its decision) and §4.5 (``observationDigest``)."""
    from maka_ref._reconcile import Invalid, classify as table, decode_evidence, decode_observed_state
    from maka_ref._reconcile import observation_digest

    _required(params, "evidence", "observed")
    record = decode_evidence(params["evidence"])
    if isinstance(record, Invalid):
        return {"ok": False, "code": record.code}
    observed = decode_observed_state(params["observed"])
    if isinstance(observed, Invalid):
        return {"ok": False, "code": observed.code}
    row = table(record, observed)
    return {"ok": True, "observation": row.observation, "disposition": row.disposition,
            "reasonCode": row.reason_code, "transient": row.transient,
            "observationDigest": observation_digest(record, observed)}


def observe(params: Params) -> dict[str, Any]:
    """spec-phase3 §4.2: the observed state of ``targetPath`` below the workspace's canonical
    root. A target that is not canonical (§1.5) is observed as ``unreadable``/``target_invalid``,
    as the observer itself answers; a workspace that is not a directory is ``invalid_params``
    (the request names no workspace the harness gave us)."""
    import os

    from maka_ref._reconcile import observe as look
    from maka_ref.adapter._params import req_str, workspace

    root = workspace(params)
    target = req_str(params, "targetPath")
    if not os.path.isdir(root):
        raise invalid_params(f"params.workspace {root!r} is not a directory")
    return {"observed": look(os.path.realpath(root), target).to_json()}


RECONCILE_OPERATIONS: dict[str, Callable[[Params], dict[str, Any]]] = {
    "reconcile.decode_evidence": decode_evidence,
    "reconcile.encode_evidence": encode_evidence,
    "reconcile.check_binding": check_binding,
    "reconcile.classify": classify,
    "reconcile.observe": observe,
}
