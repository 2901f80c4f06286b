"""``jitbench`` command line: list | run | report. The one place that prints.

Every UserError is caught here: one line on stderr, exit code 2, no traceback (``--debug``
shows it).
"""

from __future__ import annotations

import argparse
import math
import sys
import warnings
from pathlib import Path

from . import insight, sweep_cli
from .errors import DataWarning, Interrupted, UserError
from .timing import INTERLEAVE_SCHEMES


class _Parser(argparse.ArgumentParser):
    """argparse, but a mistake is one line (not the usage block), still exit code 2."""

    def error(self, message: str):
        self.exit(2, f"{self.prog}: error: {message} (see `{self.prog} --help`)\n")


def _add_filters(p: argparse.ArgumentParser, size: str = "quick") -> None:
    g = p.add_argument_group("case filters (comma lists; default: all)")
    g.add_argument("--suite", help="workloads, e.g. matmul_relu,mmd")
    g.add_argument("--framework", help="tf, jax")
    g.add_argument("--mode", help="eager, graph, xla, autoclustering (tf); eager, jit, aot (jax)")
    g.add_argument("--device", help="cpu, gpu (gpu cases are 'skipped' rows where no GPU)")
    g.add_argument("--dtype", help="float32, float64")
    g.add_argument("--variant", help="workload variants, e.g. fused,split")
    g.add_argument("--size", default=size, help=f"parameter grid: quick or full (default: {size})")
    g.add_argument("--suite-file", action="append", default=[], metavar="FILE.py",
                   help="also load the workload defined in this file (repeatable)")


def _filters(args):
    from .workload import Filters

    for name in ("suite", "framework", "mode", "device", "dtype", "variant"):
        value = getattr(args, name, None)
        if value is not None and Filters.split(value) is None:
            raise UserError(f"--{name} {value!r} names nothing; leave it out to mean all")
    for f in args.suite_file:
        _check_suite_file(f)
    return Filters(suite=Filters.split(args.suite), framework=Filters.split(args.framework),
                   mode=Filters.split(args.mode), device=Filters.split(args.device),
                   dtype=Filters.split(args.dtype), variant=Filters.split(args.variant),
                   size=args.size, suite_files=tuple(args.suite_file))


def _check_suite_file(path: str) -> None:
    """A --suite-file that is missing, not Python, or fails to import: one line, not the
    traceback of the import machinery."""
    from .workload import load_workload

    if not path.endswith(".py"):
        raise UserError(f"--suite-file {path!r} is not a .py file")
    try:
        load_workload(path)
    except UserError:
        raise
    except Exception as exc:  # the user's file raised while importing: say which and how
        raise UserError(f"--suite-file {path!r} failed to import: "
                        f"{type(exc).__name__}: {exc}") from exc


