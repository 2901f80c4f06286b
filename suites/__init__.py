"""The workloads. Each module here defines ``WORKLOAD = jitbench.Workload(...)``; adding a file adds
a workload, no registration needed (``jitbench.define.workload.registered_sources`` lists this
folder's modules; names starting with ``_``, ``test_`` or ``conftest`` are not workloads).
Framework imports stay inside the builder functions, so listing cases imports neither
TensorFlow nor JAX."""
