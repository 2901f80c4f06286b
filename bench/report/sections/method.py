"""How the run's numbers were made: the definitions the page's figures use (speedup, pipelined
and synced time, the interval, the verdict, compile cost, break-even, the output check). The
page's header says it in one line and links here; the answer comes first."""

from __future__ import annotations

from typing import Any

from jitbench import analysis
from jitbench.define.modes import FRAMEWORKS, nearest_baseline
from jitbench.report.sections import Section, register

INTERVAL_METHODS = {
    "blocks": "its 95% interval from the blocks: the worker's interleaved blocks of samples, "
              "each a unit, judged faster, slower, same or unresolved as they came in (a pair "
              "against a JIT-off mode other than the nearest: from the same blocks, when "
              "sampling ended; the protocol page of the docs)",
    "samples": "a 95% bootstrap interval of the raw samples, with the run's A/A scatter "
               "added (pairs the worker did not judge in blocks: too few blocks of both "
               "modes, rows of an older run or a pytest-benchmark import)",
}


def precisions(df) -> list[str]:
    """What each device's matrix products ran at, e.g. ``["gpu float32: tf32"]``, from the rows'
    ``matmul_precision`` (rows from before it was recorded say nothing)."""
    if "matmul_precision" not in df.columns:
        return []
    known = df[df["matmul_precision"].notna()]
    return [f"{dev} {dtype}: {', '.join(sorted(set(g['matmul_precision'])))}"
            for (dev, dtype), g in known.groupby(["device", "dtype"], sort=True)]


def interval_methods(sp) -> list[dict[str, Any]]:
    """How the page's speedup intervals were made, said once: one entry per method in use,
    with how many pairs it covers (``sp["interval_from"]``)."""
    if sp is None or sp.empty or "interval_from" not in sp:
        return []
    counts = sp["interval_from"].value_counts()
    return [{"method": m, "n": int(counts[m]), "text": INTERVAL_METHODS[m]}
            for m in INTERVAL_METHODS if counts.get(m)]


def _data(run, images) -> dict[str, Any]:
    return {"noise_floor_pct": f"{100 * analysis.NOISE_FLOOR:g}",
            "intervals": interval_methods(run.sp), "precisions": precisions(run.df),
            "nearest": ", ".join(f"{fw}: {nearest_baseline(fw)}" for fw in FRAMEWORKS)}


register(Section(name="method", title="How this was measured", order=45, data=_data))
