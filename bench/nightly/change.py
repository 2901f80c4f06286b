"""A night whose software changed decides by measuring the change: the last good night's
environment (A) beside tonight's (B), in pairs of fresh processes the same night (in turns,
or at once on two cores: ``jitbench.run.ab_arms``), so the host state every process of tonight
shares cancels inside each pair. The history of nights cannot see a step smaller than that
state's scatter; a software regression only ever arrives with a change, so this is where it is
decided.

- :func:`what_changed`: everything two nights' records say can move their numbers (every
  installed distribution of the workers' interpreter, added and removed ones included, the
  interpreter, the XLA/TF/JAX and thread variables and the test hook, each workload's file,
  jitbench itself, the GPUs and their driver), each with the cases it can touch
  (:meth:`Change.touches`): a workload's file touches that workload, ``TF_``/``JAX_``
  variables that framework, a distribution the frameworks whose dependencies reach it
  (``jitbench.results.installed``: numpy both, keras TensorFlow, the JAX CUDA plugin JAX),
  the rest, and a distribution neither reaches, every case.
- the last good night it is measured against: ``jitbench.nightly.state.last_good`` (a
  regressed, undecided or unfinished night is no reference: the next night is measured
  against the night before it again, until the step is gone or the night that brought it is
  accepted, ``jitbench nightly --accept``).
- :func:`arms`: the two environments as ``jitbench ab`` arms: A runs the last good night's
  interpreter where the packages changed, its values of every changed variable, and the copy
  of a changed workload's file that night kept (``jitbench.results.run_folder.keep_sources``,
  loaded through ``JITBENCH_WORKLOAD_FILES``); a change that cannot be run again (packages
  upgraded in place, jitbench itself changed in the same interpreter, no copy of the old file)
  says so and leaves the night to the history.
- ``jitbench.nightly.change_ab``: the touched case groups measured A/B and judged against the
  night's one threshold.
"""

from __future__ import annotations

import dataclasses
import fnmatch
import json
import sys
from pathlib import Path
from typing import Any, Sequence

from jitbench.define.workload import FILES_VAR, Case, group_cases
from jitbench.errors import UserError
from jitbench.results.files import load_meta

# which framework's cases a package or a variable can touch (None: every case)
_PACKAGE_FRAMEWORK = {"tensorflow": "tf", "tf_cuda_version": "tf", "tf_cudnn_version": "tf",
                      "jax": "jax", "jaxlib": "jax"}
_VARIABLE_FRAMEWORK = (("TF_", "tf"), ("JAX_", "jax"))
_FRAMEWORK_NAME = {"tf": "TensorFlow", "jax": "JAX"}
# distributions whose change moves no worker: the installer (no worker imports it) and
# jitbench itself (its own change is ``jitbench_version``/``jitbench_fingerprint``)
_NOT_A_CHANGE = {"pip", "jitbench"}
HOOK = "JITBENCH_TEST_SLOWDOWN"  # '<case id glob>=<amount>' (jitbench.run.worker)


@dataclasses.dataclass(frozen=True)
class Change:
    """One thing that differs between the last good night (``was``) and tonight (``now``)."""

    kind: str  # package | variable | workload | jitbench | python | gpu
    name: str
    was: Any
    now: Any
    framework: str | None = None  # the only framework it touches
    workload: str | None = None  # the only workload it touches
    device: str | None = None  # the only device it touches
    case_globs: tuple[str, ...] = ()  # the only cases it touches (the test hook)
    # a distribution's: the frameworks whose dependencies reach it (none: it could not be
    # placed, and touches every case)
    reaches: tuple[str, ...] | None = None

    def touches(self, case: Case) -> bool:
        if self.framework and case.framework != self.framework:
            return False
        if self.workload and case.workload != self.workload:
            return False
        if self.device and case.device != self.device:
            return False
        return not self.case_globs or any(fnmatch.fnmatch(case.case_id, g)
                                          for g in self.case_globs)

    def text(self) -> str:
        where = "" if self.reaches is None else (
            f" (reached by {' and '.join(_FRAMEWORK_NAME[f] for f in self.reaches)})"
            if self.reaches else " (reached by neither framework: touches every case)")
        return f"{self.kind} {self.name}: {_show(self.was)} -> {_show(self.now)}{where}"


