"""History over runs and regression detection on quantities that survive machine drift.

The machine under a nightly is not the same machine from one night to the next: on a shared
2-core box absolute times drift 0.5-3x between runs minutes apart, and raw samples of two runs
differ by that drift, not by the code. So no absolute time and no raw sample is compared across
runs. A *series* is one case (workload/variant/size/dtype/framework/mode/device) followed over
runs; each run contributes one *point* per metric, each a ratio taken inside that run:

``jit_ratio`` (primary; JIT-on rows)
    median time of the JIT mode / median time of its nearest JIT-off baseline
    (``MODES[...].baseline``) in the same run. The two modes are interleaved in one worker, so
    machine drift hits both alike and cancels in the ratio. A row not interleaved with its
    baseline gets no point (its ratio would carry the drift between two processes).
    Each point also carries both medians (``jit_s``, ``base_s``): the paired rule judges a
    series on the quieter of its ratio and its JIT time against the machine
    (``jitbench.analysis.detectors.judge_night``), and checks the one with the other.
``compiles`` (JIT-on rows)
    the framework's own count of compilations during the first call. An integer the machine
    cannot move: flagged when it rises above a history that never varied.
``compile_norm`` (JIT-on rows)
    compile seconds from the framework's own counter (``first_compile_s``: not the first call,
    which also pays tracing, transfers and start-up) x the run's machine-speed probe.
``baseline_norm`` (JIT-off rows)
    median time x the run's machine-speed probe. A JIT-on row's time is ``jit_ratio`` x its
    baseline's time, so these two cover every steady-state slowdown without counting one twice.

The machine-speed probe is the run's calibration (``meta["calibration"]``, measured by the same
run before its cases): the best float32 matmul GFLOP/s of the row's own framework on the row's
device (the device's best over every source where that framework has none). seconds x GFLOP/s
is "this much matmul work": a machine 2x slower doubles the time and halves the probe, so the
product stays put. Why normalise at all: raw absolute times of different runs carry the drift,
and without some absolute series a slowdown of the JIT-off baseline itself would be invisible
(every ratio moves with its baseline). Why the two probe-normalised metrics are *advisory* by
default (reported, plotted, listed in the summary, never the exit status; ``judge_absolute``
makes them decide on a quiet machine): on the shared 2-core machine the probe, a short
multi-threaded matmul taken once before the cases, swung 3.6x over six runs (88-319 GFLOP/s)
while the JIT-off medians it should correct moved at most 1.4x: it measures whether the second
core happened to be free for a second, not the speed the cases later see, and normalising by
it added a +139% "step" to an unchanged baseline. The verdict rests on what the machine cannot
move: the interleaved ratios and the compile counts.

Verdict on the latest run, per series x metric (log values, so steps are relative):

1. enough history: at least ``min_previous`` earlier runs with a point (else "needs N more");
2. reference = median of the previous ``window`` points; noise = 1.4826 x MAD of them
   (a robust sigma), never below the metric's floor: 5 near-identical points must not read
   as zero noise;
3. z = (latest - reference) / noise, one-sided p-value (normal); Benjamini-Hochberg q-values
   over every series x metric that decides, tested that night (advisory ones form a family of
   their own), so testing ~100 series does not make one of them "significant" by chance;
4. a *suspect* has q < ``alpha``, a step above the metric's threshold (10% steady state,
   50% compile by default) and a value above the ``usual`` (0.8) quantile of its history. The
   last rule is this machine's: some XLA CPU programs run ~1.7x slower in a third of fresh
   processes (mmd outer float32 n256, JAX jit and aot alike: 0.87 ms in 9 of 14 nightlies,
   1.3-1.6 ms in 5), and neither a robust sigma nor re-measuring in fresh processes tells that
   state from a step; a history that has been there before does. A compile count is suspect
   when it exceeds a constant history;
   an advisory metric that passes is ``advisory``, not ``regression``.

Suspects are re-measured (``jitbench.nightly.night``) and judged again the same way before they are
confirmed.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from typing import Any

from jitbench.analysis.detectors import MACHINE_BOUND, PAIRED_FLOOR, PAIRED_WINDOW
from jitbench.protocol.timing import robust_sigma

SERIES_KEYS = ["workload", "variant", "size", "dtype", "framework", "mode", "device"]


@dataclasses.dataclass(frozen=True)
class Thresholds:
    """Steps that count (0.10 = 10% worse), history needed, noise floors (log units, i.e.
    relative), and the false-discovery rate across all series x metrics."""

    steady: float = 0.10  # jit_ratio and baseline_norm
    compile: float = 0.50  # compile_norm: compile time is far noisier
    window: int = 10  # previous runs the reference and noise are taken from
    min_previous: int = 5
    alpha: float = 0.05  # Benjamini-Hochberg FDR
    floor_ratio: float = 0.04
    floor_norm: float = 0.15  # the probe corrects drift only roughly
    floor_compile: float = 0.15
    judge_absolute: bool = False  # probe-normalised metrics decide too (a quiet machine)
    # a step must also rise above this quantile of the series' history: a level the series
    # reached in a fifth of its earlier runs is a state this machine puts it in, not a change
    usual: float = 0.8
    # jit_ratio is judged by the paired rule (jitbench.analysis.detectors.paired_night), chosen
    # by `jitbench nightly --evaluate` on recorded nights (docs/nightly.md): above every one
    # of the previous ``paired_window`` nights, a step above ``steady`` (half of it from 10
    # nights on), z > ``z_min`` over the history's spread (floor ``floor_paired``) and the
    # night's own interval. "quantile": the rule above (z, BH q-value, the 0.8 quantile), the
    # nightly's earlier rule
    detector: str = "paired"
    paired_window: int = PAIRED_WINDOW
    floor_paired: float = PAIRED_FLOOR  # one process's; nights of k: detectors.processes_noise
    z_min: float = 3.0
    # no step is judged on a night whose JIT-off times all moved more than this against the
    # nights before it (jitbench.analysis.detectors.machine_levels); None: every night is judged
    machine: float | None = MACHINE_BOUND


@dataclasses.dataclass(frozen=True)
class Metric:
    name: str
    doc: str  # what a value is, for the summary and the page
    step: str | None  # Thresholds field of the step that counts; None: a count
    floor: str | None  # Thresholds field of the noise floor; None: a count
    drift_proof: bool = True  # False: advisory unless Thresholds.judge_absolute


METRICS = {m.name: m for m in (
    Metric("jit_ratio", "JIT time / baseline time, same run (1/speedup)", "steady",
           "floor_ratio"),
    Metric("compiles", "compilations in the first call (framework counter)", None, None),
    Metric("compile_norm", "compile s x probe GFLOP/s (framework counter)", "compile",
           "floor_compile", drift_proof=False),
    Metric("baseline_norm", "JIT-off median s x probe GFLOP/s", "steady", "floor_norm",
           drift_proof=False),
)}

TEST_COLUMNS = ["series", *SERIES_KEYS, "case_id", "metric", "latest", "low", "high",
                "reference", "change", "noise", "z", "p_value", "q_value", "usual_high",
                "n_previous", "needs", "advisory", "regression", "decisive", "visible_step",
                "baseline_fell", "group_moved", "quantity", "near"]


def probes(calibration: Mapping[str, Any] | None) -> dict[tuple[str, str], float]:
    """(framework, device) -> matmul GFLOP/s of the run's calibration; ("*", device) holds
    the device's best over every source (numpy included), the fallback."""
    out: dict[tuple[str, str], float] = {}
    for p in (calibration or {}).get("peak", []):
        g = p.get("gflops")
        if p.get("status") != "ok" or not isinstance(g, (int, float)) or not g > 0:
            continue
        for key in ((p.get("framework") or "*", p["device"]), ("*", p["device"])):
            out[key] = max(out.get(key, 0.0), float(g))
    return out


