"""The legal-variant corpus of the self-test: correct implementations that the suite must pass.

Why: a conformance verdict must be right both ways. Mutants (``maka_ref/adapter/_mutants``)
prove that the suite fails a wrong implementation; a *variant* makes one choice the spec leaves
free differently from the reference — the wording of a diagnostic, the directive's sentence,
a failpoint's ``boundary`` paraphrase, an error's message — and the suite must still certify
it. A variant that fails a clause is a **false alarm**: the clause compares something the
contract does not fix (``maka-conformance selftest`` reports it and exits 1).

``python -m maka_ref.adapter --variant NAME`` applies one at start-up; ``--list-variants``
prints the corpus. Like the mutants, this package is imported only when one of these options
is given. Interface: ``VARIANTS`` (name → :class:`Variant`), ``apply(name)``, ``render_list()``.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass
from typing import Any, Callable, Mapping

__all__ = ["VARIANTS", "Variant", "apply", "render_list"]


@dataclass(frozen=True)
class Variant:
    name: str
    spec: str
    #: The self-test's ``-k`` selection: the clauses that see the changed choice.
    keyword: str | None
    apply: Callable[[], None]

    @property
    def description(self) -> str:
        return inspect.cleandoc(self.apply.__doc__ or "").split("\n\n")[0].replace("\n", " ")

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "spec": self.spec, "keyword": self.keyword, "description": self.description}


VARIANTS: dict[str, Variant] = {}


def variant(name: str, *, spec: str, keyword: str | None) -> Callable[[Callable[[], None]], Callable[[], None]]:
    def register(apply: Callable[[], None]) -> Callable[[], None]:
        if name in VARIANTS or not (apply.__doc__ or "").strip():
            raise ValueError(f"variant {name!r} is a duplicate or has no docstring")
        VARIANTS[name] = Variant(name, spec, keyword, apply)
        return apply

    return register


def apply(name: str) -> None:
    VARIANTS[name].apply()


def render_list() -> str:
    lines = [f"{v.name:<24} {v.spec:<22} {v.description}" for v in VARIANTS.values()]
    return "\n".join(lines + [f"{len(VARIANTS)} variants"]) + "\n"


# ---------------------------------------------------------------------------------------------
# The corpus
# ---------------------------------------------------------------------------------------------

#: Operations whose error *message* is normative (protocol §4.1: the spec's exact text).
_NORMATIVE_MESSAGES = frozenset({"ledger.args_hash", "ledger.encode", "ledger.decode"})

_DIRECTIVE = ("VARIANT: the last tool call may have had side effects. Do NOT RETRY it blindly; "
              "inspect the workspace with read-only tools first.")


def _reworded_plan(plan: Any) -> Any:
    if not isinstance(plan, Mapping):
        return plan
    out = dict(plan)
    if isinstance(out.get("diagnostics"), list):
        out["diagnostics"] = [{**d, "message": f"variant wording for {d.get('code')}"} if isinstance(d, Mapping) else d
                              for d in out["diagnostics"]]
    if "directive" in out:
        out["directive"] = _DIRECTIVE
    return out


def _reworded(op: str, response: dict[str, Any]) -> dict[str, Any]:
    if not response.get("ok"):
        error = response.get("error")
        if isinstance(error, Mapping) and op not in _NORMATIVE_MESSAGES:
            response = {**response, "error": {**error, "message": f"variant message ({error.get('code')})"}}
        return response
    result = response.get("result")
    if op == "ledger.plan":
        result = _reworded_plan(result)
    elif op == "ledger.failpoint_catalog" and isinstance(result, Mapping):
        result = {**result, "failpoints": [{**fp, "boundary": f"variant boundary of {fp.get('id')}"}
                                           for fp in result.get("failpoints", [])]}
    elif op == "store.project" and isinstance(result, Mapping):
        result = {**result, "runs": [{**run, "plan": _reworded_plan(run.get("plan"))} if isinstance(run, Mapping) else run
                                     for run in result.get("runs", [])]}
    return {**response, "result": result}


@variant("reworded", spec="20 §1.1; 20 §1.3; 20 §2; protocol §2.2",
         keyword="EQUIV or VEC or STORE or PHASE0 or CRASH-P")
def apply_reworded() -> None:
    """Every free text is worded differently: diagnostic messages, the directive (a new
    sentence that still matches /Do not retry/i and /read-only/i), failpoint boundaries, and
    the message of every error whose text the protocol leaves free.

    Spec 20 §1.1 fixes the directive only through those two patterns and §1.3 fixes codes and
    their order, not messages; §2 fixes a failpoint's id and committed prefix, not its
    paraphrase; protocol §2.2 compares errors by code. Upstream's own wording differs from the
    reference's in exactly these places.
    """
    from maka_ref.adapter._dispatch import Dispatcher

    original = Dispatcher.handle

    # ``batch`` answers each item through ``self.handle``, so its items are reworded too.
    def handle(self: Any, op: str, params: Any) -> dict[str, Any]:
        return _reworded(op, original(self, op, params))

    Dispatcher.handle = handle  # type: ignore[method-assign]
