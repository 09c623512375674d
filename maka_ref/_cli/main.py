"""``maka-ref``: a thin command line over the pure core (issue 2).

Why thin: every command is a library call plus printing, so tests call the library directly
and the CLI only owns argument parsing, exit codes and the error envelope. Results are one
JSON document on stdout with the spec's field names; exit 0 whenever a result was produced
("blocked" and "corruption" are results). Bad input exits 2 with ``{"error": {...}}`` on
stdout and one line on stderr.
"""

from __future__ import annotations

import argparse
import errno
import os
import sys
from typing import Any, NoReturn, Sequence, TextIO

from maka_ref._cli.checkpoint import (
    add_checkpoint_parser,
    run_checkpoint,
    run_resume,
    run_with_checkpoints,
)
from maka_ref._cli.ledger_input import InputError, load_ledger, load_ledger_with
from maka_ref._codec.argshash import canonical_args_hash
from maka_ref._codec.jsontext import iter_answer_json, parse_json
from maka_ref._errors import ArgsHashError, InvalidJSONTextError, MakaRefError
from maka_ref._events.encode import encode_runtime_event
from maka_ref._ledger.resolver import resolve_recovery
from maka_ref._plan.phase0.plan import build_resume_plan

EXIT_OK = 0
EXIT_INPUT_ERROR = 2
EXIT_PARKED = 3


class _Parser(argparse.ArgumentParser):
    """argparse, but usage errors use our JSON error envelope and exit code."""

    def error(self, message: str) -> NoReturn:
        raise InputError("usage", f"{self.prog}: {message}")


def _build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="maka-ref", description="Maka reference runtime: the pure ledger core.")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    p = sub.add_parser("resolve", help="print the RecoveryResolver result (spec 10 §6.1)")
    p.add_argument("ledger", help="JSON-lines file of RuntimeEvents, or - for stdin")

    p = sub.add_parser("plan", help="print the Phase 0 ResumePlan (spec 20 §1.1)")
    p.add_argument("ledger", help="JSON-lines file of RuntimeEvents, or - for stdin")
    p.add_argument("--expected-high-water", type=_non_negative_int, default=None, metavar="N")

    p = sub.add_parser("encode", help="print the canonical JSON of each event, one per line (spec 10 §2.2)")
    p.add_argument("ledger", help="JSON-lines file of RuntimeEvents, or - for stdin")

    p = sub.add_parser("args-hash", help="print canonicalArgsHash(TOOL, ARGS_JSON) (spec 10 §2.6)")
    p.add_argument("tool")
    p.add_argument("args_json", metavar="ARGS_JSON")

    p = sub.add_parser("demo", help="resolve and plan the example ledgers shipped with maka_ref")
    p.add_argument("paths", nargs="*", help="ledger files (default: the bundled examples)")

    p = sub.add_parser("inspect", help="print everything a workspace's store knows, read-only")
    p.add_argument("--workspace", required=True, type=_workspace_dir, metavar="DIR", help="the storage root to inspect")

    p = sub.add_parser("repair", help="startup repair of a workspace's runs; print the repair report (docs/choices/repair.md)")
    p.add_argument("--workspace", required=True, type=_workspace_dir, metavar="DIR", help="the storage root to repair")

    p = sub.add_parser(
        "reconcile",
        help="Phase 3: settle unsettled Write/Edit/Append operations from their file evidence, finalize only "
             "(docs/spec-phase3.md §5, docs/reconcile.md); exit 0 when every operation it looked at is settled, "
             "3 when one stays unsettled (its code says why), 2 on bad input",
    )
    p.add_argument("--workspace", required=True, type=_workspace_dir, metavar="DIR", help="the workspace whose store is reconciled")
    p.add_argument("--operation", default=None, metavar="ID", help="reconcile this operation only")

    p = sub.add_parser("run", help="run one scripted turn of the live runtime; print the run summary (docs/choices/runtime.md)")
    p.add_argument("--workspace", required=True, type=_workspace_dir, metavar="DIR", help="the workspace (tools act here; holds runtime.sqlite)")
    p.add_argument("--script", required=True, metavar="FILE", help="provider script (maka_ref/_runtime/script.schema.json)")
    p.add_argument("--checkpoints", action="store_true", help="Phase 4: capture a Git checkpoint and commit a workspace boundary before the first provider call and after every mutating step (docs/spec-phase4.md §5.1); an ineligible workspace is reported and the run goes on")

    p = sub.add_parser("resume", help="Phase 1 safe-boundary continuation (needs MAKA_RUNTIME_SAFE_BOUNDARY_RESUME=1; docs/choices/continuation-execution.md)")
    p.add_argument("--workspace", required=True, type=_workspace_dir, metavar="DIR", help="the workspace whose newest failed/cancelled run is resumed")
    p.add_argument("--session", default=None, metavar="ID", help="resume within this session only")
    intent = p.add_mutually_exclusive_group()
    intent.add_argument("--rebaseline", action="store_true", help="Phase 4: continue from the current files after a workspace park (docs/spec-phase4.md §7.1; same as `checkpoint rebaseline`)")
    intent.add_argument("--restore-into", default=None, metavar="DEST", help="Phase 4: isolated restore — materialize the session's current checkpoint into the new directory DEST (absolute, must not exist, outside the workspace) and continue there; the workspace's own files are never written (docs/spec-phase4.md §7.2)")

    add_checkpoint_parser(sub, _workspace_dir)
    return parser


