"""Figures drawn in worker processes are the same bytes as figures drawn in this process, come
back under their own keys, and a figure that fails fails the page."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from jitbench.report import draw, figures

pytestmark = pytest.mark.unit  # no child process, no framework import


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


def _png(uri):
    import base64
    import io

    from PIL import Image

    return Image.open(io.BytesIO(base64.b64decode(uri.split(",", 1)[1])))


def _figure_with_text_at(x, y):
    plt = figures.pyplot()
    fig, ax = plt.subplots(figsize=(2, 2))
    ax.plot([0, 1], [0, 1])
    fig.text(x, y, "OUTSIDE", color="red", fontsize=14)  # figure coordinates
    return fig


@pytest.mark.parametrize("x, y", [(1.2, 0.5), (-1.6, 0.5), (0.5, 2.0), (0.3, -0.9), (-2.6, 0.5)])
def test_what_sits_outside_the_figure_is_in_the_picture(x, y):
    """Cropped like savefig(bbox_inches="tight"): text beyond the figure's edge (here up to
    5.2 in past it, beyond MARGIN_IN: drawn the "tight" way) is kept, with the white pad around it, never cut."""
    import numpy as np

    img = np.asarray(_png(figures.to_data_uri(_figure_with_text_at(x, y))).convert("RGB"))
    red = (img[..., 0] > 200) & (img[..., 1] < 80) & (img[..., 2] < 80)
    rows, cols = np.flatnonzero(red.any(axis=1)), np.flatnonzero(red.any(axis=0))
    assert rows.size and cols.size, "the text outside the figure was cut off"
    pad = round(figures.PAD_IN * figures.DPI)
    h, w = red.shape
    ink = (img != 255).any(axis=2)
    r, c = np.flatnonzero(ink.any(axis=1)), np.flatnonzero(ink.any(axis=0))
    assert abs(r[0] - pad) <= 4 and abs(c[0] - pad) <= 4  # a pad of white all round
    assert abs(h - 1 - r[-1] - pad) <= 4 and abs(w - 1 - c[-1] - pad) <= 4
    # the plot itself (2 in square) and the text both fit: the picture grew towards the text
    assert (w > 2 * figures.DPI) if x > 1 or x < 0 else (h > 2 * figures.DPI)


@pytest.mark.parametrize("workers", [1, 2])
def test_a_deferred_figure_is_made_once_and_drawn_like_a_ready_one(workers):
    made = []

    def make():
        made.append(1)
        return draw.Job(figures.compare_chart, (_table(4),))

    ready = draw.Job(figures.compare_chart, (_table(4),))
    jobs = {("a", "ready"): ready, ("a", "later"): draw.Deferred(make), ("b", "x"): ready}
    with draw.Drawing(jobs, workers=workers) as d:
        assert (d.deferred("a"), d.deferred("b")) == (1, 0)
        assert d[("a", "later")] == d[("a", "ready")] == d[("b", "x")]
        assert d[("a", "later")].startswith("data:image/png;base64,")
    assert made == [1]
