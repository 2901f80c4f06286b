"""``jitbench compare`` on real runs (tests/fixtures/compare, see its README) and on runs
changed on purpose in the test."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from jitbench import analysis
from jitbench.cli.main import main
from jitbench.report.compare import compare_paths
from jitbench.results.files import load_results, read_rows

pytestmark = pytest.mark.unit  # no child process, no framework import

FIX = Path(__file__).parent / "fixtures" / "compare"
SLOWED = ("matmul_relu", "fused", "256x256x256", "float32", "jax", "cpu", "jit")


def flagged(table):
    return table[table["verdict"].isin(["regression", "improvement", "newly failing",
                                        "fixed"])]


def key(r):
    return tuple(r[k] for k in analysis.ROW_KEYS)


def write_run(path: Path, rows, meta=None) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    (path / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    if meta is not None:
        (path / "meta.json").write_text(json.dumps(meta))
    return path


def scaled(row, factor):
    s = [x * factor for x in row["samples"]]
    return dict(row, samples=s, median_s=float(np.median(s)),
                iqr_s=row["iqr_s"] * factor, first_call_s=row["first_call_s"] * factor)


# --------------------------------------------------------------------------- real runs

def test_two_runs_of_the_same_code_flag_few_or_no_cases(tmp_path, capsys):
    rc = main(["compare", str(FIX / "same-a"), str(FIX / "same-b"), "-o", str(tmp_path / "c"),
               "--fail-on-regression", "25"])
    out = capsys.readouterr().out
    cmp = compare_paths(FIX / "same-a", FIX / "same-b")
    n = len(cmp.table)
    assert n == 12 and (cmp.table["verdict"] != "only in A").all()
    assert len(flagged(cmp.table)) <= 1, flagged(cmp.table)
    assert rc == 0
    assert out.splitlines()[0] == "A = same-a" and f"{n} rows:" in out
    assert (tmp_path / "c" / "index.html").is_file()


def test_a_mode_slowed_on_purpose_is_flagged(tmp_path, capsys):
    rc = main(["compare", str(FIX / "same-a"), str(FIX / "slowed"), "-o", str(tmp_path / "c"),
               "--fail-on-regression", "20"])
    captured = capsys.readouterr()
    assert rc == 1 and "FAIL: 1 row(s)" in captured.err
    cmp = compare_paths(FIX / "same-a", FIX / "slowed")
    bad = flagged(cmp.table)
    assert [key(r) for r in bad.to_dict("records")] == [SLOWED]
    r = bad.iloc[0]
    assert r["verdict"] == "regression" and r["change_pct"] > 100 and r["ci_low"] > 1
    # the JIT pairs lead (none with verdicts in these older runs), then the absolute times,
    # flagged rows first
    lines = captured.out.splitlines()
    assert lines[2].startswith("JIT speedups, B against A")
    assert "0 JIT pairs: none in both runs" in captured.out
    table = lines[next(i for i, ln in enumerate(lines) if ln.startswith("Absolute times")):]
    assert table[3].startswith("regression") and "fused float32 256x256x256 jax jit" in table[3]
    html = (tmp_path / "c" / "index.html").read_text()
    assert "1 regression" in html and "data:image/png;base64," in html
    assert "http://" not in html and "https://" not in html


# --------------------------------------------------------------------------- changed in test

@pytest.fixture
def rows_b():
    return read_rows(FIX / "same-b" / "results.jsonl")


def test_one_mode_30_percent_slower_is_flagged_and_nothing_else(tmp_path, rows_b):
    rows = [scaled(r, 1.3) if key(r) == SLOWED else r for r in rows_b]
    b = write_run(tmp_path / "b", rows)
    cmp = compare_paths(FIX / "same-b", b)
    bad = flagged(cmp.table)
    assert [key(r) for r in bad.to_dict("records")] == [SLOWED]
    assert bad.iloc[0]["change_pct"] == pytest.approx(30.0, abs=0.5)
    assert main(["compare", str(FIX / "same-b"), str(b), "-o", str(tmp_path / "c"),
                 "--fail-on-regression", "20"]) == 1
    assert main(["compare", str(FIX / "same-b"), str(b), "-o", str(tmp_path / "c"),
                 "--fail-on-regression", "40"]) == 0


def test_everything_slower_alike_is_flagged_everywhere(tmp_path, rows_b):
    b = write_run(tmp_path / "b", [scaled(r, 1.25) for r in rows_b])
    cmp = compare_paths(FIX / "same-b", b)
    assert (cmp.table["verdict"] == "regression").all()
    drift = analysis.compare_drift(cmp.table)
    assert drift["shift"] == pytest.approx(0.25, abs=0.01) and drift["spread"] < 0.01


def test_rows_moving_every_which_way_widen_every_interval(rows_b):
    rng = np.random.default_rng(0)
    a = load_results(FIX / "same-b")
    moved = [scaled(r, float(np.exp(rng.normal(0, 0.3)))) for r in rows_b]
    from jitbench.results.files import to_frame

    b = to_frame(moved)
    naive = analysis.compare_runs(a, b, between_runs=False)
    robust = analysis.compare_runs(a, b)
    assert len(flagged(naive)) >= 6  # samples alone call most of these moves real
    assert len(flagged(robust)) <= 1
    assert (robust["ci_high"] - robust["ci_low"] >= naive["ci_high"] - naive["ci_low"]).all()


def test_status_changes_and_missing_rows(tmp_path, rows_b):
    nasty = 'mismatch <script>alert("x")</script> & more'
    rows = []
    for r in rows_b:
        if key(r) == SLOWED:
            rows.append(dict(r, status="mismatch", error=nasty))
        elif r["mode"] == "eager" and r["size"] == "64x64x64" and r["variant"] == "split":
            continue  # only in A
        else:
            rows.append(r)
    b = write_run(tmp_path / "b", rows)
    cmp = compare_paths(FIX / "same-b", b)
    verdicts = dict(zip(map(key, cmp.table.to_dict("records")), cmp.table["verdict"]))
    assert verdicts[SLOWED] == "newly failing"
    assert list(verdicts.values()).count("only in A") == 1
    bad = analysis.regressions_over(cmp.table, 1000)
    assert [key(r) for r in bad.to_dict("records")] == [SLOWED]  # whatever the PCT
    assert main(["compare", str(FIX / "same-b"), str(b), "-o", str(tmp_path / "c"),
                 "--fail-on-regression", "1000"]) == 1
    html = (tmp_path / "c" / "index.html").read_text()
    assert "<script>" not in html and "&lt;script&gt;alert(&#34;x&#34;)" in html
    assert "ok → mismatch" in html


def test_noise_floor_option(tmp_path, rows_b):
    rows = [scaled(r, 1.3) if key(r) == SLOWED else r for r in rows_b]
    b = write_run(tmp_path / "b", rows)
    assert main(["compare", str(FIX / "same-b"), str(b), "-o", str(tmp_path / "c"),
                 "--noise-floor", "50", "--fail-on-regression", "0"]) == 0


def test_user_errors_exit_2_with_a_message(tmp_path, capsys):
    assert main(["compare", str(tmp_path / "nope"), str(FIX / "same-b")]) == 2
    assert "RUN_A" in capsys.readouterr().err
    (tmp_path / "empty").mkdir()
    (tmp_path / "empty" / "results.jsonl").write_text("")
    assert main(["compare", str(FIX / "same-b"), str(tmp_path / "empty")]) == 2
    assert "holds no result rows" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["compare", "a", "b", "--fail-on-regression", "lots"])


def test_spread_needs_enough_rows():
    assert math.isnan(analysis.run_to_run_spread([0.1, 0.2])["spread"])
    s = analysis.run_to_run_spread(np.log([1.0, 1.1, 0.9, 1.0, 1.05, 0.95, 1.0, 1.02]))
    assert s["n"] == 8 and 0 < s["spread"] < 0.1 and abs(s["shift"]) < 0.01


@pytest.mark.unit
def test_jit_pairs_compare_their_speedups_so_drift_between_runs_cancels():
    """A JIT pair's speedup in B against A: the same speedup on a machine twice as slow is
    the same (the drift cancels, the absolute times do not), a 30% loss of a precisely
    measured pair is slower, a wide pair unresolved; the program's fingerprint is compared."""
    import pandas as pd

    from jitbench.analysis import compare_pairs

    def run(speedup_of, scale=1.0, fingerprint="f1"):
        rows = []
        for size, (s, half) in speedup_of.items():
            key = dict(workload="mmd", variant="default", size=size, dtype="float32",
                       framework="jax", device="cpu")
            rows.append(dict(key, mode="eager", median_s=1e-3 * scale * s))
            rows.append(dict(key, mode="jit", median_s=1e-3 * scale, verdict_baseline="eager",
                             verdict_speedup=s, verdict_ci_low=s / (1 + half),
                             verdict_ci_high=s * (1 + half), first_compiles=1,
                             hlo_fingerprint=fingerprint))
        return pd.DataFrame(rows)

    a = run({"n256": (10.0, 0.02), "n512": (10.0, 0.02), "n1024": (4.0, 0.5)})
    b = run({"n256": (10.1, 0.02), "n512": (7.0, 0.02), "n1024": (3.0, 0.5)}, scale=2.0,
            fingerprint="f2")
    t = compare_pairs(a, b).set_index("size")
    assert t.loc["n256", "verdict"] == "same" and t.loc["n256", "change"] == pytest.approx(1.01)
    assert t.loc["n512", "verdict"] == "slower" and t.loc["n512", "ci_high"] < 1
    assert t.loc["n1024", "verdict"] == "unresolved"
    # no wider than the two intervals combined: sqrt(2) x 2% here
    assert t.loc["n256", "ci_high"] / t.loc["n256", "change"] == pytest.approx(
        math.exp(math.hypot(math.log(1.02), math.log(1.02))))
    assert t["program_changed"].all() and (t["compiles_a"] == 1).all()
    assert compare_pairs(a.drop(columns=["verdict_speedup"]), b).empty