def _show(v: Any) -> str:
    return "(unset)" if v is None else repr(v) if isinstance(v, str) and v == "" else str(v)


def _hook_globs(*values: str | None) -> tuple[str, ...]:
    return tuple(e.rpartition("=")[0] for v in values if v for e in v.split(";") if "=" in e)


def what_changed(old: dict[str, Any], new: dict[str, Any]) -> list[Change]:
    """What differs between two runs' metas that can move their numbers. A fact one of them
    does not record (an older jitbench, a framework whose worker did not run) is not a
    change."""
    out: list[Change] = []
    fa, fb = old.get("frameworks") or {}, new.get("frameworks") or {}
    da, db = old.get("distributions"), new.get("distributions")
    for name in sorted(set(fa) & set(fb)):
        if da and db and name in set(da) | set(db):
            continue  # a distribution: compared with the others below
        if fa[name] != fb[name]:
            out.append(Change("package", name, fa[name], fb[name],
                              framework=_PACKAGE_FRAMEWORK.get(name)))
    if da and db:  # every installed distribution, added and removed ones too
        reach = {fw: set(old.get("reach", {}).get(fw) or ()) | set(
            new.get("reach", {}).get(fw) or ()) for fw in ("tf", "jax")}
        for name in sorted(set(da) | set(db)):
            if da.get(name) == db.get(name) or name in _NOT_A_CHANGE:
                continue
            fws = tuple(fw for fw in ("tf", "jax") if name in reach[fw])
            out.append(Change("package", name, da.get(name), db.get(name),
                              framework=fws[0] if len(fws) == 1 else None, reaches=fws))
    ea, eb = old.get("env") or {}, new.get("env") or {}
    for name in sorted(set(ea) | set(eb)):
        if ea.get(name) == eb.get(name):
            continue
        if name == HOOK:
            out.append(Change("variable", name, ea.get(name), eb.get(name),
                              case_globs=_hook_globs(ea.get(name), eb.get(name))))
            continue
        fw = next((f for prefix, f in _VARIABLE_FRAMEWORK if name.startswith(prefix)), None)
        out.append(Change("variable", name, ea.get(name), eb.get(name), framework=fw))
    wa, wb = old.get("workload_sources") or {}, new.get("workload_sources") or {}
    for name in sorted(set(wa) & set(wb)):
        if wa[name] and wb[name] and wa[name] != wb[name]:
            out.append(Change("workload", name, wa[name], wb[name], workload=name))
    # jitbench's own code: its fingerprint, which leaves the workloads out (a commit that only
    # touched a workload is that workload's change); the commit where a night lacks it
    keys = ("jitbench_version", "jitbench_fingerprint") if (
        old.get("jitbench_fingerprint") and new.get("jitbench_fingerprint")) else \
        ("jitbench_version", "git_commit")
    for key in keys:
        if old.get(key) and new.get(key) and old[key] != new[key]:
            out.append(Change("jitbench", key, old[key], new[key]))
    ma, mb = old.get("machine") or {}, new.get("machine") or {}
    if ma.get("python") and mb.get("python") and ma["python"] != mb["python"]:
        out.append(Change("python", "version", ma["python"], mb["python"]))
    ga = [(g.get("name"), g.get("driver_version")) for g in ma.get("gpus") or []]
    gb = [(g.get("name"), g.get("driver_version")) for g in mb.get("gpus") or []]
    if ga and gb and ga != gb:
        out.append(Change("gpu", "GPUs and driver", ga, gb, device="gpu"))
    return out


