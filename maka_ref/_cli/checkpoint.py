"""``maka-ref checkpoint list|verify|restore|collect|rebaseline`` and the Phase 4 options of ``run`` and
``resume`` (docs/spec-phase4.md §3.5, §3.6, §3.8, §5.1, §6.2, §7.1, §7.2): parsing and printing only,
over :mod:`maka_ref._boundary.commands`.

Exit codes (stable): 0 a result was printed; 2 refused or bad input — one JSON document
``{"error": {"code", "message", "details"?}}`` on stdout and one line on stderr, the code being
the carrier's (spec-phase4 §11.2), the store's or ``usage``; 3 parked (``rebaseline`` only, the
§6.3 refusal codes in ``rejectionReasons``).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TextIO

from maka_ref._cli.ledger_input import InputError
from maka_ref._errors import MakaRefError

__all__ = ["CheckpointInputError", "add_checkpoint_parser", "run_checkpoint"]

EXIT_OK = 0
EXIT_PARKED = 3


@dataclass(frozen=True)
class CheckpointInputError(InputError):
    """An :class:`InputError` that also carries the carrier's ``details``."""

    details: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        document = super().to_json()
        if self.details:
            document["error"]["details"] = dict(self.details)
        return document


def add_checkpoint_parser(sub: Any, workspace_type: Callable[[str], str]) -> None:
    p = sub.add_parser(
        "checkpoint",
        help="Phase 4 workspace checkpoints: list, verify, isolated restore, rebaseline (docs/spec-phase4.md)",
        description="Inspect and use the Git checkpoints (refs/maka/checkpoints/...) that bind a session's "
        "history to its workspace. list and verify only read; restore writes only DEST; rebaseline "
        "continues a parked session from the current files (needs MAKA_RUNTIME_SAFE_BOUNDARY_RESUME=1).",
    )
    cs = p.add_subparsers(dest="checkpoint_command", required=True, parser_class=type(p))
    q = cs.add_parser("list", help="list this workspace's checkpoint refs and the facts naming them (read-only)")
    q.add_argument("--workspace", required=True, type=workspace_type, metavar="DIR")
    q = cs.add_parser("verify", help="verify one checkpoint (objects, commit layout, policy; read-only)")
    q.add_argument("--workspace", required=True, type=workspace_type, metavar="DIR")
    q.add_argument("ref", metavar="REF", help="refs/maka/checkpoints/<uuid>/<13 digits>-<32 hex>")
    q.add_argument("--policy-hash", default=None, metavar="HASH", help="default: the reference policy's hash")
    q = cs.add_parser("restore", help="isolated restore of one checkpoint into a new directory DEST")
    q.add_argument("--workspace", required=True, type=workspace_type, metavar="DIR")
    q.add_argument("ref", metavar="REF")
    q.add_argument("destination", metavar="DEST", help="absolute path that must not exist, outside the workspace")
    q.add_argument("--policy-hash", default=None, metavar="HASH")
    q = cs.add_parser("collect", help="delete orphan checkpoint refs (named by no fact) older than the grace period")
    q.add_argument("--workspace", required=True, type=workspace_type, metavar="DIR")
    q.add_argument("--grace-seconds", type=float, default=None, metavar="S", help="default 600")
    q = cs.add_parser("rebaseline", help="continue a parked session from the current files (spec-phase4 §7.1)")
    q.add_argument("--workspace", required=True, type=workspace_type, metavar="DIR")
    q.add_argument("--session", default=None, metavar="ID")


def _refused(error: MakaRefError) -> CheckpointInputError:
    details = getattr(error, "details", None) or {}
    return CheckpointInputError(error.code, " ".join(error.message.splitlines()), details=dict(details))


def run_checkpoint(args: argparse.Namespace, out: TextIO, emit: Callable[[Any, TextIO], None]) -> int:
    from maka_ref._boundary import commands
    from maka_ref._checkpoint import DEFAULT_POLICY_HASH

    command = args.checkpoint_command
    try:
        if command == "list":
            emit(commands.checkpoint_list(args.workspace), out)
            return EXIT_OK
        if command == "verify":
            emit(commands.checkpoint_verify(args.workspace, args.ref, args.policy_hash or DEFAULT_POLICY_HASH), out)
            return EXIT_OK
        if command == "restore":
            emit(commands.checkpoint_restore(args.workspace, args.ref, args.destination,
                                             args.policy_hash or DEFAULT_POLICY_HASH), out)
            return EXIT_OK
        if command == "collect":
            grace = args.grace_seconds
            if grace is not None and not grace >= 0:
                raise CheckpointInputError("usage", "--grace-seconds must be a number >= 0")
            emit(commands.checkpoint_collect(args.workspace, *(() if grace is None else (grace,))), out)
            return EXIT_OK
        return run_resume(args.workspace, args.session, "rebaseline", out, emit)
    except MakaRefError as error:
        raise _refused(error) from None


def run_resume(workspace: str, session: str | None, intent: str, out: TextIO,
               emit: Callable[[Any, TextIO], None], *, destination: str | None = None) -> int:
    """``resume`` behind the §6.2 gate, a rebaseline or an isolated restore into
    ``destination``; exit 0 continued, 3 parked, 2 refused (a bad destination: the §3.6 code)."""
    from maka_ref._boundary.commands import resume_with_intent

    try:
        outcome, fact = resume_with_intent(workspace, session, intent=intent, destination=destination)
    except MakaRefError as error:
        raise _refused(error) from None
    document = outcome.to_json()
    if fact is not None:
        document["workspaceTransition"] = fact
    emit(document, out)
    return EXIT_PARKED if outcome.parked else EXIT_OK


def run_with_checkpoints(workspace: str, script: str, seed: str, out: TextIO,
                         emit: Callable[[Any, TextIO], None]) -> int:
    """``run --checkpoints``: the run summary plus ``workspaceCheckpoints`` (captures, failures)."""
    from maka_ref._boundary.commands import run_with_checkpoints as run_lib

    try:
        summary, report = run_lib(workspace, script, seed=seed)
    except MakaRefError as error:
        raise _refused(error) from None
    document = summary.to_json()
    document["workspaceCheckpoints"] = report
    emit(document, out)
    return EXIT_OK if summary.status == "completed" else 1
