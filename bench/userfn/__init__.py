"""A user's own function: ``jitbench.measure`` and its isolated workers."""
