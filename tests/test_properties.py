"""Property tests (Hypothesis) of what parses or renders user data: any set of rows a user can
have on disk (random subsets of modes, frameworks and statuses, missing and wrongly typed
fields, NaN/inf/zero/huge/tiny times, HTML and unicode in every string) loads, analyses and
renders; the page shows each row and never a piece of markup it was handed.

No framework is imported: the rows are synthetic, written as a results.jsonl the way the
harness writes one, then read back through ``jitbench.load_results``.
"""

from __future__ import annotations

import html
import json
import math
import os
import warnings

import pytest

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from jitbench.define.modes import FRAMEWORKS, MODES, modes_for  # noqa: E402
from jitbench.errors import DataWarning  # noqa: E402
from jitbench.results.files import SCHEMA_VERSION, ResultWriter, load_results  # noqa: E402

pytestmark = pytest.mark.unit
# more examples for a deeper search: JITBENCH_PROPERTY_EXAMPLES=500 pytest tests/test_properties.py
EXAMPLES = int(os.environ.get("JITBENCH_PROPERTY_EXAMPLES", "25"))

# markup that must reach the page as text only; each is a complete tag a browser would obey
EVIL = ["<script>alert(1)</script>", "<img src=x onerror=alert(1)>", "<b>bold</b>"]
STATUSES = ["ok", "ok", "ok", "mismatch", "compile_error", "runtime_error", "timeout", "oom",
            "crashed", "skipped"]

texts = st.one_of(st.sampled_from(EVIL), st.text(min_size=0, max_size=12),
                  st.sampled_from(["ünïcødé ✓", "a & b", "\"quoted\" 'x'", "", "日本語"]))
times = st.one_of(st.floats(min_value=1e-9, max_value=1e3), st.sampled_from(
    [0.0, math.nan, math.inf, -1.0, 1e-300, 1e300]))
wrong = st.one_of(st.text(max_size=5), st.integers(), st.booleans(), st.none(),
                  st.lists(st.integers(), max_size=2), st.dictionaries(st.text(max_size=2),
                                                                      st.integers(), max_size=1))


@st.composite
def row_sets(draw):
    """Rows of a few cases: each case a random subset of its framework's modes."""
    rows = []
    n_cases = draw(st.integers(min_value=1, max_value=4))
    for i in range(n_cases):
        framework = draw(st.sampled_from(list(FRAMEWORKS)))
        workload = draw(st.sampled_from(["matmul_relu", "mmd", "w<i>", "ünï"]))
        size = draw(st.sampled_from(["n8", "n64", "64x64x64", "<size>"]))
        dtype = draw(st.sampled_from(["float32", "float64"]))
        device = draw(st.sampled_from(["cpu", "gpu"]))
        modes = draw(st.lists(st.sampled_from(modes_for(framework)), min_size=1, unique=True))
        for mode in modes:
            case_id = f"{workload}-v-{framework}-{mode}-{device}-{dtype}-{size}-{i}"
            status = draw(st.sampled_from(STATUSES))
            row = {"schema_version": SCHEMA_VERSION, "run_id": "r1", "case_id": case_id,
                   "workload": workload, "variant": "v", "size": size, "size_set": "quick",
                   "params": {"n": 8}, "dtype": dtype, "framework": framework, "mode": mode,
                   "jit": MODES[(framework, mode)].jit, "device": device, "status": status,
                   "source": draw(st.sampled_from(["jitbench.suites.matmul_relu", "",
                                                   "nowhere.py"]))}
            if status == "ok":
                samples = draw(st.lists(times, min_size=0, max_size=8))
                med = draw(times)
                row.update(samples=samples, n_samples=len(samples), median_s=med,
                           mean_s=draw(times), iqr_s=draw(times), min_s=draw(times),
                           first_call_s=draw(times), flops=draw(times),
                           max_rel_err=draw(times), rtol=1e-3,
                           interleaved_with=[m for m in modes if m != mode])
                if draw(st.booleans()):
                    row.update(aa_samples=draw(st.lists(times, max_size=6)),
                               aa_median_s=draw(times))
            else:
                row.update(error=draw(texts), error_type=draw(texts), error_phase=draw(texts))
            if draw(st.booleans()):
                row["note"] = draw(texts)
            # what a hand edit leaves: a field gone, a field of the wrong type
            for _ in range(draw(st.integers(min_value=0, max_value=2))):
                field = draw(st.sampled_from(sorted(row)))
                if field in ("schema_version",):
                    continue
                if draw(st.booleans()):
                    del row[field]
                else:
                    row[field] = draw(wrong)
            rows.append(row)
    return rows


def _write(tmp_path, rows):
    run = tmp_path / "run"
    run.mkdir(exist_ok=True)
    f = run / "results.jsonl"
    f.unlink(missing_ok=True)
    with ResultWriter(f) as w:
        for r in rows:
            w.write(r)
    (run / "meta.json").write_text(json.dumps({"run_id": "r1"}))
    return run


@settings(max_examples=4 * EXAMPLES, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(rows=row_sets())
def test_every_row_read_is_kept_and_each_damage_named(tmp_path, rows):
    from jitbench.results.fields import FIELDS, IDENTITY

    run = _write(tmp_path, rows)
    before = (run / "results.jsonl").read_bytes()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        df = load_results(run)
    assert len(df) == len(rows)  # no row lost
    assert (run / "results.jsonl").read_bytes() == before  # nor rewritten
    named = {int(str(w.message).split(":")[1]) for w in caught
             if issubclass(w.category, DataWarning)}
    for line, r in enumerate(rows, 1):
        missing = any(k not in r for k in IDENTITY)
        if missing:
            assert line in named, f"line {line} lacks an identity field and was not named"
    for name in ("median_s", "first_call_s"):
        v = df[name].dropna()
        assert ((v > 0) & (v < 1e6)).all(), f"{name}: a damaged time was read as a time"
    assert set(IDENTITY) <= set(FIELDS)


# each example renders a whole report (figures included, ~1 s): 15 of them by default
@settings(max_examples=max(1, EXAMPLES * 3 // 5), deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(rows=row_sets())
def test_any_rows_load_analyse_and_render(tmp_path, rows):
    from jitbench.report.html import render
    from jitbench.results.files import load_meta

    run = _write(tmp_path, rows)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DataWarning)  # a hand-edited row is warned about
        df = load_results(run)
        page = render(df, load_meta(run), n_boot=50, workers=1)
    for evil in EVIL:
        assert evil not in page, f"unescaped markup in the page: {evil}"
    assert "<script" not in page
    for case_id in {r["case_id"] for r in rows if isinstance(r.get("case_id"), str)}:
        assert html.escape(case_id) in page, f"row {case_id!r} is missing from the page"
