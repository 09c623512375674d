"""The documents shipped in the package (``conformance/docs/``, handed out by
``maka-conformance vectors export``) are the canonical ones: refresh with
``python -m conformance._docsync``."""

from __future__ import annotations

from pathlib import Path

from conformance._docsync import DOCS, SPEC_FILES, pairs

REPO = Path(__file__).resolve().parents[2]
TARGET = REPO / "conformance" / "docs"


def test_packaged_documents_equal_their_sources() -> None:
    stale = [str(copy) for source, copy in pairs(REPO) if not copy.exists() or copy.read_bytes() != source.read_bytes()]
    assert stale == [], "run: python -m conformance._docsync"


def test_every_document_an_implementer_needs_is_packaged() -> None:
    for name in DOCS:
        assert (TARGET / name).is_file(), name
    for name in SPEC_FILES:  # present even where the spec's source folder is not (a clean CI checkout)
        assert (TARGET / "spec" / name).is_file(), name
