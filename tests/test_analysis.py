"""jitbench.analysis on synthetic DataFrames with known answers."""

from __future__ import annotations

import math

import numpy as np
import pytest

from jitbench import analysis as A
from jitbench.results.files import to_frame

pytestmark = pytest.mark.unit  # no child process, no framework import


def make_row(mode, *, framework="jax", samples=None, first=None, early=(), status="ok",
             workload="w", variant="v", size="s", dtype="float32", device="cpu", run_id="r",
             flops=1e6, **extra):
    s = list(samples) if samples is not None else None
    med = float(np.median(s)) if s else None
    row = dict(run_id=run_id, case_id=f"{workload}-{variant}-{framework}-{mode}-{size}",
               workload=workload, variant=variant, size=size, params={}, dtype=dtype,
               framework=framework, mode=mode, jit=mode in ("jit", "xla", "autoclustering"),
               device=device, status=status, samples=s, median_s=med,
               first_call_s=first if first is not None else (10 * med if med else None),
               early_calls_s=list(early), n_samples=len(s) if s else None, flops=flops,
               iqr_s=(float(np.subtract(*np.percentile(s, [75, 25]))) if s else None),
               cpu_steal_pct=0.0, settled=True, steady_state_compiles=False)
    row["interleaved_with"] = [m for m in ("eager", "jit") if m != mode]
    row.update(extra)
    return row


def lognormal(rng, median, sigma, n):
    return median * np.exp(rng.normal(0.0, sigma, n))


def pair(rng, t_off, t_on, sigma=0.03, n=60, **kw):
    return [make_row("eager", samples=lognormal(rng, t_off, sigma, n), **kw),
            make_row("jit", samples=lognormal(rng, t_on, sigma, n), **kw)]


# --------------------------------------------------------------------------- speedup + CI

def test_speedup_is_off_median_over_on_median_with_an_interval_around_it():
    rng = np.random.default_rng(1)
    df = to_frame(pair(rng, 2e-3, 1e-3))
    sp = A.speedups(df)
    assert len(sp) == 1
    r = sp.iloc[0]
    off = np.median(df[df["mode"] == "eager"]["samples"].iloc[0])
    on = np.median(df[df["mode"] == "jit"]["samples"].iloc[0])
    assert r["speedup"] == pytest.approx(off / on, rel=1e-12)
    assert r["ci_low"] < r["speedup"] < r["ci_high"]
    assert 1.8 < r["ci_low"] and r["ci_high"] < 2.2
    assert r["significant"] and r["verdict"] == "faster"
    assert (r["mode"], r["baseline"], bool(r["nearest"])) == ("jit", "eager", True)
    assert r["interleaved"]


def test_interval_covers_the_true_ratio_about_95_percent_of_the_time():
    rng = np.random.default_rng(7)
    true_ratio, hits, trials = 1.5, 0, 300
    for seed in range(trials):
        off = lognormal(rng, 1.5e-3, 0.2, 40)  # population medians 1.5 ms and 1 ms
        on = lognormal(rng, 1.0e-3, 0.2, 40)
        lo, hi = A.bootstrap_ratio_ci(off, on, n_boot=600, seed=seed)
        hits += lo <= true_ratio <= hi
    assert 0.90 <= hits / trials <= 0.99, hits / trials


def test_no_interval_without_samples():
    assert all(math.isnan(x) for x in A.bootstrap_ratio_ci([1.0], [1.0, 2.0]))
    df = to_frame([make_row("eager", samples=[2e-3]), make_row("jit", samples=[1e-3])])
    r = A.speedups(df).iloc[0]
    assert r["speedup"] == pytest.approx(2.0)
    assert not r["significant"] and r["verdict"] == "no difference"