def _positive(name: str):
    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{name} must be a number of seconds, "
                                             f"got {text!r}")
        if not (value > 0 and math.isfinite(value)):
            raise argparse.ArgumentTypeError(f"{name} must be a finite number > 0, "
                                             f"got {text!r}")
        return value

    return parse


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="jitbench", description="Measure what turning JIT (XLA) on does to "
                                                  "TensorFlow and JAX workloads.")
    parser.add_argument("--debug", action="store_true", help="show tracebacks of errors")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    p = sub.add_parser("list", help="print the cases a run with these filters would execute")
    _add_filters(p)
    p.add_argument("--shard", metavar="K/N", help="only the cases of shard K of N")

    p = sub.add_parser("run", help="measure the cases, write results/<run_id>/ and a report")
    _add_filters(p)
    p.add_argument("--out", default="results", metavar="DIR",
                   help="results root; the run goes to DIR/<run_id>/ (default: results)")
    p.add_argument("--reports", default="reports", metavar="DIR",
                   help="reports root; the HTML goes to DIR/<run_id>/ (default: reports)")
    p.add_argument("--no-report", action="store_true", help="do not write the HTML report")
    p.add_argument("--min-time", type=_positive("--min-time"), default=None, metavar="S",
                   help="seconds of timed samples per mode, at least (default: 0.5)")
    p.add_argument("--case-timeout", type=_positive("--case-timeout"), default=None,
                   metavar="S", help="time limit of one case group, in seconds (default: 1800); "
                                     "a group that exceeds it is killed, the mode it was in "
                                     "gets a 'timeout' row and its other modes run again")
    p.add_argument("--resume", metavar="RUN_DIR",
                   help="continue an interrupted run: measure only the cases RUN_DIR has no "
                        "row for, with its own settings, appending to its results.jsonl")
    p.add_argument("--no-calibrate", action="store_true",
                   help="skip the per-run calibration (matmul peak, dispatch floor of each "
                        "mode; ~10 s): the report then shows no %% of peak or floors")
    p.add_argument("--interleave", choices=list(INTERLEAVE_SCHEMES), default="sample",
                   help="how the timed samples of a group's modes alternate: one sample of "
                        "each in turn (sample, the default), 5 samples in a row (block), or a "
                        "new random order each round (random); block and random make one "
                        "untimed call after each switch of mode")
    insight.add_arguments(p)  # --dump-hlo, --profile
    _add_scale_out(p)

    p = sub.add_parser("nightly", help="run, add to the history, detect regressions "
                                       "(exit 1 on a confirmed one), write reports/index.html")
    _add_filters(p, size="full")
    p.add_argument("--results", default="results", metavar="DIR",
                   help="results root holding the past runs (default: results)")
    p.add_argument("--reports", default="reports", metavar="DIR",
                   help="reports root; history page at DIR/index.html (default: reports)")
    p.add_argument("--min-time", type=_positive("--min-time"), default=1.0, metavar="S",
                   help="seconds of timed samples per mode, at least (default: 1.0)")
    p.add_argument("--case-timeout", type=_positive("--case-timeout"), default=1800.0,
                   metavar="S", help="time limit of one case group, in seconds (default: 1800)")
    p.add_argument("--threshold", type=_positive("--threshold"), default=10.0, metavar="PCT",
                   help="steady-state step that counts as a regression: JIT time / baseline "
                        "time, JIT-off time x machine probe (default: 10)")
    p.add_argument("--compile-threshold", "--first-call-threshold", dest="compile_threshold",
                   type=_positive("--compile-threshold"), default=50.0, metavar="PCT",
                   help="compile-time step (framework counter x machine probe) that counts "
                        "(default: 50)")
    p.add_argument("--no-run", action="store_true",
                   help="measure nothing: analyse the runs already in --results (e.g. after "
                        "`jitbench merge` of shards)")
    p.add_argument("--no-recheck", action="store_true",
                   help="confirm suspected regressions without re-measuring them")
    _add_scale_out(p)

    sweep_cli.add_parser(sub, _add_filters, _filters)
    p = sub.add_parser("merge", help="merge the runs of several shards into one run folder")
    p.add_argument("shard_dirs", nargs="+", metavar="SHARD_RUN_DIR")
    p.add_argument("-o", "--output", required=True, metavar="RUN_DIR",
                   help="the merged run folder, e.g. results/<run_id>")

    p = sub.add_parser("report", help="write the HTML report of a run")
    p.add_argument("run_dir", metavar="RUN_DIR", help="a run folder (results/<run_id>)")
    p.add_argument("-o", "--output", metavar="DIR",
                   help="output folder (default: reports/<run_id>)")

    p = sub.add_parser("compare", help="per-case change from RUN_A to RUN_B with confidence "
                                       "intervals; a table here and an HTML page")
    p.add_argument("run_a", metavar="RUN_A", help="the reference run folder (or results.jsonl)")
    p.add_argument("run_b", metavar="RUN_B", help="the new run folder (or results.jsonl)")
    p.add_argument("-o", "--output", metavar="DIR",
                   help="output folder of the HTML page (default: reports/compare-A-vs-B)")
    p.add_argument("--fail-on-regression", type=_percent("--fail-on-regression"),
                   metavar="PCT", help="exit 1 when a significant regression is slower by more "
                                       "than PCT percent, or a row that passed in A fails in B")
    p.add_argument("--noise-floor", type=_percent("--noise-floor"), default=None, metavar="PCT",
                   help="changes below this are never significant (default: 5)")
    return parser


def _percent(name: str):
    def parse(text: str) -> float:
        try:
            value = float(text.rstrip("%"))
        except ValueError:
            raise argparse.ArgumentTypeError(f"{name} must be a percentage, got {text!r}")
        if not (value >= 0 and math.isfinite(value)):
            raise argparse.ArgumentTypeError(f"{name} must be a finite percentage >= 0, "
                                             f"got {text!r}")
        return value

    return parse


def _add_scale_out(p: argparse.ArgumentParser) -> None:
    p.add_argument("--shard", metavar="K/N",
                   help="run only shard K of N of the case groups (deterministic split for "
                        "N machines; merge their runs with `jitbench merge`)")
    p.add_argument("--run-id", metavar="ID",
                   help="name of the run folder (default: date-time-pid); give every shard "
                        "of one night the same ID")


def _selected_cases(args):
    from .workload import expand

    cases = expand(_filters(args))
    if getattr(args, "shard", None):
        from .nightly import parse_shard, shard

        cases = shard(cases, *parse_shard(args.shard))
    if not cases:
        raise UserError(f"no cases match these filters{_why_no_cases(args)} "
                        f"(see `jitbench list`)")
    return cases


def _why_no_cases(args) -> str:
    """The usual reason: modes asked for that the frameworks asked for do not have."""
    from .modes import FRAMEWORKS, modes_for
    from .workload import Filters

    frameworks = Filters.split(args.framework) or FRAMEWORKS
    modes = Filters.split(args.mode)
    if modes and not any(m in modes_for(f) for f in frameworks for m in modes):
        valid = "; ".join(f"{f}: {', '.join(modes_for(f))}" for f in frameworks)
        return f": no {'/'.join(frameworks)} mode is called {', '.join(modes)} ({valid})"
    return ""


