"""The HTML report: self-contained, escapes every string of a run, and loads cleanly in a real
headless Chromium from file:// (console errors, images, layout at 1280 px and narrow)."""

from __future__ import annotations

import json
import os
import re
import shutil
import struct

import numpy as np
import pytest

from jitbench import analysis
from jitbench.cli.main import main
from jitbench.report import fmt, write_report
from jitbench.results.files import SCHEMA_VERSION

NASTY = 'Detected unsupported operations <script>alert("x")</script> & \'q\' <img src=x>'
MODES = {"jax": [("eager", False, 3.0), ("jit", True, 1.0)],
         "tf": [("eager", False, 2.0), ("graph", False, 2.5), ("xla", True, 1.5),
                ("autoclustering", True, 2.4)]}


def _rows(rng):
    rows = []
    for size, n in (("n64", 64), ("n256", 256), ("n1024", 1024)):
        scale = n / 256
        for framework, modes in MODES.items():
            for mode, jit, rel in modes:
                # JIT helps more as the size grows (a crossover for tf xla vs graph)
                t = 1e-3 * scale * (rel if not jit or n >= 256 else rel * 3)
                s = list(t * np.exp(rng.normal(0, 0.05, 40)))
                med = float(np.median(s))
                rows.append(dict(
                    schema_version=SCHEMA_VERSION, run_id="run-<1>", workload="toy",
                    case_id=f"toy-v$1$-{framework}-{mode}-cpu-float32-{size}",
                    variant="v$1$", size=size, size_set="quick", params={"n": n},
                    dtype="float32", framework=framework, mode=mode, jit=jit, device="cpu",
                    source="tests.no_such_suite", status="ok", error=None, samples=s,
                    n_samples=len(s), median_s=med,
                    iqr_s=float(np.subtract(*np.percentile(s, [75, 25]))),
                    first_call_s=med + (0.2 if jit else 0.01), early_calls_s=[med * 1.1] * 4,
                    first_compile_s=0.15 if jit else 0.0, flops=2.0 * n ** 3,
                    gflops=2.0 * n ** 3 / med / 1e9, max_abs_err=1e-6, max_rel_err=2e-7,
                    rtol=1e-3, atol=1e-3, cpu_steal_pct=0.0, settled=True,
                    interleaved_with=[m for m, _, _ in modes if m != mode]))
    rows.append(dict(rows[-1], case_id="toy-broken", size="n2048", params={"n": 2048},
                     status="compile_error", error_type="InvalidArgumentError<T>", error=NASTY,
                     error_phase="first_call", samples=None, median_s=None, n_samples=None,
                     gflops=None, expected_failure="known <bug> & co"))
    return rows


META = {
    "run_id": "run-<1>", "status": "complete", "started_at": "2026-01-01T00:00:00+00:00",
    "finished_at": "2026-01-01T00:01:00+00:00", "elapsed_s": 60.0,
    "command": ["jitbench", "run", "--suite", "<toy>&"], "git_commit": "abc123-dirty",
    "machine": {"hostname": "h", "cpu_model": "Fake <CPU>", "cpu_count": 2,
                "memory_gb": 8, "python": "3.11", "platform": "Linux"},
    "env": {"TF_XLA_FLAGS": "--tf_xla_auto_jit=2 <&>"},
    "frameworks": {"jax": "0.10.2", "tensorflow": "2.21.0"},
    "devices": [{"framework": "jax", "name": "cpu:0", "kind": "cpu"}],
    "protocol": {"min_time": 0.2},
    "calibration": {
        "version": 1, "elapsed_s": 9.5,
        "peak": [{"source": "numpy", "framework": None, "mode": None, "device": "cpu",
                  "gflops": 180.0, "gflops_median": 170.0, "status": "ok", "error": None},
                 {"source": "jax", "framework": "jax", "mode": "jit", "device": "cpu",
                  "gflops": 200.0, "gflops_median": 190.0, "status": "ok", "error": None},
                 {"source": "tf", "framework": "tf", "mode": "xla", "device": "cpu",
                  "gflops": None, "status": "crashed", "error": "died <here>"}],
        "dispatch": [{"framework": "jax", "mode": "jit", "device": "cpu", "floor_s": 5e-6,
                      "status": "ok", "note": None},
                     {"framework": "tf", "mode": "graph", "device": "cpu", "floor_s": 4e-4,
                      "status": "ok", "note": None}]},
}


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    d = tmp_path_factory.mktemp("results") / "run-1"
    d.mkdir()
    rows = _rows(np.random.default_rng(0))
    (d / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows + _no_gpu(rows)))
    (d / "meta.json").write_text(json.dumps(META))
    return d


