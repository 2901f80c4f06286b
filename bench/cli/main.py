"""``jitbench`` command line: every command (``jitbench --help`` lists them; the parser is
``jitbench.cli.args``), dispatched here; ``nightly``, ``ab``, ``sweep``, ``releases`` and
``doctor`` each have a module beside this one. The command line is the one place that
prints for a user.

Every UserError is caught here: one line on stderr, exit code 2, no traceback (``--debug``
shows it).
"""

from __future__ import annotations

import sys
import warnings
from pathlib import Path

from jitbench.cli import ab as ab_cli
from jitbench.cli import doctor as doctor_cli
from jitbench.cli import releases as releases_cli
from jitbench.cli import nightly as nightly_cli
from jitbench.errors import UNDECIDED_EXIT  # noqa: F401  (the exit codes' home)
from jitbench.cli import sweep as sweep_cli
from jitbench.cli.args import build_parser, filters
from jitbench.errors import DataWarning, Interrupted, UserError


def _selected_cases(args):
    from jitbench.define.workload import expand, variants_left_out

    chosen = filters(args)
    cases = expand(chosen)
    if getattr(args, "shard", None):
        from jitbench.nightly.shards import parse_shard, shard

        cases = shard(cases, *parse_shard(args.shard))
    if not cases:
        raise UserError(f"no cases match these filters{_why_no_cases(args)} "
                        f"(see `jitbench list`)")
    for name, (kept, every) in variants_left_out(chosen).items():
        print(f"{name}: {kept} of its {every} variants in the default {chosen.size} grid "
              f"(--suite {name} measures all)", file=sys.stderr)
    return cases


def _why_no_cases(args) -> str:
    """The usual reasons: modes asked for that the frameworks asked for do not have; a size
    set the workloads asked for do not define."""
    from jitbench.define.modes import FRAMEWORKS, modes_for
    from jitbench.define.workload import Filters, discover

    suites = Filters.split(args.suite)
    chosen = {n: wl for n, (_, wl) in discover(tuple(args.suite_file)).items()
              if not suites or n in suites}
    if chosen and not any(wl.grid.get(args.size) for wl in chosen.values()):
        sets = "; ".join(f"{n}: {', '.join(wl.grid)}" for n, wl in sorted(chosen.items()))
        return f": no workload chosen has a {args.size!r} size set ({sets}); pick one with --size"

    frameworks = Filters.split(args.framework) or FRAMEWORKS
    modes = Filters.split(args.mode)
    if modes and not any(m in modes_for(f) for f in frameworks for m in modes):
        valid = "; ".join(f"{f}: {', '.join(modes_for(f))}" for f in frameworks)
        return f": no {'/'.join(frameworks)} mode is called {', '.join(modes)} ({valid})"
    return ""


def cmd_merge(args) -> int:
    from jitbench.nightly.shards import merge

    print(merge(args.shard_dirs, args.output))
    return 0


def cmd_list(args) -> int:
    from jitbench.define.workload import group_cases

    cases = _selected_cases(args)
    for c in cases:
        print(f"{c.case_id}")
    groups = group_cases(cases)
    print(f"{len(cases)} cases ({len(groups)} groups of interleaved modes)")
    return 0


def _progress_printer():
    from rich.console import Console

    console = Console(stderr=True, highlight=False, markup=False, soft_wrap=True)  # log-friendly

    def show(p) -> None:
        console.print(f"[{p.done:>3}/{p.total}] {p.elapsed_s:7.1f}s  {p.current}")

    return show


def cmd_run(args) -> int:
    from jitbench.protocol.settings import Protocol
    from jitbench.results import run_folder
    from jitbench.run import runner

    if args.resume:
        return _resume(args)
    cases = _selected_cases(args)
    run_folder.check_writable(args.out, "--out")  # before an hour of measuring
    if not args.no_report:
        run_folder.check_writable(args.reports, "--reports")
    # "sample" switches after every sample: untimed calls there would outnumber the timed ones
    chosen = args.precision
    if chosen is None:  # --min-time alone asks for the fixed protocol
        chosen = "off" if args.min_time else 0.05
    chosen = None if chosen == "off" else chosen
    protocol = Protocol(min_time=args.min_time or 0.5, interleave=args.interleave,
                        precision=chosen, budget=args.budget, stop_when=args.stop_when,
                        **({"switch_calls": 0} if args.interleave == "sample" else {}))
    run_dir = runner.run(cases, args.out, protocol=protocol,
                         case_timeout=args.case_timeout or 1800.0,
                         command=["jitbench", *sys.argv[1:]], on_progress=_progress_printer(),
                         run_id=args.run_id, calibrate=not args.no_calibrate,
                         compile_cache=args.compile_cache, dump_hlo=args.dump_hlo,
                         profile=args.profile, matmul_precision=args.matmul_precision,
                         process_profile=args.process_profile,
                         recalibrate=args.recalibrate)
    return _after_run(args, run_dir)


