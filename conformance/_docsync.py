"""Copy the documents an implementer needs into the package, so that
``maka-conformance vectors export`` can hand them out from an installed wheel.

Why copies: ``docs/`` (and the spec, kept outside this repository at ``../shared/spec``) are not
inside any Python package, so an installed ``maka-conformance`` could not reach them. The
canonical texts stay where they are; ``python -m conformance._docsync`` refreshes the copies in
``conformance/docs/`` and ``tests/conformance/test_docsync.py`` fails when they drift.
"""

from __future__ import annotations

import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
TARGET = REPO / "conformance" / "docs"
#: docs/<name> → conformance/docs/<name>
DOCS = ("protocol.md", "protocol-codes.md", "adapter-guide.md", "levels.md", "spec-choices.md")
SPEC_FILES = ("README.md", "00-architecture.md", "10-ledger-codec-resolver.md", "20-plan-continuation-repair.md",
              "30-storage-crash-harness.md")


def pairs(repo: Path = REPO) -> list[tuple[Path, Path]]:
    """(canonical source, packaged copy) for every shipped document whose source exists under
    the checkout ``repo`` (the tests pass theirs: an installed package has no ``docs/``)."""
    target = repo / "conformance" / "docs"
    out = [(repo / "docs" / name, target / name) for name in DOCS]
    spec_source = repo.parent / "shared" / "spec"
    if spec_source.is_dir():
        out += [(spec_source / name, target / "spec" / name) for name in SPEC_FILES]
    return out


def main() -> int:
    changed = 0
    for source, copy in pairs():
        data = source.read_bytes()
        if not copy.exists() or copy.read_bytes() != data:
            copy.parent.mkdir(parents=True, exist_ok=True)
            copy.write_bytes(data)
            changed += 1
            print(f"updated {copy.relative_to(REPO)}")
    print(f"{changed} file(s) updated")
    return 0


if __name__ == "__main__":
    sys.exit(main())
