"""Framework adapters: how to place inputs, build each mode, sync and count compilations.

Importing this package imports no framework; ``get_adapter`` imports the one asked for, inside
a worker process (TensorFlow and JAX never share a process).
"""

from __future__ import annotations

import importlib


def get_adapter(framework: str, log_path: str | None = None):
    module = importlib.import_module(f"bench.frameworks.{framework}_adapter")
    return module.Adapter(log_path=log_path)


def compose(stages):
    """Chain stages: the first gets the inputs, each next one the previous output."""
    if len(stages) == 1:
        return stages[0]

    def run(*xs):
        out = stages[0](*xs)
        for stage in stages[1:]:
            out = stage(*out) if isinstance(out, tuple) else stage(out)
        return out

    return run
