"""``jitbench compare RUN_A RUN_B``: what changed between two runs, case by case.

Loading and validation live here; the statistics are ``analysis.compare_pairs`` (each JIT
pair's speedup, A against B: what survives the drift between two runs, shown first) and
``analysis.compare_runs`` (absolute times, row by row); the terminal table and the HTML page are
``report.compare_page``; the CLI prints and picks the exit code.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from jitbench import analysis
from jitbench.errors import UserError
from jitbench.results.files import load_meta, load_results


@dataclasses.dataclass
class Comparison:
    table: Any  # DataFrame of analysis.compare_runs: absolute times, row by row
    pairs: Any  # DataFrame of analysis.compare_pairs: each JIT pair's speedup, A against B
    label_a: str
    label_b: str
    meta_a: dict
    meta_b: dict
    noise_floor: float

    def counts(self) -> dict[str, int]:
        return {k: int(v) for k, v in self.table["verdict"].value_counts().items()}


def _load(path: str | Path, which: str):
    p = Path(path)
    if not p.exists():
        raise UserError(f"{which} {str(path)!r} does not exist (give a run folder such as "
                        f"results/<run_id>, or its results.jsonl)")
    df = load_results(p)
    if df.empty:
        raise UserError(f"{which} {str(path)!r} holds no result rows")
    meta = load_meta(p) if p.is_dir() else load_meta(p.parent)
    label = str(meta.get("run_id") or (p.name if p.is_dir() else p.parent.name or p.stem))
    return df, meta, label


def compare_paths(run_a: str | Path, run_b: str | Path, *,
                  noise_floor: float = analysis.COMPARE_NOISE_FLOOR,
                  n_boot: int = analysis.N_BOOT) -> Comparison:
    """Load two runs and compare them row by row (A is the reference, B the new run)."""
    if not 0 <= noise_floor < 10:
        raise UserError(f"--noise-floor must be a percentage between 0 and 1000, got "
                        f"{100 * noise_floor:g}")
    df_a, meta_a, label_a = _load(run_a, "RUN_A")
    df_b, meta_b, label_b = _load(run_b, "RUN_B")
    if label_a == label_b:
        label_a, label_b = f"A ({label_a})", f"B ({label_b})"
    table = analysis.compare_runs(df_a, df_b, noise_floor=noise_floor, n_boot=n_boot)
    return Comparison(table, analysis.compare_pairs(df_a, df_b), label_a, label_b, meta_a,
                      meta_b, noise_floor)
