"""The report's "excluded" counts failures only: a case whose JIT row exists and is not ok (or
is ok beside a failed baseline); a case with no row for a mode (``donate`` beside a workload
without state, a mode not asked for) is not excluded (issue 64, item 4)."""

from __future__ import annotations

import numpy as np
import pytest

from jitbench import analysis as A
from jitbench.results.files import to_frame

pytestmark = pytest.mark.unit

def _row(mode, size, status="ok", t=1e-3, workload="w"):
    rng = np.random.default_rng(abs(hash((mode, size))) % 2**32)
    s = list(t * np.exp(rng.normal(0.0, 0.01, 40))) if status == "ok" else None
    return dict(run_id="r", case_id=f"{workload}-v-jax-{mode}-cpu-float32-{size}",
                workload=workload, variant="v", size=size, params={}, dtype="float32",
                framework="jax", mode=mode, jit=mode != "eager", device="cpu", status=status,
                samples=s, median_s=float(np.median(s)) if s else None,
                first_call_s=10 * t if s else None, n_samples=len(s) if s else None,
                flops=1e6, cpu_steal_pct=0.0, settled=True, steady_state_compiles=False,
                interleaved_with=["eager", "jit", "donate"])


def _tiles(rows):
    df = to_frame(rows)
    gm = A.geomean_speedups(A.speedups(df), df)
    return {m: g for m, g in zip(gm["mode"], gm.to_dict("records"))}


def test_a_run_whose_rows_are_all_ok_excludes_nothing_in_any_tile():
    # donate exists only for the training step; the other cases have no donate row at all
    rows = []
    for size in ("a", "b", "c"):
        rows += [_row("eager", size), _row("jit", size, t=5e-4), _row("aot", size, t=5e-4)]
    rows += [_row("eager", "t", workload="step"), _row("jit", "t", t=5e-4, workload="step"),
             _row("donate", "t", t=4e-4, workload="step")]
    tiles = _tiles(rows)
    assert set(tiles) == {"jit", "aot", "donate"}
    assert {m: (g["n_included"], g["n_excluded"], g["n_skipped"]) for m, g in tiles.items()} \
        == {"jit": (4, 0, 0), "aot": (3, 0, 0), "donate": (1, 0, 0)}


def test_excluded_counts_a_failed_jit_row_or_a_failed_baseline_beside_an_ok_one():
    rows = [_row("eager", "a"), _row("jit", "a", t=5e-4),                # included
            _row("eager", "b"), _row("jit", "b", status="compile_error"),  # excluded
            _row("eager", "c", status="timeout"), _row("jit", "c"),        # excluded
            _row("eager", "d"),                                           # no jit row: neither
            _row("jit", "e", t=5e-4),                                     # no baseline: neither
            _row("eager", "f", status="skipped"), _row("jit", "f", status="skipped")]
    g = _tiles(rows)["jit"]
    assert (g["n_included"], g["n_excluded"], g["n_skipped"]) == (1, 2, 1)