def test_a_change_inside_the_noise_floor_is_never_significant():
    rng = np.random.default_rng(3)
    tiny = A.speedups(to_frame(pair(rng, 1.01e-3, 1e-3, sigma=1e-4)), noise_floor=0.02)
    assert tiny.iloc[0]["ci_low"] > 1.0  # the interval alone would call it
    assert not tiny.iloc[0]["significant"]
    assert tiny.iloc[0]["verdict"] == "no difference"
    assert math.isnan(tiny.iloc[0]["break_even_calls"])  # "unclear", not a number
    clear = A.speedups(to_frame(pair(rng, 1.05e-3, 1e-3, sigma=1e-4)))
    assert clear.iloc[0]["significant"]
    slower = A.speedups(to_frame(pair(rng, 1e-3, 1.05e-3, sigma=1e-4))).iloc[0]
    assert slower["verdict"] == "slower" and slower["break_even_calls"] == math.inf


def test_a_wrong_answer_is_never_a_speedup():
    rng = np.random.default_rng(4)
    rows = pair(rng, 2e-3, 1e-3)
    rows[1]["status"] = "mismatch"
    assert A.speedups(to_frame(rows)).empty


def test_tf_pairs_each_jit_mode_with_each_baseline():
    rng = np.random.default_rng(5)
    rows = [make_row(m, framework="tf", samples=lognormal(rng, t, 0.02, 30))
            for m, t in (("eager", 3e-3), ("graph", 2e-3), ("xla", 1e-3))]
    sp = A.speedups(to_frame(rows))
    got = {(r["mode"], r["baseline"]): r for r in sp.to_dict("records")}
    assert set(got) == {("xla", "eager"), ("xla", "graph")}
    assert got[("xla", "graph")]["nearest"] and not got[("xla", "eager")]["nearest"]
    assert got[("xla", "eager")]["speedup"] == pytest.approx(3.0, rel=0.05)


def test_every_pair_the_worker_judged_in_blocks_takes_its_interval_from_them():
    """The nearest pair's verdict and the other JIT-off modes' ``pair_verdicts`` (judged from
    the same blocks): both intervals are the worker's; a pair without one is bootstrapped."""
    rng = np.random.default_rng(6)
    xla = make_row("xla", framework="tf", samples=lognormal(rng, 1e-3, 0.02, 30),
                   verdict="faster", verdict_baseline="graph", verdict_speedup=2.01,
                   verdict_ci_low=1.9, verdict_ci_high=2.1,
                   pair_verdicts={"eager": {"verdict": "faster", "speedup": 2.97,
                                            "ci_low": 2.8, "ci_high": 3.1, "blocks": 12}})
    rows = [make_row(m, framework="tf", samples=lognormal(rng, t, 0.02, 30))
            for m, t in (("eager", 3e-3), ("graph", 2e-3))] + [xla]
    got = {r["baseline"]: r for r in A.speedups(to_frame(rows)).to_dict("records")}
    assert {b: got[b]["interval_from"] for b in got} == {"graph": "blocks", "eager": "blocks"}
    assert (got["eager"]["speedup"], got["eager"]["ci_low"], got["eager"]["verdict"]) == (
        2.97, 2.8, "faster")
    xla["pair_verdicts"] = {"eager": {"verdict": "unresolved", "speedup": None}}
    got = {r["baseline"]: r for r in A.speedups(to_frame(rows)).to_dict("records")}
    assert got["eager"]["interval_from"] == "samples"  # no interval from blocks: bootstrap


# --------------------------------------------------------------------------- break-even

def test_amortized_cost_counts_the_first_call_the_early_calls_and_the_median():
    got = A.amortized_cost(1.0, [0.5, 0.1], 0.01, [1, 2, 3, 4, 10])
    np.testing.assert_allclose(got, [1.0, 1.5, 1.6, 1.61, 1.67])


def test_break_even_known_answer():
    # JIT: 1 s first call then 1 ms; baseline: no first-call cost, 11 ms per call.
    # extra compile cost 0.999 s / 10 ms saved per call -> JIT ahead from call 100 on
    on = dict(first_call_s=1.0, median_s=0.001)
    off = dict(first_call_s=0.011, median_s=0.011)
    n = A.break_even_calls(on, off)
    assert n == 100
    assert A.amortized_cost(1.0, [], 0.001, 100) <= A.amortized_cost(0.011, [], 0.011, 100)
    assert A.amortized_cost(1.0, [], 0.001, 99) > A.amortized_cost(0.011, [], 0.011, 99)


