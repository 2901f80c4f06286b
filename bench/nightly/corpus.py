"""The nightly corpus: what a regression detector reads of each recorded night, compact enough
to ship as a test fixture (``tests/fixtures/nightly-corpus/``) and replay in seconds.

One *series* per JIT row that has a verdict against its nearest JIT-off mode (its case id).
Per night it keeps:

- ``ratio``: JIT time / baseline time, interleaved in one worker (1 / the row's
  ``verdict_speedup``; a run without sequential verdicts: the two medians' ratio);
- ``low`` / ``high``: that ratio's interval (from ``verdict_ci_high`` / ``verdict_ci_low``;
  null without verdicts);
- ``verdict``: ``faster`` / ``slower`` / ``same`` / ``unresolved`` (or null);
- ``median_s`` and ``baseline_median_s``: the two absolute medians (secondary evidence only);
- ``compiles``: compilations in the first call; ``hlo``: the optimized HLO's fingerprint;
- ``processes``: the fresh processes the night measured the series in (their combination is
  its ratio, interval and medians; ``jitbench.nightly.repeats``; absent in older corpora: 1).

A night the series has no ok row reads null everywhere. ``nights`` lists each run's id, start
time and the framework versions; ``command`` says how the corpus was made; ``host`` where.
"""

from __future__ import annotations

import gzip
import json
import math
import os
import platform
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from jitbench.analysis.processes import combine, geometric_mean
from jitbench.define.modes import MODES
from jitbench.errors import UserError
from jitbench.nightly.repeats import repeat_rows
from jitbench.results.files import load_meta, read_rows

FORMAT = 1
VALUES = ("ratio", "low", "high", "verdict", "median_s", "baseline_median_s", "compiles", "hlo",
          "processes")
KEYS = ("workload", "variant", "size", "dtype", "framework", "mode", "device")


def _num(v: Any) -> float | None:
    try:
        v = float(v)
    except (TypeError, ValueError):
        return None
    return v if math.isfinite(v) and v > 0 else None


def _night(rows: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """case_id -> the night's values of each JIT row measured ok."""
    base = {(r.get("workload"), r.get("variant"), r.get("size"), r.get("dtype"),
             r.get("framework"), r.get("device"), r.get("mode")): r
            for r in rows if r.get("status") == "ok" and not r.get("jit")}
    out = {}
    for r in rows:
        spec = MODES.get((r.get("framework"), r.get("mode")))
        if r.get("status") != "ok" or spec is None or not spec.jit:
            continue
        b = base.get((r.get("workload"), r.get("variant"), r.get("size"), r.get("dtype"),
                      r.get("framework"), r.get("device"),
                      r.get("verdict_baseline") or spec.baseline)) or {}
        speedup, lo, hi = (_num(r.get(k)) for k in ("verdict_speedup", "verdict_ci_low",
                                                     "verdict_ci_high"))
        med, bmed = _num(r.get("median_s")), _num(b.get("median_s"))
        ratio = 1 / speedup if speedup else (med / bmed if med and bmed else None)
        if ratio is None:
            continue
        out[r["case_id"]] = {
            "keys": {k: r.get(k) for k in KEYS},
            "ratio": ratio, "low": 1 / hi if hi else None, "high": 1 / lo if lo else None,
            "verdict": r.get("verdict") if isinstance(r.get("verdict"), str) else None,
            "median_s": med, "baseline_median_s": bmed,
            "compiles": r.get("first_compiles") if isinstance(r.get("first_compiles"), int)
            else None,
            "hlo": r.get("hlo_fingerprint") if isinstance(r.get("hlo_fingerprint"), str)
            else None}
    return out


def _processes(nights: list[dict[str, dict[str, Any]]]) -> dict[str, dict[str, Any]]:
    """A night measured in several fresh processes (``jitbench.nightly.repeats``): per series,
    the first process's values with ``ratio``, ``low``, ``high`` and both medians the
    processes' combination (``jitbench.analysis.processes.combine``) and ``processes``."""
    out = {}
    for case_id, first in nights[0].items():
        mine = [n[case_id] for n in nights if case_id in n]
        c = combine([v["ratio"] for v in mine], [v["low"] for v in mine],
                    [v["high"] for v in mine])
        out[case_id] = dict(first, ratio=c["value"], low=c["low"], high=c["high"],
                            processes=c["processes"])
        for key in ("median_s", "baseline_median_s"):
            out[case_id][key] = geometric_mean([v[key] for v in mine])
    return out


def from_runs(run_dirs: Sequence[Path | str], command: str = "") -> dict[str, Any]:
    """A corpus from run folders, in the order given (oldest first)."""
    if not run_dirs:
        raise UserError("no runs to make a corpus from")
    nights, per_night = [], []
    for d in run_dirs:
        meta = load_meta(d)
        nights.append({"run_id": meta.get("run_id") or Path(d).name,
                       "started_at": meta.get("started_at"),
                       "versions": meta.get("frameworks") or {}, "commit": meta.get("git_commit")})
        per_night.append(_processes([_night(rows) for rows in (
            [read_rows(Path(d) / "results.jsonl"), *repeat_rows(Path(d))])]))
    series: dict[str, dict[str, Any]] = {}
    for i, night in enumerate(per_night):
        for case_id, v in night.items():
            s = series.setdefault(case_id, {"keys": v["keys"],
                                            **{k: [None] * len(nights) for k in VALUES}})
            for k in VALUES:
                s[k][i] = v[k]
    return {"format": FORMAT, "command": command,
            "host": {"machine": platform.machine(), "node": platform.node(),
                     "cpus": os.cpu_count()},
            "nights": nights, "series": dict(sorted(series.items()))}


def save(corpus: dict[str, Any], path: Path | str) -> Path:
    from jitbench.results.files import write_json

    return write_json(path, corpus)


def read(path: Path | str) -> Any:
    """What a corpus file (``.json`` or ``.json.gz``, of any kind) holds; UserError naming the
    file when it cannot be read."""
    path = Path(path)
    try:
        raw = path.read_bytes()
        text = gzip.decompress(raw).decode() if raw[:2] == b"\x1f\x8b" else raw.decode()
        return json.loads(text)
    except (OSError, EOFError, UnicodeDecodeError, json.JSONDecodeError, gzip.BadGzipFile
            ) as exc:
        raise UserError(f"cannot read the nightly corpus {str(path)!r}: {exc}") from None


def load(path: Path | str) -> dict[str, Any]:
    """A history corpus file, checked enough to replay; UserError naming the file and what is
    wrong otherwise."""
    path = Path(path)
    corpus = read(path)
    if not isinstance(corpus, dict) or corpus.get("format") != FORMAT \
            or not isinstance(corpus.get("series"), dict) \
            or not isinstance(corpus.get("nights"), list):
        raise UserError(f"{str(path)!r} is not a jitbench nightly corpus (format {FORMAT}: "
                        f"'nights' and 'series'; make one with `jitbench nightly --corpus`)")
    n = len(corpus["nights"])
    for case_id, s in corpus["series"].items():
        if not isinstance(s, dict) or any(not isinstance(s.get(k), list) or len(s[k]) != n
                                          for k in ("ratio", "low", "high")):
            raise UserError(f"{str(path)!r}: series {case_id!r} does not hold {n} nights of "
                            f"'ratio', 'low' and 'high'")
    return corpus
