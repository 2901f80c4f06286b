"""The nightly detectors and their evaluator on synthetic nights with known answers, the corpus
format (anything on disk loads or is refused by name), and the recorded corpus replayed."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from jitbench.analysis.detectors import (DETECTORS, PAIRED_FLOOR, baseline_moves, machine_levels,
                                      paired_night, reference_end, steady_nights)
from jitbench.analysis.history import benjamini_hochberg
from jitbench.errors import UserError
from jitbench.nightly import corpus as corpus_mod
from jitbench.nightly import evaluate

CORPORA = Path(__file__).parent / "fixtures" / "nightly-corpus"
CORPUS = CORPORA / "corpus.json.gz"  # the shipped night: the pinned profile, one process


def synthetic(nights=30, series=12, noise=0.02, seed=0, step=None):
    """Series of log-normal ratios with ``noise`` night-to-night and a +-3% interval each
    night; ``step``: (series index, night, factor) planted."""
    rng = np.random.default_rng(seed)
    out = {}
    for s in range(series):
        base = rng.uniform(0.2, 1.5)
        ratios = base * np.exp(rng.normal(0, noise, nights))
        if step and step[0] == s:
            ratios[step[1]:] *= step[2]
        out[f"case-{s}"] = {"keys": {}, "ratio": ratios.tolist(),
                            "low": (ratios / 1.03).tolist(), "high": (ratios * 1.03).tolist(),
                            **{k: [None] * nights for k in ("verdict", "median_s",
                                                             "baseline_median_s", "compiles",
                                                             "hlo")}}
    return {"format": corpus_mod.FORMAT, "command": "synthetic", "host": {"node": "test"},
            "nights": [{"run_id": f"n{i}"} for i in range(nights)], "series": out}


@pytest.mark.unit
def test_quiet_nights_raise_no_alert_and_a_planted_step_is_seen_within_two_nights():
    quiet = synthetic()
    for name in DETECTORS:
        result = evaluate.evaluate(quiet, name)
        assert result["false_alerts"] <= 1, (name, result["false_alert_list"])
    result = evaluate.evaluate(quiet, "paired")
    assert result["false_alerts"] == 0
    assert result["detection"]["0.3"] >= 0.9 and result["detection"]["0.2"] >= 0.9
    assert result["detection"]["0.05"] < result["detection"]["0.3"]
    assert result["delay_nights"]["0.3"] <= 1


@pytest.mark.unit
def test_nights_on_which_the_machine_moved_are_not_judged():
    """On nights 20 and 21 the machine runs every JIT-off mode 1.4x slower and the paired
    ratios of 4 of 12 unchanged series +30% (as this host's disturbed nights did): no alert.
    The same ratios with the JIT-off times steady are a step the rule sees."""
    moved = synthetic(nights=40, seed=3)
    for i, s in enumerate(moved["series"].values()):
        s["baseline_median_s"] = [1e-3 * (1.4 if t in (20, 21) else 1.0) for t in range(40)]
        if i < 4:
            for k in ("ratio", "low", "high"):
                s[k] = [v * (1.3 if t in (20, 21) else 1.0) for t, v in enumerate(s[k])]
    steady = evaluate.machine_steady(moved)
    assert not steady[20] and not steady[21] and steady[:20].all() and steady[22:].all()
    result = evaluate.evaluate(moved, "paired")
    assert result["false_alerts"] == 0 and result["unsteady_nights"] == ["n20", "n21"]
    calm = json.loads(json.dumps(moved))
    for s in calm["series"].values():
        s["baseline_median_s"] = [1e-3] * 40
    assert evaluate.evaluate(calm, "paired")["false_alerts"] >= 4
    versions = json.loads(json.dumps(moved))  # a new framework on night 20: judged anyway
    for t, night in enumerate(versions["nights"]):
        night["versions"] = {"jax": "0.10.3" if t >= 20 else "0.10.2"}
    assert evaluate.machine_steady(versions)[20]


@pytest.mark.unit
def test_a_step_that_begins_on_nights_the_machine_moved_is_found_on_the_next_steady_one():
    """A 30% step of series 2 from night 20 on, nights 20 and 21 disturbed (every JIT-off
    time x1.4): they are not judged, and they wait outside the reference, so night 22 still
    sees the step (with them in its reference, as before 2026-11-24, it never did): at once,
    its nights combining two processes each (decisive)."""
    corpus = synthetic(nights=40, seed=5, step=(2, 20, 1.3))
    for s in corpus["series"].values():
        s["baseline_median_s"] = [1e-3 * (1.4 if t in (20, 21) else 1.0) for t in range(40)]
    steady = evaluate.machine_steady(corpus)
    ids, x, lo, hi = evaluate.arrays(corpus)
    _, alert = DETECTORS["paired"].judge(x[2], lo[2], hi[2], threshold=0.10, steady=steady,
                                         processes=np.full(40, 2))
    assert not alert[:22].any() and alert[22]
    assert reference_end(22, steady) == 20 and reference_end(23, steady) == 23


@pytest.mark.unit
def test_the_visible_step_grows_with_the_series_scatter_and_the_nights_interval():
    rng = np.random.default_rng(1)
    quiet, loud = rng.normal(0, 0.01, 30), rng.normal(0, 0.08, 30)
    q = paired_night(0.0, -0.01, 0.01, quiet)["visible"]
    wide = paired_night(0.0, -0.15, 0.15, quiet)["visible"]
    noisy = paired_night(0.0, -0.01, 0.01, loud)["visible"]
    assert 0.05 <= q < 0.15 < noisy and q < wide
    # what the series sees, it shows: a step of its visible size is suspect
    assert paired_night(math.log1p(q) + 0.005, math.log1p(q) - 0.005, math.log1p(q) + 0.015,
                        quiet)["suspect"]


@pytest.mark.unit
def test_the_machine_level_is_the_median_move_of_every_series_against_five_nights():
    logs = np.log(np.array([[1.0, 1.0, 1.0, 1.0, 1.0, 1.5, 1.02],
                            [2.0, 2.0, 2.0, 2.0, 2.0, 3.0, np.nan],
                            [1.0, 1.0, 1.0, 1.0, 1.0, 1.5, 0.5],  # series 3 alone halves
                            [3.0, 3.0, 3.0, 3.0, 3.0, 4.5, 3.09]]))
    levels = machine_levels(logs)
    assert math.isnan(levels[0]) and levels[1:5] == pytest.approx(0.0)
    assert levels[5] == pytest.approx(math.log(1.5))
    assert levels[6] == pytest.approx(math.log(1.02))  # one series' move is not the machine
    assert steady_nights(levels).tolist() == [True] * 5 + [False, True]


@pytest.mark.unit
def test_the_paired_rule_alerts_on_the_night_after_a_suspect_or_at_once_when_decisive():
    corpus = synthetic(step=(3, 20, 1.25))
    ids, x, lo, hi = evaluate.arrays(corpus)
    p, alert = DETECTORS["paired"].judge(x[3], lo[3], hi[3], threshold=0.10)
    assert not alert[:20].any() and alert[20:22].any()
    # an interval wholly above the history's highest night by the threshold: decisive
    prev = np.log(np.full(10, 0.5)) + np.linspace(-0.01, 0.01, 10)
    clear = (math.log(0.5 * 1.5), math.log(0.5 * 1.45), math.log(0.5 * 1.55), prev)
    night = paired_night(*clear, processes=2)
    assert night["suspect"] and night["decisive"]
    # one process's interval does not carry the scatter between processes: never decisive
    assert paired_night(*clear)["suspect"] and not paired_night(*clear)["decisive"]
    night = paired_night(math.log(0.5 * 1.15), math.log(0.5 * 1.10), math.log(0.5 * 1.20), prev,
                         processes=2)
    assert night["suspect"] and not night["decisive"]  # re-measured before it is believed


@pytest.mark.unit
def test_benjamini_hochberg_rejects_the_smallest_p_values_up_to_the_last_that_passes():
    def bh_reject(p, alpha):  # the evaluator's use of the history's q-values
        return [q <= alpha for q in benjamini_hochberg(list(p))]

    assert bh_reject([0.001, 0.02, 0.04, 0.5], 0.05) == [True, True, False, False]
    assert not any(bh_reject([0.2, 0.3], 0.05))


@pytest.mark.unit
def test_the_evaluation_json_has_the_fields_the_issue_names(tmp_path, capsys):
    from jitbench.cli.main import main

    path = corpus_mod.save(synthetic(nights=12, series=3), tmp_path / "c.json.gz")
    assert main(["nightly", "--evaluate", str(path), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert {"nights", "series", "false_alerts", "detection", "delay_nights"} <= set(out)
    assert set(out["detection"]) == {"0.05", "0.1", "0.2", "0.3"}
    assert out["nights"] == 12 and out["series"] == 3
    assert set(out["found"]) == set(out["detection"])
    assert all(out["found"][k] >= out["detection"][k] for k in out["found"])
    assert set(out["detectors"]) == set(DETECTORS)
    assert main(["nightly", "--evaluate", str(path)]) == 0
    assert "paired *" in capsys.readouterr().out


@pytest.mark.unit
def test_a_missing_or_foreign_history_is_refused_by_name(tmp_path, capsys):
    from jitbench.cli.main import main

    bad = tmp_path / "notes.json"
    bad.write_text('{"hello": 1}')
    for path in (bad, tmp_path / "absent.json"):
        assert main(["nightly", "--evaluate", str(path)]) == 2
        assert str(path.name) in capsys.readouterr().err


@pytest.mark.unit
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.recursive(st.none() | st.booleans() | st.floats(allow_nan=True) | st.text(max_size=5),
                    lambda c: st.lists(c, max_size=4) | st.dictionaries(st.text(max_size=6), c,
                                                                         max_size=4),
                    max_leaves=20))
def test_any_json_on_disk_loads_as_a_corpus_or_is_refused(tmp_path_factory, data):
    path = tmp_path_factory.mktemp("c") / "c.json"
    path.write_text(json.dumps(data))
    try:
        corpus = corpus_mod.load(path)
    except UserError as exc:
        assert "c.json" in str(exc)
        return
    evaluate.evaluate(corpus, "paired")  # what loads, replays


@pytest.mark.unit
@pytest.mark.parametrize("name, processes", [("corpus.json.gz", {1}),
                                             ("corpus-alone-core0.json.gz", {1}),
                                             ("corpus-two-processes.json.gz", {2})])
def test_the_recorded_corpus_replays_with_injections(name, processes):
    """The fixtures made by `jitbench nightly --corpus` from nights of unchanged code on the
    2-core host (tests/fixtures/nightly-corpus/README.md): the shipped night's (pinned, one
    process), recorded beside another stream and alone, and the same nights with a second
    process beside each. (The earlier corpus of
    the default profile, 77 nights, replays the same way in 12 s: its figures are in the lab
    notebook; `test_a_corpus_without_process_counts_reads_as_one_a_night` loads it.)"""
    corpus = corpus_mod.load(CORPORA / name)
    assert len(corpus["nights"]) >= 30 and len(corpus["series"]) >= 50
    assert [set(s.get("processes") or []) or None for s in corpus["series"].values()] == \
        [processes] * len(corpus["series"])
    result = evaluate.evaluate_all(corpus)
    shipped = result["detectors"][evaluate.SHIPPED]
    assert shipped["series_nights_judged"] > 0
    assert result["detection"]["0.3"] >= result["detection"]["0.05"]
    assert 0 <= result["seeing"]["0.1"] <= result["seeing"]["0.3"] <= 1
    if processes == {1}:  # the rule as shipped on its own nights: <= 1 in 30 nights
        assert result["false_alerts"] <= len(corpus["nights"]) / 30


@pytest.mark.unit
def test_a_corpus_without_process_counts_reads_as_one_a_night():
    corpus = corpus_mod.load(CORPORA / "corpus-default-profile.json.gz")
    assert all("processes" not in s for s in corpus["series"].values())
    assert set(evaluate.process_counts(corpus).ravel()) == {1}
    assert evaluate.process_floors(corpus) == pytest.approx([PAIRED_FLOOR] * len(corpus["series"]))


def test_corpus_and_evaluate_from_the_command_line(tmp_path):
    """The command a user types, in a child process, on a part of the stored corpus (8 of its
    series: the whole corpus is replayed in-process above)."""
    whole = corpus_mod.load(CORPUS)
    part = {**whole, "series": dict(list(whole["series"].items())[:8])}
    path = corpus_mod.save(part, tmp_path / "part.json.gz")
    out = subprocess.run([sys.executable, "-m", "jitbench", "nightly", "--evaluate", str(path)],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "false alerts" in out.stdout and "paired *" in out.stdout


@pytest.mark.unit
def test_a_ratio_that_rose_because_its_own_baseline_fell_is_no_jit_slowdown():
    """The JIT-off baseline of one series runs 3x faster on night 25 while its JIT time stays
    put (JAX's op-by-op eager did so for minutes on the 2-core host): its ratio triples, and
    the paired rule does not call that a JIT slowdown; a 30% JIT slowdown of another series
    that night, its baseline unchanged, it does."""
    corpus = synthetic(nights=30, series=6, seed=7)
    for s in corpus["series"].values():
        s["baseline_median_s"] = [1e-3] * 30
        s["processes"] = [2] * 30
    fell, slow = corpus["series"]["case-1"], corpus["series"]["case-2"]
    fell["baseline_median_s"][25] = 1e-3 / 3
    for key in ("ratio", "low", "high"):
        fell[key][25] *= 3
        slow[key][25] *= 1.3
    moves = baseline_moves(evaluate.baseline_logs(corpus))
    assert moves[1, 25] == pytest.approx(-math.log(3)) and abs(moves[2, 25]) < 1e-9
    ids, x, lo, hi = evaluate.arrays(corpus)
    judge = DETECTORS["paired"].judge
    _, alert_fell = judge(x[1], lo[1], hi[1], processes=np.full(30, 2), base_move=moves[1])
    _, alert_slow = judge(x[2], lo[2], hi[2], processes=np.full(30, 2), base_move=moves[2])
    assert not alert_fell.any() and alert_slow[25]
    _, unchecked = judge(x[1], lo[1], hi[1], processes=np.full(30, 2))
    assert unchecked[25]  # without the baseline's move, the same night is an alert
    assert evaluate.evaluate(corpus, "paired")["false_alerts"] == 1  # the planted 30% alone


@pytest.mark.unit
def test_a_night_adds_only_the_noise_beyond_its_historys_usual_own_interval():
    """The history's spread already carries a usual night's own noise: a series whose nights
    scatter 1% with intervals of +-8% sees a 10% step (counted whole, the night's interval
    hid it); a night twice as wide as usual still adds what is beyond the usual."""
    from jitbench.analysis.detectors import judge_night

    rng = np.random.default_rng(5)
    x = rng.normal(0.0, 0.01, 21)
    x[-1] = math.log(1.10)
    half = 1.96 * 0.04
    lo, hi = x - half, x + half
    j = judge_night(20, np.arange(20), x, lo, hi)
    assert j["suspect"] and j["noise"] == pytest.approx(j["sigma"])
    counted_whole = math.sqrt(j["sigma"] ** 2 + j["night_sigma"] ** 2)
    assert j["z"] > 3 > (x[-1] - j["reference"]) / counted_whole
    lo[-1], hi[-1] = x[-1] - 2 * half, x[-1] + 2 * half  # tonight twice the usual width
    wide = judge_night(20, np.arange(20), x, lo, hi)
    assert not wide["suspect"]
    assert wide["noise"] == pytest.approx(math.sqrt(j["sigma"] ** 2 + 3 * 0.04 ** 2))


@pytest.mark.unit
def test_a_night_near_a_step_is_re_measured_and_the_re_measurement_decides():
    """A step whose night reads z between 2 and 3 is not suspect but near: the next night (the
    re-measurement, in the replay) alerts when it is suspect against the nights before; a
    near night followed by an unchanged one alerts nowhere."""
    from jitbench.analysis.detectors import NEAR_Z, judge_night

    from jitbench.protocol.timing import robust_sigma

    x = np.zeros(24)
    x[:20] = np.random.default_rng(3).permutation(np.linspace(-0.03, 0.03, 20))
    sigma = robust_sigma(x[:20])
    x[20] = 2.5 * sigma  # above the history's top and the line, z 2.5: near, not suspect
    lo = hi = np.full(24, np.nan)
    first = judge_night(20, np.arange(20), x, lo, hi)
    assert first["near"] and not first["suspect"] and NEAR_Z < first["z"] < 3, first
    rule = DETECTORS["paired"].judge
    confirmed = x.copy()
    confirmed[21] = x[20] + 0.03  # the re-measurement reads a step that stands out
    assert rule(confirmed, lo, hi, threshold=0.10)[1][21]
    back = x.copy()
    back[21:] = 0.0  # the re-measurement reads the reference: no alert
    assert not rule(back, lo, hi, threshold=0.10)[1].any()
    # below NEAR_Z: neither, and the next night is judged on its own
    x[20] = 1.5 * sigma
    assert not judge_night(20, np.arange(20), x, lo, hi)["near"]


@pytest.mark.unit
def test_a_point_of_more_processes_than_its_history_has_less_of_its_spread():
    """Half the night-to-night variance is taken to stay however many processes measure a
    night, the rest falls as 1/k: a 2-process re-measurement against one-process nights has
    sqrt(0.75) of their sigma, 4 processes sqrt(0.625); as many as the history's: all of it."""
    from jitbench.analysis.detectors import processes_noise

    assert processes_noise(1) == 1.0 and processes_noise(2, 2) == 1.0
    assert processes_noise(2) == pytest.approx(math.sqrt(0.75))
    assert processes_noise(4) == pytest.approx(math.sqrt(0.625))
    assert processes_noise(1, 2) == pytest.approx(math.sqrt(1 / 0.75))
    prev = np.random.default_rng(1).normal(0.0, 0.03, 20)
    one = paired_night(0.09, math.nan, math.nan, prev)
    two = paired_night(0.09, math.nan, math.nan, prev, processes=2)
    assert two["noise"] == pytest.approx(one["noise"] * math.sqrt(0.75))
    assert two["z"] > one["z"]
