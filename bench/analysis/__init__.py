"""Analysis: pure functions from result DataFrames (``jitbench.results.files.load_results``) to
DataFrames. Nothing here prints, plots or reads files; ``jitbench.report`` renders what this
returns.

Definitions used everywhere (the report quotes them):

- **speedup** of a JIT-on mode against a JIT-off baseline of the same case = baseline median /
  JIT median of the per-call time (> 1: JIT is faster). Its 95% interval is a percentile
  bootstrap of that ratio of medians, resampling each mode's raw ``samples`` independently.
  A speedup is *significant* only when the interval excludes 1 **and** the change exceeds the
  noise floor (default 2%).
- **compile cost** of a mode = first call − steady-state (median) call.
- **amortized cost** of the first N calls = first call + the measured calls 2..5 + the median
  for every further call. **Break-even calls** = the smallest N from which JIT's total stays at
  or below the baseline's: ``ceil(extra compile cost / (baseline − JIT) per call)`` when calls
  2..5 run at the median. The baseline's own first-call cost (``tf.function`` tracing, JAX
  op-by-op compilation) counts on its side. ``inf`` ("never") when JIT is not faster per call.
- **geomean** speedup per framework, device and pair of modes, over cases where both modes
  matched the float64 reference; the excluded cases are counted, never silently dropped.
- **crossover size**: where the speedup crosses 1 as the work per call grows (sizes are ordered
  by the FLOPs of one call, never by their label).

One module per section: ``values`` (reading a row), ``stats`` (bootstrap, significance,
geomean, noise verdict), ``costs`` (amortized cost, break-even), ``speedups``, ``sizes``
(size order, crossovers), ``calibration`` (peak, dispatch floors, efficiency), ``summary``
(per-row facts, headline numbers), ``roofline`` (ceilings, intensity, % of bound, XLA's
FLOPs vs the formula's), ``compare`` (run to run), ``control`` (A/A controls and
the intervals they widen). This package re-exports them.
"""

from jitbench.analysis.calibration import (
    DISPATCH_BOUND_SHARE,
    calibration_frames,
    efficiency,
    peak_gflops,
)
from jitbench.analysis.compare import (
    COMPARE_NOISE_FLOOR,
    MIN_ROWS_FOR_SPREAD,
    SPREAD_Z,
    compare_drift,
    compare_pairs,
    compare_runs,
    regressions_over,
    run_to_run_spread,
)
from jitbench.analysis.control import (AA_VERDICTS, SCATTER_Z, aa_bands, aa_controls, aa_scatter,
                                       in_band, widen)
from jitbench.analysis.costs import amortized_cost, amortized_curves, break_even_calls
from jitbench.analysis.roofline import bandwidth_gbps, ceilings, flops_check, roofline
from jitbench.analysis.sizes import SERIES_KEYS, crossovers, size_order
from jitbench.analysis.speedups import NO_JIT, geomean_speedups, is_nearest, speedups, why_no_pairs
from jitbench.analysis.stats import (
    CONFIDENCE,
    FEW_SAMPLES,
    N_BOOT,
    NOISE_FLOOR,
    NOISY_REL_IQR,
    NOISY_STEAL_PCT,
    QUIET_REL_IQR,
    QUIET_STEAL_PCT,
    bootstrap_ratio_ci,
    geomean,
    is_significant,
    noise_verdict,
)
from jitbench.analysis.headline import headline_numbers, row_facts
from jitbench.analysis.values import CASE_KEYS, ROW_KEYS, group_records

__all__ = [
    "CASE_KEYS", "COMPARE_NOISE_FLOOR", "CONFIDENCE", "DISPATCH_BOUND_SHARE", "FEW_SAMPLES",
    "AA_VERDICTS", "NO_JIT", "SCATTER_Z", "aa_bands", "aa_controls", "aa_scatter", "in_band",
    "widen",
    "MIN_ROWS_FOR_SPREAD", "NOISE_FLOOR", "NOISY_REL_IQR", "NOISY_STEAL_PCT", "N_BOOT",
    "QUIET_REL_IQR", "QUIET_STEAL_PCT", "ROW_KEYS", "SERIES_KEYS", "SPREAD_Z",
    "amortized_cost", "amortized_curves", "bandwidth_gbps", "ceilings", "flops_check",
    "roofline", "bootstrap_ratio_ci", "break_even_calls",
    "calibration_frames", "compare_drift", "group_records", "compare_pairs", "compare_runs",
    "crossovers", "efficiency",
    "geomean", "geomean_speedups", "is_nearest", "is_significant", "noise_verdict",
    "peak_gflops", "regressions_over", "row_facts", "run_to_run_spread", "size_order",
    "speedups", "headline_numbers", "why_no_pairs",
]