def touched(cases: Sequence[Case], changes: Sequence[Change]) -> tuple[list[Case], set[str]]:
    """(every case of the case groups a change touches, in the night's order; the touched
    case ids): a group is measured whole, so its modes interleave as they did that night."""
    ids = {c.case_id for c in cases if any(ch.touches(c) for ch in changes)}
    groups = [g for g in group_cases(cases) if any(c.case_id in ids for c in g)]
    return [c for g in groups for c in g], ids


@dataclasses.dataclass(frozen=True)
class Plan:
    """What a change night measures: the two arms, or why it cannot (``blocked``)."""

    last_good: str  # the last good night's run id (the summary's "reference")
    changes: tuple[Change, ...]
    arm_a: Any = None  # jitbench.run.ab_arms.Arm
    arm_b: Any = None
    blocked: str | None = None
    # the nights after the last good one that could not be it (jitbench.nightly.state.last_good)
    skipped: tuple[dict[str, Any], ...] = ()
    # what the last good night recorded of its interpreter's distributions: arm A is checked
    # against it before measuring (jitbench.nightly.change_ab.arm_a_moved)
    last_good_distributions: tuple[tuple[str, str], ...] = ()
    last_good_dir: str | None = None  # its run folder: which cases it measured ok

    def facts(self) -> dict[str, Any]:
        return {"reference": self.last_good, "changes": [c.text() for c in self.changes],
                "arm_a": self.arm_a.describe() if self.arm_a else None,
                "arm_b": self.arm_b.describe() if self.arm_b else None,
                "blocked": self.blocked, "skipped": list(self.skipped)}


def arms(old_dir: Path, old: dict[str, Any], new: dict[str, Any],
         changes: Sequence[Change]) -> Plan:
    """The last good night (``old_dir``, its meta ``old``) and tonight as ``jitbench ab`` arms
    (module docstring), or the reason the old environment cannot run again."""
    from jitbench.run.ab_arms import Arm

    plan = Plan(old.get("run_id") or Path(old_dir).name, tuple(changes))
    exe_a = (old.get("machine") or {}).get("executable")
    exe_b = (new.get("machine") or {}).get("executable") or sys.executable
    driver = [c for c in changes if c.kind == "gpu"]
    if driver:  # one machine holds one driver: the old one cannot run beside the new
        return dataclasses.replace(plan, blocked=(
            f"{driver[0].text()}: the last good night's driver is gone from this machine, "
            f"so it cannot run again"))
    software = [c for c in changes if c.kind in ("package", "python", "jitbench")]
    python = None
    if software:
        same = not exe_a or Path(exe_a).absolute() == Path(exe_b).absolute()
        if same or not Path(exe_a).is_file():
            what = ", ".join(c.text() for c in software)
            return dataclasses.replace(plan, blocked=(
                f"{what}: the last good night's interpreter "
                + ("was changed in place" if same else f"{exe_a} is gone")
                + " so it cannot run again; keep it in an environment of its own "
                  "(jitbench nightly --environments DIR --requirements FILE; "
                  "docs/nightly.md, 'A recipe to copy')"))
        python = exe_a
    env_a: dict[str, str | None] = {}
    env_b: dict[str, str | None] = {}
    for c in changes:
        if c.kind == "variable":  # None: unset (an empty value is another setting)
            env_a[c.name], env_b[c.name] = c.was, c.now
    files = old.get("workload_files") or {}
    old_files = {}
    for c in changes:
        if c.kind != "workload":
            continue
        source = next((s for s, rel in files.items() if Path(rel).stem == c.name), None)
        if source is None or not (Path(old_dir) / files[source]).is_file():
            return dataclasses.replace(plan, blocked=(
                f"the source of workload {c.name} changed and the last good night "
                f"({plan.last_good}) kept no copy of its file"))
        old_files[source] = str((Path(old_dir) / files[source]).absolute())
    if old_files:
        env_a[FILES_VAR] = json.dumps(old_files, sort_keys=True)
    return dataclasses.replace(plan, arm_a=Arm("a", python, tuple(sorted(env_a.items()))),
                               arm_b=Arm("b", None, tuple(sorted(env_b.items()))))


