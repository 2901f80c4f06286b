"""``jitbench ab``: the selected cases in two environments, in pairs of fresh processes, with
a verdict per case (``jitbench.run.ab_arms``; the statistics: ``jitbench.analysis.ab_verdicts``).

    jitbench ab --a SPEC --b SPEC [case filters] [--max-pairs N] [--json]
    jitbench ab --resume RUN_DIR

An arm's SPEC: ``python=PATH`` (an interpreter with jitbench installed: another virtual
environment's) and/or ``NAME=VALUE`` environment assignments; ``''`` is this environment.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from jitbench.cli.folders import add_output_folders


def add_pair_options(p, positive, percent) -> None:
    """The options of every command that measures pairs of fresh processes with the A/B's
    engine (``jitbench ab``, ``jitbench releases``): the "same" band, the sampling per group
    and process, a group's time limit."""
    p.add_argument("--tolerance", type=percent("--tolerance"), default=5.0, metavar="PCT",
                   help="B is 'same' as A when its interval lies within +-PCT%% (default: 5)")
    p.add_argument("--budget", type=positive("--budget"), default=0.3, metavar="S",
                   help="seconds of interleaved sampling per case group in each process, at "
                        "most (default: 0.3; the samples are `jitbench run`'s)")
    p.add_argument("--case-timeout", type=positive("--case-timeout"), default=1800.0,
                   metavar="S", help="time limit of one case group in one process (default: "
                                     "1800)")


def add_parser(sub, add_filters, positive, positive_int, percent, add_process_profile
               ) -> None:
    p = sub.add_parser(
        "ab", help="measure the cases in two environments (interpreters, XLA flags, thread "
                   "settings) in pairs of fresh processes (in turns, or at once: --pairing); a "
                   "verdict per case")
    add_filters(p)
    p.add_argument("--a", default="", metavar="SPEC",
                   help="arm A: python=PATH (an interpreter with jitbench installed) and/or "
                        "NAME=VALUE environment assignments, shell-quoted; '' (the default): "
                        "this environment")
    p.add_argument("--b", default="", metavar="SPEC", help="arm B, the same way")
    p.add_argument("--max-pairs", type=positive_int("--max-pairs"), default=8, metavar="N",
                   help="rounds at most (a fresh process of each arm per round); a case not "
                        "decided then is 'unresolved' (default: 8)")
    p.add_argument("--time-limit", type=positive("--time-limit"), default=None, metavar="S",
                   help="no new round starts that would end after S seconds")
    add_pair_options(p, positive, percent)
    p.add_argument("--resume", metavar="RUN_DIR",
                   help="continue an interrupted A/B with its own arms, cases and settings")
    add_output_folders(p, "the A/B")
    p.add_argument("--json", action="store_true",
                   help="print the verdicts as JSON (arms, warnings, counts, cases) instead of "
                        "lines")
    add_process_profile(p)
    from jitbench.run.options import PAIRINGS

    p.add_argument("--pairing", choices=list(PAIRINGS), default="alternating",
                   help="how each pair of fresh processes runs: " + "; ".join(
                       f"{k}: {v}" for k, v in PAIRINGS.items())
                   + " (default: alternating; a duet pins the workers, as the stable profile "
                     "does)")
    p.add_argument("--fail-on-slower", action="store_true",
                   help="exit 1 when B is 'slower' than A in any case")


def cmd(args: argparse.Namespace, selected_cases, progress) -> int:
    """``selected_cases(args)`` / ``progress()``: ``jitbench.cli.main``'s case selection and
    progress printer."""
    from jitbench.report import write_report
    from jitbench.report.ab_page import lines, overview, table
    from jitbench.results import run_folder
    from jitbench.results.files import load_meta, load_results
    from jitbench.run import ab_arms

    command = ["jitbench", *sys.argv[1:]]
    given = [f"--{n.replace('_', '-')}" for n in ("a", "b", "suite", "framework", "mode",
                                                  "device", "dtype", "variant", "run_id")
             if getattr(args, n, None)] + (["--suite-file"] if args.suite_file else [])
    if args.resume and given:
        from jitbench.errors import UserError

        raise UserError(f"--resume continues RUN_DIR with its own arms, cases and settings; "
                        f"leave out {', '.join(given)}")
    if args.resume:
        run_dir = ab_arms.resume_ab(args.resume, command=command, on_progress=progress)
    else:
        cases = selected_cases(args)
        arms = (ab_arms.parse_arm("a", args.a), ab_arms.parse_arm("b", args.b))
        run_folder.check_writable(args.out, "--out")
        if not args.no_report:
            run_folder.check_writable(args.reports, "--reports")
        settings = ab_arms.Settings(max_pairs=args.max_pairs, tolerance=args.tolerance / 100,
                               time_limit=args.time_limit, budget=args.budget,
                               process_profile=args.process_profile, pairing=args.pairing)
        run_dir = ab_arms.run_ab(cases, args.out, arms, settings, case_timeout=args.case_timeout,
                            run_id=args.run_id, command=command, on_progress=progress)
    meta, df = load_meta(run_dir), load_results(run_dir)
    t = table(df, meta)
    if args.json:
        print(json.dumps(overview(t, meta), indent=1, default=str))
    else:
        for line in lines(t, meta):
            print(line)
        print(f"results: {Path(run_dir) / 'results.jsonl'}")
    if not args.no_report:
        page = write_report(run_dir, Path(args.reports) / Path(run_dir).name)
        print(f"report:  {page}", file=sys.stderr if args.json else sys.stdout)
    if args.fail_on_slower and (t["verdict"] == "slower").any():
        print(f"FAIL: B is slower than A in {int((t['verdict'] == 'slower').sum())} case(s)",
              file=sys.stderr)
        return 1
    return 0
