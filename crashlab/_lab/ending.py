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

And a Ctrl-C must end the process even where something below swallows or outlasts the
``KeyboardInterrupt`` (once in about fifty interrupted fuzz runs on a loaded CI machine the
process kept running; the watchdog's stacks showed why: the signal handler had run inside
Hypothesis's garbage-collector callback, and the collector prints an exception raised there as
"ignored" and drops it — the Ctrl-C was lost). :func:`install_interrupt_watchdog` raises
``KeyboardInterrupt`` as Python's own handler does, except inside a ``gc.callbacks`` function,
where it delivers the interrupt again a moment later (``_thread.interrupt_main``); and it starts
a watchdog — if the command has not ended :data:`GRACE_S` seconds later, it says so on stderr
with every thread's stack and exits 130. A second Ctrl-C exits at once.
"""

from __future__ import annotations

import _thread
import atexit
import faulthandler
import gc
import os
import signal
import sys
import threading
import time
from types import FrameType
from typing import NoReturn

__all__ = ["EXIT_INTERRUPTED", "GRACE_S", "end_process", "install_interrupt_watchdog"]

EXIT_INTERRUPTED = 130
#: Seconds an interrupted command may take to write its partial report and stop its processes
#: (certify gives pytest 10 s, then kills its group; a sweep stops its trials).
GRACE_S = 60.0


def _in_gc_callback(frame: FrameType | None) -> bool:
    """Whether ``frame`` (where a signal handler interrupted Python) runs inside a function of
    ``gc.callbacks``: the collector reports an exception from there as unraisable and drops it."""
    codes = {getattr(callback, "__code__", None) for callback in gc.callbacks}
    codes.discard(None)
    while frame is not None and codes:
        if frame.f_code in codes:
            return True
        frame = frame.f_back
    return False


def install_interrupt_watchdog(prog: str, grace: float = GRACE_S) -> None:
    """SIGINT raises ``KeyboardInterrupt`` (as Python's default handler) and arms a watchdog
    that ends the process with 130 if it is still running ``grace`` seconds later."""
    first: list[float] = []

    def watchdog() -> None:
        time.sleep(grace)
        try:
            sys.stderr.write(f"{prog}: interrupted, but still stopping after {grace:g} s; exiting "
                             "(each thread's stack follows: please report it)\n")
            sys.stderr.flush()
            faulthandler.dump_traceback(file=sys.stderr, all_threads=True)
        except BaseException:  # noqa: BLE001 - nothing may keep the process from ending
            pass
        os._exit(EXIT_INTERRUPTED)

    def handler(signum: int, frame: FrameType | None) -> None:
        if _in_gc_callback(frame):
            # An exception raised here would be printed as "ignored" and lost with the Ctrl-C
            # (seen in CI: Hypothesis's gc callback swallowed it and the fuzz ran on): deliver
            # the interrupt again, a moment later, outside the collector.
            threading.Timer(0.02, _thread.interrupt_main, args=(signal.SIGINT,)).start()
            return
        if first:  # a second Ctrl-C: the user wants out now
            os.write(2, f"{prog}: interrupted twice: exiting now\n".encode())
            os._exit(EXIT_INTERRUPTED)
        first.append(time.monotonic())
        threading.Thread(target=watchdog, name="interrupt-watchdog", daemon=True).start()
        raise KeyboardInterrupt

    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, handler)


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
