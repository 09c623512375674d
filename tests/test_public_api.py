"""Every public name stays importable where users and third-party adapters import it (issue 14
item 6: moves are pure).

``tests/public_api.json`` was recorded from the code *before* the store, plan and ledger were
reorganised into rooms (the modules without a leading underscore in their path, plus the
``__all__`` of the private facades ``maka_ref._store``, ``maka_ref._ledger`` and
``maka_ref._plan.continuation`` that adapters and the suite import; the clause modules of
``conformance.suite`` are run, not imported, and are not listed). New names may appear;
none may disappear. To retire a public name on purpose, remove it from the file in the same
change and say so in the changelog of the commit.
"""

from __future__ import annotations

import importlib
import json
from pathlib import Path

import pytest

RECORDED: dict[str, list[str]] = json.loads((Path(__file__).with_name("public_api.json")).read_text(encoding="utf-8"))


@pytest.mark.parametrize("module_name", sorted(RECORDED))
def test_every_recorded_public_name_is_still_importable(module_name: str) -> None:
    module = importlib.import_module(module_name)
    missing = [name for name in RECORDED[module_name] if not hasattr(module, name)]
    assert missing == []
