"""Benchmarks (not tests): ``python -m benchmarks`` prints ratios against a baseline measured in the same run."""
