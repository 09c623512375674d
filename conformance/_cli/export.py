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

#: package folder → export folder; ``docs`` holds the packaged copies of the protocol
#: documents, the adapter guide and the spec (``conformance/_docsync.py``).
_TREES = {"vectors": "vectors", "protocol": "protocol", "docs": ".", "docs/spec": "spec"}


def export_vectors(directory: str | os.PathLike[str]) -> list[Path]:
    """Write everything an implementer in another language needs into ``directory``: the spec
    (``spec/``), the protocol's documents and JSON Schemas (``protocol.md``, ``protocol-codes.md``,
    ``protocol/``), the adapter guide, the level rule, the reference's spec choices, and the
    golden vectors with their README and schema (``vectors/``); return the files written."""
    root = Path(directory)
    written: list[Path] = []
    for source, target in _TREES.items():
        tree = resources.files("conformance")
        for part in source.split("/"):
            tree = tree.joinpath(part)
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
