"""The ladder: the same cases in each release's environment (or each setting of some
variables), every neighbouring pair measured by the A/B engine (``jitbench.run.ab_arms``:
pairs of fresh processes, A B B A ...), and per case, per step between neighbours, what moved:
steady time per mode, the JIT speedup over the nearest JIT-off mode, the first call, the
compile count, the compiled program (HLO fingerprint) and the error against float64.

Why a run of the A/B engine per neighbouring pair, not all releases in one run of k arms: the
engine, its record and its resume know two arms; a step's verdict is an A/B's own (its pairs,
its looks, its stopping), so a ladder of k releases is k - 1 A/B runs, each a run folder of its
own that `jitbench report` and `jitbench ab --resume` read as any A/B. The cost: a release in
the middle is measured twice (beside each neighbour).

Each measured ratio is judged as the A/B judges time (``jitbench.analysis.ab_verdicts``: the
pair's log ratio, Student's t over pairs, the looks): time B / A, first call B / A, and the
JIT's share of its baseline's time (1 / speedup) B / A, said of the speedup (its ratio B / A,
``lower`` where the share is ``slower``: the JIT pays off less; ``higher``, ``same``,
``unresolved``). A step judges every case and measure at once, so its error rate is shared out
over them (Bonferroni): an A/A step calls a step in 1 - confidence of ladders at most, not in
that share of its cases. Compile counts and programs are facts (changed or not); the error is
a fact per release, a step when it moves by :data:`ERROR_STEP` or more either way and the larger
reaches :data:`ERROR_FLOOR` of the case's rtol (below, another summation order moves a float32
error of 1e-7 by 2-5x: round-off); a case that runs on one side only broke (or was mended).

``releases.json`` (:func:`write`) holds it all for machines; the page
(``jitbench.report.releases_page``) reads that file, so both say the same.
"""

from __future__ import annotations

import dataclasses
import json
import math
import re
import sys
import time
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from jitbench.analysis import ab_verdicts
from jitbench.define.workload import Case
from jitbench.errors import UserError
from jitbench.results.files import write_json
from jitbench.releases import bisect as halving
from jitbench.run import ab_arms

SCHEMA_VERSION = 1  # releases.json: 1, the first
FILE = "releases.json"
ERROR_STEP = 2.0  # the max error moving by this factor either way is a step
ERROR_FLOOR = 0.1  # ... when the larger error reaches this share of the case's rtol
MEASURES = ("time", "jit_speedup", "first_call")  # measured ratios with a verdict
FACTS = ("compiles", "program", "error", "status")  # facts: changed or not


@dataclasses.dataclass(frozen=True)
class Rung:
    """One arm of a ladder: a release's environment (``spec`` = ``python=PATH``) or a setting
    of variables in this one (``spec`` = ``NAME=VALUE ...``, ``jitbench ab``'s arm spec).
    ``error``: why it cannot be measured (its environment did not install or import); it is
    named and left out. ``facts``: what the environment says of itself (requirement, reused,
    versions)."""

    name: str
    spec: str
    error: str | None = None
    facts: Mapping[str, Any] = dataclasses.field(default_factory=dict)


def rungs_from_envs(names: Sequence[str], envs: Sequence[Any]) -> list[Rung]:
    """A rung per release from ``jitbench.releases.envs.ReleaseEnv``-like objects
    (``requirement``, ``path``, ``python``, ``error``, ``reused``, ``versions``)."""
    import shlex

    out = []
    for name, env in zip(names, envs):
        facts = {"requirement": env.requirement, "path": str(env.path),
                 "python": str(env.python) if env.python else None, "reused": env.reused,
                 "versions": dict(env.versions or {})}
        error = env.error or (None if env.python else "no interpreter in its environment")
        out.append(Rung(name, shlex.join([f"python={env.python}"]) if env.python else "",
                        error, facts))
    return out


def rungs_from_specs(specs: Sequence[str]) -> list[Rung]:
    """A rung per ``--arm SPEC`` (variables in this environment, or another interpreter),
    named by its spec ('this environment' for ''); UserError for a bad spec (``jitbench ab``'s
    rules) or the same spec twice."""
    seen: set[str] = set()
    out = []
    for spec in specs:
        arm = ab_arms.parse_arm("arm", spec)
        name = arm.spec or "this environment"
        if name in seen:
            raise UserError(f"--arm {spec!r} is given twice; each arm is a rung of its own")
        seen.add(name)
        out.append(Rung(name, arm.spec, None, {"describe": arm.describe()}))
    return out