def test_break_even_counts_the_baselines_own_first_call_and_early_calls():
    # the baseline's first call costs more than JIT's: JIT is never behind
    assert A.break_even_calls(dict(first_call_s=0.05, median_s=1e-3),
                              dict(first_call_s=0.2, median_s=2e-3)) == 1
    # JIT's call 2 is slow (a recompile): behind until it catches up after it
    on = dict(first_call_s=0.01, early_calls_s=[0.5, 1e-3, 1e-3, 1e-3], median_s=1e-3)
    off = dict(first_call_s=0.01, early_calls_s=[2e-3] * 4, median_s=2e-3)
    n = A.break_even_calls(on, off)
    def totals(k):
        return (A.amortized_cost(0.01, on["early_calls_s"], 1e-3, k),
                A.amortized_cost(0.01, off["early_calls_s"], 2e-3, k))

    assert totals(n)[0] <= totals(n)[1] and totals(n - 1)[0] > totals(n - 1)[1]
    assert all(totals(k)[0] <= totals(k)[1] for k in range(int(n), int(n) + 500, 7))


def test_break_even_is_never_when_jit_is_not_faster_and_nan_when_unknown():
    assert A.break_even_calls(dict(first_call_s=1, median_s=2e-3),
                              dict(first_call_s=0, median_s=1e-3)) == math.inf
    assert math.isnan(A.break_even_calls(dict(first_call_s=None, median_s=1e-3),
                                         dict(first_call_s=1.0, median_s=2e-3)))


def test_speedups_carry_break_even_and_compile_cost():
    rng = np.random.default_rng(6)
    off = make_row("eager", samples=lognormal(rng, 11e-3, 0.01, 50), first=0.011)
    on = make_row("jit", samples=lognormal(rng, 1e-3, 0.01, 50), first=1.0)
    r = A.speedups(to_frame([off, on])).iloc[0]
    expected = A.break_even_calls(on, off)
    assert r["break_even_calls"] == expected and 90 <= expected <= 110
    assert r["compile_cost_s"] == pytest.approx(1.0 - on["median_s"])


def test_amortized_curves_cross_at_the_break_even_point():
    rng = np.random.default_rng(8)
    off = make_row("eager", samples=lognormal(rng, 11e-3, 0.01, 50), first=0.011)
    on = make_row("jit", samples=lognormal(rng, 1e-3, 0.01, 50), first=1.0)
    df = to_frame([off, on])
    sp = A.speedups(df)
    be = int(sp.iloc[0]["break_even_calls"])
    cur = A.amortized_curves(df, sp, n_calls=[1, be - 1, be, 10_000])
    wide = cur.pivot(index="n_calls", columns="mode", values="total_s")
    assert wide.loc[be - 1, "jit"] > wide.loc[be - 1, "eager"]
    assert wide.loc[be, "jit"] <= wide.loc[be, "eager"]
    assert set(cur["mode"]) == {"eager", "jit"} and cur["per_call_s"].gt(0).all()


# --------------------------------------------------------------------------- geomean

def test_geomean_over_passing_cases_with_excluded_and_skipped_counted():
    rng = np.random.default_rng(9)
    rows = []
    for size, ratio in (("a", 2.0), ("b", 8.0), ("c", 0.5)):
        rows += pair(rng, ratio * 1e-3, 1e-3, sigma=0.01, size=size)
    bad = pair(rng, 100e-3, 1e-3, sigma=0.01, size="d")  # would dominate the geomean
    bad[1]["status"] = "mismatch"
    rows += bad
    rows += [make_row("eager", status="skipped", size="e"),
             make_row("jit", status="skipped", size="e")]
    df = to_frame(rows)
    gm = A.geomean_speedups(A.speedups(df), df)
    assert len(gm) == 1
    g = gm.iloc[0]
    assert g["geomean"] == pytest.approx(2.0, rel=0.03)  # (2 * 8 * 0.5) ** (1/3)
    assert (g["n_included"], g["n_excluded"], g["n_skipped"]) == (3, 1, 1)
    assert (g["n_faster"], g["n_slower"], g["n_same"]) == (2, 1, 0)
    assert g["min_speedup"] == pytest.approx(0.5, rel=0.03)


