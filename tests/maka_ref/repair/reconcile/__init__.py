"""Tests of the Phase 3 reconciler (maka_ref/_repair/reconcile.py, docs/spec-phase3.md §5)."""
