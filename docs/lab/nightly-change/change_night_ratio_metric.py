"""Would a change night see a step better on the JIT/JIT-off ratio than on the JIT time? On a
recorded corpus of change nights (pairs kept): per JIT case, the per-pair scatter of log(B/A)
of its time and of its ratio to the group's eager case, their correlation, and how often a
planted step (0, 5%, 10%, on B) is called slower (t interval at 95% over ~7 touched cases).

    python docs/lab/nightly-change/change_night_ratio_metric.py tests/fixtures/nightly-corpus/change-nights.json.gz
"""
import gzip, json, math, statistics, sys
from scipy import stats
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # docs/lab: labkit
from labkit import usage  # noqa: E402

usage(__doc__)
c = json.load(gzip.open(sys.argv[1]))
sd_t, sd_r, corr = [], [], []
det = {m: {0.0: [0, 0], 0.05: [0, 0], 0.1: [0, 0]} for m in ("time", "ratio")}
for night in c["nights"]:
    pairs = night["pairs"]
    for cid, pr in pairs.items():
        if "-eager-" in cid:
            continue
        parts = cid.split("-")
        mode = parts[3]
        eager_id = cid.replace(f"-{mode}-", "-eager-", 1)
        if eager_id not in pairs:
            continue
        n = min(len(pr), len(pairs[eager_id]))
        if n < 6:
            continue
        dj = [math.log(b / a) for a, b in pr[:n]]
        de = [math.log(b / a) for a, b in pairs[eager_id][:n]]
        dr = [x - y for x, y in zip(dj, de)]
        sd_t.append(statistics.stdev(dj)); sd_r.append(statistics.stdev(dr))
        if statistics.stdev(dj) > 0 and statistics.stdev(de) > 0:
            corr.append(statistics.correlation(dj, de))
        for step in (0.0, 0.05, 0.1):
            for name, d in (("time", dj), ("ratio", dr)):
                d2 = [x + math.log1p(step) for x in d]
                m, se = statistics.mean(d2), statistics.stdev(d2) / math.sqrt(len(d2))
                lo = m - stats.t.ppf(1 - 0.05 / 2 / 7, len(d2) - 1) * se  # ~7 touched: Bonferroni
                det[name][step][0] += lo > 0
                det[name][step][1] += 1
print("cases", len(sd_t), "median pair sd: time %.3f ratio %.3f; median corr(jit, eager) %.2f" % (
    statistics.median(sd_t), statistics.median(sd_r), statistics.median(corr)))
for name, d in det.items():
    print(name, {k: f"{v[0]}/{v[1]} = {v[0]/v[1]:.2f}" for k, v in d.items()})
