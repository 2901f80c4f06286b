"""What is measured: the JIT modes the frameworks declare, workloads, cases, filters."""
