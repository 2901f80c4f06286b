"""One step of a ladder: an A/B run between two rungs read back per case (:func:`summarise`),
and each rung's figures over every process it ran in (:func:`per_release`).

Each measured ratio is judged as the A/B judges time (``jitbench.analysis.ab_verdicts``: the
pair's log ratio, Student's t over pairs, the looks): time B / A, first call B / A, and the
JIT's share of its baseline's time (1 / speedup) B / A, said of the speedup (its ratio B / A,
``lower`` where the share is ``slower``: the JIT pays off less; ``higher``, ``same``,
``unresolved``). A step judges every case and measure at once, so its error rate is shared out
over them (Bonferroni): an A/A step calls a step in 1 - confidence of ladders at most, not in
that share of its cases. Compile counts and programs are facts (changed or not); the error is
a fact per release, a step when it moves by :data:`ERROR_STEP` or more either way and the larger
reaches :data:`ERROR_FLOOR` of the case's rtol (below, another summation order moves a float32
error of 1e-7 by 2-5x: round-off); a case that runs on one side only broke (or was mended).

A case whose only step is its compiled program (``stepped == ["program"]``: the HLO's
fingerprint changed, nothing measured moved) is counted apart (:func:`counts`), so "N of M
cases stepped" never counts a program that changed and ran as fast.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Mapping, Sequence

from jitbench.analysis import ab_verdicts
from jitbench.releases import bisect as halving

ERROR_STEP = 2.0  # the max error moving by this factor either way is a step
ERROR_FLOOR = 0.1  # ... when the larger error reaches this share of the case's rtol
MEASURES = ("time", "jit_speedup", "first_call")  # measured ratios with a verdict
FACTS = ("compiles", "program", "error", "status")  # facts: changed or not
PROGRAM_ONLY = ["program"]  # a case's steps when only its compiled program changed


def summarise(run_dir: Path | str, before: str, after: str, threshold: float
              ) -> dict[str, Any]:
    """One A/B between two rungs, per case: each measure of :data:`MEASURES` with its ratio
    after / before, interval and verdict at the step's family-wise confidence (the A/B's
    confidence over every case and measure judged; the A/B's own verdict of the time per
    case: ``time.ab_verdict``), each fact of :data:`FACTS` on both sides, and the measures
    that stepped (``stepped``)."""
    import pandas as pd

    from jitbench.results.files import load_meta, load_results

    meta, df = load_meta(run_dir), load_results(run_dir)
    s = meta["ab"]["settings"]
    rules = dict(tolerance=s["tolerance"], confidence=s["confidence"],
                 max_pairs=s["max_pairs"], look_pairs=tuple(s.get("look_pairs")
                                                            or ab_verdicts.LOOK_PAIRS))
    table = ab_verdicts.verdicts(df, final=True, **rules)
    df = df.assign(jit_share=1.0 / pd.to_numeric(df.get("verdict_speedup"), errors="coerce"))
    units = {m: ab_verdicts.pair_units(df, col) for m, col in
             (("time", "median_s"), ("jit_speedup", "jit_share"),
              ("first_call", "first_call_s"))}
    series = {(m, case): list(g["log_ratio"]) for m, u in units.items()
              for case, g in u.groupby("case_id", sort=False)}
    # one step of a ladder asks every case and measure at once: its error rate is the
    # step's, shared out over those judged (Bonferroni), so an A/A step calls nothing at the
    # A/B's confidence in all but 1 - confidence of ladders
    judged = sum(1 for v in series.values() if len(v) >= ab_verdicts.MIN_PAIRS)
    family = {**rules, "confidence": 1 - (1 - s["confidence"]) / max(1, judged)}
    cases = []
    for r in table.to_dict("records"):
        case = {k: r.get(k) for k in ab_verdicts.CASE_COLUMNS}
        for name in units:
            case[name] = _measured(series.get((name, r["case_id"]), []), family)
        case["time"].update(before=r["median_a_s"], after=r["median_b_s"],
                            ab_verdict=r["verdict"])
        if case["time"]["verdict"] is None:  # no pair: the A/B's failed or skipped
            case["time"]["verdict"] = r["verdict"]
        rows = df[df["case_id"] == r["case_id"]]
        case["jit_speedup"] = _as_speedup(case["jit_speedup"])
        case["jit_speedup"].update(before=_geo_side(rows, "a"), after=_geo_side(rows, "b"))
        case["first_call"].update(before=r["first_call_a_s"], after=r["first_call_b_s"])
        case["compiles"] = {"before": r["compiles_a"], "after": r["compiles_b"],
                            "changed": bool(r["compiles_a"] and r["compiles_b"]
                                            and r["compiles_a"] != r["compiles_b"])}
        case["program"] = {"before": r["hlo_a"], "after": r["hlo_b"],
                           "changed": r["program"] == "changed"}
        case["error"] = _errors(rows)
        case["status"] = _status(rows, r)
        case["stepped"] = _stepped(case, threshold)
        cases.append(clean(case))
    return {"before": before, "after": after, "run_dir": str(run_dir),
            "confidence": family["confidence"], "judged": judged,
            "run_id": meta.get("run_id"), "status": meta.get("status"),
            "rounds": int(meta["ab"].get("rounds") or 0),
            "warnings": list(meta["ab"].get("warnings") or []),
            "versions": {arm: (meta["ab"]["arms"][arm].get("packages") or {})
                         for arm in ("a", "b")},
            "cases": cases}


def _measured(series: Sequence[float], rules: Mapping[str, Any]) -> dict[str, Any]:
    if not series:
        return {"verdict": None, "ratio": math.nan, "ci_low": math.nan, "ci_high": math.nan,
                "pairs": 0}
    verdict, _, ratio, lo, hi = ab_verdicts.decide_interval(series, final=True, **rules)
    return {"verdict": verdict or "unresolved", "ratio": ratio, "ci_low": lo, "ci_high": hi,
            "pairs": len(series)}


SPEEDUP_WORDS = {"slower": "lower", "faster": "higher"}  # the JIT's share of time -> speedup


def _as_speedup(share: dict[str, Any]) -> dict[str, Any]:
    """The verdict on the JIT's share of its baseline's time (later / earlier), said of the
    speedup: its ratio and interval inverted (speedup later / earlier), ``slower`` as
    ``lower`` (the JIT pays off less), ``faster`` as ``higher``."""
    def inv(v):
        return 1.0 / v if isinstance(v, float) and v == v and v > 0 else math.nan

    return {**share, "verdict": SPEEDUP_WORDS.get(share["verdict"], share["verdict"]),
            "ratio": inv(share["ratio"]), "ci_low": inv(share["ci_high"]),
            "ci_high": inv(share["ci_low"])}


def _geo_side(rows, arm: str) -> float:
    """An arm's JIT speedup over its nearest JIT-off mode: the geometric mean over its
    processes of each process's interleaved speedup (``verdict_speedup``)."""
    ok = rows[(rows["ab_arm"] == arm) & (rows["status"] == "ok")]
    return _geo(ok, "verdict_speedup", 0.95)["value"] or math.nan