class LazyRung:
    """A bisect's candidate: a release whose environment is built (``envs.ensure``) the first
    time the halving asks for it, so a bisect builds only the releases it measures. It reads
    as a :class:`Rung` once built (``spec``, ``error``, ``facts``)."""

    def __init__(self, name: str, requirement: str, cache: Path | str | None = None,
                 log: Callable[[str], None] | None = None):
        self.name, self.requirement, self.cache, self.log = name, requirement, cache, log
        self._rung: Rung | None = None

    @property
    def built(self) -> bool:
        return self._rung is not None

    def _get(self) -> Rung:
        if self._rung is None:
            from jitbench.releases import envs

            env = envs.ensure(self.requirement, self.cache, log=self.log)
            self._rung = rungs_from_envs([self.name], [env])[0]
        return self._rung

    @property
    def spec(self) -> str:
        return self._get().spec

    @property
    def error(self) -> str | None:
        return self._get().error

    @property
    def facts(self) -> Mapping[str, Any]:
        return self._get().facts


@dataclasses.dataclass(frozen=True)
class Settings:
    """How each step is measured (``ab``: the A/B engine's settings; its ``time_limit`` is
    the whole ladder's, shared out between the steps still to run), and the ``threshold`` a
    ratio must pass to be a step."""

    ab: ab_arms.Settings = ab_arms.Settings()
    threshold: float = 0.10
    case_timeout: float = 1800.0


def ordered(releases: Sequence[str], flag: str = "release") -> list[str]:
    """The releases from oldest to newest (neighbours in a ladder are neighbours in version);
    UserError naming one that is not a version, or the same version twice."""
    from packaging.version import InvalidVersion, Version

    parsed = []
    for text in releases:
        try:
            parsed.append((Version(text), text))
        except InvalidVersion:
            raise UserError(f"{flag} {text!r} is not a version (e.g. 0.4.31; name the package "
                            f"once, before its releases)") from None
    seen: dict[Any, str] = {}
    for v, text in parsed:
        if v in seen:  # the same text twice: an A/A ladder, asked for the way it cannot be
            raise UserError(f"{flag} {text!r} is named twice" + (
                "; to measure a release against itself, name its environment's interpreter "
                "twice: --arm python=ENV/bin/python --arm python=ENV/bin/python3"
                if seen[v] == text else f" ({seen[v]!r} is the same version)"))
        seen[v] = text
    return [text for _, text in sorted(parsed)]


def slug(name: str) -> str:
    """A rung's name as part of a folder's name."""
    return re.sub(r"[^A-Za-z0-9._-]+", "_", name).strip("_")[:60] or "arm"


class Ladder:
    """The cases measured over the rungs, step by step, in ``folder`` (each step an A/B run
    folder in it, ``releases.json`` beside them)."""

    def __init__(self, cases: Sequence[Case], folder: Path, settings: Settings, *,
                 command: Sequence[str] | None = None,
                 on_progress: Callable[[Any], None] | None = None,
                 say: Callable[[str], None] | None = None):
        if not cases:
            raise UserError("no cases match these filters (see `jitbench list`)")
        self.cases, self.folder, self.settings = list(cases), Path(folder), settings
        self.command = list(command or sys.argv)
        self.on_progress, self.say = on_progress, say or (lambda line: None)
        self.began = time.monotonic()
        self.runs: list[dict[str, Any]] = []  # every A/B made, in order

    def left_s(self, comparisons_left: int) -> float | None:
        """This comparison's share of the time limit left."""
        limit = self.settings.ab.time_limit
        if limit is None:
            return None
        return max(1.0, (limit - (time.monotonic() - self.began)) / max(1, comparisons_left))

    def compare(self, before: Rung, after: Rung, comparisons_left: int = 1) -> dict[str, Any]:
        """An A/B of two rungs (a run folder under this ladder's folder); its summary
        (:func:`summarise`)."""
        run_id = f"{len(self.runs) + 1:02d}-{slug(before.name)}-vs-{slug(after.name)}"
        s = self.settings.ab
        ab = dataclasses.replace(s, time_limit=self.left_s(comparisons_left),
                                 min_pairs=max(s.min_pairs, min(ab_verdicts.MIN_PAIRS,
                                                                s.max_pairs)))
        self.say(f"{before.name} -> {after.name}: A/B in {self.folder / run_id}")
        arms = (ab_arms.parse_arm("a", before.spec), ab_arms.parse_arm("b", after.spec))
        run_dir = ab_arms.run_ab(self.cases, self.folder, arms, ab,
                                 case_timeout=self.settings.case_timeout, run_id=run_id,
                                 command=self.command, on_progress=self.on_progress)
        out = summarise(run_dir, before.name, after.name, self.settings.threshold)
        self.runs.append(out)
        return out


