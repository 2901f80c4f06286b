"""One case group in one process, framework-blind: the timing protocol, the interference check,
case setup and output comparison, machine load."""
