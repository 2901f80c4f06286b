"""How much of a run's sampling its stopping rule could still give back.

    python docs/lab/make-bench-time/sampling_floor.py RUN_DIR [RUN_DIR ...]

Per run: the seconds of interleaved samples (A/A controls included, loops counted) of its
groups, split by how each group stopped: at the rule's first look (round 4: the least any
group can sample), at a later look, or at the budget (a pair still open there is
``unresolved``; stopping it sooner widens its interval).
"""

from __future__ import annotations

import collections
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # docs/lab: labkit
from labkit import usage  # noqa: E402

usage(__doc__)


def floor(run: Path) -> dict:
    rows = [json.loads(x) for x in (run / "results.jsonl").read_text().splitlines() if x.strip()]
    meta = json.loads((run / "meta.json").read_text())
    budget = (meta.get("protocol") or {}).get("budget") or 6.0
    groups = collections.defaultdict(list)
    for r in rows:
        groups[(r.get("worker_pid"), r.get("started_at"))].append(r)
    out = collections.Counter()
    for rs in groups.values():
        spent = sum((sum(r.get("samples") or []) + sum(r.get("aa_samples") or []))
                    * (r.get("loops") or 1) for r in rs)
        rounds = max((r.get("verdict_rounds") or 0) for r in rs)
        verdicts = [r.get("verdict") for r in rs if r.get("verdict")]
        if not verdicts:
            continue
        if "unresolved" in verdicts or max(r.get("verdict_s") or 0 for r in rs) >= 0.9 * budget:
            how = "budget"
        else:
            how = "first_look" if rounds <= 4 else "later_look"
        out[how + "_s"] += spent
        out[how + "_groups"] += 1
    return {"run": run.name, **{k: round(v, 1) for k, v in sorted(out.items())}}


if __name__ == "__main__":
    for d in sys.argv[1:]:
        runs = [Path(d)] if (Path(d) / "meta.json").is_file() else sorted(
            p for p in Path(d).iterdir() if (p / "meta.json").is_file())
        for run in runs:
            print(json.dumps(floor(run)))