def run_ladder(cases: Sequence[Case], rungs: Sequence[Rung], folder: Path | str,
               settings: Settings = Settings(), *, kind: str = "ladder",
               package: str | None = None, command: Sequence[str] | None = None,
               on_progress: Callable[[Any], None] | None = None,
               say: Callable[[str], None] | None = None) -> dict[str, Any]:
    """Every neighbouring pair of the rungs that can be measured, an A/B each; the ladder's
    record (written to ``folder/releases.json``, returned)."""
    ok = _measurable(rungs)
    ladder = Ladder(cases, Path(folder), settings, command=command, on_progress=on_progress,
                    say=say)
    for i, (before, after) in enumerate(zip(ok, ok[1:])):
        ladder.compare(before, after, comparisons_left=len(ok) - 1 - i)
    return write(ladder, rungs, list(zip([r.name for r in ok], [r.name for r in ok[1:]])),
                 kind=kind, package=package)


def run_bisect(cases: Sequence[Case], rungs: Sequence[Rung | LazyRung], folder: Path | str,
               good: str, bad: str, settings: Settings = Settings(), *,
               package: str | None = None, command: Sequence[str] | None = None,
               on_progress: Callable[[Any], None] | None = None,
               say: Callable[[str], None] | None = None) -> dict[str, Any]:
    """The releases from ``good`` to ``bad`` halved for every step of the threshold in steady
    time (``jitbench.releases.bisect``), each comparison an A/B; a release whose environment
    fails is passed over (named); the record, as a ladder's plus ``bisect``."""
    by_name = {r.name: r for r in rungs}
    order = halving.span([r.name for r in rungs], good, bad)
    if not cases:
        raise UserError("no cases match these filters (see `jitbench list`)")
    for flag, name in (("--good", good), ("--bad", bad)):
        if by_name[name].error:
            raise UserError(f"{flag} {name}: its environment cannot be measured "
                            f"({by_name[name].error})")
    ladder = Ladder(cases, Path(folder), settings, command=command, on_progress=on_progress,
                    say=say)
    planned = 2 * max(1, math.ceil(math.log2(max(2, len(order) - 1)))) + 1

    def compare(a: str, b: str) -> halving.Comparison:
        out = ladder.compare(by_name[a], by_name[b], max(1, planned - len(ladder.runs)))
        return halving.Comparison(a, b, {c["case_id"]: _change(c) for c in out["cases"]},
                                  out["rounds"])

    found = halving.bisect(order, compare, settings.threshold,
                           available=lambda name: not by_name[name].error)
    return write(ladder, [by_name[n] for n in order], list(found.leaves), kind="bisect",
                 package=package, bisect={
                     "good": good, "bad": bad, "releases": list(found.releases),
                     "measured": list(found.measured), "environments": len(found.measured),
                     "comparisons": [[c.before, c.after] for c in found.comparisons],
                     "pairs": found.rounds,
                     "steps": [{"case_id": s.case_id, "before": s.before, "after": s.after,
                                "kind": s.kind, **_clean(dataclasses.asdict(s.change))}
                               for s in found.steps]})


def _change(case: Mapping[str, Any]) -> halving.Change:
    """A case of a comparison as the bisect reads it: its steady time's verdict, or broken /
    mended."""
    t = case["time"]
    verdict = case["status"]["change"] or t["verdict"]
    return halving.Change(verdict, _nan(t["ratio"]), _nan(t["ci_low"]), _nan(t["ci_high"]),
                          int(t["pairs"] or 0))


