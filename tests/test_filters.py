"""Every filter a user may combine runs end to end: `jitbench run` with only JIT-on modes, only
JIT-off modes, one framework's one mode, or a device with nothing to run on this host exits 0
and writes a report that says what it cannot show instead of crashing. Real TF and JAX, one
tiny case (tests/workloads/one_matmul.py), each command in a process of its own."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ONE = str(Path(__file__).parent / "workloads" / "one_matmul.py")
NO_BASELINE = "no JIT-off baseline measured: speedups need one of"
NO_JIT = "no JIT-on mode measured: speedups need one of"

# (filters, a line the page must hold)
FILTERS = [
    (["--mode", "xla", "--dump-hlo"], NO_BASELINE),
    (["--mode", "eager,graph"], NO_JIT),
    (["--framework", "jax", "--mode", "aot"], NO_BASELINE),
    (["--device", "gpu"], "no row ran ok"),
]


@pytest.mark.parametrize("filters,says", FILTERS, ids=[" ".join(f[0]) for f in FILTERS])
def test_run_with_filter_exits_0_with_a_report(tmp_path, filters, says):
    cmd = [sys.executable, "-m", "jitbench", "run", "--suite-file", ONE, "--suite", "one_matmul",
           "--no-calibrate", "--min-time", "0.02", "--budget", "1", "--out", tmp_path / "results",
           "--reports", tmp_path / "reports", *filters]
    if "--device" not in filters:  # not a GPU worker started only to find no GPU (~6 s for TF)
        cmd += ["--device", "cpu"]
    env = {**os.environ, "PYTHONWARNINGS": "ignore", "CUDA_VISIBLE_DEVICES": ""}
    p = subprocess.run(list(map(str, cmd)), capture_output=True, text=True, timeout=300, env=env)
    assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-3000:]
    assert "Traceback" not in p.stderr
    pages = list((tmp_path / "reports").glob("*/index.html"))
    assert len(pages) == 1, p.stdout
    text = re.sub(r"\s+", " ", pages[0].read_text(encoding="utf-8"))
    assert says in text
    if "--dump-hlo" in filters:  # the compiled programs are linked
        assert re.search(r'href="[^"]*/cases/[^"]*hlo[^"]*\.txt"', text)


def test_sweep_on_a_device_this_host_lacks_is_skipped_rows(tmp_path):
    cmd = [sys.executable, "-m", "jitbench", "sweep", "--suite", "matmul_relu", "--device", "gpu",
           "--out", tmp_path / "results", "--reports", tmp_path / "reports"]
    env = {**os.environ, "PYTHONWARNINGS": "ignore", "CUDA_VISIBLE_DEVICES": ""}
    p = subprocess.run(list(map(str, cmd)), capture_output=True, text=True, timeout=300, env=env)
    assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-3000:]
    table = [ln for ln in p.stdout.splitlines() if ln.startswith("matmul_relu/size")]
    assert {ln.split()[1] for ln in table} == {"tf", "jax"}
    assert table and all("skipped: " in ln for ln in table), p.stdout
    assert list((tmp_path / "reports").glob("*/index.html"))
