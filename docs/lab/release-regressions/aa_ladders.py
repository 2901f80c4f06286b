"""A/A ladders of the e2e test's shape, many times: how often one interpreter under two release
names calls a step, and whether each measure's t statistic over the pairs is Student's t.

    python docs/lab/release-regressions/aa_ladders.py N DIR [PAIRS]
    python docs/lab/release-regressions/aa_ladders.py 0 DIR [DIR ...]

N ladders one after another (``tests/test_releases_e2e.py``'s: the user file
``tests/workloads/tanh_gram.py``, JAX eager and jit on the CPU, ``--budget 0.15``,
``--process-profile stable``, ``PAIRS`` pairs, default 4), each in ``DIR/ladder-K/``, its
pairs kept as ``DIR/ladder-K.json``. Then, over every ``ladder-*.json`` of the folders (N = 0:
only reads, every folder named): the ladders that
called a step and in what; per measure (time and first call of each case), the share of
``|t|`` over the pairs beyond Student's t quantiles with ``PAIRS - 1`` degrees of freedom
beside the share t predicts; the mean lag-1 correlation of the pairs' log ratios within a
ladder, beside what it reads for independent pairs (-1 / (PAIRS - 1): the estimator's own
bias at few pairs); a ladder of 8 pairs or more, each measure's B / A and its t test's p; and
the share of resampled 4-pair ladders, drawn from every round measured, that step in one of
the 4 measures kept (:func:`resampled`; the jit case's speedup, the step's fifth, is not kept).
"""

from __future__ import annotations

import json
import math
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # docs/lab: labkit
from labkit import usage  # noqa: E402

usage(__doc__)

ROOT = Path(__file__).resolve().parents[3]
MEASURES = (("eager", "median_s"), ("eager", "first_call_s"), ("jit", "median_s"),
            ("jit", "first_call_s"))


def ladder(folder: Path, pairs: int) -> dict:
    from jitbench.define.workload import Filters, expand
    from jitbench.releases import envs, ladder as ladders
    from jitbench.results.files import load_results
    from jitbench.run import ab_arms

    user = folder / "elsewhere" / "my_workload.py"
    user.parent.mkdir(parents=True, exist_ok=True)  # a ladder stopped before its .json
    user.write_text((ROOT / "tests" / "workloads" / "tanh_gram.py").read_text())
    cases = expand(Filters(suite=("mine",), framework=("jax",), device=("cpu",),
                           mode=("eager", "jit"), suite_files=(str(user),)))
    same = [envs.ReleaseEnv(f"jax=={v}", Path(sys.prefix), Path(sys.executable), None, True,
                            {"jax": "as installed"}) for v in ("0.10.1", "0.10.2")]
    rungs = ladders.rungs_from_envs(["0.10.1", "0.10.2"], same)
    settings = ladders.Settings(ab=ab_arms.Settings(max_pairs=pairs, budget=0.15,
                                                    process_profile="stable"))
    t0 = time.monotonic()
    record = ladders.run_ladder(cases, rungs, folder / "aa", settings, package="jax")
    (step,) = record["steps"]
    rows = load_results(step["run_dir"])
    keep = ["case_id", "ab_round", "ab_arm", "first_call_s", "median_s", "started_at"]
    return {"wall_s": time.monotonic() - t0, "confidence": step["confidence"],
            "stepped": {c["case_id"]: c["stepped"] for c in step["cases"]},
            "rows": rows[keep].to_dict("records")}


def pairs_of(record: dict) -> dict[tuple[str, str], list[float]]:
    """Per (mode, measure): log(B / A) of each round both arms measured, in round order."""
    by = {(r["case_id"].split("-")[3], int(r["ab_round"]), r["ab_arm"]): r
          for r in record["rows"]}
    rounds = sorted({k[1] for k in by})
    return {(mode, col): [math.log(by[(mode, k, "b")][col] / by[(mode, k, "a")][col])
                          for k in rounds if (mode, k, "a") in by and (mode, k, "b") in by]
            for mode, col in MEASURES}


