"""The package's import rule (its ``__init__`` docstring): a carrier observes and materializes,
it never reaches the store, the planners or the runtime that own facts (spec-phase4 §3.1)."""

from __future__ import annotations

import ast
from pathlib import Path

import maka_ref._checkpoint as package

ALLOWED_PREFIXES = ("maka_ref._checkpoint", "maka_ref._codec")


def _imported_modules(source: str) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module is not None and node.level == 0:
            names.add(node.module)
    return names


def test_modules_import_only_the_standard_library_the_codec_and_each_other() -> None:
    files = sorted(Path(package.__file__).parent.glob("*.py"))
    assert len(files) >= 10
    for path in files:
        for name in _imported_modules(path.read_text(encoding="utf-8")):
            if name.startswith("maka_ref"):
                assert name.startswith(ALLOWED_PREFIXES), f"{path.name} imports {name}"
            else:
                assert name.split(".")[0] not in ("crashlab", "conformance"), f"{path.name} imports {name}"


def test_the_rule_is_stated_where_the_package_is_described() -> None:
    assert package.__doc__ is not None
    assert "Must not import ``maka_ref._store``" in package.__doc__
