"""The pytest plugin of the conformance suite (registered through the ``pytest11`` entry point).

Why a plugin: the clauses are ordinary pytest tests, so everything pytest and pytest-xdist
already do (selection with ``-k``, ``-n auto``, ``--dist each`` over several ``--tx``
targets, JUnit) works on them. The plugin adds only what a conformance run needs:

* ``--maka-impl "COMMAND"``: the implementation under test (default: the reference adapter,
  ``python -m maka_ref.adapter``); ``--maka-timeout`` per request;
* the ``maka`` fixture, an :class:`~conformance._suite.session.ImplementationSession`;
* the claim gate: a clause whose capability the handshake does not claim is skipped with the
  reason ``not claimed: <capability>`` and reported as *not claimed* (never passed, never
  failed); ``--maka-level`` deselects clauses above a level;
* recording: every clause's outcome, diff, evidence and stderr tail travel in the test
  report's ``user_properties`` (so they cross xdist), and the controlling process writes the
  reports (``--maka-report-dir``) and progress events (``--maka-events``).

Importing this module imports only pytest and the standard library; everything else is
imported when a clause actually runs, so the plugin is cheap in every pytest session of a
machine where the package is installed.
"""

from __future__ import annotations

from typing import Any, Iterator

import pytest

from conformance._suite.clause import LEVEL_ORDER, ClauseMismatch, clause_info

_SESSION_KEY = pytest.StashKey[Any]()


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("maka-conformance", "conformance suite for crash-safe agent-runtime resume")
    group.addoption("--maka-impl", default=None, metavar="COMMAND",
                    help="command line of the implementation under test (default: the reference adapter)")
    group.addoption("--maka-timeout", type=float, default=30.0, metavar="SECONDS",
                    help="deadline for each protocol request (default 30)")
    group.addoption("--maka-level", default=None, choices=LEVEL_ORDER,
                    help="run only the clauses of this level and the levels below it")
    group.addoption("--maka-report-dir", default=None, metavar="DIR",
                    help="write report.json, junit.xml, report.md and report.html here")
    group.addoption("--maka-events", default=None, metavar="FILE",
                    help="append one JSON progress event per finished clause to FILE")
    group.addoption("--maka-list-clauses", default=None, metavar="FILE",
                    help="write the selected clauses (id, title, spec, capability, level) to FILE as JSON")


def pytest_configure(config: pytest.Config) -> None:
    import os

    if config.getoption("maka_impl") is not None or config.getoption("maka_timeout") != 30.0:
        # the same checks as the CLIs (an empty command never means the reference); imported
        # only when the options are given, so an unrelated pytest session stays cheap
        from crashlab._lab.options import OptionError, check_impl, check_seconds

        try:
            check_impl(config.getoption("maka_impl"), "--maka-impl")
            check_seconds(config.getoption("maka_timeout"), "--maka-timeout")
        except OptionError as exc:
            raise pytest.UsageError(str(exc)) from None
    if os.environ.get("MAKA_CONFORMANCE_LIFELINE") == "1":  # started by certify: die with the parent
        from crashlab._client._lifeline import watch_parent

        watch_parent()
    config.addinivalue_line("markers", "maka_clause(info): a conformance clause (conformance.clauses.clause)")
    if not hasattr(config, "workerinput"):
        from conformance._suite.controller import ControllerPlugin

        config.pluginmanager.register(ControllerPlugin(config, _SESSION_KEY, _worker_summary), "maka-conformance-controller")


def _session(config: pytest.Config) -> Any:
    session = config.stash.get(_SESSION_KEY, None)
    if session is None:
        from conformance._suite.session import ImplementationSession

        session = ImplementationSession(config.getoption("maka_impl"), timeout=config.getoption("maka_timeout"))
        config.stash[_SESSION_KEY] = session
    return session


