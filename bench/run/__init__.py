"""`jitbench run`: the runner, worker processes (parent and child side), start-up, calibration,
sweeps, the compilation cache."""