def plan_for(results_root: Path, judged: Sequence[str], metas: dict[str, dict[str, Any]]
             ) -> Plan | None:
    """Tonight's (``judged[-1]``) plan against the last good night (no ``changes``: nothing
    changed); None when there is no earlier good night."""
    from jitbench.nightly.state import last_good as good_night

    if len(judged) < 2:
        return None
    good, skipped = good_night(results_root, judged)
    if good is None:
        return None
    changes = what_changed(metas[good], metas[judged[-1]])
    if not changes:
        return Plan(good, (), skipped=tuple(skipped))
    return dataclasses.replace(
        arms(Path(results_root) / good, metas[good], metas[judged[-1]], changes),
        skipped=tuple(skipped), last_good_dir=str(Path(results_root) / good),
        last_good_distributions=tuple(sorted(
            (metas[good].get("distributions") or {}).items())))


# ------------------------------------------------ --confirm-ab: an alert's group, side by side

def ab_command(old: dict[str, Any], new: dict[str, Any], rec: dict[str, Any]
               ) -> dict[str, Any]:
    """The ``jitbench ab`` command for an alert's series when the software changed between
    the two nights (``jitbench.analysis.ab_verdicts.ab_command``)."""
    from jitbench.analysis.ab_verdicts import ab_command as command

    if not rec.get("workload"):
        return {}
    words = []
    for flag, key in (("--suite", "workload"), ("--variant", "variant"),
                      ("--framework", "framework"), ("--device", "device"),
                      ("--dtype", "dtype")):
        if rec.get(key):
            words += [flag, str(rec[key])]
    cmd = list(new.get("command") or [])
    if "--size" in cmd[:-1]:
        words += ["--size", cmd[cmd.index("--size") + 1]]
    return command(old, new, words)


def side_by_side(rec: dict[str, Any], cases: Sequence[Case], out_root: Path,
                 process_profile: str = "default", on_progress=None, settings=None) -> None:
    """``jitbench ab`` of an alert's case group between the environments of its ``ab_arms``
    (:func:`ab_command`; ``jitbench.run.ab_arms``), into ``rec``: ``ab_verdict`` (B, tonight,
    against A, the last good night), ``ab_ratio`` and its interval, ``ab_run``; nothing when
    the alert has no command or the old interpreter is gone (``ab_note``)."""
    import shlex

    from jitbench.report.ab_page import table
    from jitbench.results.files import load_results
    from jitbench.run import ab_arms

    if not rec.get("ab_arms") or rec.get("ab_note"):
        return
    mine = next((c for c in cases if c.case_id == rec.get("case_id")), None)
    if mine is None:
        return
    group = [c for c in cases if c.group_key == mine.group_key]
    try:
        arms = (ab_arms.parse_arm("a", rec["ab_arms"][0]),
                ab_arms.parse_arm("b", rec["ab_arms"][1]))
        run_dir = ab_arms.run_ab(group, out_root, arms,
                                 settings or ab_arms.Settings(process_profile=process_profile),
                                 on_progress=on_progress, command=shlex.split(rec["ab_command"]))
    except UserError as exc:  # e.g. the old interpreter cannot run jitbench any more
        rec["ab_error"] = str(exc)
        rec["text"] = rec.get("text", "") + f"; side by side not measured: {exc}"
        return
    verdicts = table(load_results(run_dir), load_meta(run_dir))
    row = verdicts[verdicts["case_id"] == mine.case_id].iloc[0]
    rec.update(ab_run=str(run_dir), ab_verdict=row["verdict"], ab_ratio=float(row["ratio"]),
               ab_ci_low=float(row["ci_low"]), ab_ci_high=float(row["ci_high"]),
               ab_pairs=int(row["pairs"]))
    rec["text"] = rec.get("text", "") + (
        f"; side by side in both environments ({rec['ab_pairs']} process pairs): tonight's / "
        f"the last good night's {rec['ab_ratio']:.3f}x [{rec['ab_ci_low']:.3f}, "
        f"{rec['ab_ci_high']:.3f}]: {rec['ab_verdict']}")