@pytest.fixture(scope="session")
def maka(pytestconfig: pytest.Config) -> Iterator[Any]:
    """The implementation under test for this worker (see ``ImplementationSession``)."""
    yield _session(pytestconfig)


def pytest_itemcollected(item: pytest.Item) -> None:
    """Let ``-k`` select by clause id (``-k LEDGER-EQUIV-001``), not only by test name."""
    info = clause_info(item)
    if info is not None:
        item.extra_keyword_matches.add(info.clause_id)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    level = config.getoption("maka_level")
    if level is None:
        return
    limit = LEVEL_ORDER.index(level)
    keep, drop = [], []
    for item in items:
        info = clause_info(item)
        (drop if info is not None and LEVEL_ORDER.index(info.level) > limit else keep).append(item)
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep


def pytest_collection_finish(session: pytest.Session) -> None:
    target = session.config.getoption("maka_list_clauses")
    if target and not hasattr(session.config, "workerinput"):
        import json

        infos = [info.to_json() for item in session.items if (info := clause_info(item)) is not None]
        with open(target, "w", encoding="utf-8") as fh:
            json.dump(infos, fh, indent=1, ensure_ascii=False)


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    info = clause_info(item)
    if info is None:
        return
    item.user_properties.append(("maka_clause", info.to_json()))
    from conformance._suite.session import ImplementationUnavailable

    session = _session(item.config)
    try:
        handshake = session.handshake
    except ImplementationUnavailable as exc:
        item.user_properties.append(("maka_stderr_tail", exc.stderr_tail))
        item.user_properties.append(("maka_evidence", {"verdict": exc.verdict}))
        pytest.fail(f"the implementation is unavailable: {exc.verdict}: {exc.message}", pytrace=False)
    for capability in (info.capability, *info.needs):
        if capability not in handshake.capabilities:
            pytest.skip(f"not claimed: {capability}")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[Any]) -> Iterator[None]:
    outcome = yield
    report = outcome.get_result()
    if clause_info(item) is None or call.excinfo is None or report.skipped:
        return
    exc = call.excinfo.value
    if isinstance(exc, ClauseMismatch):
        report.user_properties.append(("maka_message", exc.message))
        if exc.diff is not None:
            report.user_properties.append(("maka_diff", _jsonable(exc.diff)))
        if exc.evidence:
            report.user_properties.append(("maka_evidence", _jsonable(exc.evidence)))
            tail = exc.evidence.get("stderrTail")
            if tail:
                report.user_properties.append(("maka_stderr_tail", str(tail)))
    if not any(k == "maka_stderr_tail" for k, _ in report.user_properties):
        session = item.config.stash.get(_SESSION_KEY, None)
        if session is not None and session.stderr_tail:
            report.user_properties.append(("maka_stderr_tail", session.stderr_tail[-8192:]))


def _jsonable(value: Any) -> Any:
    import json

    return json.loads(json.dumps(value, default=repr))


def _worker_summary(config: pytest.Config) -> dict[str, Any]:
    import platform

    session = config.stash.get(_SESSION_KEY, None)
    data: dict[str, Any] = {
        "platform": {"system": platform.system(), "release": platform.release(), "machine": platform.machine()},
        "python": f"{platform.python_implementation()} {platform.python_version()}",
        "survivors": [],
    }
    if session is not None:
        from crashlab._client._cgroup import tracking_description

        data["tracking"] = tracking_description()  # what a survivor check could and could not see
        session.close()
        data["survivors"] = list(session.survivor_reports)
        data["command"] = session.command
        if session._handshake is not None:
            data["handshake"] = dict(session._handshake.raw) | {"command": session.command}
        if session._unavailable is not None:
            exc = session._unavailable
            data["unavailable"] = {"verdict": exc.verdict, "message": exc.message, "stderrTail": exc.stderr_tail}
    return data


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    config = session.config
    if hasattr(config, "workerinput"):
        config.workeroutput["maka"] = _worker_summary(config)  # type: ignore[attr-defined]
