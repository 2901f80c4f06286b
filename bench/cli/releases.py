"""``jitbench releases``: which release changed it. The selected cases in one environment per
release (built and cached: ``jitbench.releases.envs``), every neighbouring pair measured by the
A/B engine, per case and step what moved (``jitbench.releases.ladder``); or a bisect between a
good and a bad release (``jitbench.releases.bisect``); or k arms of variables in this
environment (``--arm SPEC``, ``jitbench ab``'s spec).

    jitbench releases PACKAGE V1 V2 ... [case filters] [--threshold PCT] [--json]
    jitbench releases PACKAGE --good V --bad V [--candidates V1,V2,...]
    jitbench releases --arm SPEC --arm SPEC ...
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

from jitbench.cli.ab import add_pair_options
from jitbench.cli.folders import add_output_folders
from jitbench.errors import UserError


def add_parser(sub, add_filters, positive, positive_int, percent) -> None:
    p = sub.add_parser(
        "releases", help="measure the cases in one environment per release of a package "
                         "(built and cached), neighbouring releases side by side in pairs of "
                         "fresh processes; per case, the steps between them (or bisect "
                         "--good/--bad, or --arm SPEC arms of variables)")
    p.add_argument("package", nargs="?", help="the package whose releases are measured, e.g. "
                                              "jax or tensorflow")
    p.add_argument("releases", nargs="*", metavar="V",
                   help="its releases, e.g. 0.4.31 0.5.0 0.7.2 (put in version order)")
    add_filters(p)
    p.add_argument("--arm", action="append", default=[], metavar="SPEC",
                   help="instead of releases: an arm of `jitbench ab`'s form (NAME=VALUE "
                        "assignments and/or python=PATH), repeatable, each a rung in the "
                        "order given, e.g. --arm '' --arm XLA_FLAGS=--xla_cpu_use_thunk_"
                        "runtime=false")
    p.add_argument("--good", metavar="V", help="bisect: the release that was good")
    p.add_argument("--bad", metavar="V", help="bisect: the release that is bad")
    p.add_argument("--candidates", metavar="V1,V2,...",
                   help="bisect: the releases it may measure between --good and --bad "
                        "(default: every release the registry serves for this Python between "
                        "them, or the releases named)")
    p.add_argument("--envs", metavar="DIR",
                   help="the cache folder of the environments (default: jitbench's cache, "
                        "reused across calls)")
    p.add_argument("--threshold", type=percent("--threshold"), default=10.0, metavar="PCT",
                   help="a measured ratio is a step when decided beyond +-PCT%% (default: 10)")
    p.add_argument("--max-pairs", type=positive_int("--max-pairs"), default=6, metavar="N",
                   help="pairs of fresh processes per step at most (default: 6)")
    p.add_argument("--time-limit", type=positive("--time-limit"), default=None, metavar="S",
                   help="the whole ladder's time, shared out between the steps still to run "
                        "(each step still makes 3 pairs, the fewest an interval needs)")
    add_pair_options(p, positive, percent)
    from jitbench.run.options import PROCESS_PROFILES

    p.add_argument("--process-profile", choices=list(PROCESS_PROFILES), default="default",
                   help="how every worker starts: " + "; ".join(
                       f"{k}: {v}" for k, v in PROCESS_PROFILES.items()) + " (default: default)")
    add_output_folders(p, "the ladder (an A/B run folder per step and releases.json)")
    p.add_argument("--json", action="store_true",
                   help="print releases.json (rungs, steps, cases per release, cost) instead "
                        "of lines")


def _rungs(args, say):
    """(package, rung names in order, rungs, good, bad) from the command line."""
    from jitbench.releases import ladder

    bisect = args.good is not None or args.bad is not None
    if args.arm:
        if args.package or args.releases:
            raise UserError(f"--arm measures arms of this environment; leave out the package "
                            f"and releases ({' '.join([args.package, *args.releases])})")
        if bisect or args.candidates:
            raise UserError("--good/--bad/--candidates bisect releases of a package, not --arm "
                            "arms")
        rungs = ladder.rungs_from_specs(args.arm)
        if len(rungs) < 2:
            raise UserError(f"a ladder of arms needs two --arm at least, got {len(rungs)}")
        return None, rungs, None, None
    if not args.package:
        raise UserError("name a package and its releases (jitbench releases jax 0.4.31 "
                        "0.5.0), or arms (--arm SPEC --arm SPEC)")
    from jitbench.releases import envs

    envs.parse(args.package)
    if bisect:
        if args.good is None or args.bad is None:
            raise UserError("a bisect needs both --good V and --bad V")
        if args.candidates and args.releases:
            raise UserError("name the candidates once: as releases or with --candidates")
        if args.candidates or args.releases:
            named = args.releases or [v for v in args.candidates.split(",") if v.strip()]
            names = ladder.ordered({*map(str.strip, named), args.good, args.bad},
                                   "--candidates")
        else:
            good, bad = ladder.ordered([args.good, args.bad], "--good/--bad")
            names = ladder.ordered(envs.releases(args.package, good, bad))
            for v in (args.good, args.bad):
                if v not in names:
                    names = ladder.ordered([*names, v])
            say(f"{len(names)} releases of {args.package} served between {good} and {bad}: "
                f"{', '.join(names)}")
    else:
        if args.candidates:
            raise UserError("--candidates goes with --good and --bad (a bisect)")
        names = ladder.ordered(args.releases)
        if len(names) < 2:
            raise UserError(f"a ladder needs two releases at least, got {len(names)} "
                            f"({' '.join(names) or 'none'})")
    requirements = [f"{args.package}=={v}" for v in names]
    if not bisect:
        environments = envs.ensure_all(requirements, args.envs, log=say)
    else:  # only the releases the halving reaches are built (module ladder: run_bisect)
        environments = None
    return args.package, (names, requirements, environments), args.good, args.bad


# the framework a package's releases can move: its cases alone are measured unless --framework
# says otherwise (the other framework's cases would fail the arms' probe after every
# environment was built)
PACKAGE_FRAMEWORK = {"jax": "jax", "jaxlib": "jax", "flax": "jax", "optax": "jax",
                     "tensorflow": "tf", "tensorflow-cpu": "tf", "tf-nightly": "tf",
                     "keras": "tf", "tf-keras": "tf"}


def unmeasured_steps(record) -> list[str]:
    """The steps of a ladder in which no case was measured ``ok`` on both sides (every case
    skipped for a device or framework, or failing) and none broke or mended: such a step says
    nothing, never "no case stepped"."""
    ok = re.compile(r"\bok\b")
    out = []
    for step in record.get("steps") or []:
        if not isinstance(step, dict) or "cases" not in step:
            continue
        if not any((c.get("status") or {}).get("change")
                   or (ok.search(str((c.get("status") or {}).get("before") or ""))
                       and ok.search(str((c.get("status") or {}).get("after") or "")))
                   for c in step["cases"]):
            out.append(f"{step.get('before')} -> {step.get('after')}")
    return out


def cmd(args: argparse.Namespace, selected_cases, progress) -> int:
    """``selected_cases(args)`` / ``progress``: ``jitbench.cli.main``'s case selection and
    progress printer. Exit 3 (undecided) when a step measured no case on both sides."""
    from jitbench.releases import ladder
    from jitbench.results import run_folder
    from jitbench.run import ab_arms

    def say(line: str) -> None:
        print(line, file=sys.stderr)

    if args.framework is None and PACKAGE_FRAMEWORK.get(str(args.package or "").lower()):
        args.framework = PACKAGE_FRAMEWORK[args.package.lower()]
        say(f"measuring the {args.framework} cases ({args.package}'s framework; "
            f"--framework to choose)")
    cases = selected_cases(args)
    settings = ladder.Settings(
        ab=ab_arms.Settings(max_pairs=args.max_pairs, tolerance=args.tolerance / 100,
                            time_limit=args.time_limit, budget=args.budget,
                            process_profile=args.process_profile).check(),
        threshold=args.threshold / 100, case_timeout=args.case_timeout)
    run_folder.check_writable(args.out, "--out")
    if not args.no_report:
        run_folder.check_writable(args.reports, "--reports")
    ladder_id = args.run_id or f"releases-{run_folder.new_run_id()}"
    folder = Path(args.out) / ladder_id
    if (folder / ladder.FILE).exists():
        raise UserError(f"{folder} holds a ladder already; name another with --run-id")
    package, what, good, bad = _rungs(args, say)
    command = ["jitbench", *sys.argv[1:]]
    common = dict(package=package, command=command, on_progress=progress, say=say)
    if package is None:
        record = ladder.run_ladder(cases, what, folder, settings, kind="arms", **common)
    elif good is None:
        names, _, environments = what
        record = ladder.run_ladder(cases, ladder.rungs_from_envs(names, environments), folder,
                                   settings, **common)
    else:
        names, requirements, _ = what
        record = ladder.run_bisect(cases, _lazy_rungs(names, requirements, args.envs, say),
                                   folder, good, bad, settings, **common)
    if args.json:
        print(json.dumps(record, indent=1))
    else:
        for line in ladder.lines(record):
            print(line)
        print(f"results: {folder / ladder.FILE}")
    if not args.no_report:
        page = _pages(record, Path(args.reports) / ladder_id)
        print(f"report:  {page}", file=sys.stderr if args.json else sys.stdout)
    empty = unmeasured_steps(record)
    if empty:
        from jitbench.errors import UNDECIDED_EXIT

        say(f"UNDECIDED: no case was measured on both sides of {', '.join(empty)} (every "
            f"case skipped or failing there: see the statuses above)")
        return UNDECIDED_EXIT
    return 0


def _lazy_rungs(names, requirements, cache, say):
    """A bisect's rungs: every candidate, its environment built when the halving first
    measures it (``jitbench.releases.ladder.LazyRung``)."""
    from jitbench.releases import ladder

    return [ladder.LazyRung(name, requirement, cache, say)
            for name, requirement in zip(names, requirements)]


def _pages(record, out: Path) -> Path:
    """The ladder's page, and each A/B's own page beside it (linked from the ladder's)."""
    from jitbench.report import write_report
    from jitbench.report.releases_page import write_releases_page

    links = {}
    for run in record["comparisons"]:
        name = Path(run["run_dir"]).name
        try:
            write_report(run["run_dir"], out / name)
        except UserError:  # an A/B that wrote no row (every case failed to start) has no page
            continue
        links[run["run_dir"]] = f"{name}/index.html"
    return write_releases_page(record, out, links)
