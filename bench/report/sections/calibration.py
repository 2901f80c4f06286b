"""What this run measured of the machine before the cases: matmul peaks, dispatch floors."""

from __future__ import annotations

from typing import Any

from jitbench.report.facts import CALIBRATION, records
from jitbench.report.sections import Section, register


def _data(run, images) -> dict[str, Any]:
    cal = run.calibration
    return {"elapsed_s": cal.get("elapsed_s"),
            "peaks": records(run.peak_rows), "floors": records(run.floors)}


register(Section(name="calibration", title="Calibration", order=30, data=_data,
                 needs=(CALIBRATION,)))