def report(folders: list[Path]) -> None:
    from scipy import stats

    files = sorted(f for folder in folders for f in folder.glob("ladder-*.json"))
    records = [json.loads(f.read_text()) for f in files]
    stepped = [(f, r["stepped"]) for f, r in zip(files, records)
               if any(r["stepped"].values())]
    print(f"{len(records)} ladders, {len(stepped)} called a step")
    for name, s in stepped:
        print(f"  {name.parent.name}/{name.stem}: " + "; ".join(f"{k}: {v}" for k, v in s.items() if v))
    for mode, col in MEASURES:
        ts, lag1, null = [], [], []
        for r in records:
            xs = pairs_of(r)[(mode, col)]
            if len(xs) < 3:
                continue
            n, mean = len(xs), sum(xs) / len(xs)
            ts.append((abs(float(stats.ttest_1samp(xs, 0).statistic)), n))
            if n >= 4:
                null.append(-1.0 / (n - 1))
                v = sum((x - mean) ** 2 for x in xs) / n
                lag1.append(sum((xs[i] - mean) * (xs[i + 1] - mean)
                                for i in range(n - 1)) / (n - 1) / v if v > 0 else 0.0)
        if not ts:
            continue
        cells = []
        for q in (0.80, 0.95, 0.99):
            seen = sum(1 for t, n in ts if t > stats.t.ppf(1 - (1 - q) / 2, n - 1)) / len(ts)
            cells.append(f"beyond t's {q:.0%}: {seen:.3f} (t: {1 - q:.3f})")
        r1 = sum(lag1) / len(lag1) if lag1 else math.nan
        r0 = sum(null) / len(null) if null else math.nan
        print(f"  {mode} {col}: {len(ts)} ladders; " + ", ".join(cells)
              + f"; lag-1 correlation {r1:+.2f} (independent pairs: {r0:+.2f})")
    for f, r in zip(files, records):  # a long ladder: does either arm read apart?
        got = pairs_of(r)
        if min(len(v) for v in got.values()) >= 8:
            print(f"  {f.parent.name}/{f.stem}: " + ", ".join(
                f"{m} {c} B / A {math.exp(sum(v) / len(v)):.3f} (p {stats.ttest_1samp(v, 0).pvalue:.2f})"
                for (m, c), v in got.items()))
    print(f"  resampled: {resampled(records):.1%} of 20000 ladders of 4 pairs drawn from "
          f"every round (a random arm order each) step")


def resampled(records: list[dict], n_pairs: int = 4, sims: int = 20000,
              threshold: float = 0.10) -> float:
    """The share of ladders of ``n_pairs`` pairs, drawn with replacement from every measured
    round (its 4 measures together, the arms swapped at random: an A/A's order carries no
    sign), in which one of the 4 measures steps as ``jitbench.releases.step`` calls it (the
    A/B's decision at the step's per-measure confidence, 95% over the 5 measures it judges,
    and beyond the threshold): a lower bound of the step's rate, whose fifth measure is not
    kept here."""
    import numpy as np

    from jitbench.analysis import ab_verdicts
    from jitbench.releases import bisect as halving

    rounds = []
    for r in records:
        got = pairs_of(r)
        rounds += [list(v) for v in zip(*(got[m] for m in MEASURES))]
    if not rounds:
        return math.nan
    x_all, rng = np.asarray(rounds), np.random.default_rng(0)
    rules = dict(tolerance=0.05, confidence=1 - 0.05 / 5, max_pairs=n_pairs)
    hits = 0
    for _ in range(sims):
        x = x_all[rng.integers(0, len(x_all), n_pairs)] * rng.choice([-1, 1], (n_pairs, 1))
        for units in x.T:
            verdict, _, ratio, _, _ = ab_verdicts.decide_interval(list(units), **rules)
            if verdict in halving.STEPS and halving.beyond(ratio, threshold):
                hits += 1
                break
    return hits / sims


if __name__ == "__main__":
    n, out = int(sys.argv[1]), Path(sys.argv[2])
    if n == 0:
        report([Path(d) for d in sys.argv[2:]])
        raise SystemExit(0)
    pairs = int(sys.argv[3]) if len(sys.argv) > 3 else 4
    out.mkdir(parents=True, exist_ok=True)
    start = len(list(out.glob("ladder-*.json")))
    for k in range(start, start + n):
        rec = ladder(out / f"ladder-{k:03d}", pairs)
        (out / f"ladder-{k:03d}.json").write_text(json.dumps(rec, default=str))
        print(f"ladder {k}: {rec['wall_s']:.0f} s, stepped "
              f"{[v for v in rec['stepped'].values() if v]}", flush=True)
    report([out])
