"""The controlling process's half of the plugin: it sees every clause's reports (its own, or
the workers' under xdist), turns them into clause results per target, streams progress and
writes the reports at the end.

Why a separate plugin object: it exists only in the controlling process (never in an xdist
worker), and holding the ``config`` lets ``pytest_runtest_logreport`` know the dist mode.
"""

from __future__ import annotations

from typing import Any, Callable

import pytest

from conformance._suite.clause import clause_info
from conformance._suite.recording import Recorder

__all__ = ["ControllerPlugin"]


def _gateway_target(node: Any) -> str:
    gateway = getattr(node, "gateway", None)
    spec = getattr(getattr(gateway, "spec", None), "_spec", None) or str(getattr(gateway, "spec", ""))
    return f"{getattr(gateway, 'id', 'gw')}:{spec}"


class ControllerPlugin:
    def __init__(self, config: pytest.Config, session_key: Any, worker_summary: Callable[[pytest.Config], dict[str, Any]]) -> None:
        self.config = config
        self.session_key = session_key
        self.worker_summary = worker_summary
        self.recorder = Recorder(config.getoption("maka_events"))
        self._counted = False

    def _each(self) -> bool:
        return self.config.getoption("dist", "no") == "each"

    def _target(self, node: Any) -> str:
        return _gateway_target(node) if node is not None and self._each() else "local"

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        count = sum(1 for item in session.items if clause_info(item) is not None)
        if count and not self.config.pluginmanager.hasplugin("dsession"):
            self.recorder.collected(count)

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_node_collection_finished(self, node: Any, ids: list[str]) -> None:
        if self._each() or not self._counted:
            self._counted = True
            self.recorder.collected(len(ids))

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        self.recorder.on_report(report, self._target(getattr(report, "node", None)))

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node: Any, error: Any) -> None:
        output = getattr(node, "workeroutput", {}) or {}
        data = output.get("maka")
        if not data:
            return
        self._merge(self._target(node), data)

    def _merge(self, target: str, data: dict[str, Any]) -> None:
        info = self.recorder.target_info(target)
        for key in ("handshake", "unavailable", "platform", "python", "command", "tracking"):
            if data.get(key) and not info.get(key):
                info[key] = data[key]
        info["workers"] = info.get("workers", 0) + 1
        info.setdefault("survivors", []).extend(data.get("survivors", []))

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        if self.config.stash.get(self.session_key, None) is not None:  # no xdist: this process ran them
            self._merge("local", self.worker_summary(self.config))
        if not self.recorder.records:
            return
        from conformance._suite.finish import finish_run

        finish_run(self.config, self.recorder, int(exitstatus))
