"""The touched cases' A/B verdicts of change nights, read from each night's change run
(``<night>/results/night/change/<id>/``) with the settings it ran with: every pair, final.

    python docs/lab/duet-pairs/ab_case_verdicts.py NIGHT_DIR [NIGHT_DIR...]
"""
import json, sys, glob
import jitbench
from jitbench.analysis import ab_verdicts as A
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # docs/lab: labkit
from labkit import usage  # noqa: E402

usage(__doc__)
for d in sys.argv[1:]:
    run = glob.glob(d + "/results/night/change/*/")[0]
    m = json.load(open(run + "meta.json"))["ab"]["settings"]
    df = jitbench.load_results(run)
    v = A.verdicts(df, tolerance=m["tolerance"], confidence=m["confidence"], max_pairs=m["max_pairs"], final=True)
    cols = [c for c in v.columns if c in ("case_id", "mode", "speedup", "ratio", "ci_low", "ci_high", "verdict", "n_pairs", "pairs")]
    print(d); print(v[cols].to_string())
