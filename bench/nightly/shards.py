"""A night over several machines: ``shard`` splits one night's case groups over N machines
(deterministically, every machine computing the same split), ``merge`` puts the shards' rows
back into one run (``jitbench merge``)."""

from __future__ import annotations

import hashlib
import shutil
from collections.abc import Sequence
from pathlib import Path

from jitbench.define.workload import Case, group_cases
from jitbench.errors import UserError
from jitbench.nightly import repeats as repeats_mod
from jitbench.results.files import load_meta, read_rows
from jitbench.results.record import write_merged


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
    merged_rows: list[dict] = []
    metas = []
    for d in shard_dirs:
        d = Path(d)
        if not (d / "results.jsonl").is_file():
            raise UserError(f"{str(d)!r} is not a run folder (no results.jsonl in it)")
        metas.append(load_meta(d))
        for row in read_rows(d / "results.jsonl", as_written=True):
            if row.get("case_id") in seen:
                continue
            seen.add(row.get("case_id"))
            merged_rows.append(dict(row, run_id=out.name))
    write_merged(out, metas, merged_rows)  # every shard's machine kept, a difference noted
    for d in shard_dirs:  # keep the workers' logs next to the merged rows
        logs = Path(d) / "logs"
        if logs.is_dir():
            shutil.copytree(logs, out / "logs" / Path(d).name, dirs_exist_ok=True)
        # and the shard's further processes: a series' point combines its own shard's
        # (jitbench.analysis.history.combined_points goes series by series)
        more = Path(d) / repeats_mod.FOLDER
        for run in (sorted(more.iterdir()) if more.is_dir() else []):
            shutil.copytree(run, out / repeats_mod.FOLDER / run.name, dirs_exist_ok=True)
    return out