def _measurable(rungs: Sequence[Rung], at_least: int = 2) -> list[Rung]:
    names = [r.name for r in rungs]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise UserError(f"{', '.join(twice)} named more than once; each release is a rung once")
    ok = [r for r in rungs if not r.error]
    if len(ok) < at_least:
        failed = "; ".join(f"{r.name}: {r.error}" for r in rungs if r.error)
        raise UserError(f"{len(ok)} of {len(rungs)} environments can be measured; a ladder "
                        f"needs {at_least}" + (f" (failed: {failed})" if failed else ""))
    return ok


# --------------------------------------------------------------------------- one step

def summarise(run_dir: Path | str, before: str, after: str, threshold: float
              ) -> dict[str, Any]:
    """One A/B between two rungs, per case: each measure of :data:`MEASURES` with its ratio
    after / before, interval and verdict at the step's family-wise confidence (the A/B's
    confidence over every case and measure judged; the A/B's own verdict of the time per
    case: ``time.ab_verdict``), each fact of :data:`FACTS` on both sides, and the measures
    that stepped (``stepped``)."""
    import pandas as pd

    from jitbench.results.files import load_meta, load_results

    meta, df = load_meta(run_dir), load_results(run_dir)
    s = meta["ab"]["settings"]
    rules = dict(tolerance=s["tolerance"], confidence=s["confidence"],
                 max_pairs=s["max_pairs"], look_pairs=tuple(s.get("look_pairs")
                                                            or ab_verdicts.LOOK_PAIRS))
    table = ab_verdicts.verdicts(df, final=True, **rules)
    df = df.assign(jit_share=1.0 / pd.to_numeric(df.get("verdict_speedup"), errors="coerce"))
    units = {m: ab_verdicts.pair_units(df, col) for m, col in
             (("time", "median_s"), ("jit_speedup", "jit_share"),
              ("first_call", "first_call_s"))}
    series = {(m, case): list(g["log_ratio"]) for m, u in units.items()
              for case, g in u.groupby("case_id", sort=False)}
    # one step of a ladder asks every case and measure at once: its error rate is the
    # step's, shared out over those judged (Bonferroni), so an A/A step calls nothing at the
    # A/B's confidence in all but 1 - confidence of ladders
    judged = sum(1 for v in series.values() if len(v) >= ab_verdicts.MIN_PAIRS)
    family = {**rules, "confidence": 1 - (1 - s["confidence"]) / max(1, judged)}
    cases = []
    for r in table.to_dict("records"):
        case = {k: r.get(k) for k in ab_verdicts.CASE_COLUMNS}
        for name in units:
            case[name] = _measured(series.get((name, r["case_id"]), []), family)
        case["time"].update(before=r["median_a_s"], after=r["median_b_s"],
                            ab_verdict=r["verdict"])
        if case["time"]["verdict"] is None:  # no pair: the A/B's failed or skipped
            case["time"]["verdict"] = r["verdict"]
        rows = df[df["case_id"] == r["case_id"]]
        case["jit_speedup"] = _as_speedup(case["jit_speedup"])
        case["jit_speedup"].update(before=_geo_side(rows, "a"), after=_geo_side(rows, "b"))
        case["first_call"].update(before=r["first_call_a_s"], after=r["first_call_b_s"])
        case["compiles"] = {"before": r["compiles_a"], "after": r["compiles_b"],
                            "changed": bool(r["compiles_a"] and r["compiles_b"]
                                            and r["compiles_a"] != r["compiles_b"])}
        case["program"] = {"before": r["hlo_a"], "after": r["hlo_b"],
                           "changed": r["program"] == "changed"}
        case["error"] = _errors(rows)
        case["status"] = _status(rows, r)
        case["stepped"] = _stepped(case, threshold)
        cases.append(_clean(case))
    return {"before": before, "after": after, "run_dir": str(run_dir),
            "confidence": family["confidence"], "judged": judged,
            "run_id": meta.get("run_id"), "status": meta.get("status"),
            "rounds": int(meta["ab"].get("rounds") or 0),
            "warnings": list(meta["ab"].get("warnings") or []),
            "versions": {arm: (meta["ab"]["arms"][arm].get("packages") or {})
                         for arm in ("a", "b")},
            "cases": cases}


