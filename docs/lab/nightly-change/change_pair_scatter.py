"""Where a change night's pair scatter comes from: per touched case, the sd of the pair unit
log(B / A) as the rule uses it, and the same unit divided by the same process's JIT-off
(eager) mode of the case's group, a control measured beside it in the same process.

Usage: python docs/lab/nightly-change/change_pair_scatter.py RESULTS_ROOT
(the change nights' A/B folders under RESULTS_ROOT/<night>/change/)."""

from __future__ import annotations

import json
import math
import statistics as st
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # docs/lab: labkit
from labkit import usage  # noqa: E402

usage(__doc__)


def main(root: str) -> None:
    raw: dict[str, list[float]] = {}
    ctl: dict[str, list[float]] = {}
    for night in sorted(Path(root).iterdir()):
        for ab in sorted((night / "change").glob("*/results.jsonl")):
            t: dict[tuple, float] = {}
            for line in ab.read_text().splitlines():
                r = json.loads(line)
                if r.get("status") == "ok" and r.get("median_s"):
                    group = r["case_id"].replace(f"-{r['mode']}-", "-*-")
                    t[(group, r["mode"], r["ab_round"], r["ab_arm"])] = r["median_s"]
            for (group, mode, rnd, arm), a in t.items():
                if arm != "a" or (group, mode, rnd, "b") not in t:
                    continue
                u = math.log(t[(group, mode, rnd, "b")] / a)
                raw.setdefault(f"{group} {mode}", []).append(u)
                ea, eb = t.get((group, "eager", rnd, "a")), t.get((group, "eager", rnd, "b"))
                if mode != "eager" and ea and eb:
                    ctl.setdefault(f"{group} {mode}", []).append(u - math.log(eb / ea))
    print(f"{'case':60s} {'pairs':>5s} {'sd raw':>7s} {'sd / eager':>10s}")
    for key in sorted(raw):
        sd_c = f"{100 * st.stdev(ctl[key]):.1f}%" if len(ctl.get(key, [])) > 2 else "-"
        print(f"{key:60s} {len(raw[key]):5d} {100 * st.stdev(raw[key]):6.1f}% {sd_c:>10s}")


if __name__ == "__main__":
    main(sys.argv[1])
