"""The ``jitbench`` command line's grammar: subcommands, options and their checks.

``jitbench.cli.main`` runs the commands; this module only says what a valid command line is. A bad
value is one line naming it and what is valid, exit code 2 (argparse's ``error``).
"""

from __future__ import annotations

import argparse
import math

from jitbench.cli import ab as ab_cli
from jitbench.cli import doctor as doctor_cli
from jitbench.cli import releases as releases_cli
from jitbench.cli import sweep as sweep_cli
from jitbench.define.modes import FRAMEWORKS, modes_for
from jitbench.frameworks import MATMUL_PRECISIONS
from jitbench.errors import UserError
from jitbench.nightly import MAX_PROCESSES, NIGHT_BUDGET, NIGHT_PRECISION
from jitbench.protocol.settings import INTERLEAVE_SCHEMES, STOP_WHEN
from jitbench.run.options import COMPILE_CACHE_CHOICES
from jitbench.run.options import PAIRINGS, PROCESS_PROFILES
from jitbench.xla.capture import PROFILE_CALLS


class _Parser(argparse.ArgumentParser):
    """argparse, but a mistake is one line (not the usage block), still exit code 2, and an
    option is only its full spelling: argparse would take an abbreviation (``--env`` for
    ``--environments``) that a command passing options on cannot recognise, and that a new
    option starting the same way would make ambiguous. Sub-commands' parsers are of this
    class too (``add_subparsers`` makes them of the parent's)."""

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("allow_abbrev", False)
        super().__init__(*args, **kwargs)

    def error(self, message: str):
        self.exit(2, f"{self.prog}: error: {message}{self._in_full(message)} "
                     f"(see `{self.prog} --help`)\n")

    def _in_full(self, message: str) -> str:
        """For an unrecognised option that begins an option's name (what argparse took as an
        abbreviation before), the names it begins."""
        if not message.startswith("unrecognized arguments:"):
            return ""
        names: set[str] = set()
        parsers = [self]
        while parsers:
            parser = parsers.pop()
            for action in parser._actions:
                names.update(action.option_strings)
                if isinstance(action, argparse._SubParsersAction):
                    parsers.extend(action.choices.values())
        words = [w.split("=")[0] for w in message.split()[2:] if w.startswith("--")]
        full = sorted({n for w in words for n in names if n.startswith(w) and n != w})
        return f"; options are spelled in full: {', '.join(full)}" if full else ""


def add_filters(p: argparse.ArgumentParser, size: str = "quick") -> None:
    g = p.add_argument_group("case filters (comma lists; default: all)")
    g.add_argument("--suite", help="workloads, e.g. matmul_relu,mmd")
    g.add_argument("--framework", help="tf, jax")
    g.add_argument("--mode", help="; ".join(f"{', '.join(modes_for(fw))} ({fw})"
                                            for fw in FRAMEWORKS))
    g.add_argument("--device", help="cpu, gpu (gpu cases are 'skipped' rows where no GPU)")
    g.add_argument("--dtype", help="float32, float64")
    g.add_argument("--variant", help="workload variants, e.g. fused,split")
    g.add_argument("--size", default=size, help=f"parameter grid: quick or full (default: {size})")
    g.add_argument("--suite-file", action="append", default=[], metavar="FILE.py",
                   help="also load the workload defined in this file (repeatable)")


def filters(args):
    from jitbench.define.workload import Filters

    for name in ("suite", "framework", "mode", "device", "dtype", "variant"):
        value = getattr(args, name, None)
        if value is not None and Filters.split(value) is None:
            raise UserError(f"--{name} {value!r} names nothing; leave it out to mean all")
    for f in args.suite_file:
        check_suite_file(f)
    return Filters(suite=Filters.split(args.suite), framework=Filters.split(args.framework),
                   mode=Filters.split(args.mode), device=Filters.split(args.device),
                   dtype=Filters.split(args.dtype), variant=Filters.split(args.variant),
                   size=args.size, suite_files=tuple(args.suite_file))


def check_suite_file(path: str) -> None:
    """A --suite-file that is missing, not Python, or fails to import: one line, not the
    traceback of the import machinery."""
    from jitbench.define.workload import load_workload

    if not path.endswith(".py"):
        raise UserError(f"--suite-file {path!r} is not a .py file")
    try:
        load_workload(path)
    except UserError:
        raise
    except Exception as exc:  # the user's file raised while importing: say which and how
        raise UserError(f"--suite-file {path!r} failed to import: "
                        f"{type(exc).__name__}: {exc}") from exc


