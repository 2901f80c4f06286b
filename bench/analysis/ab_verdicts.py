"""Two environments side by side (``jitbench ab``): per case, the verdict on arm B against
arm A from fresh processes of each, alternated.

The unit is a process pair: in round ``i`` arm A and arm B each measured the case in a fresh
process, one right after the other (A B, then B A in the next round, so a drift cancels), and
the pair's unit is ``log(time_B / time_A)`` of the two processes' median times per call. One
process per arm answers nothing (a fresh process of the same program lands several percent
away from the last on a shared machine); the interval over pairs carries that process noise.

The verdict is sequential: the pairs are looked at after :data:`LOOK_PAIRS` pairs (and at the
last pair the run allows; a run that ends before its next look, on its time limit, looks at
the pairs it has then), the error rate split evenly over those looks; a case is decided at
the first look where Student's t interval of the mean log ratio says ``slower`` / ``faster``
(B against A: beyond 1.00x) or ``same`` (inside the ``tolerance`` band); a case never decided
is ``unresolved``. :func:`verdicts` replays the looks on the rows, so the run's stopping
(``jitbench.run.ab_arms``) and the report read the same answer.
"""

from __future__ import annotations

import math
import shlex
from typing import Any, Mapping, Sequence

import numpy as np
import pandas as pd

LOOK_PAIRS = (4, 6, 9, 13, 19, 28, 40)
MIN_PAIRS = 3  # the fewest pairs a t interval is made from

CASE_COLUMNS = ["case_id", "workload", "variant", "framework", "mode", "device", "dtype",
                "size", "jit"]


def looks(max_pairs: int, look_pairs: Sequence[int] = LOOK_PAIRS) -> list[int]:
    """The pair counts a verdict may be made at, for a run of at most ``max_pairs`` pairs
    (``look_pairs``: where the looks before the last one fall)."""
    out = [n for n in look_pairs if n < max_pairs]
    return out + [max_pairs] if max_pairs >= MIN_PAIRS else out


def alpha_per_look(confidence: float, max_pairs: int,
                   look_pairs: Sequence[int] = LOOK_PAIRS) -> float:
    """The error rate of one look: ``1 - confidence`` split evenly over the looks."""
    return (1.0 - confidence) / max(1, len(looks(max_pairs, look_pairs)))


def judge(lo: float, hi: float, tolerance: float) -> str | None:
    """B's verdict from the interval of time B / time A: ``slower`` above 1.00x, ``faster``
    below, ``same`` inside the band 1/(1+tol) .. 1+tol, None while it straddles (the run's
    own rule, ``jitbench.protocol.sequential.judge``, applied to B's speedup A / B)."""
    from jitbench.protocol.sequential import judge as judge_speedup

    if not (lo > 0 and hi > 0):
        return None
    return judge_speedup(1.0 / hi, 1.0 / lo, tolerance)


def interval(units: Sequence[float], alpha: float) -> tuple[float, float, float]:
    """(ratio, low, high) of time B / time A from the pairs' log ratios: the geometric mean and
    Student's t interval at two-sided ``alpha``."""
    from scipy.special import stdtrit

    u = np.asarray(units, dtype=float)
    mean = float(u.mean())
    if len(u) < 2:
        return math.exp(mean), math.nan, math.nan
    half = float(stdtrit(len(u) - 1, 1 - alpha / 2)) * float(u.std(ddof=1)) / math.sqrt(len(u))
    return math.exp(mean), math.exp(mean - half), math.exp(mean + half)


def pair_units(df: pd.DataFrame, value: str = "median_s") -> pd.DataFrame:
    """One row per case and round where both arms measured the case ``ok``: ``log_ratio``
    = log(B / A) of ``value`` (the median time; ``first_call_s``: the first call's), rounds
    in order."""
    cols = ["case_id", "ab_round", "log_ratio"]
    if df.empty or "ab_arm" not in df.columns or value not in df.columns:
        return pd.DataFrame(columns=cols)
    ok = df[(df["status"] == "ok") & (pd.to_numeric(df[value], errors="coerce") > 0)]
    wide = ok.pivot_table(index=["case_id", "ab_round"], columns="ab_arm", values=value,
                          aggfunc="first")
    if not {"a", "b"} <= set(wide.columns):
        return pd.DataFrame(columns=cols)
    wide = wide.dropna(subset=["a", "b"]).reset_index().sort_values(["case_id", "ab_round"])
    wide["log_ratio"] = np.log(wide["b"] / wide["a"])
    return wide[cols].reset_index(drop=True)


