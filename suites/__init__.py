"""The workloads. Each module here defines ``WORKLOAD = jitbench.Workload(...)``; adding a file adds
a workload (``jitbench.define.workload.discover`` finds it). Framework imports stay inside the
builder
functions, so listing cases imports neither TensorFlow nor JAX."""
