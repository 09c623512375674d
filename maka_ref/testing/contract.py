"""What of an answer the contract fixes: the form in which two implementations' answers compare.

Why: a conformance verdict must never fail an implementation on what the spec leaves free.
Spec 20 §1.1 and §1.3 fix a Phase 0 plan's codes, their order and every field *except* the
wording: a diagnostic's ``message`` is free text for people, and the ``directive`` is fixed
only through the two patterns ``/Do not retry/i`` and ``/read-only/i`` (upstream's own tests
check exactly that: ``packages/runtime/src/__tests__/runtime-resume.test.ts``). Spec 20 §2
fixes a failpoint's ``id`` and ``committedPrefix``, not its ``boundary`` paraphrase. Every
comparison of two implementations (equivalence clauses, store projections, crash-lab oracles,
the differential fuzzer, the anchor vectors recorded from upstream) goes through the functions
below, so the rule lives in one place.

The forms are plain JSON (new dicts and lists; the input is never modified) and keep every
fixed field, so a difference in a code, an id or an order still shows as the first differing
JSON path. A directive is replaced by a token saying which of the required patterns it
matches, so a directive that drops "Do not retry" is still a difference.
"""

from __future__ import annotations

import re
from typing import Any, Mapping

__all__ = ["DIRECTIVE_PATTERNS", "NORMATIVE_MESSAGES", "answer_form", "directive_form", "error_message_form",
           "failpoint_catalog_form", "plan_form"]

#: Spec 20 §1.1: the directive must match both (case-insensitively); nothing else about it is fixed.
DIRECTIVE_PATTERNS: tuple[str, ...] = (r"Do not retry", r"read-only")
_COMPILED = tuple(re.compile(p, re.IGNORECASE) for p in DIRECTIVE_PATTERNS)


def directive_form(directive: Any) -> Any:
    """A token for a directive: which of :data:`DIRECTIVE_PATTERNS` it matches (a non-string
    is kept as it is, so a wrong type still differs)."""
    if not isinstance(directive, str):
        return directive
    missing = [p for p, rx in zip(DIRECTIVE_PATTERNS, _COMPILED) if not rx.search(directive)]
    if not missing:
        return "<directive matching /" + "/i and /".join(DIRECTIVE_PATTERNS) + "/i>"
    return "<directive not matching /" + "/i, /".join(missing) + "/i>"


#: The error texts the spec fixes (spec 10 §2.1, §2.2, §2.6). An error message of
#: ``ledger.args_hash``/``encode``/``decode`` is compared through :func:`error_message_form`: a
#: message that contains one of these is reduced to it, so only the fixed part must agree
#: (upstream words the empty-tool-name error "Tool argument identity requires a tool name"; the
#: spec fixes "requires a tool name").
NORMATIVE_MESSAGES: tuple[str, ...] = (
    "Invalid RuntimeEvent schema",
    "RuntimeEvent is not losslessly serializable",
    "Tool arguments must be strict JSON values",
    "requires a tool name",
)


def error_message_form(message: Any) -> Any:
    """The part of an error message the spec fixes (see :data:`NORMATIVE_MESSAGES`); any other
    message is kept whole, so a wrong message still differs."""
    if isinstance(message, str):
        for fixed in NORMATIVE_MESSAGES:
            if fixed in message:
                return fixed
    return message


def plan_form(plan: Any) -> Any:
    """A ResumePlan (spec 20 §1.1) without its free wording: each diagnostic's ``message`` is
    dropped and the ``directive`` becomes :func:`directive_form`. Anything that is not a plan
    object is returned unchanged."""
    if not isinstance(plan, Mapping):
        return plan
    out = dict(plan)
    diagnostics = out.get("diagnostics")
    if isinstance(diagnostics, list):
        out["diagnostics"] = [
            {k: v for k, v in d.items() if k != "message"} if isinstance(d, Mapping) else d for d in diagnostics
        ]
    if "directive" in out:
        out["directive"] = directive_form(out["directive"])
    return out


def failpoint_catalog_form(result: Any) -> Any:
    """``ledger.failpoint_catalog``'s result without the free ``boundary`` text (spec 20 §2)."""
    if not isinstance(result, Mapping) or not isinstance(result.get("failpoints"), list):
        return result
    return {**result, "failpoints": [
        {k: v for k, v in fp.items() if k != "boundary"} if isinstance(fp, Mapping) else fp
        for fp in result["failpoints"]
    ]}


def _project_form(result: Any) -> Any:
    if not isinstance(result, Mapping) or not isinstance(result.get("runs"), list):
        return result
    return {**result, "runs": [
        {**run, "plan": plan_form(run["plan"])} if isinstance(run, Mapping) and "plan" in run else run
        for run in result["runs"]
    ]}


_FORMS = {
    "ledger.plan": plan_form,
    "ledger.failpoint_catalog": failpoint_catalog_form,
    "store.project": _project_form,
}


def answer_form(op: str, result: Any) -> Any:
    """The contract form of the *result* of protocol operation ``op`` (``ledger.plan``,
    ``store.project``, ``ledger.failpoint_catalog``; every other result is fully fixed)."""
    form = _FORMS.get(op)
    return result if form is None else form(result)
