"""Which release changed it: one environment per framework release, built and cached
(``envs``), measured side by side as a ladder of neighbouring releases, and bisected between a
good and a bad release (``jitbench releases``)."""
