"""matplotlib plumbing shared by every figure: PNG data URIs (so the page stands alone), axes
labelled in units, log axes, panel grids, one colour per mode; and the compare page's chart.

Figure functions (here and in ``jitbench.report.sections``) take plain DataFrames and return a
``data:`` URI, or None when there is nothing to draw, so ``jitbench.report.draw`` can run them in
worker processes. Every axis carries its unit; time axes are log-scaled and labelled in
s / ms / µs. A mode's colour and short label are its declaration's (``jitbench.define.modes``).
"""

from __future__ import annotations

import base64
import io
import math

import numpy as np

from jitbench.define.modes import MODES
from jitbench.report import fmt

DPI = 100
FULL_WIDTH_IN = 12.0  # ~1200 px at DPI 100: the page's content width at 1280 px

VERDICT_COLORS = {"faster": "#1a7f37", "slower": "#c62828", "no difference": "#777777"}


def pyplot():
    import matplotlib

    matplotlib.use("Agg")  # no display; set before pyplot is imported
    import matplotlib.pyplot as plt

    return plt


PAD_IN = 0.1  # white border kept around what a figure draws (savefig's pad_inches)
MARGIN_IN = 4.0  # room drawn around the figure for what sits outside it (legends, titles)


def to_data_uri(fig) -> str:
    """The figure as a PNG ``data:`` URI, cropped to what it draws plus ``PAD_IN``: the
    picture of ``savefig(bbox_inches="tight")`` for a third of its time.

    "tight" lays the figure out twice and measures every tick label once more before drawing
    it. Instead the figure is drawn once, with ``MARGIN_IN`` of room on every side for legends
    and titles placed outside it, and cropped to its non-background pixels. A figure that
    reaches the edge of that room is saved the "tight" way, so nothing is ever cut off.
    """
    png = _drawn_once(fig)
    if png is None:
        buf = io.BytesIO()
        fig.savefig(buf, format="png", dpi=DPI, bbox_inches="tight")
        png = buf.getvalue()
    pyplot().close(fig)
    return "data:image/png;base64," + base64.b64encode(png).decode("ascii")


def _drawn_once(fig) -> bytes | None:
    from matplotlib.colors import to_rgba_array
    from matplotlib.transforms import Bbox
    from PIL import Image

    w_in, h_in = fig.get_size_inches()
    room = Bbox.from_extents(-MARGIN_IN, -MARGIN_IN, w_in + MARGIN_IN, h_in + MARGIN_IN)
    buf = io.BytesIO()
    fig.savefig(buf, format="rgba", dpi=DPI, bbox_inches=room)
    raw = np.frombuffer(buf.getvalue(), dtype=np.uint8)
    width = round(room.width * DPI)
    if width <= 0 or raw.size % (4 * width):
        return None
    rgba = raw.reshape(-1, width, 4)
    background = np.round(to_rgba_array(fig.get_facecolor())[0] * 255).astype(np.uint8)
    ink = rgba.view(np.uint32)[..., 0] != background.view(np.uint32)[0]  # a pixel as one word
    rows, cols = np.flatnonzero(ink.any(axis=1)), np.flatnonzero(ink.any(axis=0))
    if not rows.size or rows[0] == 0 or cols[0] == 0 or rows[-1] == rgba.shape[0] - 1 \
            or cols[-1] == width - 1:
        return None  # blank, or it may run past the room drawn for it
    if _placed_beyond(fig, MARGIN_IN * DPI):
        return None
    pad = round(PAD_IN * DPI)
    crop = rgba[max(rows[0] - pad, 0):rows[-1] + pad + 1, max(cols[0] - pad, 0):cols[-1] + pad + 1]
    out = io.BytesIO()
    Image.fromarray(crop, "RGBA").save(out, format="png", compress_level=3)  # 6: +40% time
    return out.getvalue()