def _no_gpu(rows):
    """The same cases on a GPU this machine does not have: every one skipped."""
    return [dict(r, case_id=r["case_id"].replace("-cpu-", "-gpu-"), device="gpu",
                 status="skipped", error="JAX sees no gpu device", samples=None, median_s=None)
            for r in rows if r["status"] == "ok"]


@pytest.fixture(scope="module")
def page(run_dir, tmp_path_factory):
    return write_report(run_dir, tmp_path_factory.mktemp("reports") / "run-1")


@pytest.fixture(scope="module")
def html(page):
    return page.read_text(encoding="utf-8")


def test_every_string_from_the_run_is_escaped(html):
    assert "<script" not in html.lower()  # the page has no script at all
    assert "<img src=x>" not in html
    assert "&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt; &amp; &#39;q&#39;" in html
    assert "InvalidArgumentError&lt;T&gt;" in html and "Fake &lt;CPU&gt;" in html
    assert "known &lt;bug&gt; &amp; co" in html and "run-&lt;1&gt;" in html
    assert "died &lt;here&gt;" in html


def test_the_page_is_self_contained(html):
    assert "http://" not in html and "https://" not in html
    assert "<link" not in html and "@import" not in html
    srcs = re.findall(r'<img[^>]*\ssrc="([^"]*)"', html)
    assert len(srcs) >= 6  # the overview and the toy workload's figures
    assert all(s.startswith("data:image/png;base64,") for s in srcs)


def test_the_page_has_every_section_and_the_headline_numbers(run_dir, html):
    for anchor in ("summary", "toy", "calibration", "failures", "environment"):
        assert f'id="{anchor}"' in html
    from jitbench.results.files import load_results

    df = load_results(run_dir)
    gm = analysis.geomean_speedups(analysis.speedups(df), df)
    jax = gm[(gm.framework == "jax") & gm.nearest].iloc[0]
    assert fmt.times(jax["geomean"]) in html and "jax jit vs eager" in html
    auto = gm[(gm["mode"] == "autoclustering") & (gm.baseline == "graph")].iloc[0]
    assert auto["n_excluded"] == 1  # the compile_error case is counted, not dropped
    assert "; 1 excluded" in html
    assert "200 GFLOP/s" in html  # best of numpy and the frameworks
    assert "pass rate" in html and "median compile cost" in html and "median break-even" in html
    assert "jitbench run --suite toy --variant &#39;v$1$&#39;" in html  # reproduce, quoted
    assert "Crossover" in html and "JIT wins above" in html
    assert "dispatch-bound" in html  # tf graph at n64 (625 µs) sits on its 400 µs floor