def positive(name: str, zero: bool = False):
    """A finite number of seconds > 0 (``zero``: >= 0, where 0 means none)."""
    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{name} must be a number of seconds, "
                                             f"got {text!r}")
        if not ((value >= 0 if zero else value > 0) and math.isfinite(value)):
            raise argparse.ArgumentTypeError(f"{name} must be a finite number "
                                             f"{'>=' if zero else '>'} 0, got {text!r}")
        return value

    return parse


def nonnegative(name: str):
    """Seconds where 0 means none (``--wait-lock``)."""
    return positive(name, zero=True)


def precision(text: str) -> float | str:
    """``--precision``: a fraction in (0, 1), ``5%``, or ``off``."""
    if text.strip().lower() == "off":
        return "off"
    try:
        value = float(text.rstrip("%")) / (100.0 if text.endswith("%") else 1.0)
    except ValueError:
        raise argparse.ArgumentTypeError(f"--precision must be a fraction such as 0.05, a "
                                         f"percentage such as 5%, or off; got {text!r}")
    if not 0 < value < 1:
        raise argparse.ArgumentTypeError(f"--precision must lie between 0 and 1 (0.05 = "
                                         f"+-5%), or be off; got {text!r}")
    return value


def machine_check(text: str) -> float | None:
    """``--machine-check``: a percentage > 0, or ``off`` (None)."""
    if text.strip().lower() == "off":
        return None
    try:
        value = float(text.rstrip("%"))
    except ValueError:
        value = math.nan
    if not (value > 0 and math.isfinite(value)):
        raise argparse.ArgumentTypeError(f"--machine-check must be a percentage > 0 such as "
                                         f"10, or off; got {text!r}")
    return value


