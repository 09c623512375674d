"""``certify``: run the conformance suite against one implementation and write its reports.

This is the library behind ``maka-conformance certify`` (the CLI only parses arguments and
prints). Why the suite runs in a child pytest process: the implementation under test is
untrusted, the clauses spawn and kill processes, and xdist spawns workers; isolating all of
that in a child with an overall deadline means that nothing the implementation does can hang
or crash the caller, and the caller always gets a verdict.

The child is a plain ``python -m pytest -p conformance.plugin --pyargs conformance.suite``
with plugin autoloading disabled (a certification must not depend on which other pytest
plugins happen to be installed) and its own empty ini file (nor on the caller's directory).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from crashlab._client import _lifeline

__all__ = ["EXIT_FAILED", "EXIT_HARNESS", "EXIT_INTERRUPTED", "EXIT_OK", "CertifyResult", "certify",
           "interrupt_runs", "pytest_command"]

EXIT_OK, EXIT_FAILED, EXIT_HARNESS = 0, 1, 2
#: SIGINT: a partial report was written (128 + SIGINT, as a shell reports it).
EXIT_INTERRUPTED = 130
#: After SIGINT, how long pytest gets to write its own (partial) reports before it is killed.
_INTERRUPT_GRACE_S = 10.0

_interrupt_all = threading.Event()


def interrupt_runs(stop: bool = True) -> None:
    """Make every :func:`certify` running in this process (in any thread) stop as if
    interrupted, and write its partial report (``stop=False`` allows new runs again).

    Why: SIGINT reaches only the main thread; ``selftest`` runs certifications on a thread pool
    and must stop them all."""
    if stop:
        _interrupt_all.set()
    else:
        _interrupt_all.clear()
DEFAULT_REPORT_DIR = "maka-conformance-report"
#: Where the suite's crash-lab clauses leave the bundles of failing trials (``conformance/suite/test_crashlab.py``).
CRASH_BUNDLE_DIR = "crash-bundles"
#: The deadline of a whole run unless the caller gives one: far above the 5-minute target,
#: far below "hung forever".
DEFAULT_RUN_TIMEOUT = 3600.0


@dataclass
class CertifyResult:
    """What a certification produced. ``exit_code`` follows the CLI: 0 every claimed clause
    passed, 1 a clause failed, 2 a usage or harness error (``harness_error`` says which)."""

    exit_code: int
    report_dir: Path
    reports: list[Any] = field(default_factory=list)  # conformance.reports.RunReport, one per target
    report_paths: dict[str, Path] = field(default_factory=dict)
    pytest_exit: int | None = None
    harness_error: str | None = None
    log_path: Path | None = None
    duration_s: float = 0.0
    interrupted: bool = False


def pytest_command(*, impl: str | None, level: str | None, report_dir: Path, events: Path, workers: int | str | None,
                   keyword: str | None, request_timeout: float, extra: Sequence[str] = ()) -> list[str]:
    ini = report_dir / "pytest.ini"
    ini.write_text("[pytest]\n", encoding="utf-8")
    argv = [sys.executable, "-m", "pytest", "-p", "conformance.plugin", "-p", "no:cacheprovider",
            "-c", str(ini), "--rootdir", str(report_dir), "-q", "--no-header", "-rN",
            "--maka-report-dir", str(report_dir), "--maka-events", str(events),
            "--maka-timeout", str(request_timeout)]
    if impl:
        argv += ["--maka-impl", impl]
    if level:
        argv += ["--maka-level", level]
    if keyword:
        argv += ["-k", keyword]
    if workers not in (None, 0, "0"):
        argv += ["-p", "xdist.plugin", "-n", str(workers)]
    argv += list(extra)
    argv += ["--pyargs", "conformance.suite"]
    return argv


def _tail(path: Path, limit: int = 4000) -> str:
    try:
        data = path.read_bytes()
    except OSError:
        return ""
    return data[-limit:].decode("utf-8", "replace")


def _follow(events: Path, offset: int, on_event: Callable[[Mapping[str, Any]], None] | None) -> int:
    try:
        with open(events, "rb") as fh:
            fh.seek(offset)
            chunk = fh.read()
    except OSError:
        return offset
    end = chunk.rfind(b"\n")
    if end < 0:
        return offset
    for line in chunk[: end + 1].splitlines():
        if on_event is not None and line.strip():
            try:
                on_event(json.loads(line))
            except ValueError:
                pass
    return offset + end + 1


def certify(impl: str | None = None, *, level: str | None = None, report_dir: str | os.PathLike[str] | None = None,
            workers: int | str | None = "auto", keyword: str | None = None, request_timeout: float = 30.0,
            run_timeout: float = DEFAULT_RUN_TIMEOUT, on_event: Callable[[Mapping[str, Any]], None] | None = None,
            extra_pytest_args: Sequence[str] = ()) -> CertifyResult:
    """Certify ``impl`` (a command line; ``None``: the bundled reference adapter)."""
    started = time.monotonic()
    directory = Path(report_dir if report_dir is not None else DEFAULT_REPORT_DIR).resolve()
    directory.mkdir(parents=True, exist_ok=True)
    for stale in ("report.json", "junit.xml", "report.md", "report.html", "events.jsonl", "reports.json"):
        (directory / stale).unlink(missing_ok=True)
    shutil.rmtree(directory / CRASH_BUNDLE_DIR, ignore_errors=True)  # a past run's bundles (the suite's own dir)
    events, log = directory / "events.jsonl", directory / "pytest.log"
    events.touch()
    argv = pytest_command(impl=impl, level=level, report_dir=directory, events=events, workers=workers,
                          keyword=keyword, request_timeout=request_timeout, extra=extra_pytest_args)
    env = dict(os.environ, PYTEST_DISABLE_PLUGIN_AUTOLOAD="1", PYTHONDONTWRITEBYTECODE="1")
    env.pop("PYTEST_ADDOPTS", None)
    env[_lifeline.ENV_WATCH_PARENT] = "1"
    result = CertifyResult(EXIT_HARNESS, directory, log_path=log)
    offset = 0
    with open(log, "wb") as log_fh:
        # the pytest tree dies with this process, even by SIGKILL (``_lifeline``)
        child = _lifeline.popen(argv, stdin=subprocess.DEVNULL, stdout=log_fh, stderr=subprocess.STDOUT,
                                cwd=directory, env=env, start_new_session=True)
        try:
            while child.poll() is None:
                offset = _follow(events, offset, on_event)
                if _interrupt_all.is_set():
                    raise KeyboardInterrupt
                if time.monotonic() - started > run_timeout:
                    os.killpg(child.pid, signal.SIGKILL)
                    child.wait(10)
                    result.harness_error = f"the run exceeded its deadline of {run_timeout:.0f} s and was killed"
                    break
                time.sleep(0.1)
        except KeyboardInterrupt:
            result.interrupted = True
            _stop_gracefully(child)
        except BaseException:
            os.killpg(child.pid, signal.SIGKILL)
            child.wait(10)
            raise
        finally:
            _reap_group(child.pid)
    _follow(events, offset, on_event)
    result.pytest_exit = child.returncode
    result.duration_s = time.monotonic() - started
    if result.interrupted:
        return _partial_results(result, events, impl)
    if result.harness_error is not None:
        return result
    return _read_results(result)


def _stop_gracefully(child: "subprocess.Popen[bytes]") -> None:
    """SIGINT to pytest (it writes what it has), a bounded wait, then SIGKILL to its group.
    A second Ctrl-C skips the wait."""
    try:
        try:
            os.kill(child.pid, signal.SIGINT)
            child.wait(_INTERRUPT_GRACE_S)
        except (subprocess.TimeoutExpired, KeyboardInterrupt, ProcessLookupError):
            pass
    finally:
        try:
            os.killpg(child.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        child.wait()


def _partial_results(result: CertifyResult, events: Path, impl: str | None) -> CertifyResult:
    """The reports of an interrupted run, marked ``interrupted``: pytest's own when it wrote
    them in time, else rebuilt from the progress events (clauses that finished)."""
    from conformance.reports import RunReport, write_reports

    result.exit_code = EXIT_INTERRUPTED
    directory = result.report_dir
    reports: list[tuple[RunReport, Path]] = []
    index = directory / "reports.json"
    try:
        listing = json.loads(index.read_text(encoding="utf-8"))["reports"]
        for entry in listing:
            path = directory / entry["json"]
            reports.append((RunReport.from_json(path.read_text(encoding="utf-8")), path.parent))
    except (OSError, ValueError, KeyError, TypeError):
        reports = [(_report_from_events(events, impl), directory)]
    total = _collected_total(events)
    listing_out = []
    for report, where in reports:
        report.interrupted = True
        done = len(report.clauses)
        report.harness_errors = [e for e in report.harness_errors if "ended with exit status" not in e]
        report.harness_errors.append(f"interrupted (SIGINT) after {done} of {total if total is not None else '?'} "
                                     f"selected clauses: this is a partial report and certifies nothing")
        final = report.finalized()
        paths = write_reports(final, where)
        result.reports.append(final)
        entry = {"target": "local"} | {kind: str(p.relative_to(directory)) for kind, p in paths.items()}
        listing_out.append(entry)
        for kind, p in paths.items():
            result.report_paths[kind] = p
    index.write_text(json.dumps({"reports": listing_out}, indent=2) + "\n", encoding="utf-8")
    return result


def _event_lines(events: Path) -> list[dict[str, Any]]:
    try:
        text = events.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return []
    out = []
    for line in text.splitlines():
        try:
            item = json.loads(line)
        except ValueError:
            continue  # the last line may be cut by the kill
        if isinstance(item, dict):
            out.append(item)
    return out


def _collected_total(events: Path) -> int | None:
    for item in _event_lines(events):
        if item.get("event") == "collected" and isinstance(item.get("total"), int):
            return int(item["total"])
    return None


def _report_from_events(events: Path, impl: str | None) -> Any:
    from conformance._suite.finish import _suite_version
    from conformance.reports import ClauseResult, RunReport

    clauses = []
    for item in _event_lines(events):
        if item.get("event") != "clause":
            continue
        info = item.get("clause") or {}
        clauses.append(ClauseResult(
            clause_id=str(item.get("clauseId")), capability=str(info.get("capability") or "unknown"),
            level=str(info.get("level") or "ledger"), outcome=str(item.get("outcome") or "error"),
            title=str(info.get("title") or ""), spec=str(info.get("spec") or ""),
            duration_s=float(item.get("durationS") or 0.0), message=str(item.get("message") or ""),
            target=str(item.get("target") or "local"),
            crash=dict(info["crash"]) if isinstance(info.get("crash"), dict) else None))
    return RunReport(suite_version=_suite_version(), implementation={"command": impl}, clauses=clauses)


def _reap_group(pgid: int) -> None:
    """Kill whatever the run left in its process group (an implementation's stray child).

    The group's leader (the child pytest) is already reaped here, so its pid may have been
    handed to another process. The kernel never reuses a pid while a group of that id still has
    members: if the pid names a process again, our group is empty and that process is a
    stranger, which must not be signalled."""
    try:
        os.kill(pgid, 0)
    except ProcessLookupError:
        pass  # nobody holds the pid: the group (if any member is left) is still ours
    except PermissionError:
        return  # a stranger's process took the pid
    else:
        return  # a process took the pid, so our group is empty
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _read_results(result: CertifyResult) -> CertifyResult:
    from conformance.reports import RunReport

    index = result.report_dir / "reports.json"
    code = result.pytest_exit
    if code in (2, 3, 4) or not index.exists():
        reason = {2: "the run was interrupted", 3: "pytest hit an internal error", 4: "pytest usage error",
                  5: "no clause was collected (check -k / --level)"}.get(code if code is not None else -1,
                                                                          "no report was written")
        result.harness_error = f"{reason} (pytest exit {code}); log tail:\n{_tail(result.log_path) if result.log_path else ''}"
        result.exit_code = EXIT_HARNESS
        return result
    listing = json.loads(index.read_text(encoding="utf-8"))
    for entry in listing["reports"]:
        path = result.report_dir / entry["json"]
        result.reports.append(RunReport.from_json(path.read_text(encoding="utf-8")))
        for kind, rel in entry.items():
            result.report_paths[f"{entry['target']}:{kind}" if len(listing["reports"]) > 1 else kind] = result.report_dir / rel
    failed = any(c.outcome in ("failed", "error") for r in result.reports for c in r.clauses)
    failed = failed or any(r.harness_errors for r in result.reports)
    result.exit_code = EXIT_FAILED if failed else EXIT_OK
    return result
