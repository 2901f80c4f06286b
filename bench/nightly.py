"""``jitbench nightly``: run, add to the history, detect regressions, re-measure suspects once,
write the history page and a machine-readable summary; exit 1 on a confirmed regression.

Also the scale-out pieces: ``shard`` (split one night's case groups over N machines,
deterministically) and ``merge`` (put the shards' rows back into one run).
"""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path
from typing import Any, Sequence

from . import meta as meta_mod
from .errors import UserError
from .history import Thresholds, detect_regressions
from .results import load_meta, load_results, read_rows
from .workload import Case, group_cases

SUMMARY_NAME = "nightly-summary.json"


# --------------------------------------------------------------------------- scale-out

def parse_shard(text: str) -> tuple[int, int]:
    """'K/N' -> (K, N), 1 <= K <= N."""
    try:
        k, n = (int(x) for x in text.split("/"))
    except ValueError:
        raise UserError(f"--shard must look like K/N (e.g. 2/4), got {text!r}") from None
    if not (n >= 1 and 1 <= k <= n):
        raise UserError(f"--shard {text!r}: need 1 <= K <= N")
    return k, n


def shard(cases: Sequence[Case], k: int, n: int) -> list[Case]:
    """The cases of shard k of n. Groups (the modes interleaved together) are never split;
    groups are ordered by a hash of their key so every machine computes the same split, and
    dealt round-robin so shards get similar mixes of workloads."""
    groups = group_cases(cases)
    groups.sort(key=lambda g: hashlib.sha256(repr(g[0].group_key).encode()).hexdigest())
    return [c for i, g in enumerate(groups) if i % n == k - 1 for c in g]


def merge(shard_dirs: Sequence[Path | str], out_dir: Path | str) -> Path:
    """Concatenate the rows of several shard runs into one run folder (no duplicate case)."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    seen: set[str] = set()
    lines: list[str] = []
    metas = []
    for d in shard_dirs:
        d = Path(d)
        if not (d / "results.jsonl").is_file():
            raise UserError(f"{str(d)!r} is not a run folder (no results.jsonl in it)")
        metas.append(load_meta(d))
        for row in read_rows(d / "results.jsonl"):
            if row["case_id"] in seen:
                continue
            seen.add(row["case_id"])
            row["run_id"] = out.name
            lines.append(json.dumps(row))
    (out / "results.jsonl").write_text("\n".join(lines) + "\n")
    merged = dict(metas[0]) if metas else {}
    merged.update(run_id=out.name, shards=[m.get("shard") or m.get("run_id") for m in metas],
                  status="complete" if all(m.get("status") == "complete" for m in metas)
                  else "incomplete",
                  started_at=min((m.get("started_at") or "" for m in metas), default=None),
                  finished_at=max((m.get("finished_at") or "" for m in metas), default=None),
                  n_cases=len(seen))
    meta_mod.write(out, merged)
    for d in shard_dirs:  # keep the workers' logs next to the merged rows
        logs = Path(d) / "logs"
        if logs.is_dir():
            shutil.copytree(logs, out / "logs" / Path(d).name, dirs_exist_ok=True)
    return out


# --------------------------------------------------------------------------- history

def run_dirs(results_root: Path | str) -> list[Path]:
    """Runs under ``results_root``, oldest first (by start time in meta.json)."""
    root = Path(results_root)
    runs = [d for d in root.iterdir() if (d / "results.jsonl").is_file()] \
        if root.is_dir() else []
    return sorted(runs, key=lambda d: (load_meta(d).get("started_at") or "", d.name))


def analyse(results_root: Path | str, thresholds: Thresholds = Thresholds()):
    """(history DataFrame, run order, regression table) for the runs under results_root."""
    runs = run_dirs(results_root)
    if not runs:
        raise UserError(f"no runs under {str(results_root)!r}")
    df = load_results(runs)
    order = [load_meta(d).get("run_id") or d.name for d in runs]
    reg = detect_regressions(df, order, thresholds) if len(order) > 1 else None
    return df, order, reg


def summary(order: list[str], suspects, confirmed, rechecked: bool) -> dict[str, Any]:
    def records(t):
        return [] if t is None else t[t["regression"]].to_dict("records")

    return {"latest_run": order[-1], "runs": order, "rechecked": rechecked,
            "suspected": records(suspects), "confirmed": records(confirmed),
            "regression": bool(len(records(confirmed)))}


def nightly(cases: Sequence[Case], results_root: Path | str, reports_root: Path | str, *,
            protocol, thresholds: Thresholds = Thresholds(), do_run: bool = True,
            recheck: bool = True, case_timeout: float = 1800.0, command=None,
            on_progress=None, run_id: str | None = None) -> dict[str, Any]:
    """One night: returns the summary (also written as JSON next to the history page)."""
    from . import runner
    from .report import write_report
    from .report.history_page import write_history_page

    results_root, reports_root = Path(results_root), Path(reports_root)
    if do_run:
        run_dir = runner.run(cases, results_root, protocol=protocol, case_timeout=case_timeout,
                             command=command, on_progress=on_progress, run_id=run_id,
                             calibrate=True)
        write_report(run_dir, reports_root / run_dir.name)
    df, order, suspects = analyse(results_root, thresholds)
    latest_dir = results_root / order[-1]
    if not (reports_root / order[-1] / "index.html").exists():
        write_report(latest_dir, reports_root / order[-1])
    confirmed, rechecked = suspects, False
    if suspects is not None and suspects["regression"].any() and recheck:
        # re-measure whole groups, so the suspect is interleaved with its partners again
        suspect_ids = set(suspects.loc[suspects["regression"], "case_id"])
        latest = [Case.from_row(r) for r in read_rows(latest_dir / "results.jsonl")]
        keys = {c.group_key for c in latest if c.case_id in suspect_ids}
        again = [c for c in latest if c.group_key in keys]
        # each analysis of the same night (e.g. `--no-run` twice) re-measures afresh
        recheck_dir = runner.run(again, latest_dir / "rechecks", protocol=protocol,
                                 case_timeout=case_timeout, run_id=runner.new_run_id(),
                                 command=command, on_progress=on_progress)
        rows = load_results(recheck_dir)
        redo = detect_regressions(df, order, thresholds, latest_rows=rows)
        redo["regression"] &= redo["case_id"].isin(suspect_ids)
        confirmed, rechecked = redo, True
    result = summary(order, suspects, confirmed, rechecked)
    reports_root.mkdir(parents=True, exist_ok=True)
    write_history_page(df, order, results_root, reports_root, result)
    text = json.dumps(result, indent=2, default=str)
    (reports_root / SUMMARY_NAME).write_text(text)
    (latest_dir / SUMMARY_NAME).write_text(text)
    return result
