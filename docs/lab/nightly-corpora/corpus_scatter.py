"""Night-to-night scatter of each series of one or more nightly corpora, side by side: the robust
sigma (1.4826 x MAD) over the nights, in %, per series, and its quartiles over the series, of
the log ratio (default), the JIT time against the machine (``--quantity=jit``) or the quieter
of the two (``--quantity=judged``, what the paired rule judges).

    python docs/lab/nightly-corpora/corpus_scatter.py [--quantity=judged] \
        old=tests/fixtures/nightly-corpus/corpus.json.gz pinned=A.json.gz two=AB.json.gz
"""

from __future__ import annotations

import math
import sys

import numpy as np

from jitbench.analysis.detectors import jit_levels
from jitbench.nightly import corpus as corpus_mod
from jitbench.nightly import evaluate
from jitbench.protocol.timing import robust_sigma
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # docs/lab: labkit
from labkit import usage  # noqa: E402

usage(__doc__)


def scatter(path: str, quantity: str = "ratio") -> dict[str, float]:
    """case id -> robust sigma (%) of ``quantity`` over the nights: ``ratio``, ``jit`` (the
    JIT time against the machine, ``detectors.jit_levels``) or ``judged`` (the quieter of
    the two, as the paired rule judges a series)."""
    c = corpus_mod.load(path)
    ids, x, _, _ = evaluate.arrays(c)
    alt = jit_levels(evaluate.baseline_logs(c, "median_s"), evaluate.baseline_logs(c))
    out = {}
    for i, case_id in enumerate(ids):
        sig = {}
        for name, row in (("ratio", x[i]), ("jit", alt[i])):
            logs = row[~np.isnan(row)]
            sig[name] = 100 * robust_sigma(list(logs)) if logs.size >= 5 else math.nan
        sig["judged"] = min(sig["ratio"], sig["jit"]) if not math.isnan(sig["jit"]) \
            else sig["ratio"]
        if not math.isnan(sig[quantity]):
            out[case_id] = sig[quantity]
    return out


def main(args: list[str]) -> None:
    quantity = "ratio"
    if args and args[0].startswith("--quantity="):
        quantity, args = args[0].split("=", 1)[1], args[1:]
    named = [a.split("=", 1) for a in args]
    tables = {name: scatter(path, quantity) for name, path in named}
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