def positive_int(name: str):
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{name} must be a whole number, got {text!r}")
        if value < 1:
            raise argparse.ArgumentTypeError(f"{name} must be 1 or more, got {text!r}")
        return value

    return parse


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="jitbench", description="Measure what turning JIT (XLA) on does to "
                                                  "TensorFlow and JAX workloads.")
    parser.add_argument("--debug", action="store_true", help="show tracebacks of errors")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    p = sub.add_parser("list", help="print the cases a run with these filters would execute")
    add_filters(p)
    p.add_argument("--shard", metavar="K/N", help="only the cases of shard K of N")

    p = sub.add_parser("run", help="measure the cases, write results/<run_id>/ and a report")
    add_filters(p)
    p.add_argument("--out", default="results", metavar="DIR",
                   help="results root; the run goes to DIR/<run_id>/ (default: results)")
    p.add_argument("--reports", default="reports", metavar="DIR",
                   help="reports root; the HTML goes to DIR/<run_id>/ (default: reports)")
    p.add_argument("--no-report", action="store_true", help="do not write the HTML report")
    p.add_argument("--precision", type=precision, default=None, metavar="P",
                   help="sample each group until every JIT mode's verdict against its "
                        "nearest JIT-off mode (and the A/A control's) is known to +-P at 95%% "
                        "(default: 0.05), or its --budget is spent; 'off': the fixed "
                        "protocol, --min-time seconds per mode")
    p.add_argument("--budget", type=positive("--budget"), default=6.0, metavar="S",
                   help="seconds of interleaved sampling per group, at most (default: 6); "
                        "a pair still open then is 'unresolved'")
    p.add_argument("--stop-when", choices=STOP_WHEN, default="verdict",
                   help="a pair has sampled enough when its verdict is known (verdict, the "
                        "default) or when its interval is within +-P whatever the verdict "
                        "(precise: what `jitbench nightly` does, to follow each ratio from "
                        "night to night)")
    p.add_argument("--min-time", type=positive("--min-time"), default=None, metavar="S",
                   help="seconds of timed samples per mode, at least, with --precision off "
                        "(default: 0.5); given alone, it turns --precision off")
    p.add_argument("--case-timeout", type=positive("--case-timeout"), default=None,
                   metavar="S", help="time limit of one case group, in seconds (default: 1800); "
                                     "a group that exceeds it is killed, the mode it was in "
                                     "gets a 'timeout' row and its other modes run again")
    p.add_argument("--resume", metavar="RUN_DIR",
                   help="continue an interrupted run: measure only the cases RUN_DIR has no "
                        "row for, with its own settings, appending to its results.jsonl")
    p.add_argument("--no-calibrate", action="store_true",
                   help="skip the per-run calibration (matmul peak, dispatch floor and "
                        "bandwidth of each mode, measured by each worker before its cases, "
                        "or kept from an earlier run on this machine and software): the "
                        "report then shows no %% of peak or floors")
    p.add_argument("--recalibrate", action="store_true",
                   help="measure the calibration even where one kept from an earlier run on "
                        "this machine, boot and software fits (kept 12 h, under "
                        "$JITBENCH_CACHE or ~/.cache/jitbench)")
    p.add_argument("--interleave", choices=list(INTERLEAVE_SCHEMES), default="block",
                   help="how the timed samples of a group's modes alternate: 5 samples of a "
                        "mode in a row (block, the default; 3 to 5 under --precision, fewer "
                        "for slow modes), the same with the order reversed every round "
                        "(abba), one sample of each in turn (sample), or a new random order "
                        "each round (random); one untimed call after each switch of mode "
                        "(5 with --precision off; none for calls of 83 ms or more under "
                        "--precision)")
    p.add_argument("--dump-hlo", action="store_true",
                   help="keep each JIT mode's optimized HLO, its graph (.dot, .svg where "
                        "Graphviz is installed) under RUN/cases/<case>/, linked from the "
                        "report")
    p.add_argument("--profile", action="store_true",
                   help=f"record a profiler trace of {PROFILE_CALLS} calls of each mode "
                        f"after its timed samples, under RUN/cases/<case>/profile/")
    p.add_argument("--compile-cache", choices=COMPILE_CACHE_CHOICES, default="off",
                   help="persistent compilation cache: off (default), cold (an empty "
                        "cache in the run folder), warm (cold, then every group's first "
                        "calls again in a fresh worker reading that cache)")
    p.add_argument("--matmul-precision", choices=MATMUL_PRECISIONS, default="default",
                   help="float32 matrix products: default (what users get: TF32 on GPUs of "
                        "compute capability 8.0 and later, float32 elsewhere) or highest "
                        "(full float32 everywhere); each row says which it ran at "
                        "(matmul_precision) and its output is checked at that precision")
    add_process_profile(p)
    add_scale_out(p)

    p = sub.add_parser("nightly", help="run, add to the history, measure a change since the "
                                       "last good night side by side, detect regressions "
                                       "(exit 1 on a confirmed one, 3 when a change night's "
                                       "side by side could not decide, 4 when another night "
                                       "holds --results), write reports/index.html")
    add_filters(p, size="full")
    p.add_argument("--results", default="results", metavar="DIR",
                   help="results root holding the past runs (default: results)")
    p.add_argument("--reports", default="reports", metavar="DIR",
                   help="reports root; history page at DIR/index.html (default: reports)")
    p.add_argument("--precision", type=precision, default=NIGHT_PRECISION, metavar="P",
                   help=f"sample each group until every JIT mode's ratio to its nearest "
                        f"JIT-off mode is known to +-P at 95%% (default: {NIGHT_PRECISION}), "
                        f"whatever its verdict, or its --budget is spent; 'off': the fixed "
                        f"protocol, --min-time seconds per mode")
    p.add_argument("--budget", type=positive("--budget"), default=NIGHT_BUDGET, metavar="S",
                   help=f"seconds of interleaved sampling per group, at most (default: "
                        f"{NIGHT_BUDGET:g})")
    p.add_argument("--min-time", type=positive("--min-time"), default=1.0, metavar="S",
                   help="seconds of timed samples per mode with --precision off (default: 1.0)")
    p.add_argument("--evaluate", metavar="HISTORY",
                   help="measure nothing: replay HISTORY (a corpus file, or a results folder "
                        "of nights of unchanged code) and report each detector's false alerts "
                        "and how soon it sees steps of 5-30%% planted into it")
    p.add_argument("--corpus", metavar="FILE",
                   help="measure nothing: write the runs in --results as a nightly corpus "
                        "(what the detectors read of each night; .json or .json.gz)")
    p.add_argument("--change-corpus", metavar="FILE",
                   help="measure nothing: write the change nights in --results (each one's "
                        "A/B pairs of its touched cases) as a corpus for --evaluate, which "
                        "then reports false alerts, steps of 5-20%% found the same night and "
                        "the cost of a change night")
    p.add_argument("--change-pairs", type=int, metavar="N",
                   help="a change night measures exactly N process pairs whatever its "
                        "verdicts and time (to record a corpus of change nights; default: "
                        "pairs while a verdict is open)")
    p.add_argument("--pairing", choices=["auto", *PAIRINGS], default="auto",
                   help="how a change night's A/B runs each pair of fresh processes: "
                        + "; ".join(f"{k}: {v}" for k, v in PAIRINGS.items())
                        + "; auto: duet where the night's workers are pinned (the stable "
                          "profile), its cases run on the CPU and two cores are free to it, "
                          "alternating otherwise (default: auto)")
    p.add_argument("--environments", metavar="DIR",
                   help="keep two virtual environments in DIR (DIR/a, DIR/b): upgrade the one "
                        "that did not run the last good night from --requirements and run the "
                        "night in it, the other left as it was, so a night whose packages "
                        "changed measures both side by side (docs/nightly.md)")
    p.add_argument("--requirements", metavar="FILE",
                   help="with --environments: the pip requirements file tonight's "
                        "environment is upgraded from (name jitbench in it, not editable); "
                        "without it the night runs in tonight's environment as it is (a "
                        "shard of a night prepared with --prepare)")
    p.add_argument("--prepare", action="store_true",
                   help="with --environments and --requirements: upgrade tonight's "
                        "environment and stop (a night split over machines: once, before its "
                        "shards)")
    p.add_argument("--accept", metavar="RUN_ID",
                   help="measure nothing: make the night RUN_ID (a regressed or undecided "
                        "one: a step the team wants) the reference from the next night on, "
                        "recorded with --reason and shown on the history page and in every "
                        "later summary")
    p.add_argument("--reason", metavar="TEXT", help="with --accept: why the step is wanted")
    p.add_argument("--status", action="store_true",
                   help="measure nothing, write nothing: print where the nightly under "
                        "--results stands (the last good night, the nights after it and why "
                        "none is the reference, what the next night is compared with, whether "
                        "a night holds the folder, the smallest step the last judged night "
                        "could see per case); with --json, one JSON object")
    p.add_argument("--wait-lock", type=nonnegative("--wait-lock"), default=0.0, metavar="S",
                   help="one night at a time per --results folder: wait up to S seconds for "
                        "the night holding it to end (default: 0, refuse at once, exit 4)")
    p.add_argument("--json", action="store_true",
                   help="with --evaluate or --status: one JSON object")
    p.add_argument("--case-timeout", type=positive("--case-timeout"), default=1800.0,
                   metavar="S", help="time limit of one case group, in seconds (default: 1800)")
    p.add_argument("--threshold", type=positive("--threshold"), default=10.0, metavar="PCT",
                   help="the step that fails a night, on every night: on a change night a "
                        "touched case measured slower whose interval does not rule out a step "
                        "of PCT (a slower one that rules it out is named, exit 0; one still "
                        "open with the step not ruled out exits 3); on other nights a series' "
                        "step against its history (JIT time / baseline time, JIT-off time x "
                        "machine probe) (default: 10)")
    p.add_argument("--compile-threshold", "--first-call-threshold", dest="compile_threshold",
                   type=positive("--compile-threshold"), default=50.0, metavar="PCT",
                   help="compile-time step (framework counter x machine probe) that counts "
                        "(default: 50)")
    p.add_argument("--machine-check", type=machine_check, default=10.0, metavar="PCT|off",
                   help="judge no step on a night whose JIT-off times all moved more than PCT "
                        "against the 5 nights before: the machine moved, not the code "
                        "(default: 10; off: judge every night)")
    p.add_argument("--no-run", action="store_true",
                   help="measure nothing: analyse the runs already in --results (e.g. after "
                        "`jitbench merge` of shards)")
    p.add_argument("--no-recheck", action="store_true",
                   help="confirm suspected regressions without re-measuring them")
    p.add_argument("--recheck-decisive", action="store_true",
                   help="re-measure decisive suspects too (those whose own interval clears "
                        "every earlier night by the threshold; by default they are confirmed "
                        "as they are)")
    p.add_argument("--recheck-rounds", type=positive_int("--recheck-rounds"), default=3,
                   metavar="N", help="re-measure suspects, and series near a step, one "
                                     "fresh process a round, at most N rounds, until each is "
                                     "known to be slower, the same or faster, the rounds "
                                     "combined (default: 3)")
    p.add_argument("--max-processes", type=positive_int("--max-processes"),
                   default=MAX_PROCESSES, metavar="N",
                   help=f"measure each JIT series in up to N fresh processes a night, one "
                        f"after another, as many as its own scatter between nights needs to "
                        f"show a --threshold step (1: one process a night; default: "
                        f"{MAX_PROCESSES})")
    p.add_argument("--repeat-budget", type=positive("--repeat-budget"), default=None,
                   metavar="S", help="seconds the night's further processes may take "
                                     "(default: as long as the night's own run took)")
    p.add_argument("--on-change", choices=["ab", "history"], default="ab",
                   help="ab: a night whose software changed since the last good night "
                        "(installed distributions, the interpreter, XLA/TF/JAX and thread "
                        "variables, a workload's file, jitbench itself, the GPU driver) "
                        "measures the cases the change can touch in the last good night's "
                        "environment and tonight's, in pairs of fresh processes (--pairing), and "
                        "exits 1 when one is slower and a step of --threshold is not ruled "
                        "out, 3 when one stays undecided; a night where nothing changed reports "
                        "what its history sees as the machine's; history: every night is "
                        "judged by its history alone (default: ab)")
    p.add_argument("--confirm-ab", action="store_true",
                   help="a confirmed step on a night whose framework versions or XLA/TF "
                        "variables changed is measured in the last good night's environment "
                        "and tonight's side by side (jitbench ab), where the last good "
                        "interpreter is still there; the alert gives that verdict")
    add_process_profile(p, night=True)
    add_scale_out(p)

    sweep_cli.add_parser(sub, add_filters, filters)
    doctor_cli.add_parser(sub)
    ab_cli.add_parser(sub, add_filters, positive, positive_int, percent, add_process_profile)
    releases_cli.add_parser(sub, add_filters, positive, positive_int, percent)
    p = sub.add_parser("merge", help="merge the runs of several shards into one run folder")
    p.add_argument("shard_dirs", nargs="+", metavar="SHARD_RUN_DIR",
                   help="the run folders of the shards (`jitbench run --shard K/N`)")
    p.add_argument("-o", "--output", required=True, metavar="RUN_DIR",
                   help="the merged run folder, e.g. results/<run_id>")

    p = sub.add_parser("report", help="write the HTML report of a run (or of a "
                       "pytest-benchmark JSON)")
    p.add_argument("run_dir", metavar="RUN_DIR", help="a run folder (results/<run_id>), or a "
                   "pytest-benchmark JSON file (--benchmark-json) of jitbench's entries")
    p.add_argument("-o", "--output", metavar="DIR",
                   help="output folder (default: reports/<run_id>)")

    p = sub.add_parser("compare", help="per-case change from RUN_A to RUN_B with confidence "
                                       "intervals; a table here and an HTML page")
    p.add_argument("run_a", metavar="RUN_A", help="the reference run folder (or results.jsonl)")
    p.add_argument("run_b", metavar="RUN_B", help="the new run folder (or results.jsonl)")
    p.add_argument("-o", "--output", metavar="DIR",
                   help="output folder of the HTML page (default: reports/compare-A-vs-B)")
    p.add_argument("--fail-on-regression", type=percent("--fail-on-regression"),
                   metavar="PCT", help="exit 1 when a significant regression is slower by more "
                                       "than PCT percent, or a row that passed in A fails in B")
    p.add_argument("--noise-floor", type=percent("--noise-floor"), default=None, metavar="PCT",
                   help="changes below this are never significant (default: 5)")
    return parser


