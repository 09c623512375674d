"""How a harness process ends once a command has returned its exit status.

Why this exists: after Ctrl-C the commands catch ``KeyboardInterrupt``, write their partial
report, print one line and return 130. Yet about one run in four of ``maka-conformance fuzz``
interrupted early still *died by SIGINT* (status -2 to its parent, no traceback): strace shows
the interpreter itself calling ``kill(getpid(), SIGINT)`` at the very end of finalization. That
is CPython's exit path for an "unhandled" ``KeyboardInterrupt`` (``_Py_UnhandledKeyboardInterrupt``,
which its run paths set when a ``KeyboardInterrupt`` passes through them even if a caller
above handles it). A parent — a shell, CI, our own tests — must see 130 and the report, not a
death by signal it cannot tell from an unhandled one.

So the console entry points end an interrupted command here: run the ``atexit`` handlers (the
zygote channel, stdio flushes) and leave with ``os._exit(130)``, past the finalization that
would re-raise the signal. Any other status returns to the normal ``SystemExit``. The library
functions (``run``, ``main`` with streams) never call this: tests run them in process.
"""

from __future__ import annotations

import atexit
import os
import sys
from typing import NoReturn

__all__ = ["EXIT_INTERRUPTED", "end_process"]

EXIT_INTERRUPTED = 130


def end_process(code: int) -> NoReturn:
    """Exit with ``code``; 130 (interrupted) exits past interpreter finalization (see above)."""
    if code != EXIT_INTERRUPTED:
        raise SystemExit(code)
    try:
        atexit._run_exitfuncs()
    except BaseException:  # noqa: BLE001 - a second Ctrl-C or a failing handler: still exit 130
        pass
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except BaseException:  # noqa: BLE001 - a closed or broken stream: nothing more to say
            pass
    os._exit(EXIT_INTERRUPTED)