def _measured(series: Sequence[float], rules: Mapping[str, Any]) -> dict[str, Any]:
    if not series:
        return {"verdict": None, "ratio": math.nan, "ci_low": math.nan, "ci_high": math.nan,
                "pairs": 0}
    verdict, _, ratio, lo, hi = ab_verdicts.decide_interval(series, final=True, **rules)
    return {"verdict": verdict or "unresolved", "ratio": ratio, "ci_low": lo, "ci_high": hi,
            "pairs": len(series)}


SPEEDUP_WORDS = {"slower": "lower", "faster": "higher"}  # the JIT's share of time -> speedup


def _as_speedup(share: dict[str, Any]) -> dict[str, Any]:
    """The verdict on the JIT's share of its baseline's time (later / earlier), said of the
    speedup: its ratio and interval inverted (speedup later / earlier), ``slower`` as
    ``lower`` (the JIT pays off less), ``faster`` as ``higher``."""
    def inv(v):
        return 1.0 / v if isinstance(v, float) and v == v and v > 0 else math.nan

    return {**share, "verdict": SPEEDUP_WORDS.get(share["verdict"], share["verdict"]),
            "ratio": inv(share["ratio"]), "ci_low": inv(share["ci_high"]),
            "ci_high": inv(share["ci_low"])}


def _geo_side(rows, arm: str) -> float:
    """An arm's JIT speedup over its nearest JIT-off mode: the geometric mean over its
    processes of each process's interleaved speedup (``verdict_speedup``)."""
    ok = rows[(rows["ab_arm"] == arm) & (rows["status"] == "ok")]
    return _geo(ok, "verdict_speedup", 0.95)["value"] or math.nan


def _errors(rows) -> dict[str, Any]:
    """The max relative error against float64 on each side (the worst process), ``floor``
    (:data:`ERROR_FLOOR` of the case's rtol; 0 without one) and ``changed``: moved by
    :data:`ERROR_STEP` either way, the larger error at the floor or above."""
    import pandas as pd

    out: dict[str, Any] = {}
    for side, arm in (("before", "a"), ("after", "b")):
        ok = rows[(rows["ab_arm"] == arm) & rows["status"].isin(["ok", "mismatch"])]
        v = pd.to_numeric(ok.get("max_rel_err", pd.Series(dtype=float)), errors="coerce")
        out[side] = float(v.max()) if v.notna().any() else math.nan
    rtol = pd.to_numeric(rows.get("rtol", pd.Series(dtype=float)), errors="coerce").max()
    out["floor"] = ERROR_FLOOR * float(rtol) if rtol == rtol and rtol > 0 else 0.0
    a, b = out["before"], out["after"]
    out["changed"] = bool(a == a and b == b and max(a, b) > 0 and max(a, b) >= out["floor"]
                          and (min(a, b) == 0 or max(a, b) / min(a, b) >= ERROR_STEP))
    return out


def _status(rows, r: Mapping[str, Any]) -> dict[str, Any]:
    """Each side's statuses over its processes and ``change``: ``broke`` (ok before, never
    after), ``mended`` (the reverse) or None."""
    def ok(arm):
        side = rows[rows["ab_arm"] == arm]
        return bool(len(side)) and (side["status"] == "ok").any()

    def errors(arm):
        e = rows.loc[(rows["ab_arm"] == arm) & (rows["status"] != "ok"), "error"]
        return next((str(x)[:300] for x in e if isinstance(x, str) and x), None)

    change = None
    if ok("a") and not ok("b") and (rows["ab_arm"] == "b").any():
        change = halving.BROKE
    elif ok("b") and not ok("a") and (rows["ab_arm"] == "a").any():
        change = halving.MENDED
    return {"before": r["status_a"], "after": r["status_b"], "change": change,
            "error_before": errors("a"), "error_after": errors("b")}


def _stepped(case: Mapping[str, Any], threshold: float) -> list[str]:
    """The measures of a case that stepped between the two sides: a measured ratio decided
    slower or faster beyond the threshold; a fact that changed; ``status`` when it broke or
    was mended."""
    moved = (*halving.STEPS, *SPEEDUP_WORDS.values())
    out = [m for m in MEASURES if case[m]["verdict"] in moved
           and halving.beyond(_nan(case[m]["ratio"]), threshold)]
    out += [f for f in ("compiles", "program", "error") if case[f]["changed"]]
    return out + (["status"] if case["status"]["change"] else [])


