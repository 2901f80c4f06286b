"""How much of a series' night-to-night variance two streams measured at the same time share
(night-level: more processes in one night do not average it away) and how much is each
process's own. Stream A (``corpus.json.gz``, core 0) and the stream given (B: core 1) ran side
by side, night i of one beside night i of the other.

    python docs/lab/nightly-live-check/shared_variance.py corpus-pinned-one-process-core1.json.gz

Per series and quantity (the ratio; the JIT time against the machine), with robust sigmas:
cov(a, b) = (sigma(a + b)^2 - sigma(a - b)^2) / 4, shared = cov / the mean of the two variances
(noisy for 30 nights: single series can read below 0 or above 1).
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

from jitbench.analysis.detectors import jit_levels
from jitbench.nightly import evaluate as ev
from jitbench.protocol.timing import robust_sigma

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # docs/lab: labkit
from labkit import usage  # noqa: E402

usage(__doc__)

CORPORA = Path("tests/fixtures/nightly-corpus")


def quantities(corpus):
    ids, x, _, _ = ev.arrays(corpus)
    base = ev.baseline_logs(corpus)
    return ids, {"ratio": x, "jit": jit_levels(ev.baseline_logs(corpus, "median_s"), base)}


def main(other: str) -> None:
    ids_a, qa = quantities(ev.load_history(CORPORA / "corpus.json.gz"))
    ids_b, qb = quantities(ev.load_history(CORPORA / other))
    rows = []
    for s, case in enumerate(ids_a):
        if case not in ids_b:
            continue
        j = ids_b.index(case)
        for name in ("ratio", "jit"):
            n = min(qa[name].shape[1], qb[name].shape[1])
            a, b = qa[name][s, :n], qb[name][j, :n]
            ok = ~np.isnan(a) & ~np.isnan(b)
            a, b = a[ok], b[ok]
            if a.size < 10:
                continue
            cov = (robust_sigma(a + b) ** 2 - robust_sigma(a - b) ** 2) / 4
            var = (robust_sigma(a) ** 2 + robust_sigma(b) ** 2) / 2
            rows.append((case, name, float(np.sqrt(var)), cov / var if var > 0 else np.nan))
    for name in ("ratio", "jit"):
        shared = np.array([r[3] for r in rows if r[1] == name])
        sigma = np.array([r[2] for r in rows if r[1] == name])
        print(f"{name}: shared share of the variance, quartiles "
              f"{np.round(np.nanpercentile(shared, [25, 50, 75]), 2)}; median over the "
              f"{int((sigma > 0.025).sum())} series above 2.5%: "
              f"{np.nanmedian(shared[sigma > 0.025]):.2f}")
    for case, name, sigma, shared in rows:
        if sigma > 0.03:
            print(f"  {case:58s} {name:5s} sigma {100 * sigma:4.1f}%  shared {shared:+.2f}")


if __name__ == "__main__":
    main(sys.argv[1])