# --------------------------------------------------------------------------- crossover

def sized(rng, speedups, sigma=0.005):
    rows = []
    for size, (flops, ratio) in speedups.items():
        rows += pair(rng, ratio * 1e-3, 1e-3, sigma=sigma, size=size, flops=flops)
    return to_frame(rows)


def test_crossover_orders_sizes_by_work_not_by_label():
    rng = np.random.default_rng(10)
    # lexical order of the labels ("1024" < "256" < "512" < "64") is not the size order
    df = sized(rng, {"64": (1e5, 0.5), "256": (1e7, 0.8), "512": (1e8, 1.5),
                     "1024": (1e9, 3.0)})
    order = A.size_order(df)
    assert list(order["size"]) == ["64", "256", "512", "1024"]
    c = A.crossovers(A.speedups(df), order).iloc[0]
    assert c["crossover"] and c["n_crossings"] == 1
    assert (c["below_size"], c["above_size"]) == ("256", "512")
    assert c["direction"] == "JIT wins above"
    # log-log interpolation between (1e7, 0.8) and (1e8, 1.5)
    t = math.log(0.8) / (math.log(0.8) - math.log(1.5))
    assert c["crossover_work"] == pytest.approx(1e7 * 10 ** t, rel=0.05)
    assert "between 256 and 512" in c["summary"]


def test_no_crossover_when_jit_wins_everywhere_and_none_through_noise():
    rng = np.random.default_rng(11)
    always = A.crossovers(A.speedups(sized(rng, {"x": (1e5, 2.0), "y": (1e6, 3.0)})))
    assert not always.iloc[0]["crossover"]
    assert always.iloc[0]["summary"] == "JIT faster at every size measured"
    # a size with no significant difference between a win and a loss: one crossing, and
    # it is placed between the two significant sizes
    df = sized(rng, {"x": (1e5, 0.5), "y": (1e6, 1.0), "z": (1e7, 2.0)})
    c = A.crossovers(A.speedups(df), A.size_order(df)).iloc[0]
    assert c["signs"] == [-1, 0, 1]
    assert (c["below_size"], c["above_size"]) == ("x", "z")
    one = A.crossovers(A.speedups(sized(rng, {"x": (1e5, 2.0)}))).iloc[0]
    assert one["summary"].startswith("one size measured")


def test_size_order_falls_back_to_params_without_flops():
    df = to_frame([make_row("eager", samples=[1e-3, 1e-3], size=s, flops=None,
                            params={"n": n, "d": 8})
                   for s, n in (("n512", 512), ("n64", 64))])
    assert list(A.size_order(df)["size"]) == ["n64", "n512"]


# --------------------------------------------------------------------------- noise

def test_noise_verdict_from_spread_steal_and_sample_count():
    rng = np.random.default_rng(12)
    quiet = make_row("eager", samples=lognormal(rng, 1e-3, 0.01, 100))
    assert A.noise_verdict(quiet)[0] == "quiet"
    spread = make_row("eager", samples=lognormal(rng, 1e-3, 0.5, 100))
    level, why = A.noise_verdict(spread)
    assert level == "noisy" and "IQR" in why
    stolen = make_row("eager", samples=lognormal(rng, 1e-3, 0.01, 100), cpu_steal_pct=8.0)
    level, why = A.noise_verdict(stolen)
    assert level == "noisy" and "steal 8.0%" in why
    few = make_row("eager", samples=lognormal(rng, 1e-3, 0.01, 5))
    assert A.noise_verdict(few) == ("some noise", A.noise_verdict(few)[1])
    assert "only 5 samples" in A.noise_verdict(few)[1]
    assert A.noise_verdict(make_row("eager", status="crashed"))[0] == "n/a"


# --------------------------------------------------------------------------- calibration

CAL = {
    "peak": [
        {"source": "numpy", "framework": None, "mode": None, "device": "cpu", "gflops": 100.0,
         "status": "ok"},
        {"source": "jax", "framework": "jax", "mode": "jit", "device": "cpu", "gflops": 150.0,
         "status": "ok"},
        {"source": "tf", "framework": "tf", "mode": "xla", "device": "cpu", "gflops": None,
         "status": "crashed", "error": "worker died"},
    ],
    "dispatch": [
        {"framework": "jax", "mode": "jit", "device": "cpu", "floor_s": 5e-6, "status": "ok"},
        {"framework": "jax", "mode": "eager", "device": "cpu", "floor_s": 1e-5,
         "status": "ok"},
    ],
}


