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

May import: ``maka_ref._repair``, ``maka_ref._runtime``, ``maka_ref.adapter._dispatch``,
``maka_ref.adapter._errors``, ``maka_ref.adapter._mutants``, ``maka_ref.adapter._store_ops``.
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


@variant("upstream-choices", spec="30 §6.5; 20 §4.1 step 3; 30 §3.2",
         keyword="RUNTIME-TOOLS or RECOVERY-REPAIR or RUNTIME-CRASH or CRASH-P9 or CRASH-P10")
def apply_upstream_choices() -> None:
    """Three choices the spec leaves open, made as upstream makes them: a call of a tool that
    does not exist is admitted through T1 and answered with an error through T2 (instead of
    refused before T1), a header's ``completedAt`` is a moment after its terminal event's
    ``ts``, and projections are rebuilt only as a whole (``rebuild_scope_unsupported``).

    Spec 30 §6.5 lists the preflight refusals that never reach T1 (schema violations, loop
    gates, deferred tools…); an unknown tool is not among them, and upstream routes it to its own
    ``invalid`` tool through T1/T2 (packages/runtime/src/ai-sdk-backend.ts:2700). Spec 20 §4.1
    step 3 sets ``completedAt = ts`` without saying whose ts; upstream's repair uses the time of
    the repair (session-manager.ts:5829). Spec 30 §3.2's per-session rebuild is internal to
    upstream's conversation copy; its public rebuild takes no session. None of these starts
    anything or loses a fact.
    """
    from maka_ref._repair import terminal
    from maka_ref._runtime import tool_runtime
    from maka_ref._runtime.tools import ToolError

    class _UnknownTool:
        """Upstream's ``invalid`` tool: admitted, runs nothing, answers an error."""

        recovery_mode = "never_auto_retry"

        def preflight(self, root: Any, args: Any) -> None:
            return None

    original_preflight = tool_runtime.ToolRuntime._preflight
    original_run = tool_runtime.ToolRuntime._run_implementation

    def preflight(self: Any, call: Any) -> Any:
        if isinstance(call.args, dict) and call.name not in self.tools:
            return _UnknownTool(), None, tool_runtime.canonical_args_hash(call.name, call.args)
        return original_preflight(self, call)

    def run_implementation(self: Any, tool: Any, call: Any, *rest: Any, **kw: Any) -> Any:
        # ``*rest``: the runtime's own arguments after the call (operation id, args hash and,
        # since Phase 3, the file evidence), passed through unchanged whatever they become.
        if isinstance(tool, _UnknownTool):  # nothing starts: no effect-log line
            error = ToolError(f"Tool {call.name} is not available", code="tool_not_available")
            return {"code": error.code, "message": error.message}, True, False
        return original_run(self, tool, call, *rest, **kw)

    tool_runtime.ToolRuntime._preflight = preflight  # type: ignore[method-assign]
    tool_runtime.ToolRuntime._run_implementation = run_implementation  # type: ignore[method-assign]

    original_patch = terminal.header_patch

    def header_patch(event: Any, status: str, **kw: Any) -> dict[str, Any]:
        patch = original_patch(event, status, **kw)
        patch["completedAt"] = patch["updatedAt"] = event["ts"] + 7  # a later moment than the fact
        return patch

    from maka_ref.adapter._mutants._patch import replace

    replace("maka_ref._repair.terminal", "header_patch", header_patch)

    from maka_ref.adapter._errors import OpError
    from maka_ref.adapter._store_ops import StoreSession

    original_rebuild = StoreSession.rebuild_projections

    def rebuild_projections(self: Any, params: Any) -> dict[str, Any]:
        if isinstance(params, Mapping) and params.get("sessionId") is not None:
            raise OpError("rebuild_scope_unsupported", "this store rebuilds its projections only as a whole")
        return original_rebuild(self, params)

    StoreSession.rebuild_projections = rebuild_projections  # type: ignore[method-assign]
