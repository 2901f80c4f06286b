"""jitbench's figures for a compiled Keras MLP beside ``fit`` timed per epoch (issue 64, item 2).

The model: 784-256-128-10, relu, Adam, sparse cross-entropy from logits, batch 64 (TensorFlow
backend). Each run, in one process, the two in turn (the order swapped every other run):

- fit as a user times it: for graph (``jit_compile=False``) and xla (``jit_compile=True``),
  ``--models`` fresh models each, the modes alternating model by model; each
  ``model.fit(x, y, batch_size=64, epochs=--epochs, verbose=0)`` over ``--batches`` batches,
  every epoch timed by a callback (``on_epoch_begin`` to ``on_epoch_end``) and the first
  dropped: the time per step is the epoch's time over its steps.
- jitbench: ``jitbench.measure(model, x[:64], y[:64])`` on a fresh model compiled with the
  default ``jit_compile="auto"``: each mode's ``keras_fit_step_s`` (a step in fit's loop),
  ``median_s`` (the step alone) and ``keras_fit_loop_s``; with ``--dataset`` also
  ``jitbench.measure(model, x, y, batch_size=64)`` on the whole dataset.

Printed: each run's figures, then per mode the medians over runs with their range, and
jitbench's fit step over fit's own (the issue's bar: within 10%).

    .venv/bin/python docs/lab/keras-fit/keras_fit_check.py --runs 3 [--dataset] [--progress-bar]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import statistics
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import jitbench
import keras
import numpy as np

BATCH = 64


def mlp(jit_compile):
    model = keras.Sequential([keras.Input((784,)), keras.layers.Dense(256, activation="relu"),
                              keras.layers.Dense(128, activation="relu"), keras.layers.Dense(10)])
    model.compile(optimizer=keras.optimizers.Adam(1e-3), jit_compile=jit_compile,
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    return model


class EpochTimes(keras.callbacks.Callback):
    def __init__(self):
        super().__init__()
        self.seconds = []

    def on_epoch_begin(self, epoch, logs=None):
        self.began = time.perf_counter()

    def on_epoch_end(self, epoch, logs=None):
        self.seconds.append(time.perf_counter() - self.began)


def fit_per_step(x, y, models: int, epochs: int, verbose: int = 0) -> dict[str, list[float]]:
    """Per mode: each timed epoch's seconds per step (its first epoch dropped), over fresh
    models, the modes alternating model by model."""
    steps = len(x) // BATCH
    out = {"graph": [], "xla": []}
    for i in range(models):
        for mode in (("graph", "xla") if i % 2 == 0 else ("xla", "graph")):
            model, timer = mlp(mode == "xla"), EpochTimes()
            with contextlib.redirect_stdout(io.StringIO()):  # the progress bar, when asked
                model.fit(x, y, batch_size=BATCH, epochs=epochs, verbose=verbose,
                          callbacks=[timer])
            out[mode] += [s / steps for s in timer.seconds[1:]]
    return out


def jitbench_figures(x, y, batch_size=None) -> dict[str, dict]:
    model = mlp("auto")
    r = jitbench.measure(model, x, y, batch_size=batch_size)
    rows = {row["mode"]: row for row in r.rows}
    rows["summary"] = r.summary()
    return rows


def ms(v) -> str:
    return f"{v * 1e3:.3f}"


def spread(values) -> str:
    return f"{statistics.median(values):.3f} [{min(values):.3f}-{max(values):.3f}]"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--models", type=int, default=3, help="fresh models per mode and run")
    ap.add_argument("--epochs", type=int, default=6, help="epochs per model (the first dropped)")
    ap.add_argument("--batches", type=int, default=60, help="batches of 64 in fit's epoch")
    ap.add_argument("--dataset", action="store_true",
                    help="also jitbench.measure(model, x, y, batch_size=64) on the dataset")
    ap.add_argument("--progress-bar", action="store_true",
                    help="also fit with verbose=1 (its output dropped): the progress bar's cost")
    a = ap.parse_args()
    rng = np.random.default_rng(0)
    x = rng.standard_normal((a.batches * BATCH, 784)).astype(np.float32)
    y = rng.integers(0, 10, a.batches * BATCH)
    keras.utils.set_random_seed(0)
    kept = {k: [] for k in ("fit graph", "fit xla", "fit speedup", "jb graph", "jb xla",
                            "jb speedup", "jb/fit graph", "jb/fit xla", "alone graph",
                            "alone xla", "loop graph", "loop xla", "ds graph", "ds xla",
                            "ds/fit graph", "ds/fit xla", "bar graph", "bar xla")}
    for run in range(a.runs):
        jb = ds = bar = None
        order = ("fit", "jitbench") if run % 2 == 0 else ("jitbench", "fit")
        for what in order:
            if what == "fit":
                fit = fit_per_step(x, y, a.models, a.epochs)
                if a.progress_bar:
                    bar = fit_per_step(x, y, 1, a.epochs, verbose=1)
            else:
                jb = jitbench_figures(x[:BATCH], y[:BATCH])
                if a.dataset:
                    ds = jitbench_figures(x, y, batch_size=BATCH)
        f = {m: statistics.median(v) for m, v in fit.items()}
        print(f"run {run + 1} ({' then '.join(order)})")
        for m in ("graph", "xla"):
            row = jb[m]
            print(f"  {m}: fit per epoch {ms(f[m])} ms a step (median of {len(fit[m])} epochs, "
                  f"{ms(min(fit[m]))}-{ms(max(fit[m]))}); jitbench fit step "
                  f"{ms(row['keras_fit_step_s'])} ms ({row['keras_fit_step_s'] / f[m]:.3f} of "
                  f"fit's), the step alone {ms(row['median_s'])} ms, fit's loop "
                  f"{ms(row['keras_fit_loop_s'])} ms"
                  + (f"; batch_size=64 path {ms(ds[m]['keras_fit_step_s'])} ms "
                     f"({ds[m]['keras_fit_step_s'] / f[m]:.3f})" if ds else "")
                  + (f"; fit with the progress bar {ms(statistics.median(bar[m]))} ms"
                     if bar else ""))
            kept[f"fit {m}"].append(f[m] * 1e3)
            kept[f"jb {m}"].append(row["keras_fit_step_s"] * 1e3)
            kept[f"jb/fit {m}"].append(row["keras_fit_step_s"] / f[m])
            kept[f"alone {m}"].append(row["median_s"] * 1e3)
            kept[f"loop {m}"].append(row["keras_fit_loop_s"] * 1e3)
            if ds:
                kept[f"ds {m}"].append(ds[m]["keras_fit_step_s"] * 1e3)
                kept[f"ds/fit {m}"].append(ds[m]["keras_fit_step_s"] / f[m])
            if bar:
                kept[f"bar {m}"].append(statistics.median(bar[m]) * 1e3)
        kept["fit speedup"].append(f["graph"] / f["xla"])
        kept["jb speedup"].append(jb["xla"]["keras_fit_speedup"])
        print(f"  xla over graph: fit {f['graph'] / f['xla']:.3f}x; jitbench as fit runs them "
              f"{jb['xla']['keras_fit_speedup']:.3f}x [{jb['xla']['keras_fit_ci_low']:.3f}-"
              f"{jb['xla']['keras_fit_ci_high']:.3f}]")
        print(f"  jitbench's summary: {jb['summary']}")
    print(f"\nover {a.runs} run(s): median [min-max]")
    for key, values in kept.items():
        if values:
            unit = "" if "/" in key or "speedup" in key else " ms"
            print(f"  {key:14s} {spread(values)}{unit}")


if __name__ == "__main__":
    main()
