"""Generator of the golden vectors in ``conformance/vectors/`` (run ``python -m conformance._vectorgen.build``).

Every expectation in the vectors is transcribed by hand from the spec text inside the modules
of this package (:mod:`conformance._vectorgen.build` is the entry point and lists them);
nothing is computed by the reference runtime. The only thing borrowed from ``maka_ref`` is
:mod:`maka_ref.testing.families`, the spec's fixture families as plain-dict builders, so
that inputs are spelled exactly as the spec defines them.

May import: ``maka_ref.testing``.
"""
