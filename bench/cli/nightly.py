"""``jitbench nightly``: its sub-jobs, each an entry of its own: a night (or one shard of it),
``--status``, ``--accept``, ``--environments`` (the recipe), and the read-only replays
(``--evaluate``, ``--corpus``, ``--change-corpus``). Every one that writes to ``--results``
holds the folder's lock (``jitbench.nightly.lock``). Exit codes: 0 no regression, 1 a
regression, 2 bad input, 3 undecided, 4 another night holds the folder."""

from __future__ import annotations

import contextlib
import sys
from pathlib import Path

from jitbench.errors import UNDECIDED_EXIT, UserError


def cmd(args, selected_cases, progress_printer) -> int:
    """``jitbench nightly``: everything but the read-only replays (``--evaluate``,
    ``--corpus``, ``--change-corpus``) runs holding the results folder's lock, so that a
    second night on it refuses before anything runs (exit 4, ``jitbench.nightly.lock``); the
    shards of one night hold it together."""
    from jitbench.nightly.lock import LOCKED_EXIT, NightLocked, night_lock

    if args.evaluate or args.corpus or args.change_corpus:
        return _locked(args, selected_cases, progress_printer)
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
        return _locked(args, selected_cases, progress_printer)


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


def night_options(args, cases, progress_printer):
    """The night's options, built once from the command line
    (``jitbench.nightly.options.NightOptions``)."""
    from jitbench.analysis.history import Thresholds
    from jitbench.cli.args import night_profile
    from jitbench.nightly.options import NightOptions
    from jitbench.protocol.settings import RECORDED_SAMPLE_MIN_TIME, Protocol

    thresholds = Thresholds(steady=args.threshold / 100, compile=args.compile_threshold / 100,
                            machine=None if args.machine_check is None
                            else args.machine_check / 100)
    # sequential stopping until each ratio is known to +-precision (what a night compares)
    precision = None if args.precision == "off" else args.precision
    protocol = Protocol(min_time=args.min_time, precision=precision, budget=args.budget,
                        stop_when="precise", sample_min_time=RECORDED_SAMPLE_MIN_TIME,
                        pipeline_time=None, min_block_time=None)
    return NightOptions(
        protocol=protocol, thresholds=thresholds, do_run=not args.no_run,
        recheck=not args.no_recheck, recheck_rounds=args.recheck_rounds,
        recheck_decisive=args.recheck_decisive, case_timeout=args.case_timeout,
        command=("jitbench", *args.argv), on_progress=progress_printer(),
        run_id=args.run_id, process_profile=night_profile(args.process_profile, cases),
        confirm_ab=args.confirm_ab, max_processes=args.max_processes,
        repeat_budget=args.repeat_budget, on_change=args.on_change,
        change_pairs=args.change_pairs, pairing=args.pairing)


def _locked(args, selected_cases, progress_printer) -> int:
    from jitbench.nightly.night import nightly
    from jitbench.results.files import SUMMARY_NAME

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
    cases = [] if args.no_run else selected_cases(args)
    options = night_options(args, cases, progress_printer)
    if args.shard:
        return _shard_night(args, cases, options)
    result = nightly(cases, args.results, args.reports, options)
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


def _shard_night(args, cases, options) -> int:
    """``nightly --shard K/N --run-id NIGHT``: one shard of a night (its groups, and its side
    of a change night's A/B), to be merged (``jitbench.nightly.shards.shard_night``)."""
    from jitbench.nightly.shards import FOLDER, parse_shard, shard_night

    if not args.run_id:
        raise UserError("--shard K/N needs --run-id NIGHT, the same on every shard of a night")
    k, n = parse_shard(args.shard)
    facts = shard_night(cases, args.results, args.run_id, k, n, options)
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
    from jitbench.nightly.past_nights import accept

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