@pytest.mark.unit
def test_a_run_without_calibration_or_samples_still_renders(tmp_path):
    rows = [dict(r, samples=None) for r in _rows(np.random.default_rng(1))]
    (tmp_path / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    html = write_report(tmp_path / "results.jsonl", tmp_path / "out").read_text()
    assert "this run has no calibration" in html  # the Calibration section's unmet need
    assert "data:image/png;base64," in html


def test_the_first_screen_leads_with_the_answer_and_an_absent_gpu_is_one_line(html):
    header = html[html.index("<header>"):html.index("<nav")]
    assert len(re.sub(r"<[^>]+>", "", header)) < 260  # the method: one line and a link
    assert 'href="#method"' in header and 'id="method"' in html
    first = html[html.index('id="summary"'):]
    first = first[:first.index("</section>")]
    assert first.index("jax jit vs eager · cpu") < first.index("verdicts of the nearest pairs")
    assert html.index('id="summary"') < html.index('id="trust"')
    n = len(_no_gpu(_rows(np.random.default_rng(0))))
    assert f"gpu: not present, {n} cases skipped (JAX sees no gpu device)" in first
    assert "· gpu" not in first  # no empty speedup card for the absent device


@pytest.mark.unit
def test_rows_without_flops_or_a_numeric_param_render(tmp_path):
    """A user's own function measured without ``flops`` and with params that hold no number
    (``jitbench.measure``): its size has no work per call (NaN), and its samples still get their
    panel (a groupby on ``work`` dropped them, and the figure had no panel to draw)."""
    rows = [dict(r, flops=None, gflops=None, params={"shapes": "16x8"})
            for r in _rows(np.random.default_rng(2)) if r["size"] == "n64"]
    (tmp_path / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    html = write_report(tmp_path / "results.jsonl", tmp_path / "out").read_text()
    assert "n64" in html and "data:image/png;base64," in html


def test_jitbench_report_command(run_dir, tmp_path, capsys):
    assert main(["report", str(run_dir), "-o", str(tmp_path / "r")]) == 0
    assert (tmp_path / "r" / "index.html").is_file()
    assert main(["report", str(tmp_path / "nope")]) == 2
    assert "does not exist" in capsys.readouterr().err


# --------------------------------------------------------------------------- real browser

def _browser():
    import browser  # tests/browser.py: a headless Chromium driver, only the tests use it

    try:
        browser.find_chromium()
    except browser.BrowserUnavailable as exc:
        pytest.skip(f"no headless browser on this machine: {exc}")
    return browser


def _png_size(path):
    head = path.read_bytes()[:24]
    assert head[:8] == b"\x89PNG\r\n\x1a\n"
    return struct.unpack(">II", head[16:24])


def test_report_in_headless_chromium(page, html, tmp_path):
    browser = _browser()
    shot = tmp_path / "report-1280.png"
    c = browser.check_page(page, width=1280, screenshot=shot)
    assert c.console_errors == [] and c.failed_requests == [] and c.network_requests == []
    assert c.images == html.count("<img ") and c.broken_images == []
    assert not c.overflows, (c.scroll_width, c.inner_width)
    assert c.title.startswith("jitbench report")
    width, height = _png_size(shot)
    assert width == 1280 and height == c.page_height > 2000
    keep = os.environ.get("JITBENCH_SCREENSHOT_DIR")
    if keep:
        shutil.copy(shot, keep)
    narrow = browser.check_page(page, width=420)
    assert not narrow.overflows, (narrow.scroll_width, narrow.inner_width)
    assert narrow.console_errors == [] and narrow.broken_images == []


def test_the_browser_check_sees_errors_and_broken_images(tmp_path):
    browser = _browser()
    bad = tmp_path / "bad.html"
    bad.write_text('<!doctype html><title>bad</title><img src="missing.png">'
                   '<div style="width:3000px">wide</div>'
                   '<script>console.error("boom"); undefinedFunction();</script>')
    c = browser.check_page(bad, width=800)
    assert any("boom" in e for e in c.console_errors)
    assert any("undefinedFunction" in e for e in c.console_errors)
    assert len(c.broken_images) == 1 and c.overflows and not c.ok


@pytest.mark.unit
def test_the_per_variant_table_puts_each_variant_of_a_workload_side_by_side():
    import pandas as pd

    from jitbench.report.sections.workloads import _per_variant

    def pair(variant, fw, mode, speedup, verdict, median):
        return dict(size="mlp-W8-B4", variant=variant, dtype="float32", device="cpu",
                    framework=fw, mode=mode, baseline="eager" if fw == "jax" else "graph",
                    speedup=speedup, verdict=verdict, jit_median_s=median,
                    compile_cost_s=0.4, break_even_calls=120.0, nearest=True)

    sp = pd.DataFrame([pair("sgd-no_bn", "jax", "jit", 20.0, "faster", 1e-3),
                       pair("adam-no_bn", "jax", "jit", 30.0, "faster", 2e-3),
                       pair("adam-no_bn", "tf", "xla", 1.02, "same", 5e-3)])
    table = _per_variant(sp, "step")
    assert table["unit"] == "step"
    assert [c["label"] for c in table["columns"]] == ["jax jit vs eager", "tf xla vs graph"]
    rows = {r["label"]: r["cells"] for r in table["rows"]}
    assert rows["mlp-W8-B4 · sgd-no_bn · float32 · cpu"][1] is None  # no TF row for sgd
    adam = rows["mlp-W8-B4 · adam-no_bn · float32 · cpu"]
    assert adam[0]["verdict"] == "faster" and adam[0]["rate"] == "500"  # steps per second
    assert adam[1]["css"] == "same"
    assert _per_variant(sp[sp["variant"] == "sgd-no_bn"], "call") is None  # one variant


@pytest.mark.unit
def test_the_command_that_measures_a_case_again_keeps_the_runs_options():
    import shlex

    from jitbench.cli.args import build_parser
    from jitbench.report.sections.workloads import reproduce_command

    rows = [{"workload": "mmd", "variant": "default", "dtype": "float32", "framework": "jax",
             "mode": m, "device": "cpu", "size_set": "quick", "source": "jitbench.suites.mmd"}
            for m in ("eager", "jit")]
    meta = {"protocol": {"precision": 0.02, "budget": 3.0, "stop_when": "precise"},
            "process_profile": "stable", "matmul_precision": "highest"}
    line = reproduce_command(rows, meta)
    args = build_parser().parse_args(shlex.split(line)[1:])
    assert (args.precision, args.budget, args.stop_when) == (0.02, 3.0, "precise")
    assert (args.process_profile, args.matmul_precision, args.mode) == (
        "stable", "highest", "eager,jit")
    fixed = build_parser().parse_args(shlex.split(reproduce_command(
        rows, {"protocol": {"precision": None, "min_time": 0.1}}))[1:])
    assert fixed.precision == "off" and fixed.min_time == 0.1
    plain = reproduce_command(rows, {"protocol": {"precision": 0.05, "budget": 6.0}})
    assert "--precision" not in plain and "--budget" not in plain
