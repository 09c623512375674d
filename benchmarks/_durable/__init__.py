"""Parts of ``python -m benchmarks.durable`` (docs/performance.md): inputs, the write throughput,
the raw-commit floor, the per-step breakdown, projection rebuild and the report."""
