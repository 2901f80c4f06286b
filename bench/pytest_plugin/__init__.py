"""pytest: the suites as benchmarks and the ``jit_benchmark`` fixture."""
