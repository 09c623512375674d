"""docs/reliability.md names, for every attack, the test that pins it: each named test must exist.

Why: the table is the user's evidence that an attack is defended; a row whose test was renamed
or deleted would be a claim nobody checks any more.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TEST_REF = re.compile(r"(tests/[\w/]+\.py)::(\w+)")
BENCHMARK_REF = re.compile(r"python -m benchmarks\.(\w+)")


def _functions(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return {node.name for node in ast.walk(tree) if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))}


def test_every_attack_row_names_a_test_that_exists() -> None:
    text = (ROOT / "docs" / "reliability.md").read_text(encoding="utf-8")
    rows = [line for line in text.splitlines() if line.startswith("| ") and not line.startswith("| attack |")]
    assert len(rows) >= 60
    missing = []
    for row in rows:
        refs = TEST_REF.findall(row)
        benchmarks = BENCHMARK_REF.findall(row)  # a measured target lives in a benchmark, not a test
        missing += [f"benchmarks/{name}.py" for name in benchmarks if not (ROOT / "benchmarks" / f"{name}.py").is_file()]
        if not refs and not benchmarks:
            missing.append(f"no test named: {row[:100]}")
        for file, name in refs:
            path = ROOT / file
            if not path.is_file() or name not in _functions(path):
                missing.append(f"{file}::{name}")
    assert missing == []