def _num(v) -> float | None:
    try:
        f = float(v)
    except (TypeError, ValueError):
        return None
    return f if math.isfinite(f) else None


def run_points(rows: Sequence[Mapping[str, Any]], calibration=None) -> list[dict[str, Any]]:
    """The points one run contributes: dicts of SERIES_KEYS, series, case_id, metric, value."""
    from jitbench.define.modes import MODES, nearest_baseline

    probe = probes(calibration)
    ok = [r for r in rows if r.get("status") == "ok"]
    median = {(*(r[k] for k in SERIES_KEYS if k != "mode"), r["mode"]): _num(r.get("median_s"))
              for r in ok}
    out = []
    for r in ok:
        mode = MODES.get((r["framework"], r["mode"]))
        if mode is None:
            continue
        base_point = {**{k: r[k] for k in SERIES_KEYS}, "case_id": r.get("case_id"),
                      "series": "/".join(str(r[k]) for k in SERIES_KEYS)}

        def point(metric, value, base_point=base_point, low=None, high=None, base_s=None,
                  jit_s=None):
            if value is not None:
                out.append({**base_point, "metric": metric, "value": float(value),
                            "low": low, "high": high, "base_s": base_s, "jit_s": jit_s})

        gflops = probe.get((r["framework"], r["device"])) or probe.get(("*", r["device"]))
        if mode.jit:
            base = mode.baseline or nearest_baseline(r["framework"])
            mine = _num(r.get("median_s"))
            theirs = median.get((*(r[k] for k in SERIES_KEYS if k != "mode"), base))
            speedup = _num(r.get("verdict_speedup"))
            if speedup and speedup > 0:  # the paired estimate of a sequential run, its interval
                lo, hi = _num(r.get("verdict_ci_high")), _num(r.get("verdict_ci_low"))
                point("jit_ratio", 1 / speedup, low=1 / lo if lo else None,
                      high=1 / hi if hi else None, base_s=theirs, jit_s=mine)
            elif base in (r.get("interleaved_with") or []) and mine and theirs:
                point("jit_ratio", mine / theirs, base_s=theirs, jit_s=mine)
            point("compiles", _num(r.get("first_compiles")))
            compile_s = _num(r.get("first_compile_s"))
            if compile_s and gflops:
                point("compile_norm", compile_s * gflops)
        else:
            mine = _num(r.get("median_s"))
            if mine and gflops:
                point("baseline_norm", mine * gflops)
    return out