def _errors(rows) -> dict[str, Any]:
    """The max relative error against float64 on each side (the worst process), ``floor``
    (:data:`ERROR_FLOOR` of the case's rtol; 0 without one) and ``changed``: moved by
    :data:`ERROR_STEP` either way, the larger error at the floor or above."""
    import pandas as pd

    out: dict[str, Any] = {}
    for side, arm in (("before", "a"), ("after", "b")):
        ok = rows[(rows["ab_arm"] == arm) & rows["status"].isin(["ok", "mismatch"])]
        v = pd.to_numeric(ok.get("max_rel_err", pd.Series(dtype=float)), errors="coerce")
        out[side] = float(v.max()) if v.notna().any() else math.nan
    rtol = pd.to_numeric(rows.get("rtol", pd.Series(dtype=float)), errors="coerce").max()
    out["floor"] = ERROR_FLOOR * float(rtol) if rtol == rtol and rtol > 0 else 0.0
    a, b = out["before"], out["after"]
    out["changed"] = bool(a == a and b == b and max(a, b) > 0 and max(a, b) >= out["floor"]
                          and (min(a, b) == 0 or max(a, b) / min(a, b) >= ERROR_STEP))
    return out


def _status(rows, r: Mapping[str, Any]) -> dict[str, Any]:
    """Each side's statuses over its processes and ``change``: ``broke`` (ok before, never
    after), ``mended`` (the reverse) or None."""
    def ok(arm):
        side = rows[rows["ab_arm"] == arm]
        return bool(len(side)) and (side["status"] == "ok").any()

    def errors(arm):
        e = rows.loc[(rows["ab_arm"] == arm) & (rows["status"] != "ok"), "error"]
        return next((str(x)[:300] for x in e if isinstance(x, str) and x), None)

    change = None
    if ok("a") and not ok("b") and (rows["ab_arm"] == "b").any():
        change = halving.BROKE
    elif ok("b") and not ok("a") and (rows["ab_arm"] == "a").any():
        change = halving.MENDED
    return {"before": r["status_a"], "after": r["status_b"], "change": change,
            "error_before": errors("a"), "error_after": errors("b")}


