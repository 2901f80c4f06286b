"""`jitbench nightly`: a night's run, history, rechecks and pages."""

# the nightly's protocol: sequential stopping that follows each ratio to +-3% whatever its
# verdict (Protocol.stop_when "precise"), at most 4 s of sampling per group
NIGHT_PRECISION = 0.03
NIGHT_BUDGET = 4.0
# fresh processes a series gets a night, at most (jitbench.nightly.repeats): one by default,
# as on the 2-core host 30 nights of two pinned processes each saw less than one process did
# (docs/lab/nightly-alone/index.md); --max-processes 2 or more to repeat
MAX_PROCESSES = 1