def points_table(df, metas: Mapping[str, Mapping[str, Any]], run_order: Sequence[str],
                 repeats: Mapping[str, Sequence[Sequence[Mapping[str, Any]]]] | None = None):
    """Long table of every run's points: run_id, run_index (oldest first), run_points'
    columns and ``processes``. ``metas``: run_id -> meta.json (for the calibration);
    ``repeats``: run_id -> the rows of each further fresh process the night measured some of
    its cases in (``jitbench.nightly.repeats``): a series measured in k processes has one
    point, their combination (``jitbench.analysis.processes.combine``; the night's
    calibration for every process)."""
    import pandas as pd

    out = []
    for i, run_id in enumerate(run_order):
        calibration = (metas.get(run_id) or {}).get("calibration")
        rows = df[df["run_id"] == run_id].to_dict("records")
        for p in combined_points([run_points(rows, calibration)] + [
                run_points(list(more), calibration) for more in (repeats or {}).get(run_id, ())]):
            out.append(dict(p, run_id=run_id, run_index=i))
    cols = ["run_id", "run_index", "series", *SERIES_KEYS, "case_id", "metric", "value",
            "low", "high", "processes", "base_s", "jit_s"]
    return pd.DataFrame(out, columns=cols)


def combined_points(per_process: Sequence[Sequence[Mapping[str, Any]]]
                    ) -> list[dict[str, Any]]:
    """One point per series x metric from the points of one or more fresh processes (the
    first's order): a count (``compiles``) is the first process's, a quantity their
    combination (``jitbench.analysis.processes.combine``), with ``processes``."""
    from jitbench.analysis.processes import combine, geometric_mean

    by_key: dict[tuple[str, str], list[Mapping[str, Any]]] = {}
    for points in per_process:
        for p in points:
            by_key.setdefault((p["series"], p["metric"]), []).append(p)
    out = []
    for (_, metric), ps in by_key.items():
        first = dict(ps[0])
        if METRICS[metric].floor is None or len(ps) == 1 or any(
                not (isinstance(p["value"], float) and p["value"] > 0) for p in ps):
            out.append(dict(first, processes=1))
            continue
        c = combine([p["value"] for p in ps], [p.get("low") for p in ps],
                    [p.get("high") for p in ps])
        out.append(dict(first, value=c["value"], low=c["low"], high=c["high"],
                        processes=c["processes"],
                        base_s=geometric_mean([p.get("base_s") for p in ps]),
                        jit_s=geometric_mean([p.get("jit_s") for p in ps])))
    return out


