"""A user's own function: ``bench.measure`` and its isolated workers."""