def decide(units: Sequence[float], *, tolerance: float, confidence: float, max_pairs: int,
           look_pairs: Sequence[int] = LOOK_PAIRS, final: bool = False
           ) -> tuple[str | None, int | None]:
    """(verdict, pairs it was decided at) replaying the looks on ``units`` in round order;
    (None, None) while no look has decided. ``final``: the run has ended (its time limit, say,
    before the next look): the pairs measured since the last look are looked at too, in place
    of the looks the run did not reach, so no pair goes unjudged and the looks made stay within
    the error rate split over the planned ones."""
    alpha = alpha_per_look(confidence, max_pairs, look_pairs)
    planned = looks(max_pairs, look_pairs)
    reached = [n for n in planned if n <= len(units)]
    if (final and len(units) >= MIN_PAIRS and len(units) not in planned
            and len(reached) < len(planned)):
        planned = [*reached, len(units)]
    for n in planned:
        if n > len(units):
            break
        _, lo, hi = interval(units[:n], alpha)
        verdict = judge(lo, hi, tolerance)
        if verdict is not None:
            return verdict, n
    return None, None


def decide_interval(units: Sequence[float], *, tolerance: float, confidence: float,
                    max_pairs: int, look_pairs: Sequence[int] = LOOK_PAIRS, final: bool = True
                    ) -> tuple[str | None, int | None, float, float, float]:
    """(verdict, pairs it was decided at, ratio, low, high): :func:`decide` (of a run that has
    ended, by default), and the interval :func:`verdicts` reports: the deciding look's pairs,
    else every pair."""
    verdict, at = decide(units, tolerance=tolerance, confidence=confidence,
                         max_pairs=max_pairs, look_pairs=look_pairs, final=final)
    used = list(units[:at] if at else units)
    if not used:
        return verdict, at, math.nan, math.nan, math.nan
    return (verdict, at, *interval(used, alpha_per_look(confidence, max_pairs, look_pairs)))


def verdicts(df: pd.DataFrame, *, tolerance: float, confidence: float, max_pairs: int,
             final: bool, look_pairs: Sequence[int] = LOOK_PAIRS) -> pd.DataFrame:
    """One row per case: pairs, time B / A with its interval (the pairs of the look that decided
    it, else every pair; the per-look error rate), ``verdict`` (``slower``/``faster``/``same``;
    ``unresolved`` once ``final`` and no look decided; ``open`` before that; ``failed`` when no
    pair has both arms ``ok``, ``skipped`` when every row was) and what else the arms say: median
    times, first call, compiles, programs, errors, memory."""
    if df.empty:
        return pd.DataFrame(columns=CASE_COLUMNS + ["pairs", "verdict"])
    units = pair_units(df)
    by_case = {c: list(g["log_ratio"]) for c, g in units.groupby("case_id", sort=False)}
    alpha = alpha_per_look(confidence, max_pairs, look_pairs)
    out = []
    for case_id, rows in df.groupby("case_id", sort=False):
        first = rows.iloc[0]
        rec: dict[str, Any] = {c: first.get(c) for c in CASE_COLUMNS}
        u = by_case.get(case_id, [])
        rec["pairs"] = len(u)
        verdict, at = decide(u, tolerance=tolerance, confidence=confidence,
                             max_pairs=max_pairs, look_pairs=look_pairs, final=final)
        # a decided case's interval is the one that decided it (its look's pairs): later
        # pairs, measured for a group-mate, do not reopen it
        used = u[:at] if at else u
        ratio, lo, hi = interval(used, alpha) if used else (math.nan, math.nan, math.nan)
        rec.update(ratio=ratio, ci_low=lo, ci_high=hi, decided_at=at,
                   change_pct=100 * (ratio - 1) if used else math.nan,
                   verdict=verdict or (("skipped" if set(rows["status"]) == {"skipped"}
                                        else "failed") if not u and final else
                                       "unresolved" if final else "open"))
        for arm in ("a", "b"):
            rec.update(_arm_facts(rows[rows["ab_arm"] == arm], arm))
        rec["program"] = _program(rec)
        out.append(rec)
    return pd.DataFrame(out)


def against_threshold(verdict: str | None, high: float, threshold: float) -> str:
    """What one case's A/B says of a step of ``threshold`` (B slower than A by that much):
    ``fails`` (slower, and its interval does not rule out such a step), ``smaller`` (slower,
    the step ruled out: named, not failing), ``undecided`` (no verdict yet and the step not
    ruled out) or ``clear`` (the same, faster, or a step of the threshold ruled out)."""
    open_top = not (isinstance(high, float) and high == high and high < 1 + threshold)
    if verdict == "slower":
        return "fails" if open_top else "smaller"
    if verdict in ("same", "faster"):
        return "clear"
    return "undecided" if open_top else "clear"


def pooled(units: pd.DataFrame, case_ids: Sequence[str], *, tolerance: float,
           confidence: float, max_pairs: int, look_pairs: Sequence[int] = LOOK_PAIRS
           ) -> dict[str, Any] | None:
    """One verdict for a change over the cases it touches together: per round where every
    one of ``case_ids`` has a pair (:func:`pair_units`), the mean of their log ratios (the
    geometric mean of B / A), judged as one case is (:func:`decide`). It narrows only the part
    of the pair noise the cases do not share (a round disturbed for every case stays
    disturbed). None for fewer than two cases or no complete round."""
    ids = [c for c in case_ids if c in set(units["case_id"])]
    if len(ids) < 2:
        return None
    wide = units[units["case_id"].isin(ids)].pivot_table(
        index="ab_round", columns="case_id", values="log_ratio", aggfunc="first")
    series = list(wide.dropna().sort_index().mean(axis=1))
    if not series:
        return None
    verdict, at, ratio, lo, hi = decide_interval(series, tolerance=tolerance,
                                                 confidence=confidence, max_pairs=max_pairs,
                                                 look_pairs=look_pairs)
    return {"cases": sorted(ids), "pairs": len(series), "decided_at": at,
            "verdict": verdict or "unresolved", "ratio": ratio, "ci_low": lo, "ci_high": hi}


