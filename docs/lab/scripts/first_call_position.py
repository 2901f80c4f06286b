"""Does a first call depend on where its case runs in the worker? (issue 10, item 1)

    python docs/lab/scripts/first_call_position.py [--repeats 3] [--out /tmp/first_call_position]

Each repeat makes two runs of the same cases with the Python API (``jitbench.run.runner.run``): in
one, the probe case is the first group of its worker; in the other, it comes after the other
groups. The worker warms up every mode before its first group (``jitbench.run.startup``), so the
probe's
first call should be the same in both positions: the script prints, for TF eager, TF xla and
JAX jit, the first call as first group and as a later group, their ratio, whether the
medians over the repeats agree within 20%, and a rank test of the two positions (Mann-Whitney U,
two-sided): one first call per repeat is a single sample, and on a noisy machine it spreads
±25% within a position, so a ratio outside 20% from a few repeats with a large p is noise, not a
position effect; more repeats tell them apart. Run it on a quiet machine.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
from pathlib import Path

from scipy.stats import mannwhitneyu

from jitbench.define.workload import Filters, expand
from jitbench.protocol.timing import Protocol
from jitbench.run import runner

PROBE = ("matmul_relu", "split", "256x256x256")  # workload, variant, size label
OTHERS = [("matmul_relu", "fused"), ("mmd", "default")]  # run before it in the later position
CHECKED = [("tf", "eager"), ("tf", "xla"), ("jax", "jit")]
TOLERANCE = 0.20


def _cases():
    every = expand(Filters(framework=("tf", "jax"), device=("cpu",), dtype=("float32",)),)
    probe = [c for c in every if (c.workload, c.variant, c.size) == PROBE]
    others = [c for c in every if (c.workload, c.variant) in OTHERS and c.size_set == "quick"]
    # the smallest size of each other workload is enough to start the framework up
    keep = {}
    for c in others:
        keep.setdefault((c.workload, c.variant, c.framework), c.size)
    others = [c for c in others if keep[(c.workload, c.variant, c.framework)] == c.size]
    return probe, others


def _first_calls(run_dir: Path) -> dict[tuple[str, str], float]:
    out = {}
    for line in (run_dir / "results.jsonl").read_text().splitlines():
        r = json.loads(line)
        if (r["workload"], r["variant"], r["size"]) == PROBE and r["status"] == "ok":
            out[(r["framework"], r["mode"])] = r["first_call_s"]
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--out", default=None, help="results root (default: a temporary folder)")
    args = ap.parse_args()
    out = Path(args.out or tempfile.mkdtemp(prefix="first_call_position-"))
    probe, others = _cases()
    if not probe:
        raise SystemExit(f"no case {PROBE} in the registry")
    protocol = Protocol(min_time=0.2)
    got: dict[str, list[dict]] = {"first": [], "later": []}
    for i in range(args.repeats):
        for position, cases in (("first", probe + others), ("later", others + probe)):
            run_dir = runner.run(cases, out, protocol=protocol, run_id=f"{position}-{i}",
                                 command=["docs/lab/scripts/first_call_position.py"])
            got[position].append(_first_calls(run_dir))
    print(f"probe {' '.join(PROBE)}; first call in ms, as the first group of its worker vs "
          f"after {len(others)} other groups; {args.repeats} repeats")
    print(f"{'mode':<10} {'first group':>24} {'later group':>24} {'ratio':>7}  within 20%  "
          f"rank test p")
    ok_all = True
    for key in CHECKED:
        a = [g[key] * 1e3 for g in got["first"] if key in g]
        b = [g[key] * 1e3 for g in got["later"] if key in g]
        if not a or not b:
            print(f"{' '.join(key):<10} not measured")
            ok_all = False
            continue
        ratio = statistics.median(b) / statistics.median(a)
        ok = abs(ratio - 1) <= TOLERANCE
        ok_all &= ok
        p = mannwhitneyu(a, b).pvalue
        print(f"{' '.join(key):<10} {' '.join(f'{x:7.2f}' for x in a):>24} "
              f"{' '.join(f'{x:7.2f}' for x in b):>24} {ratio:7.2f}  {'yes' if ok else 'NO':<10} "
              f"{p:.2f}")
    print(f"runs in {out}")
    return 0 if ok_all else 1


if __name__ == "__main__":
    raise SystemExit(main())
