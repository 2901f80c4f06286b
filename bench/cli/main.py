"""``jitbench`` command line: list | run | report. The one place that prints.

Every UserError is caught here: one line on stderr, exit code 2, no traceback (``--debug``
shows it).
"""

from __future__ import annotations

import contextlib
import sys
import warnings
from pathlib import Path

from jitbench.cli import ab as ab_cli
from jitbench.cli import doctor as doctor_cli
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


def cmd_nightly(args) -> int:
    """``jitbench nightly``: everything but the read-only replays (``--evaluate``,
    ``--corpus``, ``--change-corpus``) runs holding the results folder's lock, so that a
    second night on it refuses before anything runs (exit 4, ``jitbench.nightly.lock``); the
    shards of one night hold it together."""
    from jitbench.nightly.lock import LOCKED_EXIT, NightLocked, night_lock

    if args.evaluate or args.corpus or args.change_corpus:
        return _cmd_nightly_locked(args)
    if args.status:  # reads only: a team asks while a night runs
        return _nightly_status(args)
    with contextlib.ExitStack() as held:
        try:
            held.enter_context(night_lock(
                args.results, "jitbench " + " ".join(args.argv), shared=bool(args.shard),
                wait=args.wait_lock,
                on_wait=lambda holder: print(f"jitbench: waiting up to {args.wait_lock:g} s "
                                             f"for {holder}", file=sys.stderr, flush=True)))
        except NightLocked as exc:
            print(f"jitbench: error: {exc}", file=sys.stderr)
            return LOCKED_EXIT
        return _cmd_nightly_locked(args)


def _nightly_status(args) -> int:
    """``nightly --results DIR --status``: where the nightly stands
    (``jitbench.nightly.status``)."""
    import json

    from jitbench.nightly import status

    said = status.status(args.results)
    if args.json:
        print(json.dumps(said, default=str))
    else:
        print("\n".join(status.lines(said)))
    return 0


def _cmd_nightly_locked(args) -> int:
    from jitbench.analysis.history import Thresholds
    from jitbench.cli.args import night_profile
    from jitbench.nightly.night import nightly
    from jitbench.results.files import SUMMARY_NAME
    from jitbench.protocol.settings import RECORDED_SAMPLE_MIN_TIME, Protocol

    if args.evaluate or args.corpus or args.change_corpus:
        return _nightly_corpus(args)
    if args.accept or args.reason:
        return _nightly_accept(args)
    if args.environments or args.requirements or args.prepare:
        return _nightly_environments(args)
    if args.change_pairs is not None and args.change_pairs < 3:
        raise UserError(f"--change-pairs {args.change_pairs}: at least 3 pairs make an "
                        f"interval")
    if args.shard and args.no_run:
        raise UserError("--shard measures a shard: leave out --no-run (the merged night is "
                        "judged with `jitbench nightly --no-run`)")
    cases = [] if args.no_run else _selected_cases(args)
    thresholds = Thresholds(steady=args.threshold / 100, compile=args.compile_threshold / 100,
                            machine=None if args.machine_check is None
                            else args.machine_check / 100)
    # sequential stopping until each ratio is known to +-precision (what a night compares)
    precision = None if args.precision == "off" else args.precision
    protocol = Protocol(min_time=args.min_time, precision=precision, budget=args.budget,
                        stop_when="precise", sample_min_time=RECORDED_SAMPLE_MIN_TIME)
    if args.shard:
        return _shard_night(args, cases, thresholds, protocol)
    result = nightly(cases, args.results, args.reports, protocol=protocol,
                     thresholds=thresholds, do_run=not args.no_run,
                     recheck=not args.no_recheck, recheck_rounds=args.recheck_rounds,
                     recheck_decisive=args.recheck_decisive,
                     case_timeout=args.case_timeout,
                     command=["jitbench", *sys.argv[1:]], on_progress=_progress_printer(),
                     run_id=args.run_id,
                     process_profile=night_profile(args.process_profile, cases),
                     confirm_ab=args.confirm_ab, max_processes=args.max_processes,
                     repeat_budget=args.repeat_budget, on_change=args.on_change,
                     change_pairs=args.change_pairs, pairing=args.pairing)
    print(f"history: {Path(args.reports) / 'index.html'}")
    print(f"summary: {Path(args.reports) / SUMMARY_NAME}")
    for key in ("protocol_note", "machine_note", "waiting_note", "profile_note",
                "accepted_note", "unusable_note", "change_note"):
        if result.get(key):
            print(result[key])
    if result.get("repeats"):
        print(result["repeats"]["text"])
    if (result.get("recheck") or {}).get("unresolved"):
        print(f"re-measured {result['recheck']['rounds']} times and still unresolved (not "
              f"confirmed): {', '.join(result['recheck']['unresolved'])}")
    if result.get("visible"):
        print(result["visible"]["text"])
    for r in result.get("smaller_steps") or []:
        print(f"smaller step {r['case_id']}: {r['text']}")
    if result["regression"]:
        for r in result["confirmed"]:
            print(f"REGRESSION {r['case_id']} {r['metric']}: {r['text']}")
        return 1
    if result.get("undecided"):
        print(result["undecided_note"])
        return UNDECIDED_EXIT
    note = f"; {result['note']}" if result["note"] else ""
    near = f", {len(result['near'])} near one re-measured" if result.get("near") else ""
    print(f"no confirmed regression in {result['latest_run']} "
          f"({len(result['suspected'])} suspected{near}){note}")
    return 0


