"""The README states facts that must stay true (issue 2: the vector count is in the README)."""

from __future__ import annotations

import re
from pathlib import Path

from conformance.vectors import load_vector_files

README = Path(__file__).resolve().parents[1] / "README.md"


def test_readme_vector_count_matches_the_shipped_vectors() -> None:
    text = README.read_text(encoding="utf-8")
    match = re.search(r"golden vectors: (\d+) vectors in (\d+) files", text)
    assert match, "README must state the golden vector count"
    files = load_vector_files()
    assert int(match.group(1)) == sum(len(f.vectors) for f in files)
    assert int(match.group(2)) == len(files)


def test_readme_quick_start_has_the_two_commands() -> None:
    text = README.read_text(encoding="utf-8")
    assert "pip install . && maka-conformance certify" in text
    assert "pip install '.[test]' && pytest -n auto" in text


def test_ci_runs_the_readme_test_command() -> None:
    """DEVELOPERS.md: `.ci/run` runs the README's test command."""
    ci = (README.parent / ".ci" / "run").read_text(encoding="utf-8")
    assert "pip install '.[test]' && pytest -n auto" in ci
    assert '"$status" -eq 5' in ci, "exit 5 (no tests collected) must fail CI"
