"""The house plan holds (issue 14): no import circle, no room circle, every package imports only
what its ``May import:`` paragraph declares, no prefix family of three or more modules left
in one folder, and ``docs/architecture.md`` shows the picture generated from the code.

The checker itself is tested on small planted trees, so a green run means the checks can fail.
"""

from __future__ import annotations

import collections
import textwrap
from pathlib import Path

import pytest

from conformance._architecture import BEGIN, END, main, render_section, scan

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "architecture.md"


@pytest.fixture(scope="module")
def house():  # type: ignore[no-untyped-def]
    return scan(ROOT)


def test_no_module_imports_itself_through_a_circle(house) -> None:  # type: ignore[no-untyped-def]
    assert house.module_cycles() == []


def test_rooms_form_layers_without_a_circle(house) -> None:  # type: ignore[no-untyped-def]
    assert house.room_cycles() == []
    layers = house.layers()
    for source, targets in house.room_edges.items():
        for target in targets:
            assert layers[target] < layers[source], (source, target)


def test_every_package_declares_what_it_may_import_and_keeps_to_it(house) -> None:  # type: ignore[no-untyped-def]
    assert house.undeclared() == []


def test_the_rooms_the_issue_names_exist(house) -> None:  # type: ignore[no-untyped-def]
    """Issue 14 item 1: the store, plan and ledger families became rooms of their own."""
    for room in ("maka_ref._store.engine", "maka_ref._store.insert", "maka_ref._store.writers",
                 "maka_ref._store.claims", "maka_ref._store.workspace", "maka_ref._store.agent_runs",
                 "maka_ref._store.legacy", "maka_ref._plan.phase0", "maka_ref._plan.prefix",
                 "maka_ref._plan.continuation", "maka_ref._plan.provider", "maka_ref._ledger.bundle"):
        assert room in house.rooms or room in house.modules, room


def _families(folder: Path) -> dict[str, list[str]]:
    """Modules of one folder grouped by their first word (``_store/legacy_x.py`` → ``legacy``);
    ``test_`` is pytest's discovery prefix, not a family."""
    groups: dict[str, list[str]] = collections.defaultdict(list)
    for path in folder.glob("*.py"):
        stem = path.stem
        if stem == "__init__" or stem == "conftest":
            continue
        words = stem.lstrip("_").split("_")
        if words[0] == "test":
            words = words[1:] or ["test"]
        groups[words[0]].append(stem)
    return {k: sorted(v) for k, v in groups.items() if len(v) >= 3}


def test_no_prefix_family_of_three_modules_in_one_folder() -> None:
    found = {}
    for top in ("maka_ref", "crashlab", "conformance", "tests"):
        for folder in sorted({p.parent for p in (ROOT / top).rglob("*.py")}):
            if "__pycache__" in folder.parts:
                continue
            for word, members in _families(folder).items():
                found[f"{folder.relative_to(ROOT)}: {word}"] = members
    assert found == {}


def test_the_architecture_document_is_generated_from_the_code(house) -> None:  # type: ignore[no-untyped-def]
    text = DOC.read_text(encoding="utf-8")
    start = text.index(BEGIN.split(" (")[0])
    end = text.index(END) + len(END)
    assert text[start:end] == render_section(house), "run: python -m conformance._architecture --write"
    assert main(["--root", str(ROOT), "--check"]) == 0


# --- the checker on planted trees -------------------------------------------------------------

def _tree(root: Path, files: dict[str, str]) -> Path:
    for name, body in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(body), encoding="utf-8")
    return root


def test_a_planted_circle_is_found_lazy_imports_count_typing_imports_do_not(tmp_path: Path) -> None:
    root = _tree(tmp_path, {
        "maka_ref/__init__.py": '"""House.\n\nMay import: nothing of ours.\n"""\n',
        "maka_ref/_a/__init__.py": '"""A.\n\nMay import: maka_ref._b.\n"""\n',
        "maka_ref/_a/one.py": "from maka_ref._b.two import f\n",
        "maka_ref/_b/__init__.py": '"""B.\n\nMay import: maka_ref._a.\n"""\n',
        "maka_ref/_b/two.py": "def f():\n    from maka_ref._a import one\n",
        "maka_ref/_b/three.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from maka_ref._a.one import f\n",
    })
    arch = scan(root, houses=("maka_ref",))
    assert arch.module_cycles() == [["maka_ref._a.one", "maka_ref._b.two"]]
    assert arch.room_cycles() == [["maka_ref._a", "maka_ref._b"]]
    assert "maka_ref._a.one" not in arch.module_edges["maka_ref._b.three"]
    assert any("import circle" in p for p in arch.problems())


def test_an_undeclared_import_and_a_missing_declaration_are_reported(tmp_path: Path) -> None:
    root = _tree(tmp_path, {
        "maka_ref/__init__.py": '"""House.\n\nMay import: nothing of ours.\n"""\n',
        "maka_ref/_low/__init__.py": '"""Low.\n\nMay import: nothing of ours.\n"""\n',
        "maka_ref/_low/base.py": "X = 1\n",
        "maka_ref/_mid/__init__.py": '"""Mid, declaring nothing."""\n',
        "maka_ref/_high/__init__.py": '"""High.\n\nMay import: maka_ref._mid.\n"""\n',
        "maka_ref/_high/top.py": "from maka_ref._low.base import X\n",
    })
    problems = scan(root, houses=("maka_ref",)).undeclared()
    assert problems == [
        "maka_ref._high imports maka_ref._low (from maka_ref._high.top) but 'May import:' does not declare it",
        "maka_ref._mid: its __init__ docstring has no 'May import:' paragraph",
    ]


def test_a_stale_document_fails_the_check_and_write_repairs_it(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = _tree(tmp_path, {
        "maka_ref/__init__.py": '"""House.\n\nMay import: nothing of ours.\n"""\n',
        "maka_ref/_codec/__init__.py": '"""Codec.\n\nMay import: nothing of ours.\n"""\n',
        "docs/architecture.md": f"# Plan\n\n{BEGIN}\nold\n{END}\n\nafter\n",
    })
    assert main(["--root", str(root), "--check"]) == 1
    assert "stale" in capsys.readouterr().err
    assert main(["--root", str(root), "--write"]) == 0
    assert main(["--root", str(root), "--check"]) == 0
    text = (root / "docs" / "architecture.md").read_text()
    assert text.startswith("# Plan\n\n") and text.endswith("\n\nafter\n") and "`maka_ref._codec`" in text