# `jitbench nightly`'s exit when a change night's A/B left a touched case undecided (neither
# slower nor the same, a step of --threshold not ruled out) and confirmed no regression: not
# 0, so that an undecided A/B is never read as a pass; not 1, so that CI can tell it apart
UNDECIDED_EXIT = 3


def _nightly_environments(args) -> int:
    """``nightly --environments DIR --requirements FILE``: the night in the environment that
    did not run the last good night, upgraded from FILE (``jitbench.nightly.environments``)."""
    from jitbench.nightly import environments

    if not args.environments:
        raise UserError("--requirements and --prepare go with --environments DIR (two "
                        "environments kept in DIR, the one not last good upgraded from FILE)")
    if args.prepare and not args.requirements:
        raise UserError("--prepare upgrades tonight's environment: name --requirements FILE")
    # the night's own options: the words after the sub-command (global options such as
    # --debug come before it; abbreviations of options are refused by the parser, so these
    # spellings are the only ones), without those of the environments
    words = args.argv[[w.startswith("-") for w in args.argv].index(False) + 1:]
    rest, skip = [], False
    for word in words:
        if skip:
            skip = False
        elif word in ("--environments", "--requirements"):
            skip = True
        elif word != "--prepare" and not word.startswith(("--environments=",
                                                           "--requirements=")):
            rest.append(word)
    return environments.run(args.environments, args.requirements, rest, args.results,
                            prepare_only=args.prepare)


def _shard_night(args, cases, thresholds, protocol) -> int:
    """``nightly --shard K/N --run-id NIGHT``: one shard of a night (its groups, and its side
    of a change night's A/B), to be merged (``jitbench.nightly.shards.shard_night``)."""
    from jitbench.cli.args import night_profile
    from jitbench.nightly.shards import FOLDER, parse_shard, shard_night

    if not args.run_id:
        raise UserError("--shard K/N needs --run-id NIGHT, the same on every shard of a night")
    k, n = parse_shard(args.shard)
    run_kw = {"protocol": protocol, "case_timeout": args.case_timeout,
              "command": ["jitbench", *args.argv], "on_progress": _progress_printer(),
              "process_profile": night_profile(args.process_profile, cases) or "default"}
    facts = shard_night(cases, args.results, args.run_id, k, n, threshold=thresholds.steady,
                        run_kw=run_kw, on_change=args.on_change,
                        change_pairs=args.change_pairs, pairing=args.pairing)
    said = facts.get("change") or {}
    print(f"shard {k}/{n} of {args.run_id}: {facts['run_dir']}"
          + (f"; changed since {said['reference']}: {'; '.join(said['changes'])}"
             + (f" ({said['n_touched']} touched cases of this shard measured side by side)"
                if said.get("run") else f" ({said['blocked']})" if said.get("blocked") else "")
             if said.get("changes") else ""))
    root = Path(args.results)
    print(f"merge the shards, then judge the night: jitbench merge {root / FOLDER}/*/"
          f"{args.run_id} -o {root / args.run_id} && jitbench nightly --no-run "
          f"--results {root} --reports {args.reports}")
    return 0


def _nightly_accept(args) -> int:
    """``nightly --accept RUN_ID --reason TEXT``: a night becomes the reference."""
    from jitbench.nightly.reference import accept

    if not args.accept:
        raise UserError("--reason goes with --accept RUN_ID (the night to accept)")
    said = accept(args.results, args.accept, args.reason)
    print(f"accepted {said['run_id']} as the reference from the next night on: "
          f"{said['reason']}")
    return 0


def _nightly_corpus(args) -> int:
    """``nightly --corpus FILE`` (the runs of --results as a corpus) and ``--evaluate``."""
    import json

    from jitbench.nightly import change_nights, corpus, evaluate

    if args.change_corpus:
        from jitbench.nightly.runs import run_dirs

        found = change_nights.from_runs(run_dirs(args.results),
                                        command="jitbench " + " ".join(sys.argv[1:]))
        print(f"{corpus.save(found, args.change_corpus)}: {len(found['nights'])} "
              f"change nights")
        if not args.evaluate:
            return 0
    if args.evaluate and Path(args.evaluate).is_file() and \
            change_nights.is_corpus(corpus.read(args.evaluate)):
        result = change_nights.evaluate(corpus.read(args.evaluate), args.threshold / 100)
        print(json.dumps(result, default=str) if args.json else change_nights.table(result))
        return 0
    if args.corpus:
        history = evaluate.load_history(args.results)
        history["command"] = "jitbench " + " ".join(sys.argv[1:])
        print(f"{corpus.save(history, args.corpus)}: {len(history['nights'])} nights, "
              f"{len(history['series'])} series")
        if not args.evaluate:
            return 0
    result = evaluate.evaluate_all(evaluate.load_history(args.evaluate),
                                   threshold=args.threshold / 100)
    if args.json:
        print(json.dumps(result, default=str))
    else:
        print(evaluate.table(result))
    return 0


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
               "nightly": cmd_nightly, "merge": cmd_merge, "compare": cmd_compare,
               "doctor": doctor_cli.cmd,
               "ab": lambda a: ab_cli.cmd(a, _selected_cases, _progress_printer())
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
