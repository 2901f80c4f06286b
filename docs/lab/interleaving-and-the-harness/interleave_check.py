"""Does interleaving distort what it interleaves? (issue 10, item 3)

    python docs/lab/interleaving-and-the-harness/interleave_check.py [--repeats 3] [--schemes sample,block,random]

For each interleaving scheme, ``repeats`` times: ``jitbench run --suite rnn --variant forward
--framework tf`` with every TF mode together, then ``--mode graph`` alone and ``--mode xla``
alone (separate runs, separate processes). Prints per scheme and size the graph and xla
medians together and alone, the xla-vs-graph speedup both ways and their ratio (done when
within 10%), and the interference check of the together runs (interleaved median / the same
mode in two blocks alone after the interleaved phase, in the same worker, the drift all modes
shared taken out; flagged when both blocks moved beyond the noise). Run it on a quiet machine;
the lead picks the default scheme from its output.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

BASE = ["--suite", "rnn", "--variant", "forward", "--framework", "tf", "--device", "cpu",
        "--no-report", "--no-calibrate"]


def _run(out: Path, run_id: str, scheme: str, extra: list[str]) -> list[dict]:
    cmd = [sys.executable, "-m", "jitbench", "run", *BASE, "--interleave", scheme, "--out",
           str(out), "--run-id", run_id, *extra]
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    rows = (out / run_id / "results.jsonl").read_text().splitlines()
    return [r for r in map(json.loads, rows) if r["status"] == "ok"]


def _by(rows, mode) -> dict[tuple, dict]:
    return {(r["dtype"], r["size"]): r for r in rows if r["mode"] == mode}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--schemes", default="sample,block,random")
    ap.add_argument("--out", default=None, help="results root (default: a temporary folder)")
    args = ap.parse_args()
    out = Path(args.out or tempfile.mkdtemp(prefix="interleave_check-"))
    worst = 0.0
    for scheme in args.schemes.split(","):
        per: dict[tuple, dict[str, list]] = {}
        for i in range(args.repeats):
            together = _run(out, f"{scheme}-all-{i}", scheme, [])
            graph = _by(_run(out, f"{scheme}-graph-{i}", scheme, ["--mode", "graph"]), "graph")
            xla = _by(_run(out, f"{scheme}-xla-{i}", scheme, ["--mode", "xla"]), "xla")
            tg, tx = _by(together, "graph"), _by(together, "xla")
            for key in sorted(set(tg) & set(tx) & set(graph) & set(xla)):
                d = per.setdefault(key, {k: [] for k in ("g", "x", "ga", "xa", "flags")})
                d["g"].append(tg[key]["median_s"])
                d["x"].append(tx[key]["median_s"])
                d["ga"].append(graph[key]["median_s"])
                d["xa"].append(xla[key]["median_s"])
                d["flags"].append("".join(
                    f"{m}:{r.get('interference', float('nan')):.2f}"
                    f"{'!' if r.get('interference_flag') else ''} "
                    for m, r in (("graph", tg[key]), ("xla", tx[key]))))
        print(f"\n== scheme {scheme}: medians in ms per repeat; speedup = graph / xla")
        for key, d in per.items():
            sp_t = [g / x for g, x in zip(d["g"], d["x"])]
            sp_a = [g / x for g, x in zip(d["ga"], d["xa"])]
            agree = statistics.median(sp_t) / statistics.median(sp_a)
            worst = max(worst, abs(agree - 1))
            ms = lambda v: " ".join(f"{x * 1e3:6.3f}" for x in v)  # noqa: E731
            print(f"{' '.join(key)}")
            print(f"  together: graph {ms(d['g'])} | xla {ms(d['x'])} | speedup "
                  f"{' '.join(f'{s:.2f}' for s in sp_t)}")
            print(f"  alone   : graph {ms(d['ga'])} | xla {ms(d['xa'])} | speedup "
                  f"{' '.join(f'{s:.2f}' for s in sp_a)}")
            print(f"  together/alone speedup (median): {agree:.3f}"
                  f"{'' if abs(agree - 1) <= 0.10 else '  (> 10% apart)'}")
            print(f"  interference (interleaved/alone, ! = flagged): {' | '.join(d['flags'])}")
    print(f"\nruns in {out}; largest together/alone speedup gap {worst:.1%}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
