"""`jitbench nightly`: a night's run, history, rechecks and pages."""
