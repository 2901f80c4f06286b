"""The paired rule's settings replayed on a corpus: false alerts, detection of planted steps
within 2 nights, and the share of series that see each step, per (z_min, floor) setting.

    python docs/lab/nightly-corpora/detector_sweep.py tests/fixtures/nightly-corpus/corpus.json.gz \
        --z 2.5,3 --floor 0.015,0.02
"""

from __future__ import annotations

import argparse
import dataclasses
import functools

from jitbench.analysis import detectors
from jitbench.nightly import corpus as corpus_mod
from jitbench.nightly import evaluate


def sweep(path: str, zs: list[float], floors: list[float]) -> list[dict]:
    corpus = corpus_mod.load(path)
    out = []
    original = detectors.DETECTORS["paired"]
    try:
        for z in zs:
            for floor in floors:
                judge = functools.partial(detectors.paired_rule, z_min=z)
                evaluate.DETECTORS["paired"] = dataclasses.replace(original, judge=judge)
                evaluate.PAIRED_FLOOR = floor
                evaluate.judge_night = functools.partial(detectors.judge_night, z_min=z)
                r = evaluate.evaluate(corpus, "paired")
                out.append({"z_min": z, "floor": floor, "false_alerts": r["false_alerts"],
                            "nights": r["nights"], "series": r["series"],
                            "detection": r["detection"], "seeing": r["seeing"]})
    finally:
        evaluate.DETECTORS["paired"] = original
        evaluate.PAIRED_FLOOR = detectors.PAIRED_FLOOR
        evaluate.judge_night = detectors.judge_night
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("corpus")
    ap.add_argument("--z", default="2.5,3")
    ap.add_argument("--floor", default="0.02")
    args = ap.parse_args()
    rows = sweep(args.corpus, [float(v) for v in args.z.split(",")],
                 [float(v) for v in args.floor.split(",")])
    print("| z_min | floor | false alerts | det 5% | det 10% | det 20% | sees 10% |")
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        d, s = r["detection"], r["seeing"]

        def pct(v):
            return "-" if v is None else f"{100 * v:.0f}%"

        print(f"| {r['z_min']:g} | {r['floor']:g} | {r['false_alerts']} ({r['nights']} nights x "
              f"{r['series']}) | {pct(d['0.05'])} | {pct(d['0.1'])} | {pct(d['0.2'])} | "
              f"{pct(s['0.1'])} |")


if __name__ == "__main__":
    main()