def _workspace_dir(text: str) -> str:
    """``--workspace``: a non-empty path. An empty one would silently mean the current directory
    (``os.path`` joins ``""`` as ``.``), so the runtime would write its store where it was started."""
    if not text:
        raise argparse.ArgumentTypeError("the workspace must be a non-empty path")
    return text


def _non_negative_int(text: str) -> int:
    try:
        value = int(text, 10)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a non-negative integer, got {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected a non-negative integer, got {text!r}")
    return value


class OutputError(Exception):
    """The result document could not be written (``ENOSPC``, ``EBADF``, ``EIO``…)."""

    def __init__(self, cause: OSError) -> None:
        super().__init__(cause.strerror or str(cause))
        self.cause = cause


#: A document is held whole up to this many characters before its first byte is written, so
#: every ordinary answer is still all-or-nothing (a failure while writing it out becomes the
#: error document instead). A larger one (a plan over a big ledger) is streamed in
#: :data:`_WRITE_CHUNK` pieces as it is written out, never held whole (docs/performance.md).
_HOLD_WHOLE = 8 * 1024 * 1024
_WRITE_CHUNK = 1024 * 1024


def _emit(document: Any, out: TextIO) -> None:
    """Write one result document (±infinity from a ``1e400`` in the input as ``±1e400``),
    the same text as ``compact_json``, piece by piece (:func:`iter_answer_json`)."""
    pending: list[str] = []
    size = 0
    limit = _HOLD_WHOLE
    try:
        for piece in iter_answer_json(document):
            pending.append(piece)
            size += len(piece)
            if size >= limit:
                out.write("".join(pending))
                pending.clear()
                size, limit = 0, _WRITE_CHUNK
        pending.append("\n")
        out.write("".join(pending))
    except BrokenPipeError:
        raise
    except OSError as exc:
        raise OutputError(exc) from exc


def _cmd_resolve(args: argparse.Namespace, out: TextIO) -> int:
    _emit(resolve_recovery(load_ledger(args.ledger)).to_json(), out)
    return EXIT_OK


def _cmd_plan(args: argparse.Namespace, out: TextIO) -> int:
    plan = build_resume_plan(load_ledger(args.ledger), args.expected_high_water)
    _emit(plan.to_json(), out)
    return EXIT_OK


def _cmd_encode(args: argparse.Namespace, out: TextIO) -> int:
    lines = load_ledger_with(args.ledger, lambda value: encode_runtime_event(value).canonical_json)
    for line in lines:
        out.write(line + "\n")
    return EXIT_OK


def _cmd_args_hash(args: argparse.Namespace, out: TextIO) -> int:
    try:
        value = parse_json(args.args_json)
    except InvalidJSONTextError as exc:
        raise InputError("invalid_json", f"ARGS_JSON is not JSON: {exc.message}") from None
    try:
        digest = canonical_args_hash(args.tool, value)
    except ArgsHashError as exc:
        raise InputError("invalid_tool_args", exc.message) from None
    out.write(digest + "\n")
    return EXIT_OK


def _cmd_demo(args: argparse.Namespace, out: TextIO) -> int:
    from maka_ref._cli.demo import run_demo

    return run_demo(args.paths, out)


def _cmd_inspect(args: argparse.Namespace, out: TextIO) -> int:
    from maka_ref._inspect import inspect_workspace
    from maka_ref._store.errors import StoreError

    try:
        document = inspect_workspace(args.workspace)
    except StoreError as exc:
        raise InputError(exc.code, " ".join(exc.message.splitlines())) from None
    _emit(document, out)
    return EXIT_OK


def _cmd_run(args: argparse.Namespace, out: TextIO) -> int:
    """Exit 0 when the run completed, 1 when it ended ``failed`` (summary printed either way)."""
    from maka_ref._continuation.sidecar import write_script_sidecar
    from maka_ref._runtime import new_seed, run_turn

    seed = new_seed()
    try:
        if os.path.isdir(args.workspace):  # the script a later `resume` replays (sidecar.py)
            write_script_sidecar(os.path.realpath(args.workspace), f"run_{seed}", args.script)
        if args.checkpoints:
            return run_with_checkpoints(args.workspace, args.script, seed, out, _emit)
        summary = run_turn(args.workspace, args.script, seed=seed)
    except MakaRefError as exc:
        raise InputError(exc.code, " ".join(exc.message.splitlines())) from None
    _emit(summary.to_json(), out)
    return EXIT_OK if summary.status == "completed" else 1


def _cmd_repair(args: argparse.Namespace, out: TextIO) -> int:
    from maka_ref._repair import repair_workspace

    try:
        report = repair_workspace(args.workspace)
    except MakaRefError as exc:
        raise InputError(exc.code, " ".join(exc.message.splitlines())) from None
    _emit(report.to_json(), out)
    return EXIT_OK


def _cmd_reconcile(args: argparse.Namespace, out: TextIO) -> int:
    """``{"operations": [...]}`` (spec-phase3 §6 ``runtime.reconcile``). Exit 0: every operation
    looked at is settled (``completed``, ``parked``, ``already_settled``) or there was none; 3:
    at least one was ``skipped`` and stays unsettled (its ``code``: ``reconcile_no_evidence``,
    ``reconcile_evidence_invalid``, ``reconcile_workspace_mismatch``, ``reconcile_run_sealed``,
    ``reconcile_observer_unavailable``); 2: bad input or a store fault."""
    from maka_ref._repair import reconcile_workspace

    try:
        results = reconcile_workspace(args.workspace, operation_id=args.operation)
    except MakaRefError as exc:
        raise InputError(exc.code, " ".join(exc.message.splitlines())) from None
    _emit({"operations": [item.to_json() for item in results]}, out)
    return EXIT_PARKED if any(item.outcome == "skipped" for item in results) else EXIT_OK


def _cmd_resume(args: argparse.Namespace, out: TextIO) -> int:
    """Exit 0: a continuation ran to a terminal state; 3: parked (``{"parked": true,
    "rejectionReasons": [...], ...}``); 2: an error (revalidation codes of spec 20 §3.9)."""
    # the Phase 4 gate (docs/spec-phase4.md §6.2) parks only sessions holding boundary facts
    if args.restore_into is not None:
        return run_resume(args.workspace, args.session, "restore", out, _emit, destination=args.restore_into)
    return run_resume(args.workspace, args.session, "rebaseline" if args.rebaseline else "none", out, _emit)


_COMMANDS = {
    "resolve": _cmd_resolve,
    "plan": _cmd_plan,
    "encode": _cmd_encode,
    "args-hash": _cmd_args_hash,
    "demo": _cmd_demo,
    "inspect": _cmd_inspect,
    "run": _cmd_run,
    "repair": _cmd_repair,
    "reconcile": _cmd_reconcile,
    "resume": _cmd_resume,
    "checkpoint": lambda args, out: run_checkpoint(args, out, _emit),
}


def run(argv: Sequence[str] | None = None, *, stdout: TextIO | None = None, stderr: TextIO | None = None) -> int:
    """Run the CLI and return its exit code (the library entry point tests call)."""
    out = stdout if stdout is not None else sys.stdout
    err = stderr if stderr is not None else sys.stderr
    try:
        args = _build_parser().parse_args(argv)
        return _COMMANDS[args.command](args, out)
    except InputError as exc:
        _emit(exc.to_json(), out)
        err.write(f"maka-ref: error: {exc.code}: {exc.message}\n")
        return EXIT_INPUT_ERROR
    except (OutputError, BrokenPipeError, KeyboardInterrupt):
        raise
    except Exception as exc:  # noqa: BLE001 - a bug: still one JSON error, never a traceback
        fault = _store_fault(exc)
        if fault is None:
            return _internal_error(exc, out, err)
        _emit(fault.to_json(), out)
        err.write(f"maka-ref: error: {fault.code}: {fault.message}\n")
        return EXIT_INPUT_ERROR


def _store_fault(exc: Exception) -> InputError | None:
    """A store fault that escaped a command unmapped (a busy lock met mid-run, a disk that
    filled up): its stable code (``store_busy``, ``store_read_only``, ``storage_full``,
    ``database_corrupt``; ``maka_ref._store.engine.faults``), not ``internal_error``."""
    from maka_ref._store.engine.faults import fault_of

    fault = fault_of(exc)
    return None if fault is None else InputError(fault.code, " ".join(fault.message.splitlines()))


def _internal_error(exc: Exception, out: TextIO, err: TextIO) -> int:
    """``internal_error``: an exception no command maps is a bug of ours, reported like any
    other error (one JSON document, one stderr line, exit 2). ``MAKA_REF_TRACEBACK=1`` adds
    the traceback on stderr for whoever debugs it."""
    message = " ".join(f"{type(exc).__name__}: {exc}".splitlines())
    _emit({"error": {"code": "internal_error", "message": message}}, out)
    err.write(f"maka-ref: error: internal_error: {message}\n")
    if os.environ.get("MAKA_REF_TRACEBACK") == "1":
        import traceback

        traceback.print_exception(exc, file=err)
    return EXIT_INPUT_ERROR


def main(argv: Sequence[str] | None = None) -> NoReturn:
    """Console-script entry point.

    A reader that closes the pipe early (``maka-ref demo | head``) is not an error: stop
    quietly instead of printing a traceback.
    """
    try:
        if sys.stdout is None:  # started with fd 1 closed: nowhere to put the result
            raise OutputError(OSError(errno.EBADF, "standard output is closed"))
        code = run(argv)
        try:
            sys.stdout.flush()
        except BrokenPipeError:
            raise
        except OSError as exc:
            raise OutputError(exc) from exc
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        code = EXIT_OK
    except OutputError as exc:  # ENOSPC (/dev/full), EBADF, EIO: the result was not delivered
        code = _output_unwritable(exc.cause)
    sys.exit(code)


def _output_unwritable(exc: OSError) -> int:
    """Exit 2 with one line on stderr (when stderr can take it): a result that cannot be
    written is not a success. What the command did stays done — ``run``, ``repair`` and
    ``resume`` committed to the store before printing, and ``inspect`` reads the same answer
    again — so only the printing failed."""
    if sys.stdout is not None:  # drop what is buffered so that exit does not retry the write
        try:
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        except (OSError, ValueError):
            pass
    try:
        if sys.stderr is not None:
            sys.stderr.write(f"maka-ref: error: output_unwritable: standard output: {exc.strerror or exc}\n")
            sys.stderr.flush()
    except (OSError, ValueError):
        os.dup2(os.open(os.devnull, os.O_WRONLY), 2)  # nothing left to tell; exit quietly
    return EXIT_INPUT_ERROR