# --------------------------------------------------------------------------- per release

def per_release(runs: Sequence[Mapping[str, Any]], confidence: float) -> dict[str, Any]:
    """Per case, per rung, each measure over every process of the rung (both A/Bs a middle
    rung took part in): the time, JIT speedup and first call as a geometric mean with its
    interval over processes (the unit: a process; a drift between the two A/Bs is in it),
    the compile counts, the programs, the max error, the statuses."""
    import pandas as pd

    from jitbench.results.files import load_results

    parts = []
    for run in runs:
        df = load_results(run["run_dir"])
        df["rung"] = df["ab_arm"].map({"a": run["before"], "b": run["after"]})
        parts.append(df)
    if not parts:
        return {}
    df = pd.concat(parts, ignore_index=True)
    out: dict[str, Any] = {}
    for (case_id, rung), rows in df.groupby(["case_id", "rung"], sort=False):
        ok = rows[rows["status"] == "ok"]
        entry = {"processes": int(len(rows)), "ok": int(len(ok)),
                 "status": ", ".join(f"{k} {v}" for k, v in
                                     sorted(rows["status"].value_counts().items()))}
        for name, col in (("time", "median_s"), ("jit_speedup", "verdict_speedup"),
                          ("first_call", "first_call_s")):
            entry[name] = _geo(ok, col, confidence)
        entry["compiles"] = sorted({int(v) for v in pd.to_numeric(
            ok.get("first_compiles", pd.Series(dtype=float)), errors="coerce").dropna()})
        entry["program"] = sorted({str(v) for v in ok.get("hlo_fingerprint", [])
                                   if isinstance(v, str) and v})
        err = pd.to_numeric(rows.get("max_rel_err", pd.Series(dtype=float)), errors="coerce")
        entry["error"] = float(err.max()) if err.notna().any() else math.nan
        out.setdefault(case_id, {})[rung] = _clean(entry)
    return out


def _geo(rows, col: str, confidence: float) -> dict[str, Any]:
    import pandas as pd

    v = pd.to_numeric(rows.get(col, pd.Series(dtype=float)), errors="coerce").dropna()
    v = v[v > 0]
    if not len(v):
        return {"value": None, "ci_low": None, "ci_high": None, "n": 0}
    mid, lo, hi = ab_verdicts.interval(list(pd.Series(v).apply(math.log)), 1 - confidence)
    return {"value": mid, "ci_low": lo, "ci_high": hi, "n": int(len(v))}


# --------------------------------------------------------------------------- the record