def _median(rows: pd.DataFrame, col: str) -> float:
    if col not in rows.columns:
        return math.nan
    v = pd.to_numeric(rows[col], errors="coerce").dropna()
    return float(v.median()) if len(v) else math.nan


def _arm_facts(rows: pd.DataFrame, arm: str) -> dict[str, Any]:
    """An arm's side of a case over its processes."""
    ok = rows[rows["status"] == "ok"]
    statuses = rows["status"].value_counts().to_dict() if len(rows) else {}
    fingerprints = sorted({str(v) for v in rows.get("hlo_fingerprint", pd.Series(dtype=object))
                           if isinstance(v, str) and v})
    compiles = sorted({int(v) for v in pd.to_numeric(rows.get("first_compiles",
                                                              pd.Series(dtype=float)),
                                                     errors="coerce").dropna()})
    errors = [str(e) for e in rows.get("error", pd.Series(dtype=object))
              if isinstance(e, str) and e]
    return {f"processes_{arm}": len(rows),
            f"status_{arm}": ", ".join(f"{k} {v}" for k, v in sorted(statuses.items())),
            f"median_{arm}_s": _median(ok, "median_s"),
            f"first_call_{arm}_s": _median(ok, "first_call_s"),
            f"compiles_{arm}": compiles, f"hlo_{arm}": fingerprints,
            f"norm_rel_err_{arm}": _median(ok, "norm_rel_err"),
            f"compiled_memory_{arm}_bytes": _median(ok, "compiled_memory_bytes"),
            f"speedup_{arm}": _geomean(ok, "speedup"),
            f"error_{arm}": errors[0] if errors else None}


def _geomean(rows: pd.DataFrame, col: str) -> float:
    if col not in rows.columns:
        return math.nan
    v = pd.to_numeric(rows[col], errors="coerce").dropna()
    v = v[v > 0]
    return float(np.exp(np.log(v).mean())) if len(v) else math.nan


def _program(rec: dict[str, Any]) -> str:
    """Whether XLA built the same program in both arms (JIT modes that record it)."""
    a, b = rec["hlo_a"], rec["hlo_b"]
    if not a or not b:
        return ""
    return "same" if a == b else "changed"


def counts(table: pd.DataFrame) -> dict[str, int]:
    """Cases per verdict."""
    return {str(k): int(v) for k, v in table["verdict"].value_counts().items()} \
        if len(table) else {}


FILTER_FLAGS = ("--suite", "--framework", "--mode", "--device", "--dtype", "--variant",
                "--size", "--suite-file")


def filters_of(command: Sequence[str]) -> list[str]:
    """The case filters of a recorded ``jitbench`` command line, as words."""
    words, cmd = [], list(command or [])
    for i, word in enumerate(cmd[:-1]):
        if word in FILTER_FLAGS:
            words += [word, cmd[i + 1]]
    return words


def ab_command(old: Mapping[str, Any], new: Mapping[str, Any], filters: Sequence[str]
               ) -> dict[str, Any]:
    """When the software differs between two runs' metas (framework versions, the XLA/TF
    variables of their environment), the ``jitbench ab`` command that measures ``filters``'
    cases in both environments side by side (``ab_command``; its two specs: ``ab_arms``), and
    what stands in its way
    (``ab_note``: an interpreter upgraded in place no longer has the old versions); {} when
    nothing differs."""
    versions = (old.get("frameworks") or {}) != (new.get("frameworks") or {})
    env_a, env_b = old.get("env") or {}, new.get("env") or {}
    env = sorted(k for k in set(env_a) | set(env_b) if env_a.get(k) != env_b.get(k))
    if not (versions or env):
        return {}
    exe_a = (old.get("machine") or {}).get("executable")
    exe_b = (new.get("machine") or {}).get("executable")
    note = None
    if versions and (not exe_a or exe_a == exe_b):
        exe_a, note = "OLD_ENV/bin/python", (
            "the older run's interpreter was upgraded in place (or not recorded): install its "
            "versions in a second environment and name its python in --a")

    def arm(exe, values):
        return shlex.join(([f"python={exe}"] if versions and exe else [])
                          + [f"{k}={values.get(k, '')}" for k in env])

    arms = [arm(exe_a, env_a), arm(exe_b, env_b)]
    return {"ab_command": shlex.join(["jitbench", "ab", "--a", arms[0], "--b", arms[1],
                                      *filters]),
            "ab_arms": arms, "ab_note": note}
