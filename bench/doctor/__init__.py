"""``jitbench doctor``: is this machine fit to benchmark, and does jitbench work on it?

Two kinds of checks, each a :class:`Check` with a verdict (``ok``, ``warn``, ``fail``) and what
to do about it:

- :mod:`jitbench.doctor.machine`: what the machine is doing and what changes numbers (CPU load
  and steal, frequency scaling, thread settings, pinning, the GPU's clocks, temperature and
  other processes on it).
- :mod:`jitbench.doctor.tiny`: a tiny real run per installed framework and device, through
  the same workers and protocol as ``jitbench run``: the devices each framework sees, every
  row ``ok`` at the precision the device uses, the A/A control not called faster or slower,
  synced calls no faster than pipelined ones (the sync waits; a run that reads them far faster
  is run again, and the check fails only when every fresh run does), and each JIT mode's
  compiled memory plausible.
"""

from __future__ import annotations

import dataclasses
from typing import Any

VERDICTS = ("ok", "warn", "fail")
# what installs the CUDA builds of both frameworks (the ``cuda`` extra)
CUDA_INSTALL = ("pip install -e '.[cuda]' in a jitbench checkout "
                "(pip install \"jitbench[cuda]\" otherwise)")


@dataclasses.dataclass(frozen=True)
class Check:
    """One check: ``name`` (``"cpu load"``), its ``verdict``, what was seen (``detail``) and,
    unless ``ok``, what to do (``advice``)."""

    name: str
    verdict: str
    detail: str
    advice: str = ""

    def __post_init__(self):
        if self.verdict not in VERDICTS:
            raise ValueError(f"unknown verdict {self.verdict!r}; valid: {', '.join(VERDICTS)}")

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def worst(checks: list[Check]) -> str:
    """The worst verdict of ``checks`` (``ok`` for none)."""
    return max((c.verdict for c in checks), key=VERDICTS.index, default="ok")