def percent(name: str):
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


def add_process_profile(p: argparse.ArgumentParser, night: bool = False) -> None:
    """``--process-profile``; a night's default is ``auto`` (:func:`night_profile`)."""
    p.add_argument("--process-profile", choices=[*PROCESS_PROFILES, *(["auto"] if night else [])],
                   default="auto" if night else "default",
                   help="how each worker process starts: " + "; ".join(
                       f"{k}: {v}" for k, v in PROCESS_PROFILES.items())
                   + ("; auto: stable when every case of the night runs on the CPU (there the "
                      "scatter between fresh processes hides a 10%% step), default otherwise "
                      "(default: auto)" if night else " (default: default)"))


def night_profile(name: str, cases, gpu_present: bool | None = None) -> str | None:
    """A night's process profile: ``auto`` is ``stable`` when every case that will run runs
    on the CPU (a night sees a 10% step only without the fresh-process scatter of the default
    profile, docs/nightly.md), ``default`` otherwise (a GPU night's host pinned to one core is
    no quieter and twice as long); None without cases (``--no-run``): the latest night's own
    profile. GPU cases on a machine without a GPU (``gpu_present``; None: ask nvidia-smi) are
    skipped, so they do not count."""
    if name != "auto":
        return name
    if not cases:  # ``--no-run``: the latest night's own profile (its rechecks measure so)
        return None
    if any(c.device != "cpu" for c in cases):
        if gpu_present is None:
            from jitbench.results.meta import gpus

            gpu_present = bool(gpus())
        if gpu_present:
            return "default"
    return "stable"


def add_scale_out(p: argparse.ArgumentParser) -> None:
    p.add_argument("--shard", metavar="K/N",
                   help="run only shard K of N of the case groups (deterministic split for "
                        "N machines; merge their runs with `jitbench merge`)")
    p.add_argument("--run-id", metavar="ID",
                   help="name of the run folder (default: date-time-pid); give every shard "
                        "of one night the same ID")
