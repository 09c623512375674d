"""Checks of the options every harness command shares: ``--impl``, ``--timeout``, ``--report-dir``.

Why one module for ``crashlab`` and ``maka-conformance`` alike: the same careless value must
get the same answer from every command. Today's failure modes were silent (``--impl ''``
certified the bundled reference instead of the user's implementation; ``--timeout nan`` or
``0`` made every request time out or none) or loud in the wrong way (a traceback for a report
directory under a regular file). Each check raises :class:`OptionError` with a stable
snake_case code; the CLIs print it as one line and exit 2.
"""

from __future__ import annotations

import math
import os
import shlex
import tempfile
from typing import Any

__all__ = ["OptionError", "check_common_options", "check_impl", "check_report_dir", "check_seconds"]


class OptionError(Exception):
    """A usage error: ``code`` is stable (documented), ``message`` says what to change."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message


def check_impl(text: str | None, option: str = "--impl") -> None:
    """``None`` (option not given) is fine; an empty or unparsable command line is not.

    An empty string must never fall back to the bundled reference: a user who meant to test
    their implementation (e.g. ``--impl "$IMPL"`` with an unset variable) would get the
    reference's certificate under their name."""
    if text is None:
        return
    try:
        argv = shlex.split(text)
    except ValueError as exc:
        raise OptionError("invalid_impl", f"{option} {text!r} is not a command line: {exc}") from None
    if not argv:
        raise OptionError("invalid_impl", f"{option} is empty; give the implementation's command line "
                                          f"(or leave the option out for the bundled reference)")


def check_seconds(value: Any, option: str = "--timeout") -> float:
    """A finite number of seconds above zero (``0``, negatives, ``nan`` and ``inf`` are not)."""
    try:
        seconds = float(value)
    except (TypeError, ValueError):
        raise OptionError("invalid_timeout", f"{option} {value!r} is not a number of seconds") from None
    if not math.isfinite(seconds) or seconds <= 0:
        raise OptionError("invalid_timeout", f"{option} must be a finite number of seconds above 0, not {value!r}")
    return seconds


def check_report_dir(path: str | os.PathLike[str] | None, option: str = "--report-dir") -> None:
    """Create the directory if needed and prove a file can be written in it.

    Why write a probe file: a directory can exist and still refuse files (a read-only mount);
    finding that out after an hour-long run loses the run's report."""
    if path is None:
        return
    text = os.fspath(path)
    if not text.strip():
        raise OptionError("report_dir_unwritable", f"{option} is empty")
    try:
        os.makedirs(text, exist_ok=True)
        fd, probe = tempfile.mkstemp(prefix=".write-probe-", dir=text)
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        raise OptionError("report_dir_unwritable", f"{option} {text!r} cannot hold the reports: {reason}") from None


def check_common_options(args: Any) -> None:
    """Check whichever of ``impl``, ``timeout``, ``time_budget`` and ``report_dir`` ``args``
    carries (an ``argparse.Namespace``); ``timeout`` is replaced by its float value."""
    check_impl(getattr(args, "impl", None))
    if getattr(args, "timeout", None) is not None:
        args.timeout = check_seconds(args.timeout)
    if getattr(args, "time_budget", None) is not None:
        args.time_budget = check_seconds(args.time_budget, "--time-budget")
    check_report_dir(getattr(args, "report_dir", None))