def _resume(args) -> int:
    """``run --resume RUN_DIR``: the run's own cases and settings; filters are refused."""
    from jitbench.results import run_folder
    from jitbench.run import runner

    given = [f"--{n.replace('_', '-')}" for n in ("suite", "framework", "mode", "device",
                                                   "dtype", "variant", "shard", "run_id",
                                                   "min_time") if getattr(args, n, None)]
    given += ["--suite-file"] if args.suite_file else []
    given += ["--size"] if args.size != "quick" else []
    if given:
        raise UserError(f"--resume continues RUN_DIR with its own cases and settings; "
                        f"leave out {', '.join(given)}")
    run_folder.load_run(args.resume, quiet=True)  # "not a run" before anything else
    if not args.no_report:
        run_folder.check_writable(args.reports, "--reports")
    run_dir = runner.resume(args.resume, case_timeout=args.case_timeout,
                            command=["jitbench", *sys.argv[1:]], on_progress=_progress_printer())
    return _after_run(args, run_dir)


def _after_run(args, run_dir: Path) -> int:
    print(f"results: {run_dir / 'results.jsonl'}")
    if not args.no_report:
        from jitbench.report import write_report

        page = write_report(run_dir, Path(args.reports) / run_dir.name)
        print(f"report:  {page}")
    _print_summary(run_dir)
    return 0


def _print_summary(run_dir: Path) -> None:
    from jitbench.results.files import load_results

    df = load_results(run_dir)
    counts = df["status"].value_counts().to_dict()
    print("status: " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())))


def cmd_report(args) -> int:
    from jitbench.report import write_report
    from jitbench.results.files import load_meta

    src = Path(args.run_dir)
    if not src.exists():
        raise UserError(f"RUN_DIR {args.run_dir!r} does not exist")
    run_id = load_meta(src).get("run_id") if src.is_dir() else None
    out = Path(args.output) if args.output else Path("reports") / (run_id or src.stem)
    print(write_report(src, out))
    return 0


def cmd_compare(args) -> int:
    from jitbench.analysis import COMPARE_NOISE_FLOOR, regressions_over
    from jitbench.report.compare import compare_paths
    from jitbench.report.compare_page import compare_lines, write_compare_page

    floor = COMPARE_NOISE_FLOOR if args.noise_floor is None else args.noise_floor / 100
    cmp = compare_paths(args.run_a, args.run_b, noise_floor=floor)
    for line in compare_lines(cmp):
        print(line)
    name = f"compare-{Path(args.run_a).name}-vs-{Path(args.run_b).name}"
    out = Path(args.output) if args.output else Path("reports") / name
    print(f"report: {write_compare_page(cmp, out)}")
    if args.fail_on_regression is not None:
        bad = regressions_over(cmp.table, args.fail_on_regression)
        if len(bad):
            print(f"FAIL: {len(bad)} row(s) regressed by more than {args.fail_on_regression:g}% "
                  f"or newly fail", file=sys.stderr)
            return 1
    return 0


def _format_warning(message, category, filename, lineno, line=None) -> str:
    if issubclass(category, DataWarning):
        return f"jitbench: warning: {message}\n"
    return _default_format_warning(message, category, filename, lineno, line)


_default_format_warning = warnings.formatwarning


def main(argv: list[str] | None = None) -> int:
    warnings.formatwarning = _format_warning
    parser = build_parser()
    args = parser.parse_args(argv)
    args.argv = list(sys.argv[1:] if argv is None else argv)
    if not args.command:
        parser.print_help()
        return 2
    handler = {"list": cmd_list, "run": cmd_run, "report": cmd_report, "sweep": sweep_cli.cmd,
               "nightly": lambda a: nightly_cli.cmd(a, _selected_cases, _progress_printer), "merge": cmd_merge, "compare": cmd_compare,
               "doctor": doctor_cli.cmd,
               "ab": lambda a: ab_cli.cmd(a, _selected_cases, _progress_printer()),
               "releases": lambda a: releases_cli.cmd(a, _selected_cases, _progress_printer(),
                                              build_parser),
               }[args.command]
    try:
        return handler(args)
    except UserError as exc:
        if args.debug:
            raise
        print(f"jitbench: error: {exc}", file=sys.stderr)
        return 2
    except Interrupted as exc:
        if exc.run_dir is None:
            print(f"jitbench: interrupted ({exc.signal_name})", file=sys.stderr)
        elif exc.resume is None:  # a sweep: no resume, its rows are kept
            print(f"jitbench: interrupted ({exc.signal_name}); {exc.recorded} rows kept in "
                  f"{exc.run_dir}", file=sys.stderr)
        else:
            print(f"jitbench: interrupted ({exc.signal_name}); {exc.recorded} of {exc.total} "
                  f"rows kept in {exc.run_dir}; continue with: {exc.resume} "
                  f"{exc.run_dir}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("jitbench: interrupted; completed rows are kept", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