def benjamini_hochberg(p_values: Sequence[float]) -> list[float]:
    """q-values (BH-adjusted p-values), in the order given."""
    m = len(p_values)
    order = sorted(range(m), key=lambda i: p_values[i])
    q = [1.0] * m
    running = 1.0
    for rank in range(m, 0, -1):  # from the largest p down: q_i = min_{j>=i} p_j m / j
        i = order[rank - 1]
        running = min(running, p_values[i] * m / rank)
        q[i] = running
    return q


def _paired(latest: float, low, high, history: Sequence[float], th: Thresholds,
            processes: Sequence[int] = (), tonight: int = 1, base_move: float = math.nan,
            alt: Sequence[float] | None = None, bounds=None) -> dict[str, Any]:
    """jit_ratio under the paired rule (``jitbench.analysis.detectors.judge_night``). The
    history's sigma floor is one process's (``floor_paired``): nights of k fresh processes
    each (``processes``, the median) have ``detectors.processes_noise(k)`` of it;
    ``tonight``: the processes the latest point combines (one cannot be decisive);
    ``base_move``: its JIT-off time's own move tonight beyond the machine's; ``alt``: the
    log JIT time against the machine on the same nights, tonight last (both
    :func:`tonight_against_history`), judged instead where it is the quieter (then
    ``change`` is that time's); ``bounds``: the history's (lows, highs), whose usual width
    the night's own noise is counted beyond."""
    import numpy as np
    from scipy.stats import norm

    from jitbench.analysis.detectors import judge_night, processes_noise

    def log(v):
        v = _num(v)
        return math.log(v) if v and v > 0 else math.nan

    n = len(history)
    k = float(np.median(processes)) if len(processes) else 1.0
    x = np.log(np.append(np.asarray(history, dtype=float), latest))
    lo, hi = np.full(n + 1, np.nan), np.full(n + 1, np.nan)
    lo[n], hi[n] = log(low), log(high)
    if bounds is not None and len(bounds[0]) == n:
        lo[:n] = [log(v) for v in bounds[0]]
        hi[:n] = [log(v) for v in bounds[1]]
    j = judge_night(n, np.arange(n), x, lo, hi,
                    None if alt is None else np.asarray(alt, dtype=float), th.steady,
                    th.floor_paired * processes_noise(k), th.z_min, tonight, base_move, k)
    now = x[n] if j["quantity"] == "jit_ratio" else float(alt[n])
    return {"reference": math.exp(j["reference"]) if j["quantity"] == "jit_ratio" else
            latest / math.exp(now - j["reference"]),
            "change": math.expm1(now - j["reference"]),
            "noise": j["noise"], "z": j["z"],
            "p_value": float(norm.sf(j["z"])), "counted": True,
            "usual_high": math.exp(j["top"] - now) * latest, "suspect": j["suspect"],
            "near": j["near"],
            "baseline_fell": j["baseline_fell"], "quantity": j["quantity"],
            "group_moved": j["group_moved"],
            "decisive": j["decisive"], "visible_step": j["visible"]}


def tonight_against_history(hist, latest) -> dict[str, dict[str, Any]]:
    """For each series with a ``jit_ratio`` point in ``latest``: ``base_move`` (its JIT-off
    time's move tonight beyond the machine's, ``jitbench.analysis.detectors.baseline_moves``)
    and ``jit_time`` (the log JIT time against the machine, ``detectors.jit_levels``) of each
    of its points in ``hist`` in order, then tonight's. The same functions the replay of a
    corpus uses (``jitbench.nightly.evaluate``), on a [series, night] table of the points'
    ``base_s`` and ``jit_s``, tonight last."""
    import numpy as np

    from jitbench.analysis.detectors import baseline_moves, jit_levels

    if not {"base_s", "jit_s"} <= set(hist.columns) & set(latest.columns):
        return {}
    past = hist[hist["metric"] == "jit_ratio"]
    now = latest[latest["metric"] == "jit_ratio"]
    runs = list(dict.fromkeys(past["run_id"]))
    series = list(dict.fromkeys(now["series"]))
    row = {s: i for i, s in enumerate(series)}
    col = {r: i for i, r in enumerate(runs)}
    base, jit = (np.full((len(series), len(runs) + 1), np.nan) for _ in range(2))

    def lg(v):
        return math.log(v) if isinstance(v, float) and v > 0 else math.nan

    for frame, tonight in ((past, False), (now, True)):
        for p in frame.to_dict("records"):
            if p["series"] in row:
                at = (row[p["series"]], len(runs) if tonight else col[p["run_id"]])
                base[at], jit[at] = lg(p.get("base_s")), lg(p.get("jit_s"))
    moves, alt = baseline_moves(base), jit_levels(jit, base)
    cols = {s: [col[r] for r in g["run_id"]] for s, g in past.groupby("series", sort=False)}
    return {s: {"base_move": float(moves[i, -1]),
                "jit_time": [float(alt[i, c]) for c in cols.get(s, [])] + [float(alt[i, -1])]}
            for s, i in row.items()}