def test_peak_is_the_best_of_numpy_and_the_frameworks():
    p = A.peak_gflops(CAL)
    assert p.to_dict("records") == [{"device": "cpu", "peak_gflops": 150.0,
                                     "peak_source": "jax jit"}]
    assert A.peak_gflops(None).empty


def test_fraction_of_peak_and_dispatch_floor_per_row():
    df = to_frame([make_row("jit", samples=[0.01] * 5, flops=1e9, gflops=100.0),
                   make_row("eager", samples=[8e-6] * 5, flops=1e3, gflops=None)])
    eff = A.efficiency(df, CAL)
    jit, eager = eff.iloc[0], eff.iloc[1]
    assert jit["fraction_of_peak"] == pytest.approx(100 / 150)
    assert jit["floor_share"] == pytest.approx(5e-6 / 0.01) and not jit["dispatch_bound"]
    assert eager["gflops"] == pytest.approx(1e3 / 8e-6 / 1e9)  # from flops when missing
    assert eager["floor_share"] == pytest.approx(1e-5 / 8e-6) and eager["dispatch_bound"]
    facts = A.row_facts(df, CAL)
    assert list(facts.index) == list(df.index)
    assert facts["compile_cost_s"].iloc[0] == pytest.approx(0.1 - 0.01)
    assert A.efficiency(df, None)["fraction_of_peak"].isna().all()


# --------------------------------------------------------------------------- summary

def test_summary_pass_rate_leaves_skips_out():
    rng = np.random.default_rng(13)
    rows = pair(rng, 2e-3, 1e-3) + [make_row("jit", status="compile_error", size="t"),
                                    make_row("jit", status="skipped", size="u")]
    df = to_frame(rows)
    s = A.headline_numbers(df, A.speedups(df))
    assert (s["n_ok"], s["n_measured"], s["n_skipped"], s["n_failed"]) == (2, 3, 1, 1)
    assert s["pass_rate"] == pytest.approx(2 / 3)
    assert s["median_break_even"] >= 1 and s["n_pairs"] == 1


@pytest.mark.parametrize("n", [2, 3, 10, 11, 200, 1001])  # 1001: in several batches
def test_resampled_medians_equal_numpys_medians_of_the_same_draws(n):
    from jitbench.analysis.stats import _resampled_medians

    x = np.random.default_rng(n).lognormal(size=n)
    x[::3] = x[0]  # ties
    expect = np.median(x[np.random.default_rng(7).integers(0, n, size=(300, n))], axis=1)
    assert np.array_equal(_resampled_medians(x, np.random.default_rng(7), 300), expect)


def test_summary_counts_the_nearest_pairs_verdicts_the_aa_controls_and_time_per_group():
    rng = np.random.default_rng(14)
    rows = []
    for size, (verdict, lo, hi), start in [("s", ("faster", 1.8, 2.2), 100.0),
                                           ("t", ("unresolved", 0.9, 1.2), 110.0)]:
        off, on = pair(rng, 2e-3, 1e-3, size=size)
        off.update(aa_verdict="same" if size == "s" else "unresolved", started_at=start,
                   finished_at=start + 1.0)
        on.update(verdict=verdict, verdict_baseline="eager", verdict_speedup=(lo + hi) / 2,
                  verdict_ci_low=lo, verdict_ci_high=hi, started_at=start,
                  finished_at=start + (3.0 if size == "s" else 5.0))
        rows += [off, on]
    df = to_frame(rows)
    s = A.headline_numbers(df, A.speedups(df))
    assert s["verdict_counts"] == {"faster": 1, "unresolved": 1}
    assert s["aa_verdict_counts"] == {"same": 1, "unresolved": 1}
    assert (s["n_groups"], s["group_s_median"], s["group_s_total"]) == (2, 4.0, 8.0)
