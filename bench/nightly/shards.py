"""A night over several machines: ``shard`` splits one night's case groups over N machines
(deterministically, every machine computing the same split), ``shard_night`` measures one
shard as the night would (its side of a change night's A/B included), ``merge`` puts the
shards' rows and A/B runs back into one run (``jitbench merge``)."""

from __future__ import annotations

import hashlib
import shutil
from collections.abc import Sequence
from pathlib import Path

from jitbench.define.workload import Case, group_cases
from jitbench.errors import UserError
from jitbench.results.files import load_meta, load_night, read_rows
from jitbench.results.record import write_merged
from jitbench.results.run_folder import CHANGE, LOGS, REPEATS


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
    from jitbench.nightly import state

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    # a merged night is a night, pending until judged; a shard that never reached the merge
    # (its folder lost, its run killed) is named, so the night is never good without it
    state.begin(out, kind="merged", **_shards_seen(shard_dirs))
    seen: set[str] = set()
    merged_rows: list[dict] = []
    metas = []
    for d in shard_dirs:
        d = Path(d)
        if not (d / "results.jsonl").is_file() and load_night(d).get("shard"):
            continue  # a shard killed before its first row: named missing (_shards_seen)
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
        logs = Path(d) / LOGS
        if logs.is_dir():
            shutil.copytree(logs, out / LOGS / Path(d).name, dirs_exist_ok=True)
        # and the shard's further processes: a series' point combines its own shard's
        # (jitbench.analysis.history.combined_points goes series by series), and its side of
        # a change night's A/B (its own groups; the night judges them together)
        for folder in (REPEATS, CHANGE):
            more = Path(d) / folder
            for run in (sorted(more.iterdir()) if more.is_dir() else []):
                shutil.copytree(run, out / folder / run.name, dirs_exist_ok=True)
    state.finished(out, "merge")
    return out


def _shards_seen(shard_dirs: Sequence[Path | str]) -> dict:
    """``shards`` (N) and ``missing_shards`` (``K/N`` of each shard of the night that is not
    among ``shard_dirs``, or whose run did not finish), from each shard's record
    (:func:`shard_night`); {} for shards that kept none (an older jitbench)."""
    said = {Path(d): load_night(d) for d in shard_dirs}
    marks = [(d, n.get("shard")) for d, n in said.items() if n.get("shard")]
    if not marks:
        return {}
    total = max(int(m.split("/")[1]) for _, m in marks)
    # its run finished: recorded so, or completed by `jitbench run --resume` after a kill
    done = {int(m.split("/")[0]) for d, m in marks
            if "run" in (said[d].get("phases") or {})
            or load_meta(d).get("status") == "complete"}
    return {"shards": total,
            "missing_shards": [f"{k}/{total}" for k in range(1, total + 1) if k not in done]}


FOLDER = "shards"  # under the results root: RESULTS/shards/K/NIGHT, one per shard


def shard_night(cases: Sequence[Case], results_root: Path | str, run_id: str, k: int, n: int,
                options) -> dict:
    """Shard ``k`` of ``n`` of the night ``run_id``: its case groups measured as a night
    measures them (``options``: the night's ``jitbench.nightly.options.NightOptions``) into
    ``RESULTS/shards/K/NIGHT`` (not yet a night of the history), and, when the software changed
    since the history's last good night, its own touched groups measured in both environments
    side by side (``jitbench.nightly.change_ab.measure``, within the time its own run took) under
    that folder's ``change/``. ``jitbench merge RESULTS/shards/*/NIGHT -o RESULTS/NIGHT`` then
    ``jitbench nightly --no-run`` judge the whole night, the shards' pairs together. Returns
    what the shard did."""
    from jitbench.nightly import change, change_ab, state
    from jitbench.nightly.runs import comparable, run_dirs
    from jitbench.run import runner

    root = Path(results_root)
    if (root / FOLDER / str(k) / run_id / "results.jsonl").exists():
        raise UserError(f"--run-id {run_id!r}: shard {k}/{n} of that night was measured already "
                        f"({str(root / FOLDER / str(k) / run_id)!r}); name a new night")
    shard_dir = state.begin(root / FOLDER / str(k) / run_id, kind="shard", shard=f"{k}/{n}")
    run_dir = runner.run(cases, root / FOLDER / str(k), run_id=run_id, calibrate=True,
                         **options.runner_kw())
    state.finished(shard_dir, "run")
    mine = load_meta(run_dir)
    metas = {load_meta(d).get("run_id") or d.name: load_meta(d) for d in run_dirs(root)}
    facts = {"run_dir": str(run_dir), "shard": f"{k}/{n}", "change": None}
    if options.on_change != "ab":
        return facts
    # tonight is this shard's run, not yet a night of the history: judged as the latest
    metas[run_id] = mine
    plan = change.plan_for(root, comparable(metas, list(metas)), metas)
    if plan is None:
        return facts
    facts["change"] = plan.facts()
    if plan.changes and not plan.blocked:
        spent = mine.get("elapsed_s")
        facts["change"] = change_ab.measure(
            plan, cases, run_dir, options.thresholds.steady,
            process_profile=options.process_profile or "default",
            time_limit=float(spent) if isinstance(spent, (int, float)) else None,
            case_timeout=options.case_timeout, on_progress=options.on_progress,
            pairs=options.change_pairs, pairing=options.pairing,
            compile_threshold=options.thresholds.compile, results_root=root)
        state.finished(shard_dir, "ab")
    return facts