def _placed_beyond(fig, room_px: float) -> bool:
    """Whether a text or legend lies wholly outside the room drawn around the figure, where
    its pixels cannot show it. (What only reaches past the room, like a long tick label,
    has pixels at the room's edge.) Their sizes are known from the drawing: this is cheap."""
    renderer = getattr(fig.canvas, "renderer", None) or fig.canvas.get_renderer()  # drawn's
    w, h = fig.bbox.width, fig.bbox.height
    loose = list(fig.texts) + list(fig.legends)  # titles and axis labels hug their axes
    for ax in fig.axes:
        loose += [*ax.texts, *([ax.get_legend()] if ax.get_legend() else [])]
    for a in loose:
        if not a.get_visible():
            continue
        b = a.get_window_extent(renderer)
        if b.x1 < -room_px or b.y1 < -room_px or b.x0 > w + room_px or b.y0 > h + room_px:
            return True
    return False


def text(s) -> str:
    """Run strings reach matplotlib as plain text: '$' would start mathtext."""
    return str(s).replace("$", r"\$")


def title(ax, label: str, **kw) -> None:
    """``ax.set_title`` at the top of the axes (y=1.0). matplotlib's automatic placement would
    measure every tick label of the axes on each draw (~15% of the drawing time) only to find
    the same place: no figure here has tick labels above its axes or an offset text."""
    ax.set_title(label, y=1.0, **kw)


def color(framework, mode) -> str:
    """The mode's colour, the same in every figure."""
    spec = MODES.get((framework, mode))
    return spec.color if spec else "#444444"


def mode_label(framework, mode) -> str:
    """The mode's short label for tick labels (may hold a line break)."""
    spec = MODES.get((framework, mode))
    return spec.label if spec else str(mode)


_IN_VIEW: list = []
MINOR_TICK_DECADES = 4  # a log axis spanning more decades than this has no minor ticks
MINOR_2_5_DECADES = 1  # ... and over more than this, minor ticks at 2 and 5 only


def _in_view_locator(minor: bool = False, **kw):
    """A ``LogLocator`` that returns only the ticks inside the view (with a hair of slack).

    matplotlib builds a Tick (two lines, two labels) for every location a locator returns and
    only then drops those outside the view; a log locator returns a decade or more beyond each
    end. Leaving them out draws the same picture, pixel for pixel, ~20% faster. ``minor``:
    thin the ticks on long axes (eight a decade over several decades are a grey smear that
    cost half of a small panel's drawing): at 2 and 5 over more than ``MINOR_2_5_DECADES``,
    none over more than ``MINOR_TICK_DECADES``.
    """
    if not _IN_VIEW:
        from matplotlib.ticker import LogLocator

        class InViewLogLocator(LogLocator):
            thin = False

            def __call__(self):
                lo, hi = sorted(self.axis.get_view_interval())
                try:
                    locs = super().__call__()
                except ValueError:  # a degenerate view (values ~0 or not finite): no ticks
                    return np.zeros(0)
                if lo <= 0:
                    return locs
                locs = np.asarray(locs)
                locs = locs[(locs >= lo / 1.001) & (locs <= hi * 1.001)]
                decades = math.log10(hi / lo)
                if self.thin and decades > MINOR_TICK_DECADES:
                    return locs[:0]
                if self.thin and decades > MINOR_2_5_DECADES and locs.size:
                    mantissa = np.round(locs / 10 ** np.floor(np.log10(locs) + 1e-9))
                    locs = locs[(mantissa == 2) | (mantissa == 5)]
                return locs

        _IN_VIEW.append(InViewLogLocator)
    locator = _IN_VIEW[0](**kw)
    locator.thin = minor
    return locator


def log_scale(ax, which: str) -> None:
    """``ax.set_xscale("log")`` (``which`` "x") or ``set_yscale``, with in-view tick locators
    in place of the scale's own (base 10; minor ticks at 2..9, thinned on long axes)."""
    (ax.set_xscale if which == "x" else ax.set_yscale)("log")
    axis = ax.xaxis if which == "x" else ax.yaxis
    axis.set_major_locator(_in_view_locator(base=10))
    axis.set_minor_locator(_in_view_locator(minor=True, base=10, subs="auto"))


