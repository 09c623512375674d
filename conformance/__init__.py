"""Conformance suite for crash-safe resume of agent runtimes.

What it holds: the clauses (pytest tests tied to spec sections), the golden vectors in
``conformance/vectors/`` (JSON, runnable from any language), capability levels, reports and
the ``maka-conformance`` command line.

Dependencies (one direction only): ``conformance`` → ``crashlab`` → ``maka_ref``. The suite
talks to an implementation under test only through ``crashlab``'s wire-protocol client; it
uses ``maka_ref`` as the oracle for differential checks. Nothing below imports this package.

Status: issue 2 ships the golden vectors and their loader (:mod:`conformance.vectors`); the
wire protocol, clauses, levels, reports and the CLI arrive with issue 5.
"""
