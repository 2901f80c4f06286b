"""Where a run's time goes, and how far its verdicts can be trusted, for runs side by side.

    python docs/lab/make-bench-time/run_time_and_trust.py RUN_DIR [RUN_DIR ...]

Per run: wall time (meta.json), calibration, the phases summed over rows (first calls, calls
2-5, warm-up, pipelined samples, A/A control samples, synced rounds beyond the samples, XLA
insight), the identical programs called faster or slower (A/A controls, and auto-clustering
rows that formed no cluster), and the median width (ci_high / ci_low) of the JIT verdicts that
came out same or unresolved.
"""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # docs/lab: labkit
from labkit import usage  # noqa: E402

usage(__doc__)


def summary(run: Path) -> dict:
    rows = [json.loads(x) for x in (run / "results.jsonl").read_text().splitlines() if x.strip()]
    meta = json.loads((run / "meta.json").read_text())
    phase = dict(first=0.0, early=0.0, warmup=0.0, samples=0.0, aa=0.0, synced_extra=0.0,
                 insight=0.0)
    for r in rows:
        loops = r.get("loops") or 1
        phase["first"] += r.get("first_call_s") or 0
        phase["early"] += sum(r.get("early_calls_s") or [])
        phase["warmup"] += r.get("warmup_s") or 0
        phase["samples"] += sum(r.get("samples") or []) * loops
        phase["aa"] += sum(r.get("aa_samples") or []) * loops
        if loops > 1:  # a mode of one call a sample reuses its samples as synced calls
            phase["synced_extra"] += sum(r.get("synced_samples") or [])
        phase["insight"] += r.get("insight_s") or 0
    aa = [r["aa_verdict"] for r in rows if r.get("aa_verdict")]
    no_jit = [r.get("verdict") for r in rows if r.get("jit_happened") is False]
    wrong = sum(v in ("faster", "slower") for v in aa + no_jit)
    widths = [r["verdict_ci_high"] / r["verdict_ci_low"] for r in rows
              if r.get("jit") and r.get("jit_happened") is not False
              and r.get("verdict") in ("same", "unresolved")
              and r.get("verdict_ci_low") and r.get("verdict_ci_high")]
    cal = meta.get("calibration") or {}
    return {"run": run.name, "wall_s": meta.get("elapsed_s"), "rows": len(rows),
            "calibration_s": cal.get("elapsed_s"), "calibration_kept": "kept_from" in cal,
            "workers": len(meta.get("workers") or []),
            "phases_s": {k: round(v, 1) for k, v in phase.items()},
            "identical_called_different": f"{wrong} of {len(aa) + len(no_jit)}",
            "same_unresolved": len(widths),
            "width_median": round(statistics.median(widths), 4) if widths else None}


if __name__ == "__main__":
    for d in sys.argv[1:]:
        for run in sorted(p for p in Path(d).iterdir() if (p / "meta.json").is_file()) \
                if not (Path(d) / "meta.json").is_file() else [Path(d)]:
            print(json.dumps(summary(run)))
