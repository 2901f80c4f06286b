"""What this run measured of the machine before the cases: matmul peaks, dispatch floors."""

from __future__ import annotations

from typing import Any

from jitbench.report.facts import CALIBRATION, records
from jitbench.report.sections import Section, register


def _data(run, images) -> dict[str, Any]:
    from jitbench.run.calibration.kept import MAX_AGE_S
    from jitbench.run.calibration.peak_matmul import N_BY_DEVICE

    cal = run.calibration
    kept = cal.get("kept_from") if isinstance(cal.get("kept_from"), dict) else None
    sizes = ", ".join(f"{n}×{n}×{n} on a {d.upper()}" for d, n in N_BY_DEVICE.items())
    return {"elapsed_s": cal.get("elapsed_s"), "kept_from": kept and kept.get("run_id"),
            "sizes": sizes, "kept_hours": f"{MAX_AGE_S / 3600:g}", "peaks": records(run.peak_rows), "floors": records(run.floors)}


register(Section(name="calibration", title="Calibration", order=30, data=_data,
                 needs=(CALIBRATION,)))
