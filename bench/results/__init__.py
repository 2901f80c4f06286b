"""The result row, the results file (its one writer and its loader), meta.json, the run folder,
pytest-benchmark JSON import."""