def write(ladder: Ladder, rungs: Sequence[Rung | LazyRung],
          neighbours: Sequence[tuple[str, str]], *, kind: str, package: str | None,
          bisect: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The ladder's record: its rungs (a failed one with its reason; a bisect's candidate it
    never reached, unbuilt), its steps (the A/B runs between ``neighbours``, in release order;
    for a bisect, the comparisons where it stopped halving), per case and rung each measure,
    what it cost; written to ``releases.json``."""
    s = ladder.settings
    pairs = set(neighbours)
    place = {r.name: i for i, r in enumerate(rungs)}
    steps = sorted((r for r in ladder.runs if (r["before"], r["after"]) in pairs),
                   key=lambda r: place.get(r["before"], 0))
    measured = {n for r in ladder.runs for n in (r["before"], r["after"])}
    built = [r for r in rungs if getattr(r, "built", True)]
    record = {
        "schema_version": SCHEMA_VERSION, "kind": kind, "package": package,
        "ladder_id": ladder.folder.name, "folder": str(ladder.folder),
        "command": ladder.command,
        "settings": {"threshold": s.threshold, "tolerance": s.ab.tolerance,
                     "confidence": s.ab.confidence, "max_pairs": s.ab.max_pairs,
                     "time_limit": s.ab.time_limit, "budget": s.ab.budget},
        "rungs": [{"name": r.name, "spec": r.spec, "error": r.error,
                   "measured": r.name in measured, **dict(r.facts)} if r in built else
                  {"name": r.name, "spec": None, "error": None, "measured": False,
                   "requirement": getattr(r, "requirement", None),
                   "note": "not built: the bisect did not need it"} for r in rungs],
        "failed": [{"name": r.name, "error": r.error} for r in built if r.error],
        "steps": steps,
        "comparisons": [{k: r[k] for k in ("before", "after", "run_dir", "rounds", "status")}
                        for r in ladder.runs],
        "cases": per_release(ladder.runs, s.ab.confidence),
        "cost": {"environments": len(measured),
                 "environments_reused": sum(1 for r in built if r.facts.get("reused")
                                            and r.name in measured),
                 "comparisons": len(ladder.runs),
                 "pairs": sum(r["rounds"] for r in ladder.runs),
                 "wall_s": round(time.monotonic() - ladder.began, 1)},
        **({"bisect": dict(bisect)} if bisect is not None else {}),
    }
    record = _clean(record)
    write_json(ladder.folder / FILE, record)  # the results package writes every JSON file
    return record


def load(folder: Path | str) -> dict[str, Any]:
    """A ladder's ``releases.json``; UserError when the folder holds none or a newer one."""
    path = Path(folder) / FILE
    if not path.is_file():
        raise UserError(f"{str(folder)!r} holds no {FILE} (a folder `jitbench releases` "
                        f"wrote)")
    record = json.loads(path.read_text(encoding="utf-8"))
    if record.get("schema_version", 0) > SCHEMA_VERSION:
        raise UserError(f"{path} was written by a newer jitbench (schema "
                        f"{record.get('schema_version')}); upgrade jitbench to read it")
    return record


def lines(record: Mapping[str, Any]) -> list[str]:
    """Terminal lines: the failed rungs, each step's cases that stepped (measure, ratio,
    interval), a bisect's steps, the cost."""
    out = [f"not measured: {f['name']}: {f['error']}" for f in record["failed"]]
    for step in record["steps"]:
        moved = [c for c in step["cases"] if c["stepped"]]
        out.append(f"{step['before']} -> {step['after']}: {len(moved)} of "
                   f"{len(step['cases'])} cases stepped ({step['rounds']} pairs)")
        for c in moved:
            out.append(f"  {_case_text(c)}: " + "; ".join(_measure_text(c, m)
                                                          for m in c["stepped"]))
    if "bisect" in record:
        b = record["bisect"]
        out.append(f"bisect {b['good']} .. {b['bad']}: {len(b['steps'])} step(s)")
        for s in b["steps"]:
            out.append(f"  {s['kind']} {s['before']} -> {s['after']}: {s['case_id']} "
                       f"{s['verdict']} {_ratio(s['ratio'], s['ci_low'], s['ci_high'])}")
    cost = record["cost"]
    out.append(f"cost: {cost['environments']} environments ({cost['environments_reused']} "
               f"reused), {cost['comparisons']} A/B runs, {cost['pairs']} pairs of fresh "
               f"processes, {cost['wall_s']:.0f} s")
    return out


def _case_text(c: Mapping[str, Any]) -> str:
    return f"{c['workload']}/{c['variant']} {c['framework']} {c['mode']} {c['dtype']} {c['size']}"


def _ratio(ratio, lo, hi) -> str:
    if ratio is None:
        return "—"
    return f"{ratio:.3f}x" + (f" [{lo:.3f}, {hi:.3f}]" if lo is not None and hi is not None
                              else "")


def _measure_text(c: Mapping[str, Any], m: str) -> str:
    if m in MEASURES:
        v = c[m]
        return f"{m} {v['verdict']} {_ratio(v['ratio'], v['ci_low'], v['ci_high'])}"
    if m == "status":
        return f"{c['status']['change']} ({c['status']['error_after'] or c['status']['after']})"
    return f"{m} changed ({c[m]['before']} -> {c[m]['after']})"


def _nan(v) -> float:
    return math.nan if v is None else float(v)


def _clean(obj):
    """NaN as None (JSON has no NaN), numpy scalars as Python's, recursively."""
    if isinstance(obj, dict):
        return {str(k): _clean(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_clean(v) for v in obj]
    if hasattr(obj, "item") and not isinstance(obj, (str, bytes)):
        obj = obj.item()
    if isinstance(obj, float) and obj != obj:
        return None
    return obj
