"""Figures drawn in worker processes are the same bytes as figures drawn in this process, come
back under their own keys, and a figure that fails fails the page."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from bench.report import draw, figures


def _table(n: int):
    rows = [{"workload": "w", "variant": "v", "dtype": "float32", "size": f"s{i}",
             "framework": "jax", "mode": "jit", "ratio": 1.0 + 0.1 * i,
             "change_pct": 10.0 * i, "ci_low": 0.9 + 0.1 * i, "ci_high": 1.1 + 0.1 * i,
             "verdict": "regression" if i else "unchanged"} for i in range(n)]
    return pd.DataFrame(rows)


def _boom(x):
    raise ValueError(f"cannot draw {x}")


def test_parallel_drawing_matches_drawing_here():
    jobs = {("a", i): draw.Job(figures.compare_chart, (_table(n),), weight=n)
            for i, n in enumerate((2, 5, 9))}
    jobs[("b", "empty")] = draw.Job(figures.compare_chart, (_table(0).assign(ratio=[]),))
    with draw.Drawing(jobs, workers=1) as here:
        serial = dict(here)
    with draw.Drawing(jobs, workers=2) as there:
        assert dict(there.of("a")) == {i: serial[("a", i)] for i in range(3)}
        assert there.of("b")["empty"] is None  # nothing to draw
    assert all(serial[("a", i)].startswith("data:image/png;base64,") for i in range(3))
    assert len({serial[("a", i)] for i in range(3)}) == 3  # each key its own figure


def test_a_failing_figure_fails_the_page():
    jobs = {"ok": draw.Job(figures.compare_chart, (_table(2),)),
            "bad": draw.Job(_boom, (math.pi,))}
    with draw.Drawing(jobs, workers=2) as drawing:
        assert drawing["ok"].startswith("data:image/png")
        with pytest.raises(ValueError, match="cannot draw 3.14"):
            drawing["bad"]
