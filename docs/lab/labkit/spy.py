"""What ``jitbench.measure`` hands the protocol, captured from one call of it.

``jitbench.measure`` builds each mode's ``Timed`` (the callable the protocol samples, with its
sync) inside ``jitbench.userfn.as_workload`` and passes them to the protocol's ``measure``;
a script that wants to call exactly those, beside a plain loop, captures them here. This is
the one place in the lab that replaces a jitbench function: when ``as_workload`` moves, only
this module changes (``tests/test_lab.py`` imports it).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

from jitbench.userfn import as_workload


@contextlib.contextmanager
def captured() -> Iterator[dict[str, Any]]:
    """``with captured() as got: jitbench.measure(...)``: afterwards ``got[mode]`` is each
    mode's ``Timed`` and ``got["counters"]`` the counters the protocol read; the protocol's
    ``measure`` is restored on leaving."""
    real = as_workload.measure
    got: dict[str, Any] = {}

    def spy(timeds, *args, **kwargs):
        got["counters"] = kwargs.get("counters")
        got.update({t.name: t for t in timeds})
        return real(timeds, *args, **kwargs)

    as_workload.measure = spy
    try:
        yield got
    finally:
        as_workload.measure = real