def log_axis(axis, label) -> None:
    """Label a log axis with ``label(value)``; minor ticks get labels (at 2 and 5) only when
    the axis spans too little for its decades to carry enough major labels."""
    from matplotlib.ticker import FuncFormatter

    def minor(v, _):
        lo, hi = axis.get_view_interval()
        if not (v > 0 and lo > 0) or hi / lo > 30:
            return ""
        mantissa = v / 10 ** math.floor(math.log10(v) + 1e-9)
        return label(v) if round(mantissa) in (2, 5) or hi / lo < 4 else ""

    axis.set_major_formatter(FuncFormatter(lambda v, _: label(v)))
    axis.set_minor_formatter(FuncFormatter(minor))


def time_axis(axis) -> None:
    log_axis(axis, fmt.secs)


def flop_axis(axis) -> None:
    log_axis(axis, fmt.flop)


def ratio_axis(axis) -> None:
    from matplotlib.ticker import FuncFormatter

    axis.set_major_locator(_in_view_locator(base=10, subs=(1.0, 2.0, 5.0)))
    axis.set_minor_formatter(FuncFormatter(lambda v, _: ""))
    axis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}×"))


def grid(n: int, cols: int, w: float = FULL_WIDTH_IN, h: float = 3.0,
          hspace_in: float = 1.0, wspace: float = 0.32):
    """n panels in rows of ``cols``; spacing set by hand (tight_layout costs ~1 s a figure),
    ``hspace_in`` inches between rows for titles and x labels."""
    plt = pyplot()
    cols = max(1, min(cols, n))
    rows = math.ceil(n / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(w, h * rows), squeeze=False)
    fig.subplots_adjust(left=0.07, right=0.98, bottom=0.8 / (h * rows),
                        top=1 - 0.55 / (h * rows), wspace=wspace,
                        hspace=hspace_in / max(h - hspace_in, 0.5))
    for ax in axes.flat[n:]:
        ax.set_visible(False)
    return fig, list(axes.flat[:n])


def finite(*vals) -> bool:
    return all(v is not None and not (isinstance(v, float) and not math.isfinite(v))
               for v in vals)


# --------------------------------------------------------------------------- compare

def compare_chart(cmp) -> str | None:
    """Change of every row between two runs, with its 95% interval; flagged rows coloured."""
    both = cmp[cmp["ratio"].notna()]
    if both.empty:
        return None
    plt = pyplot()
    both = both.sort_values(["workload", "variant", "dtype", "size", "framework", "mode"])
    n = len(both)
    fig, ax = plt.subplots(figsize=(FULL_WIDTH_IN * 0.75, 1.0 + 0.2 * n))
    y = np.arange(n)[::-1]
    colors = {"regression": "#c62828", "improvement": "#1a7f37", "unchanged": "#777777"}
    labels = []
    for yi, r in zip(y, both.to_dict("records")):
        c = colors.get(r["verdict"], "#777")
        if finite(r["ci_low"], r["ci_high"]):
            ax.plot([100 * (r["ci_low"] - 1), 100 * (r["ci_high"] - 1)], [yi, yi], color=c,
                    linewidth=2, alpha=0.6)
        ax.plot([r["change_pct"]], [yi], "o", color=c, markersize=4)
        labels.append(text(f"{r['workload']} {r['variant']} {r['dtype']} {r['size']} · "
                            f"{r['framework']} {r['mode']}"))
    ax.axvline(0, color="black", linewidth=1)
    ax.set_yticks(y)
    ax.set_yticklabels(labels, fontsize=7)
    ax.set_ylim(-0.7, n - 0.3)
    ax.set_xlabel("change of the median time per call, B vs A [%] (> 0: B slower); "
                  "bar: 95% bootstrap interval")
    ax.grid(axis="x", alpha=0.3)
    return to_data_uri(fig)