def _count(v) -> int:
    """A point's process count (1 where it does not say)."""
    return int(v) if isinstance(v, (int, float)) and v == v and v >= 1 else 1


def _judge(latest: float, history: Sequence[float], metric: Metric, th: Thresholds
           ) -> dict[str, Any]:
    """One series x metric: reference, change, noise, z, p (one-sided: worse = larger)."""
    import numpy as np
    from scipy.stats import norm

    values = np.asarray(history, dtype=float)[-th.window:]
    if metric.floor is None:  # a count: only a rise over a history that never moved
        reference = float(np.median(values))
        steady = bool(values.min() == values.max())
        worse = steady and latest > values.max()
        return {"reference": reference,
                "change": latest / reference - 1 if reference else None,
                "noise": float(values.max() - values.min()), "z": None,
                "p_value": 0.0 if worse else 1.0, "counted": False}
    logs = np.log(values)
    ref = float(np.median(logs))
    noise = max(robust_sigma(logs, ref), getattr(th, metric.floor))
    z = (math.log(latest) - ref) / noise
    return {"reference": math.exp(ref), "change": latest / math.exp(ref) - 1.0,
            "noise": noise, "z": z, "p_value": float(norm.sf(z)), "counted": True,
            "usual_high": float(np.quantile(values, th.usual))}


def detect_regressions(points, run_order: Sequence[str], thresholds: Thresholds | None = None,
                       latest=None, only: set[tuple[str, str]] | None = None,
                       whole_night: bool = True):
    """Judge the last run of ``run_order`` (or the points ``latest``, e.g. a re-measurement)
    against the runs before it. ``points``: :func:`points_table` of the history; ``only``:
    (series, metric) pairs to judge (a recheck judges its suspects, and the correction then
    counts only them). One row per series x metric (TEST_COLUMNS); ``needs`` = earlier runs
    still missing before it can be judged (then no verdict), ``regression`` = suspect,
    ``near`` = not suspect, but near enough to be re-measured. ``whole_night=False`` (a
    re-measurement of some worker groups): the ratio alone, no JIT time against the machine
    and no baseline check, which need every JIT-off mode of a night to place the machine (a
    recheck measures a few groups, two processes at once: docs/lab/nightly-live-check/index.md).
    """
    import pandas as pd

    th = thresholds or Thresholds()
    paired = th.detector == "paired"
    previous = list(run_order[:-1])[-max(th.window, th.paired_window if paired else 0):]
    if latest is None:
        latest = points[points["run_id"] == run_order[-1]]
    hist = points[points["run_id"].isin(previous)]
    groups = dict(list(hist.groupby(["series", "metric"], sort=False)))
    by_key = {k: g["value"].to_numpy(dtype=float) for k, g in groups.items()}
    counts = ({k: g["processes"].fillna(1).to_numpy(dtype=float) for k, g in groups.items()}
              if "processes" in hist.columns else {})
    bounds = ({k: (g["low"].to_numpy(dtype=float), g["high"].to_numpy(dtype=float))
               for k, g in groups.items()} if {"low", "high"} <= set(hist.columns) else {})
    tonight = tonight_against_history(hist, latest) if paired and whole_night else {}
    out = []
    for p in latest.to_dict("records"):
        key = (p["series"], p["metric"])
        if only is not None and key not in only:
            continue
        values = by_key.get(key, [])
        rec = dict({k: p[k] for k in ["series", *SERIES_KEYS, "case_id", "metric"]},
                   latest=p["value"], low=p.get("low"), high=p.get("high"),
                   decisive=False, visible_step=None, baseline_fell=False,
                   group_moved=False, quantity=p["metric"], near=False, reference=None,
                   change=None,
                   noise=None, z=None,
                   p_value=None, q_value=None, usual_high=None, n_previous=len(values),
                   needs=max(0, th.min_previous - len(values)), advisory=False,
                   regression=False)
        if not rec["needs"] and paired and p["metric"] == "jit_ratio":
            mine = tonight.get(p["series"], {})
            alt = mine.get("jit_time")
            judged = _paired(p["value"], p.get("low"), p.get("high"), values, th,
                             counts.get(key, ()), _count(p.get("processes")),
                             mine.get("base_move", math.nan),
                             alt if alt and len(alt) == len(values) + 1 else None,
                             bounds.get(key))
            rec["counted"] = judged.pop("counted")
            rec.update(judged)
        elif not rec["needs"]:
            judged = _judge(p["value"], values, METRICS[p["metric"]], th)
            rec["counted"] = judged.pop("counted")
            rec.update(judged)
        out.append(rec)
    for decides in (True, False):  # the correction counts the tests that decide together
        family = [r for r in out if r.get("counted") and decides == (
            METRICS[r["metric"]].drift_proof or th.judge_absolute)]
        for r, q in zip(family, benjamini_hochberg([r["p_value"] for r in family])):
            r["q_value"] = q
    for r in out:
        metric = METRICS[r["metric"]]
        if r["needs"]:
            continue
        if metric.floor is None:
            step = r["p_value"] == 0.0
        elif "suspect" in r:
            step = r["suspect"]
        else:
            step = bool(r["q_value"] < th.alpha and r["change"] > getattr(th, metric.step)
                        and r["latest"] > r["usual_high"])
        decides = metric.drift_proof or th.judge_absolute
        r["regression"], r["advisory"] = step and decides, step and not decides
        # short of suspect, near enough to be re-measured (detectors.NEAR_Z)
        r["near"] = bool(r.get("near")) and decides and not r["regression"]
    return pd.DataFrame(out, columns=TEST_COLUMNS)


