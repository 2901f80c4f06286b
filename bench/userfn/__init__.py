"""A user's own function: ``jitbench.measure`` and its options, a module per thing users pass
(a plain or jitted function, a step with state, a Keras model), the run of any of them as a
workload and its isolated workers."""
