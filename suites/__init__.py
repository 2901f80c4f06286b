"""The workloads. Each module here defines ``WORKLOAD = bench.Workload(...)``; adding a file adds
a workload (``bench.define.workload.discover`` finds it). Framework imports stay inside the builder
functions, so listing cases imports neither TensorFlow nor JAX."""
