"""Night-to-night scatter of each series of one or more nightly corpora, side by side: the robust
sigma (1.4826 x MAD) of the log ratio over the nights, in %, per series, and its quartiles over
the series.

    python docs/lab/scripts/corpus_scatter.py old=tests/fixtures/nightly-corpus/corpus.json.gz \
        pinned=A.json.gz two=AB.json.gz
"""

from __future__ import annotations

import math
import sys

import numpy as np

from jitbench.nightly import corpus as corpus_mod
from jitbench.protocol.timing import robust_sigma


def scatter(path: str) -> dict[str, float]:
    c = corpus_mod.load(path)
    out = {}
    for case_id, s in c["series"].items():
        logs = [math.log(v) for v in s["ratio"] if isinstance(v, (int, float)) and v > 0]
        if len(logs) >= 5:
            out[case_id] = 100 * robust_sigma(logs)
    return out


def main(args: list[str]) -> None:
    named = [a.split("=", 1) for a in args]
    tables = {name: scatter(path) for name, path in named}
    names = list(tables)
    print("| series | " + " | ".join(names) + " |")
    print("|---|" + "---|" * len(names))
    for case_id in sorted(set().union(*tables.values())):
        cells = [f"{tables[n][case_id]:.1f}%" if case_id in tables[n] else "" for n in names]
        print(f"| {case_id} | " + " | ".join(cells) + " |")
    for q, label in ((25, "25th percentile"), (50, "median"), (75, "75th percentile"),
                     (90, "90th percentile")):
        cells = [f"{np.percentile(list(tables[n].values()), q):.1f}%" for n in names]
        print(f"| {label} over series | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main(sys.argv[1:])
