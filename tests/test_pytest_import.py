"""pytest-benchmark JSON -> jitbench rows (jitbench.results.pytest_import), on hand-written
files."""

from __future__ import annotations

import json

import pytest

import jitbench
from jitbench.errors import UserError
from jitbench.results.files import COLUMNS
from jitbench.results.pytest_import import read_pytest_benchmark

pytestmark = pytest.mark.unit  # no child process, no framework import


def _bench(mode="jit", jit=True, median=2e-4, **info):
    extra = {"jitbench_schema": 1, "case_id": f"mmd-default-jax-{mode}-cpu-float32-n256-d64",
             "workload": "mmd", "variant": "default", "size": "n256-d64", "size_set": "quick",
             "params": {"n": 256, "d": 64}, "dtype": "float32", "framework": "jax",
             "mode": mode, "jit": jit, "device": "cpu", "status": "ok", "first_call_s": 0.3,
             "gflops": 12.5, "max_abs_err": 1e-3, "max_rel_err": 1e-4, **info}
    return {"group": "mmd-default-jax-cpu-float32-n256-d64", "name": f"test_bench[{mode}]",
            "fullname": f"suites/test_bench.py::test_bench[{mode}]", "extra_info": extra,
            "stats": {"min": median * 0.9, "max": median * 2, "mean": median * 1.1,
                      "stddev": median / 10, "rounds": 3, "median": median,
                      "iqr": median / 5, "iterations": 4,
                      "data": [median * 0.9, median, median * 1.4]}}


def _write(path, benchmarks):
    path.write_text(json.dumps({"machine_info": {}, "commit_info": {}, "version": "5.3.1",
                                "datetime": "2026-01-01T00:00:00", "benchmarks": benchmarks}))
    return path


def test_rows_map_stats_and_extra_info(tmp_path):
    f = _write(tmp_path / "0001_abc.json", [_bench(), _bench("eager", False, 1e-3)])
    rows = read_pytest_benchmark(f)
    assert [r["mode"] for r in rows] == ["jit", "eager"]
    r = rows[0]
    assert r["run_id"] == "0001_abc" and r["schema_version"] == 1
    assert (r["median_s"], r["min_s"], r["n_samples"], r["iterations"]) == (2e-4, 1.8e-4, 3, 4)
    assert r["samples"] == [1.8e-4, 2e-4, 2.8e-4] and "jitbench_schema" not in r
    assert r["pytest_name"] == "suites/test_bench.py::test_bench[jit]"


def test_load_results_gives_the_same_columns_and_speedups(tmp_path):
    from jitbench import analysis

    f = _write(tmp_path / "out.json", [_bench(), _bench("eager", False, 1e-3)])
    df = jitbench.load_results(str(f))
    assert list(df.columns[:len(COLUMNS)]) == COLUMNS
    assert df["median_s"].dtype == float and set(df["status"]) == {"ok"}
    sp = analysis.speedups(df)
    assert len(sp) == 1 and sp["speedup"].iloc[0] == pytest.approx(5.0)


def test_other_benchmarks_are_left_out_with_a_warning(tmp_path):
    foreign = {"name": "test_sum", "fullname": "t.py::test_sum", "extra_info": {},
               "stats": {"median": 1.0}}
    f = _write(tmp_path / "mixed.json", [foreign, _bench()])
    with pytest.warns(UserWarning, match="1 benchmarks not written by jitbench"):
        assert len(read_pytest_benchmark(f)) == 1
    with pytest.raises(UserError, match="holds no jitbench benchmarks"):
        read_pytest_benchmark(_write(tmp_path / "foreign.json", [foreign]))


@pytest.mark.parametrize("content, message", [
    ("{not json", "is not valid JSON"),
    ('{"rows": []}', "is not a pytest-benchmark JSON file"),
    ("[1, 2]", "is not a pytest-benchmark JSON file"),
])
def test_files_that_are_not_pytest_benchmark_json_are_refused(tmp_path, content, message):
    f = tmp_path / "bad.json"
    f.write_text(content)
    with pytest.raises(UserError, match=message):
        read_pytest_benchmark(f)


@pytest.mark.parametrize("version, advice", [(2, "upgrade jitbench"),
                                             (0, "the jitbench version that wrote it")])
def test_unknown_extra_info_schema_is_refused(tmp_path, version, advice):
    f = _write(tmp_path / "v.json", [_bench(jitbench_schema=version)])
    with pytest.raises(UserError, match=f"jitbench_schema {version}.*{advice}"):
        read_pytest_benchmark(f)
