"""A night in several fresh processes (jitbench.analysis.processes, jitbench.nightly.repeats)
and a re-measurement that adds processes until a suspect's verdict is known: the arithmetic,
the plan and the verdicts, in-process. End to end: tests/test_nightly.py (a night's repeats
under <night>/repeats, read back by the history)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from jitbench.analysis import processes
from jitbench.analysis.detectors import PAIRED_FLOOR
from jitbench.analysis.history import (SERIES_KEYS, Thresholds, combined_points,
                                       detect_regressions)
from jitbench.nightly import evaluate, repeats
from jitbench.nightly.recheck import recheck_verdict

pytestmark = pytest.mark.unit


def test_one_process_is_its_own_point():
    assert processes.combine([1.2], [1.1], [1.3]) == {"value": 1.2, "low": 1.1, "high": 1.3,
                                                      "processes": 1, "spread": None}


def test_processes_combine_by_geometric_mean_and_their_spread_sets_the_interval():
    c = processes.combine([1.0, 1.21], [0.99, 1.2], [1.01, 1.22])
    assert c["value"] == pytest.approx(1.1) and c["processes"] == 2
    spread = math.log(1.21) / math.sqrt(2)  # sd of two logs 0 and log 1.21
    assert c["spread"] == pytest.approx(spread)
    sigma = spread / math.sqrt(2)  # the spread beats the processes' own narrow intervals
    assert c["high"] == pytest.approx(1.1 * math.exp(1.959964 * sigma))
    # processes that agree do not make a night more precise than its samples
    agree = processes.combine([1.0, 1.0], [0.9, 0.9], [1 / 0.9, 1 / 0.9])
    own = math.log(1 / 0.9) * 2 / (2 * 1.959964)
    assert agree["high"] == pytest.approx(math.exp(1.959964 * own / math.sqrt(2)))


@settings(max_examples=60, deadline=None)
@given(st.lists(st.floats(0.05, 20), min_size=1, max_size=6))
def test_a_combined_point_lies_between_its_processes_and_inside_its_interval(values):
    c = processes.combine(values)
    assert min(values) * (1 - 1e-9) <= c["value"] <= max(values) * (1 + 1e-9)
    if len(values) > 1:
        assert c["low"] <= c["value"] <= c["high"]


def test_a_noisier_series_needs_more_processes_up_to_the_cap():
    th = Thresholds()
    quiet = processes.processes_needed(0.005, 0.005, th.steady, th.z_min, 4)
    noisy = processes.processes_needed(0.04, 0.015, th.steady, th.z_min, 4)
    assert quiet == 1 and noisy == 4
    # two processes leave sqrt(0.75) of one's spread (half of its variance stays): four needed
    assert processes.processes_needed(0.025, 0.01, th.steady, th.z_min, 9) == 4
    # a history of nights of 4 processes each scatters sqrt(0.625) of what one process would
    assert processes.single_process_sigma([0.0, 0.01, -0.01, 0.02, -0.02], [4] * 5, 0.001) \
        == pytest.approx(processes.single_process_sigma([0.0, 0.01, -0.01, 0.02, -0.02],
                                                        [1] * 5, 0.001) / math.sqrt(0.625))


def _points(values_by_night: dict[str, list[float]], night_width: float = 1.03):
    """A points table: series name -> its ratio per night (n0, n1, ...)."""
    rows = []
    for series, values in values_by_night.items():
        for i, v in enumerate(values):
            rows.append({"run_id": f"n{i}", "run_index": i, "series": series,
                         **{k: series for k in SERIES_KEYS}, "case_id": series,
                         "metric": "jit_ratio", "value": v, "low": v / night_width,
                         "high": v * night_width, "processes": 1})
    return pd.DataFrame(rows)


def test_the_plan_gives_a_scattered_series_more_processes_and_a_short_one_none():
    rng = np.random.default_rng(1)
    pts = _points({"quiet": list(1.0 * np.exp(rng.normal(0, 0.003, 12))),
                   "scattered": list(0.5 * np.exp(rng.normal(0, 0.1, 12))),
                   "young": [0.7] * 12})
    pts = pts[~((pts["series"] == "young") & (pts["run_index"] < 9))]  # nights 9-11 only
    plan = repeats.plan(pts, [f"n{i}" for i in range(12)], Thresholds(
        floor_paired=0.002), max_processes=3)
    assert plan["scattered"]["processes"] == 3 and plan["quiet"]["processes"] == 1
    assert "young" not in plan  # 2 earlier nights: not judged yet, nothing to repeat for
    assert plan["scattered"]["sigma_one"] > 5 * plan["quiet"]["sigma_one"]


def test_the_plan_counts_tonights_interval_beyond_the_usual_width_as_the_rule_does():
    """Nights that each have a wide interval (+-8%) but scatter 0.3% between them: the rule
    sees a 10% step there (tonight's interval is as wide as usual), so the plan adds no
    process for it."""
    rng = np.random.default_rng(2)
    pts = _points({"wide": list(1.0 * np.exp(rng.normal(0, 0.003, 12)))}, night_width=1.08)
    plan = repeats.plan(pts, [f"n{i}" for i in range(12)], Thresholds(floor_paired=0.002),
                        max_processes=3)
    assert plan["wide"]["processes"] == 1
    assert plan["wide"]["night_sigma"] == pytest.approx(0.0, abs=1e-3)


def test_combined_points_keep_a_count_and_combine_a_ratio():
    def pt(metric, value):
        return {"series": "s", "metric": metric, "value": value, "low": None, "high": None,
                "case_id": "c"}

    out = {p["metric"]: p for p in combined_points([[pt("jit_ratio", 1.0), pt("compiles", 1.0)],
                                                    [pt("jit_ratio", 1.44), pt("compiles", 2.0)]])}
    assert out["jit_ratio"]["value"] == pytest.approx(1.2) and out["jit_ratio"]["processes"] == 2
    assert out["compiles"]["value"] == 1.0 and out["compiles"]["processes"] == 1


def test_nights_of_several_processes_lower_the_rules_floor():
    """The paired rule's floor is one process's sigma: a series whose nights of 4 processes
    each agree within 0.5% is judged against sqrt(0.625) of it (half the variance stays,
    ``detectors.processes_noise``), so a 6% step that one process a night leaves under z 4
    (6% / 1.5%) clears it."""
    flat = [1.0, 1.003, 0.997, 1.002, 0.998, 1.001, 0.999, 1.0, 1.002, 0.998, 1.0]
    pts = _points({"s": flat + [1.06]}, night_width=1.005)
    order = [f"n{i}" for i in range(12)]
    th = Thresholds(z_min=4.0)
    one = detect_regressions(pts, order, th).iloc[0]
    four = detect_regressions(pts.assign(processes=4), order, th).iloc[0]
    assert not one["regression"] and four["regression"]
    assert one["noise"] == pytest.approx(th.floor_paired)
    assert four["noise"] == pytest.approx(th.floor_paired * math.sqrt(0.625))


def test_the_live_rule_counts_tonights_interval_beyond_the_historys_usual_width():
    """As the replay does (``detectors.judge_night``): nights whose own intervals are +-8%
    but scatter 0.5% show a 10% step tonight (its interval as wide as theirs), and the
    step's noise is the history's spread alone."""
    flat = [1.0, 1.003, 0.997, 1.002, 0.998, 1.001, 0.999, 1.0, 1.002, 0.998, 1.0]
    pts = _points({"s": flat + [1.10]}, night_width=1.08)
    row = detect_regressions(pts, [f"n{i}" for i in range(12)], Thresholds()).iloc[0]
    assert row["regression"] and row["noise"] == pytest.approx(Thresholds().floor_paired)


def test_a_night_near_a_step_is_re_measured_and_two_processes_judge_it_with_less_noise():
    """Live, as in the replay: tonight at z 2.7 is ``near`` (re-measured, not a suspect); the
    same reading from a re-measurement of two fresh processes has sqrt(0.75) of the one-process
    history's sigma (``detectors.processes_noise``) and is a suspect."""
    from jitbench.protocol.timing import robust_sigma

    spread = np.exp(np.random.default_rng(2).permutation(np.linspace(-0.04, 0.04, 11)))
    th = Thresholds()
    sigma = robust_sigma(np.log(spread))
    tonight = float(np.median(spread)) * math.exp(2.7 * sigma)
    pts = _points({"s": [*spread, tonight]}, night_width=1.01)
    order = [f"n{i}" for i in range(12)]
    row = detect_regressions(pts, order, th).iloc[0]
    assert row["near"] and not row["regression"] and 2 < row["z"] < 3
    again = pts[pts["run_id"] == "n11"].assign(processes=2)
    rechecked = detect_regressions(pts, order, th, latest=again).iloc[0]
    assert rechecked["regression"] and not rechecked["near"]
    assert rechecked["noise"] == pytest.approx(row["noise"] * math.sqrt(0.75))


def test_a_re_measurement_is_judged_on_its_ratio_alone():
    """A night judges a series on its JIT time against the machine where that is the quieter;
    a re-measurement of some worker groups cannot place the machine (too few JIT-off modes,
    two processes at once), so it is judged on the ratio."""
    rng = np.random.default_rng(4)
    ratios = list(0.5 * np.exp(rng.normal(0, 0.05, 12)))  # a noisy ratio
    pts = _points({"s": ratios})
    jit = 0.01 * np.exp(rng.normal(0, 0.005, 12))  # a quiet JIT time, its baseline the noise
    pts["jit_s"], pts["base_s"] = jit, jit / np.array(ratios)
    order = [f"n{i}" for i in range(12)]
    assert detect_regressions(pts, order, Thresholds()).iloc[0]["quantity"] == "jit_time"
    again = detect_regressions(pts, order, Thresholds(), latest=pts[pts["run_id"] == "n11"],
                               whole_night=False).iloc[0]
    assert again["quantity"] == "jit_ratio"


def test_a_recheck_says_slower_same_faster_or_unresolved():
    th = Thresholds()
    base = {"metric": "jit_ratio", "reference": 1.0, "regression": False}
    assert recheck_verdict(dict(base, regression=True, high=1.3), th) == "slower"
    assert recheck_verdict(dict(base, high=1.05), th) == "same"
    assert recheck_verdict(dict(base, high=0.85), th) == "faster"
    assert recheck_verdict(dict(base, high=1.2), th) == "unresolved"  # a 10% step not excluded
    assert recheck_verdict(dict(base, high=float("nan")), th) == "unresolved"
    assert recheck_verdict({"metric": "compiles", "regression": False}, th) == "same"


def test_the_evaluation_judges_nights_of_k_processes_against_their_own_floor():
    rng = np.random.default_rng(3)
    nights = 30
    series = {}
    for s in range(8):
        r = 0.8 * np.exp(rng.normal(0, 0.006, nights))
        series[f"s{s}"] = {"keys": {}, "ratio": r.tolist(), "low": (r / 1.006).tolist(),
                           "high": (r * 1.006).tolist(), "processes": [4] * nights,
                           **{k: [None] * nights for k in ("verdict", "median_s",
                                                            "baseline_median_s", "compiles",
                                                            "hlo")}}
    corpus = {"format": 1, "command": "t", "host": {}, "series": series,
              "nights": [{"run_id": f"n{i}"} for i in range(nights)]}
    assert evaluate.process_floors(corpus) == pytest.approx([PAIRED_FLOOR * math.sqrt(0.625)] * 8)
    four = evaluate.evaluate(corpus, "paired", steps=(0.06, 0.1))
    for s in series.values():
        s.pop("processes")
    one = evaluate.evaluate(corpus, "paired", steps=(0.06, 0.1))
    # visible: (3 + 1.645) x the floor: 5.5% with four processes a night, 7% with one
    assert four["seeing"]["0.06"] == 1.0 and one["seeing"]["0.06"] == 0.0
    assert four["false_alerts"] == 0 and one["false_alerts"] == 0
    assert four["seeing"]["0.1"] == 1.0


def test_the_cost_of_further_runs_counts_wall_time_once(tmp_path):
    """A further run that overlapped the night's run adds no wall time; two runs at once add
    their common span once (the history page's cost column)."""
    import datetime as dt
    import json

    from jitbench.report.history_page import _extra_seconds

    def run(path, start, end):
        path.mkdir(parents=True)
        t0 = dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc).timestamp()
        (path / "meta.json").write_text(json.dumps({
            "started_at": dt.datetime.fromtimestamp(t0 + start, dt.timezone.utc).isoformat(),
            "finished_at": dt.datetime.fromtimestamp(t0 + end, dt.timezone.utc).isoformat()}))

    night = tmp_path / "n1"
    run(night, 0, 100)
    run(night / "repeats" / "n1-p2", 5, 95)  # within the night's run
    run(night / "repeats" / "n1-p3", 100, 150)
    run(night / "rechecks" / "r1", 150, 200)
    run(night / "rechecks" / "r1b", 151, 190)  # beside r1
    assert _extra_seconds(night, "repeats") == pytest.approx(50)
    assert _extra_seconds(night, "rechecks") == pytest.approx(50)
    assert _extra_seconds(tmp_path / "n1", "nothing") is None


def test_two_runs_started_into_one_folder_at_once_both_find_it_writable(tmp_path):
    """Two runs started into one results folder at the same moment (threads of one caller):
    the write probe of one must not be the other's."""
    import threading

    from jitbench.results.run_folder import check_writable

    errors = []

    def probe():
        for _ in range(300):
            try:
                check_writable(tmp_path / "rechecks", "results folder")
            except Exception as exc:  # noqa: BLE001 - collected and asserted below
                errors.append(exc)

    threads = [threading.Thread(target=probe) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert list((tmp_path / "rechecks").iterdir()) == []  # no probe left behind
