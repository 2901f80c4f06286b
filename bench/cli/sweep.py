"""``jitbench sweep``: run the workloads' recompile sweeps, print per mode what compiled
(and the ``run --compile-cache`` option, ``jitbench.run.compile_cache``).

    jitbench sweep --suite rnn [--framework jax] [--sweep seq] [--out results]

Writes ``OUT/<run_id>/sweep.jsonl`` (one row per call, see ``jitbench.run.sweep``) and
``sweep_meta.json`` (the sweep's record: what it ran on, its command, how it ended), prints
one line per mode ("1 compile(s) per new signature; revisits free") and a page with the
Recompilation block unless ``--no-report``. With ``--run-id`` of an existing run, the sweep
joins that run's report (section "First call and compilation").
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from jitbench.cli.folders import add_output_folders


def add_parser(sub, add_filters, filters) -> None:
    """The ``sweep`` subcommand, with the usual case filters (``add_filters`` adds them,
    ``filters(args)`` reads them: both from ``jitbench.cli.main``)."""
    p = sub.add_parser("sweep", help="call each mode with a workload's sweep of signatures "
                                     "(shapes, dtypes, static values), then revisit them: "
                                     "what compiles, what retraces, and why")
    add_filters(p)
    p.add_argument("--sweep", help="sweep names, comma list (default: every sweep of the "
                                   "selected workloads)")
    add_output_folders(p, "the sweep")
    p.set_defaults(filters=filters)


def cmd(args: argparse.Namespace) -> int:
    from jitbench.analysis.recompilation import per_mode, verdict
    from jitbench.define.workload import Filters
    from jitbench.results.run_folder import sweep_run_id
    from jitbench.run import sweep

    jobs = sweep.plan(args.filters(args), Filters.split(args.sweep))
    run_id = args.run_id or sweep_run_id()
    run_dir = Path(args.out) / run_id  # a run's folder (--run-id): the sweep joins its report

    def progress(job) -> None:
        print(f"sweep {job.workload}/{job.sweep} {job.framework} "
              f"[{','.join(job.modes)}] on {job.device}", file=sys.stderr, flush=True)

    rows = sweep.run(jobs, run_dir, on_job=progress, command=["jitbench", *sys.argv[1:]])
    for line in table(per_mode(rows), verdict):
        print(line)
    print(f"sweep:   {run_dir / 'sweep.jsonl'}")
    if not args.no_report:
        from jitbench.report.recompilation import write_page

        print(f"report:  {write_page(run_dir, Path(args.reports) / run_id)}")
    return 0


def table(summaries, verdict) -> list[str]:
    """Lines: workload/sweep framework mode | compiles per new signature | revisits | time."""
    def ms(v):
        return "-" if v is None else f"{1e3 * v:.1f} ms"

    out = [f"{'sweep':<24} {'mode':<20} {'compiles/new':<13} {'traces/new':<11} "
           f"{'new sig':>9} {'revisit':>9}  verdict"]
    for s in summaries:
        out.append(f"{s['workload'] + '/' + s['sweep']:<24} "
                   f"{s['framework'] + ' ' + s['mode']:<20} "
                   f"{','.join(map(str, s['compiles_new'])):<13} "
                   f"{','.join(map(str, s['traces_new'])):<11} "
                   f"{ms(s['new_s']):>9} {ms(s['revisit_s']):>9}  {verdict(s)}")
    return out
