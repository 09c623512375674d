"""Phase 0: is this committed prefix safe to replay to a provider? (spec 20 §1, §2).

* :mod:`.plan`       — ``build_resume_plan``: projection of tool operations (§1.1), the
                       diagnostics and their reasons (§1.3, §1.4), the disposition; its
                       result types, codes and fixed message texts;
* :mod:`.replay`     — the provider-replay assembly (§1.7) and the one-pass replay scanner
                       the plan shares with the resolver's scan;
* :mod:`.failpoints` — the crash contract: failpoints P0–P11 and their reference ledger (§2).

Pure; ``build_resume_plan`` never raises and never mutates its input.

May import: ``maka_ref._ledger``.
"""