def hlo_change(df, run_order: Sequence[str], test: Mapping[str, Any], window: int = 10
               ) -> dict[str, Any]:
    """Whether the series of a test row ran another XLA program in the latest run than in the
    reference runs (the ``window`` before it): ``hlo_fingerprint`` (latest),
    ``hlo_reference_fingerprint`` (the last earlier one) and ``hlo_changed`` (None where a
    run has no fingerprint: a JIT-off mode, a run from before fingerprints)."""
    if "hlo_fingerprint" not in df.columns or not run_order:
        return {"hlo_changed": None}
    mine = df
    for k in SERIES_KEYS:
        mine = mine[mine[k] == test.get(k)]
    prints = {r: p for r, p in zip(mine["run_id"], mine["hlo_fingerprint"])
              if isinstance(p, str) and p}
    latest = prints.get(run_order[-1])
    earlier = [prints[r] for r in list(run_order[:-1])[-window:] if r in prints]
    if latest is None or not earlier:
        return {"hlo_changed": None}
    return {"hlo_fingerprint": latest, "hlo_reference_fingerprint": earlier[-1],
            "hlo_changed": latest != earlier[-1]}


def trend(points, run_order: Sequence[str], metric: str = "jit_ratio"):
    """Wide table: one column per series, one row per run (oldest first), values of
    ``metric``; what the history page plots."""
    sub = points[points["metric"] == metric]
    wide = sub.pivot_table(index="run_index", columns="series", values="value",
                           aggfunc="first")
    wide.index = [run_order[i] for i in wide.index]
    return wide


def visibility(tests, threshold: float) -> dict[str, Any] | None:
    """How many JIT series the paired rule polices at ``threshold`` tonight: each judged
    series' ``visible_step`` (the smallest step a night as precise as tonight's shows as
    suspect 95% of the time), counted and summarised in a sentence; None before any is
    judged."""
    import numpy as np

    if tests is None or "visible_step" not in tests:
        return None
    v = tests.loc[tests["metric"] == "jit_ratio", "visible_step"].dropna().to_numpy(float)
    if not v.size:
        return None
    k = int((v <= threshold).sum())
    return {"threshold": threshold, "n_series": int(v.size), "n_visible": k,
            "median": float(np.median(v)),
            "text": (f"{k} of {v.size} series see a {100 * threshold:g}% step tonight (the "
                     f"median series sees {100 * float(np.median(v)):.0f}%)")}
