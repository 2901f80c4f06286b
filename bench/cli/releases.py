"""``jitbench releases``: which release changed it. The selected cases in one environment per
release (built and cached: ``jitbench.releases.envs``), every neighbouring pair measured by the
A/B engine, per case and step what moved (``jitbench.releases.ladder``); or a bisect between a
good and a bad release (``jitbench.releases.bisect``); or k arms of variables in this
environment (``--arm SPEC``, ``jitbench ab``'s spec).

    jitbench releases PACKAGE V1 V2 ... [case filters] [--threshold PCT] [--json]
    jitbench releases PACKAGE --good V --bad V [--candidates V1,V2,...]
    jitbench releases --arm SPEC --arm SPEC ...
    jitbench releases --resume LADDER_DIR

A ladder that was stopped (Ctrl-C, SIGTERM, a lost machine) continues with ``--resume``: its
own command read back from its ``releases.json``, every complete A/B reused, the one it was in
continued (``jitbench.releases.resume``).
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
    p.add_argument("--extra", metavar="NAME",
                   help="install each release with this extra of the package, e.g. --extra "
                        "cuda12 installs jax[cuda12]==V to ladder on a GPU, --extra and-cuda "
                        "tensorflow[and-cuda]==V (default: jax[cpu] for jax, the package "
                        "alone otherwise); each extra is an environment of its own")
    p.add_argument("--retry", action="store_true",
                   help="re-try releases whose environment failed to install before (by "
                        "default the remembered failure is named at once)")
    p.add_argument("--resume", metavar="LADDER_DIR",
                   help="continue a ladder or bisect that was stopped, with its own command "
                        "(read from LADDER_DIR/releases.json): its complete A/B runs reused, "
                        "the one it was in continued, the rest measured; only --json, "
                        "--no-report, --reports and --retry may be given beside it")
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
        if args.extra:
            raise UserError(f"--extra {args.extra} is an extra of a package's releases; --arm "
                            f"arms are environments as they are")
        rungs = ladder.rungs_from_specs(args.arm)
        if len(rungs) < 2:
            raise UserError(f"a ladder of arms needs two --arm at least, got {len(rungs)}")
        return None, rungs, None, None
    if not args.package:
        raise UserError("name a package and its releases (jitbench releases jax 0.4.31 "
                        "0.5.0), or arms (--arm SPEC --arm SPEC)")
    from jitbench.releases import envs

    package = envs.parse(args.package)
    if args.extra is not None:
        if not EXTRA.match(args.extra):
            raise UserError(f"--extra {args.extra!r} is not an extra's name (letters, digits, "
                            f"'.', '-', '_'; e.g. cuda12 for jax, and-cuda for tensorflow)")
        if package.extras:
            raise UserError(f"name the extra once: {args.package} already asks for "
                            f"[{','.join(sorted(package.extras))}] and --extra for "
                            f"{args.extra}")
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
    requirements = [requirement(args.package, v, args.extra) for v in names]
    if not bisect:
        environments = envs.ensure_all(requirements, args.envs, log=say, retry=args.retry)
    else:  # only the releases the halving reaches are built (module ladder: run_bisect)
        environments = None
    return args.package, (names, requirements, environments), args.good, args.bad


EXTRA = re.compile(r"^[A-Za-z0-9]([A-Za-z0-9._-]*[A-Za-z0-9])?$")  # an extra's name (PEP 685)


def requirement(package: str, version: str, extra: str | None = None) -> str:
    """What a release's environment is built from: ``jax==0.4.31``, or with ``extra``
    ``jax[cuda12]==0.4.31`` (``jitbench.releases.envs``: a bare jax installs as jax[cpu];
    the extra is part of the environment's name)."""
    return f"{package}[{extra}]=={version}" if extra else f"{package}=={version}"


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


def cmd(args: argparse.Namespace, selected_cases, progress, build_parser) -> int:
    """``selected_cases(args)`` / ``progress`` / ``build_parser``: ``jitbench.cli.main``'s case
    selection, progress printer and parser (``--resume`` reads the ladder's command with it). Exit 3 (undecided) when a step measured no case on both sides; a
    ladder stopped by a signal says how to continue it (``--resume``) and exits 128 + the
    signal's number."""
    from jitbench.releases import ladder
    from jitbench.releases import record as record_file
    from jitbench.releases import resume as resuming
    from jitbench.results import run_folder
    from jitbench.run import ab_arms

    def say(line: str) -> None:
        print(line, file=sys.stderr)

    if args.resume:
        args = resumed_args(args, build_parser())
    name = re.split(r"[\[=<>!~ ;]", str(args.package or ""), maxsplit=1)[0].lower()
    if args.framework is None and PACKAGE_FRAMEWORK.get(name):
        args.framework = PACKAGE_FRAMEWORK[name]
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
    resume = bool(args.resume)
    resuming.check_folder(folder, resume)  # before an environment is built
    command = (["jitbench", *args.argv] if getattr(args, "argv", None)
               else recorded_command(sys.argv[1:]))
    common = dict(package=None, command=command, on_progress=progress, say=say,
                  resume=resume)
    try:
        package, what, good, bad = _rungs(args, say)
        common["package"] = package
        if package is None:
            record = ladder.run_ladder(cases, what, folder, settings, kind="arms", **common)
        elif good is None:
            names, _, environments = what
            record = ladder.run_ladder(cases, ladder.rungs_from_envs(names, environments),
                                       folder, settings, **common)
        else:
            names, requirements, _ = what
            record = ladder.run_bisect(cases, _lazy_rungs(names, requirements, args.envs, say,
                                                          args.retry),
                                       folder, good, bad, settings, **common)
    except KeyboardInterrupt as exc:
        return _stopped(exc, folder)
    if args.json:
        print(json.dumps(record, indent=1))
    else:
        for line in record_file.lines(record):
            print(line)
        print(f"results: {folder / record_file.FILE}")
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


PATH_OPTIONS = ("--suite-file", "--envs", "--out", "--reports")


def recorded_command(argv: list[str]) -> list[str]:
    """The command a ladder records for ``--resume``: ``jitbench releases ...`` (global
    options before the sub-command left out), each path option absolute, so a resume from
    another folder reads the same files and environments."""
    words = list(argv)
    words = words[words.index("releases"):] if "releases" in words else words
    out = []
    for i, word in enumerate(words):
        flag, eq, value = word.partition("=")
        if eq and flag in PATH_OPTIONS:
            word = f"{flag}={Path(value).absolute()}"
        elif i and words[i - 1] in PATH_OPTIONS:
            word = str(Path(word).absolute())
        out.append(word)
    return ["jitbench", *out]


# what `--resume LADDER_DIR` takes from its own call; everything else is the ladder's command
RESUME_OWN = ("resume", "json", "no_report", "reports", "retry", "debug", "command", "argv")


def resumed_args(args: argparse.Namespace, parser: argparse.ArgumentParser
                 ) -> argparse.Namespace:
    """``--resume LADDER_DIR``: the arguments of the command that began the ladder (its
    ``releases.json``'s), read by this parser, in LADDER_DIR (wherever it lies now), with this
    call's output options and ``--retry``; a UserError naming anything else given beside it,
    or a folder that holds no ladder."""
    import contextlib
    import io

    from jitbench.releases import record as record_file

    defaults = vars(parser.parse_args(["releases"]))
    given = [_flag(key, value) for key, value in vars(args).items()
             if key not in RESUME_OWN and key in defaults and value != defaults[key]]
    if given:
        raise UserError(f"--resume continues LADDER_DIR with its own command (releases, case "
                        f"filters, settings); leave out {', '.join(given)}")
    folder = Path(args.resume)
    record = record_file.load(folder)
    command = [str(w) for w in record.get("command") or []]
    path = folder / record_file.FILE
    if "releases" in command[1:]:  # a ladder recorded with global options before it
        command = ["jitbench", *command[command.index("releases", 1):]]
    if command[1:2] != ["releases"]:
        raise UserError(f"{path} names no `jitbench releases` command to continue "
                        f"({' '.join(command) or 'none'})")
    errors = io.StringIO()
    try:
        with contextlib.redirect_stderr(errors):
            recorded = parser.parse_args(command[1:])
    except SystemExit:
        why = (errors.getvalue().strip().splitlines() or ["?"])[-1]
        raise UserError(f"{path}'s command ({' '.join(command)}) is not one this jitbench "
                        f"reads ({why}); run the ladder again with another --run-id") from None
    recorded.out, recorded.run_id = str(folder.parent), folder.name
    for key in ("json", "no_report", "reports", "retry", "debug"):
        setattr(recorded, key, getattr(args, key, False))
    recorded.resume, recorded.argv = str(folder), command[1:]
    return recorded


def _flag(key: str, value) -> str:
    if key in ("package", "releases"):
        return " ".join(value) if isinstance(value, list) else str(value)
    return "--" + key.replace("_", "-")


def _stopped(exc: KeyboardInterrupt, folder: Path) -> int:
    """A ladder stopped by a signal (Ctrl-C, SIGTERM, SIGHUP): what it has, where, and the
    command that continues it; the exit code of a process ended by that signal."""
    from jitbench.errors import Interrupted
    from jitbench.releases import record as record_file
    from jitbench.releases import resume as resuming

    signal_name = exc.signal_name if isinstance(exc, Interrupted) else "SIGINT"
    code = exc.exit_code if isinstance(exc, Interrupted) else 130
    try:
        record = record_file.load(folder)
    except UserError:  # stopped before its first record: building environments
        print(f"jitbench: interrupted ({signal_name}) before the ladder began; nothing was "
              f"measured (the environments built are cached): run the command again",
              file=sys.stderr)
        return code
    made = record.get("comparisons") or []
    planned = record.get("planned")
    what = (f"{len(made)} of {len(planned)} steps" if planned is not None
            else f"{len(made)} comparison(s)")
    print(f"jitbench: interrupted ({signal_name}); {what} complete in {folder} (named in its "
          f"{record_file.FILE}); continue with: {resuming.command(folder)}", file=sys.stderr)
    return code


def _lazy_rungs(names, requirements, cache, say, retry=False):
    """A bisect's rungs: every candidate, its environment built when the halving first
    measures it (``jitbench.releases.ladder.LazyRung``), a failed one tried again with
    ``retry``."""
    from jitbench.releases import ladder

    return [ladder.LazyRung(name, requirement, cache, say, retry)
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
