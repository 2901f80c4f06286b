"""The wire format between a worker process (``jitbench.run.worker``) and its parent
(``jitbench.run.worker_parent``), imported by both sides:

- messages, one JSON object per line on the worker's stdin (jobs) and protocol stream (hello,
  rows, errors): :func:`line` writes one, :func:`message` reads one. Python writes and reads
  its own NaN here (a row's NaN becomes null only in the results file,
  ``jitbench.results.files``).
- the "where" file, a small file shared through ``mmap``: what the worker is doing now
  (``{"mode": ..., "phase": ...}`` as JSON, NUL-padded to :data:`WHERE_SIZE` bytes), written
  with :func:`where_bytes` and read back by the parent with :func:`read_where` to pin a
  crash or a hang on the mode that caused it.
"""

from __future__ import annotations

import json
from typing import Any

WHERE_SIZE = 256


def line(msg: dict[str, Any]) -> str:
    """One message as its line."""
    return json.dumps(msg, default=str) + "\n"


def message(text: str) -> dict[str, Any]:
    """One line read back as its message (``ValueError`` if it is not one)."""
    return json.loads(text)


def where_bytes(mode: str | None, phase: str) -> bytes:
    """What the worker is doing, as the where file holds it."""
    data = json.dumps({"mode": mode, "phase": phase}).encode()
    if len(data) > WHERE_SIZE:
        data = json.dumps({"mode": mode, "phase": phase[:80]}).encode()[:WHERE_SIZE]
    return data.ljust(WHERE_SIZE, b"\0")


def read_where(path) -> dict[str, Any] | None:
    """What the worker last said it was doing; None if it said nothing (still starting)."""
    try:
        with open(path, "rb") as fh:
            data = fh.read(WHERE_SIZE).rstrip(b"\0")
        return json.loads(data) if data else None
    except (OSError, ValueError):
        return None
