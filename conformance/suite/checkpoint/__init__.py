"""The workspace checkpoint clauses that exercise one rule each (``CHECKPOINT-ELIGIBILITY-*``,
``CHECKPOINT-VERIFY-*``, ``CHECKPOINT-RESTORE-*``, ``CHECKPOINT-COLLECT-*``,
``CHECKPOINT-CRASH-*``; docs/spec-phase4.md §3.3–§3.9, §8, §10.4, §11): every eligibility code
provoked on a real repository, every corruption of §3.5 made with the ``git`` program, the
restore refusals, collection of orphans only, and a real SIGKILL at each §8 point reached over
the wire. The scenario clauses (capture, restore, resume, codec) stay in
``conformance/suite/test_checkpoint.py``, whose repository and user-state helpers these reuse.

May import: ``conformance.clauses``, ``conformance.suite.test_checkpoint``,
``conformance.suite.test_runtime_crash``, ``crashlab``.
"""
