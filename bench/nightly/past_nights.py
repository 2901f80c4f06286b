"""The past nights a night is judged against (its history): every run under a results root,
the runs measured the same way, the nights a moved machine left unjudged, and the nights a team
accepted (``jitbench nightly --accept``), which restart the nights it is judged against (the
reference, as users' pages call it)."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from jitbench.analysis.history import Thresholds, detect_regressions, points_table
from jitbench.analysis.machine import waiting_nights
from jitbench.errors import UserError
from jitbench.nightly import repeats as repeats_mod
from jitbench.nightly.runs import comparable, run_dirs
from jitbench.results.files import load_acceptance, load_meta, load_results, write_acceptance


@dataclasses.dataclass
class History:
    """The runs under a results root and the verdict on the latest."""

    df: Any  # every row of every run
    order: list[str]  # run ids, oldest first
    metas: dict[str, dict[str, Any]]
    points: Any  # history.points_table
    tests: Any  # history.detect_regressions of the latest run
    judged: list[str]  # the runs measured under the latest run's protocol, oldest first
    # the nights the latest run is judged against (its reference, as users' pages call it):
    # ``judged`` but for the nights a moved machine left unjudged
    # just before it (``jitbench.analysis.machine.waiting_nights``), the latest last
    judged_against: list[str] = dataclasses.field(default_factory=list)
    waiting: list[str] = dataclasses.field(default_factory=list)
    # the nights a team accepted (jitbench nightly --accept): {run id: reason, accepted_at}
    accepted: dict[str, dict[str, Any]] = dataclasses.field(default_factory=dict)


def analyse(results_root: Path | str, thresholds: Thresholds | None = None,
            latest: str | None = None) -> History:
    """The history under ``results_root`` and the verdict on its latest run (``latest``: that
    run, the runs that started after it left out), against the earlier runs measured the same
    way (:func:`comparable`)."""
    runs = run_dirs(results_root)
    if not runs:
        raise UserError(f"no runs under {str(results_root)!r}")
    if latest is not None:
        ids = [load_meta(d).get("run_id") or d.name for d in runs]
        if latest not in ids:
            raise UserError(f"no run {latest!r} under {str(results_root)!r} (the latest: "
                            f"{', '.join(ids[-5:])})")
        runs = runs[:ids.index(latest) + 1]
    df = load_results(runs)
    dirs = {load_meta(d).get("run_id") or d.name: d for d in runs}
    metas = {r: load_meta(d) for r, d in dirs.items()}
    order = list(metas)
    more = {r: repeats_mod.repeat_rows(d) for r, d in dirs.items()}
    points = points_table(df, metas, order, {r: rows for r, rows in more.items() if rows})
    judged = comparable(metas, order)
    waiting = waiting_nights(df, metas, judged, (thresholds or Thresholds()).machine)
    against = [r for r in judged if r not in waiting]
    accepted = {r: said for r in order if (said := load_acceptance(dirs[r]))}
    # an accepted night starts the reference: the nights before it measured what it changed
    since = [r for r in against[:-1] if r in accepted]
    if since:
        against = against[against.index(since[-1]):]
    return History(df, order, metas, points, detect_regressions(points, against, thresholds),
                   judged, against, waiting, accepted)


def accept(results_root: Path | str, run_id: str, reason: str | None) -> dict[str, Any]:
    """``jitbench nightly --accept RUN_ID --reason TEXT``: the night ``run_id`` becomes the
    reference from the next night on (:func:`jitbench.nightly.state.state`; the history
    judges later nights against it and the nights after it), recorded with its reason."""
    import datetime as dt

    if not (reason or "").strip():
        raise UserError("--accept needs --reason TEXT: why this step is wanted (shown on the "
                        "history page and in every later summary)")
    runs = {load_meta(d).get("run_id") or d.name: d for d in run_dirs(results_root)}
    if run_id not in runs:
        known = ", ".join(list(runs)[-5:]) or "none"
        raise UserError(f"--accept {run_id!r}: no such night under {str(results_root)!r} "
                        f"(the latest: {known})")
    from jitbench.nightly.state import state

    said = state(runs[run_id])
    if said.name in ("interrupted", "incomplete"):
        raise UserError(f"--accept {run_id!r}: {said.why}, so it measured only part of its "
                        f"cases and cannot be the reference; accept a night that measured "
                        f"every case")
    moved = _environment_moved(runs[run_id])
    if moved:
        import warnings

        from jitbench.errors import DataWarning

        warnings.warn(f"{run_id}'s environment is not what it measured any more ({moved}): a "
                      f"change night measured against it will say so and stay undecided until "
                      f"that environment is restored or a later night is accepted",
                      DataWarning, stacklevel=2)
    when = dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")
    return write_acceptance(runs[run_id], reason.strip(), when)


def _environment_moved(run_dir: Path) -> str | None:
    """What moved in the interpreter a night ran in since it measured (its recorded
    distributions against what that interpreter holds now), or None; "gone" when the
    interpreter is gone."""
    import dataclasses

    from jitbench.nightly.change import Plan
    from jitbench.nightly.change_ab import arm_a_moved
    from jitbench.run.ab_arms import Arm

    meta = load_meta(run_dir)
    exe = (meta.get("machine") or {}).get("executable")
    if not exe or not meta.get("distributions"):
        return None
    if not Path(exe).is_file():
        return f"its interpreter {exe} is gone"
    plan = dataclasses.replace(Plan(Path(run_dir).name, ()), arm_a=Arm("a", exe),
                               last_good_distributions=tuple(sorted(
                                   meta["distributions"].items())))
    return arm_a_moved(plan, [])
