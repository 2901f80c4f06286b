"""The roofline: the bandwidth calibration's summary, the ceilings, each row's intensity and
% of bound, XLA's FLOPs against the formula, and the report section that shows them."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from jitbench.analysis import ceilings, flops_check, roofline, row_facts
from jitbench.results.files import to_frame
from jitbench.run import calibration
from jitbench.run.calibration import bandwidth

pytestmark = pytest.mark.unit  # no child process, no framework import

N = bandwidth.N


def _cal():
    rows = [
        {"workload": "calibration_peak_matmul", "framework": "jax", "mode": "jit",
         "device": "cpu", "status": "ok", "min_s": 0.02, "median_s": 0.025, "flops": 2e9},
        # the triad: 12 bytes per element, the fastest call 10 ms -> 10.07 GB/s
        {"workload": "calibration_bandwidth", "framework": "jax", "mode": "jit",
         "device": "cpu", "status": "ok", "min_s": 0.01, "median_s": 0.012,
         "params": {"n": N}},
        {"workload": "calibration_bandwidth", "framework": "jax", "mode": "eager",
         "device": "cpu", "status": "ok", "min_s": 0.02, "median_s": 0.021,
         "params": {"n": N}},
        {"workload": "calibration_bandwidth", "framework": "tf", "mode": "xla",
         "device": "cpu", "status": "crashed", "error": "died", "params": {"n": N}},
    ]
    return calibration.summarize(rows, None, elapsed_s=1.0)


def test_bandwidth_summary_counts_stream_bytes_over_the_fastest_call():
    cal = _cal()
    bw = {(e["framework"], e["mode"]): e for e in cal["bandwidth"]}
    assert bw[("jax", "jit")]["bytes"] == 12.0 * N
    assert bw[("jax", "jit")]["gbps"] == pytest.approx(12.0 * N / 0.01 / 1e9)
    assert bw[("jax", "jit")]["gbps_median"] == pytest.approx(12.0 * N / 0.012 / 1e9)
    assert bw[("tf", "xla")]["gbps"] is None and bw[("tf", "xla")]["status"] == "crashed"
    c = ceilings(cal).iloc[0]
    assert c["peak_gflops"] == pytest.approx(100.0)  # 2 GFLOP in 20 ms
    assert c["bandwidth_gbps"] == pytest.approx(12.0 * N / 0.01 / 1e9)  # the best mode
    assert c["bandwidth_source"] == "jax jit"
    assert c["ridge"] == pytest.approx(c["peak_gflops"] / c["bandwidth_gbps"])


def _rows():
    base = {"variant": "default", "size": "s", "dtype": "float32", "device": "cpu",
            "status": "ok", "run_id": "r", "params": {}, "source": ""}
    return to_frame(_full(r) for r in [
        # memory-bound: 1 GFLOP over 1 GB -> 1 FLOP/byte, 10 GB/s -> bound 10 GFLOP/s
        dict(base, workload="w", framework="jax", mode="jit", jit=True, flops=1e9,
             median_s=0.2, xla_flops=1.3e9, xla_bytes_accessed=1e9, xla_transcendentals=0.0,
             xla_flops_ratio=1.3),
        dict(base, workload="w", framework="jax", mode="eager", jit=False, flops=1e9,
             median_s=0.4),
        dict(base, workload="w", framework="tf", mode="xla", jit=True, flops=1e9,
             median_s=0.25),
        # compute-bound: 1 GFLOP over 1 MB
        dict(base, workload="v", framework="jax", mode="jit", jit=True, flops=1e9,
             median_s=0.02, xla_flops=1e9, xla_bytes_accessed=1e6, xla_flops_ratio=1.0),
        # no bytes anywhere for this case: no intensity, no bound
        dict(base, workload="u", framework="tf", mode="graph", jit=False, flops=1e9,
             median_s=0.02),
    ])


def _full(r):
    """A row as the worker writes it, around the fields under test."""
    m = r["median_s"]
    return dict(r, case_id=f"{r['workload']}-{r['framework']}-{r['mode']}", samples=[m] * 5,
                n_samples=5, first_call_s=3 * m, min_s=m, iqr_s=0.0,
                gflops=r["flops"] / m / 1e9, max_rel_err=0.0, rtol=1e-5)


def test_each_mode_of_a_case_sits_at_its_programs_intensity_under_the_right_ceiling():
    cal = _cal()
    bw = ceilings(cal).iloc[0]["bandwidth_gbps"]
    roof = roofline(_rows(), cal)
    assert list(roof["intensity"][:3]) == [1.0, 1.0, 1.0]  # borrowed from the JAX jit row
    assert list(roof["intensity_source"][:3]) == ["own", "jax jit", "jax jit"]
    # w's XLA FLOPs are 1.3x the formula's: its bytes (so every mode's intensity) are doubtful
    assert list(roof["intensity_doubtful"][:4]) == [True, True, True, False]
    assert roof["bound"][0] == "memory" and roof["bound_gflops"][0] == pytest.approx(bw)
    assert roof["fraction_of_bound"][0] == pytest.approx(5.0 / bw)  # 1 GFLOP in 0.2 s
    assert roof["bound"][3] == "compute" and roof["bound_gflops"][3] == pytest.approx(100.0)
    assert roof["fraction_of_bound"][3] == pytest.approx(0.5)
    assert math.isnan(roof["intensity"][4]) and pd.isna(roof["bound"][4])
    facts = row_facts(_rows(), cal)  # the workloads table reads it from here
    assert facts["fraction_of_bound"][3] == pytest.approx(0.5)


def test_without_a_bandwidth_calibration_there_is_no_bound():
    roof = roofline(_rows(), None)
    assert roof["intensity"][0] == 1.0 and pd.isna(roof["bound"][0])
    assert roof["fraction_of_bound"].isna().all()


def test_flops_check_flags_xla_counts_more_than_ten_percent_off():
    checks = flops_check(_rows())
    assert list(zip(checks["workload"], checks["mismatch"])) == [("w", True), ("v", False)]
    assert checks["xla_flops_ratio"][0] == pytest.approx(1.3)


def test_the_report_shows_the_roofline_the_flop_check_and_the_files(tmp_path):
    from jitbench.report.html import render

    df = _rows()
    df["hlo_programs"] = [1, None, 1, 1, None]
    df["hlo_fingerprint"] = ["0123456789abcdef", None, "fedcba9876543210", "1111222233334444",
                             None]
    df["xla_flops_mismatch"] = [True, None, None, False, None]
    df["hlo_files"] = [["cases/w-jit/hlo-0-f.txt", "cases/w-jit/hlo-0-f.svg"], None, None, None,
                       None]
    df["hlo_note"] = [None, "op-by-op: no XLA program", None, None, "graph: none"]
    meta = {"run_id": "r", "calibration": _cal(), "run_dir": str(tmp_path / "results" / "r"),
            "report_dir": str(tmp_path / "reports" / "r")}
    html = render(df, meta, n_boot=50, workers=1)
    assert "Inside the compiled program" in html
    assert 'alt="w: roofline"' in html and 'alt="v: roofline"' in html
    assert "0123456789abcdef" in html and "1 of 2 rows differ by more than 10%" in html
    assert 'href="../../results/r/cases/w-jit/hlo-0-f.txt"' in html
    assert "op-by-op: no XLA program" in html
