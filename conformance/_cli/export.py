"""``maka-conformance vectors export DIR``: the language-neutral half of the suite, as files.

Why: an implementer in Go or Rust who will not run Python still wants the golden vectors
(with their README and JSON Schema) and the wire protocol's schemas. The files are read from
the installed package (``importlib.resources``), so the export is exactly what the suite uses.
"""

from __future__ import annotations

import os
from importlib import resources
from pathlib import Path

__all__ = ["export_vectors"]

_TREES = {"vectors": "vectors", "protocol": "protocol"}


def export_vectors(directory: str | os.PathLike[str]) -> list[Path]:
    """Copy ``conformance/vectors/`` and ``conformance/protocol/`` (JSON files and READMEs)
    to ``directory/vectors`` and ``directory/protocol``; return the files written."""
    root = Path(directory)
    written: list[Path] = []
    for source, target in _TREES.items():
        tree = resources.files("conformance").joinpath(source)
        if not tree.is_dir():
            continue
        out = root / target
        out.mkdir(parents=True, exist_ok=True)
        for entry in sorted(tree.iterdir(), key=lambda e: e.name):
            if entry.is_file() and (entry.name.endswith(".json") or entry.name.endswith(".md")):
                path = out / entry.name
                path.write_bytes(entry.read_bytes())
                written.append(path)
    return written