def cmd_nightly(args) -> int:
    from .history import Thresholds
    from .nightly import SUMMARY_NAME, nightly
    from .timing import Protocol

    cases = [] if args.no_run else _selected_cases(args)
    thresholds = Thresholds(steady=args.threshold / 100, compile=args.compile_threshold / 100)
    result = nightly(cases, args.results, args.reports, protocol=Protocol(min_time=args.min_time),
                     thresholds=thresholds, do_run=not args.no_run,
                     recheck=not args.no_recheck, case_timeout=args.case_timeout,
                     command=["jitbench", *sys.argv[1:]], on_progress=_progress_printer(),
                     run_id=args.run_id)
    print(f"history: {Path(args.reports) / 'index.html'}")
    print(f"summary: {Path(args.reports) / SUMMARY_NAME}")
    if result["regression"]:
        for r in result["confirmed"]:
            print(f"REGRESSION {r['case_id']} {r['metric']}: {r['text']}")
        return 1
    note = f"; {result['note']}" if result["note"] else ""
    print(f"no confirmed regression in {result['latest_run']} "
          f"({len(result['suspected'])} suspected){note}")
    return 0


def cmd_merge(args) -> int:
    from .nightly import merge

    print(merge(args.shard_dirs, args.output))
    return 0


def cmd_list(args) -> int:
    from .workload import group_cases

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
    from . import runner
    from .timing import Protocol

    if args.resume:
        return _resume(args)
    cases = _selected_cases(args)
    runner.check_writable(args.out, "--out")  # before an hour of measuring
    if not args.no_report:
        runner.check_writable(args.reports, "--reports")
    protocol = Protocol(min_time=args.min_time or 0.5, interleave=args.interleave,
                        switch_calls=0 if args.interleave == "sample" else 1)
    run_dir = runner.run(cases, args.out, protocol=protocol,
                         case_timeout=args.case_timeout or 1800.0,
                         command=["jitbench", *sys.argv[1:]], on_progress=_progress_printer(),
                         run_id=args.run_id, calibrate=not args.no_calibrate,
                         compile_cache=args.compile_cache, **insight.run_options(args))
    return _after_run(args, run_dir)


def _resume(args) -> int:
    """``run --resume RUN_DIR``: the run's own cases and settings; filters are refused."""
    from . import runner

    given = [f"--{n.replace('_', '-')}" for n in ("suite", "framework", "mode", "device",
                                                   "dtype", "variant", "shard", "run_id",
                                                   "min_time") if getattr(args, n, None)]
    given += ["--suite-file"] if args.suite_file else []
    given += ["--size"] if args.size != "quick" else []
    if given:
        raise UserError(f"--resume continues RUN_DIR with its own cases and settings; "
                        f"leave out {', '.join(given)}")
    runner.load_run(args.resume, quiet=True)  # "not a run" before anything else
    if not args.no_report:
        runner.check_writable(args.reports, "--reports")
    run_dir = runner.resume(args.resume, case_timeout=args.case_timeout,
                            command=["jitbench", *sys.argv[1:]], on_progress=_progress_printer())
    return _after_run(args, run_dir)


def _after_run(args, run_dir: Path) -> int:
    print(f"results: {run_dir / 'results.jsonl'}")
    if not args.no_report:
        from .report import write_report

        page = write_report(run_dir, Path(args.reports) / run_dir.name)
        print(f"report:  {page}")
    _print_summary(run_dir)
    return 0


def _print_summary(run_dir: Path) -> None:
    from .results import load_results

    df = load_results(run_dir)
    counts = df["status"].value_counts().to_dict()
    print("status: " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())))


def cmd_report(args) -> int:
    from .report import write_report
    from .results import load_meta

    src = Path(args.run_dir)
    if not src.exists():
        raise UserError(f"RUN_DIR {args.run_dir!r} does not exist")
    run_id = load_meta(src).get("run_id") if src.is_dir() else None
    out = Path(args.output) if args.output else Path("reports") / (run_id or src.stem)
    print(write_report(src, out))
    return 0


def cmd_compare(args) -> int:
    from .analysis import COMPARE_NOISE_FLOOR, regressions_over
    from .compare import compare_paths
    from .report.compare_page import compare_lines, write_compare_page

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
    if not args.command:
        parser.print_help()
        return 2
    handler = {"list": cmd_list, "run": cmd_run, "report": cmd_report, "sweep": sweep_cli.cmd,
               "nightly": cmd_nightly, "merge": cmd_merge, "compare": cmd_compare}[args.command]
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
        else:
            print(f"jitbench: interrupted ({exc.signal_name}); {exc.recorded} of {exc.total} "
                  f"rows kept in {exc.run_dir}; continue with: jitbench run --resume "
                  f"{exc.run_dir}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("jitbench: interrupted; completed rows are kept", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