def _stepped(case: Mapping[str, Any], threshold: float) -> list[str]:
    """The measures of a case that stepped between the two sides: a measured ratio decided
    slower or faster beyond the threshold; a fact that changed; ``status`` when it broke or
    was mended."""
    moved = (*halving.STEPS, *SPEEDUP_WORDS.values())
    out = [m for m in MEASURES if case[m]["verdict"] in moved
           and halving.beyond(as_float(case[m]["ratio"]), threshold)]
    out += [f for f in ("compiles", "program", "error") if case[f]["changed"]]
    return out + (["status"] if case["status"]["change"] else [])


# --------------------------------------------------------------------------- per release

def per_release(runs: Sequence[Mapping[str, Any]], confidence: float) -> dict[str, Any]:
    """Per case, per rung, each measure over every process of the rung (both A/Bs a middle
    rung took part in): the time, JIT speedup and first call as a geometric mean with its
    interval over processes (the unit: a process; a drift between the two A/Bs is in it),
    the compile counts, the programs, the max error, the statuses."""
    import pandas as pd

    from jitbench.results.files import load_results

    parts = []
    for run in runs:
        df = load_results(run["run_dir"])
        df["rung"] = df["ab_arm"].map({"a": run["before"], "b": run["after"]})
        parts.append(df)
    if not parts:
        return {}
    df = pd.concat(parts, ignore_index=True)
    out: dict[str, Any] = {}
    for (case_id, rung), rows in df.groupby(["case_id", "rung"], sort=False):
        ok = rows[rows["status"] == "ok"]
        entry = {"processes": int(len(rows)), "ok": int(len(ok)),
                 "status": ", ".join(f"{k} {v}" for k, v in
                                     sorted(rows["status"].value_counts().items()))}
        for name, col in (("time", "median_s"), ("jit_speedup", "verdict_speedup"),
                          ("first_call", "first_call_s")):
            entry[name] = _geo(ok, col, confidence)
        entry["compiles"] = sorted({int(v) for v in pd.to_numeric(
            ok.get("first_compiles", pd.Series(dtype=float)), errors="coerce").dropna()})
        entry["program"] = sorted({str(v) for v in ok.get("hlo_fingerprint", [])
                                   if isinstance(v, str) and v})
        err = pd.to_numeric(rows.get("max_rel_err", pd.Series(dtype=float)), errors="coerce")
        entry["error"] = float(err.max()) if err.notna().any() else math.nan
        out.setdefault(case_id, {})[rung] = clean(entry)
    return out


def _geo(rows, col: str, confidence: float) -> dict[str, Any]:
    import pandas as pd

    v = pd.to_numeric(rows.get(col, pd.Series(dtype=float)), errors="coerce").dropna()
    v = v[v > 0]
    if not len(v):
        return {"value": None, "ci_low": None, "ci_high": None, "n": 0}
    mid, lo, hi = ab_verdicts.interval(list(pd.Series(v).apply(math.log)), 1 - confidence)
    return {"value": mid, "ci_low": lo, "ci_high": hi, "n": int(len(v))}



def as_float(v) -> float:
    return math.nan if v is None else float(v)


def clean(obj):
    """NaN as None (JSON has no NaN), numpy scalars as Python's, recursively."""
    if isinstance(obj, dict):
        return {str(k): clean(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [clean(v) for v in obj]
    if hasattr(obj, "item") and not isinstance(obj, (str, bytes)):
        obj = obj.item()
    if isinstance(obj, float) and obj != obj:
        return None
    return obj


def counts(cases: Sequence[Mapping[str, Any]]) -> dict[str, int]:
    """A step's cases: ``stepped`` (a step in anything but the compiled program alone: a
    measured ratio, the compile count, the error, the status), ``program_only`` (the program
    changed and nothing else did) and ``cases`` (all)."""
    program_only = sum(1 for c in cases if list(c.get("stepped") or []) == PROGRAM_ONLY)
    stepped = sum(1 for c in cases if c.get("stepped")) - program_only
    return {"stepped": stepped, "program_only": program_only, "cases": len(cases)}


def counts_text(cases: Sequence[Mapping[str, Any]]) -> str:
    """``N of M cases stepped`` and, where some changed their program alone, ``; K more
    changed program only``."""
    n = counts(cases)
    return (f"{n['stepped']} of {n['cases']} cases stepped"
            + (f"; {n['program_only']} more changed program only" if n["program_only"] else ""))
