"""Replay `jitbench ab` runs with other looks and pair limits: what a run with those settings
would have said (the looks use only their first pairs, so a replay with fewer pairs is what a
shorter run would have said).

    python docs/lab/ab-on-the-cpu/ab_replay.py RUN_DIR... [--planted CASE_ID]

Prints, per setting, how many unchanged cases were called `slower` or `faster` and, with
--planted, how often the planted case was `slower` and its deciding interval covered its
factor (read from the B arm's JITBENCH_TEST_SLOWDOWN)."""

from __future__ import annotations

import argparse
import re

from jitbench.analysis import ab_verdicts as ab
from jitbench.results.files import load_meta, load_results

LOOKS = {"4,6,9,...": (4, 6, 9, 13, 19, 28, 40), "6,9,...": (6, 9, 13, 19, 28, 40),
         "5,8,...": (5, 8, 12, 18, 27, 40)}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("runs", nargs="+")
    p.add_argument("--planted")
    args = p.parse_args()
    runs = [(d, load_meta(d), load_results(d)) for d in args.runs]
    for name, looks in LOOKS.items():
        for max_pairs in (8, 10):
            called = cases = found = covered = planted_runs = 0
            for _, meta, df in runs:
                t = ab.verdicts(df[df["ab_round"] < max_pairs], tolerance=0.05,
                                confidence=0.95, max_pairs=max_pairs, final=True,
                                look_pairs=looks)
                slow = (meta["ab"]["arms"]["b"].get("env") or {}).get("JITBENCH_TEST_SLOWDOWN")
                if args.planted and slow and (t["case_id"] == args.planted).any():
                    factor = float(re.search(r"=x([0-9.]+)$", slow).group(1))
                    r = t[t["case_id"] == args.planted].iloc[0]
                    planted_runs += 1
                    found += r["verdict"] == "slower"
                    covered += r["ci_low"] <= factor <= r["ci_high"]
                    t = t[t["case_id"] != args.planted]
                called += int(t["verdict"].isin(["slower", "faster"]).sum())
                cases += len(t)
            line = f"looks {name} at most {max_pairs}: unchanged cases called {called}/{cases}"
            if planted_runs:
                line += (f"; planted slower {found}/{planted_runs}, interval covers it "
                         f"{covered}/{planted_runs}")
            print(line)


if __name__ == "__main__":
    main()
