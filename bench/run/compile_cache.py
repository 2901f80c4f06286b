"""``jitbench run --compile-cache off|cold|warm``: what a persistent compilation cache saves.

- ``off`` (default): today's behaviour, no persistent cache.
- ``cold``: the run's workers share an empty cache folder, ``<run>/compile-cache``; every
  first call compiles and writes its entry (rows: ``first_cache_misses``).
- ``warm``: the ``cold`` run, then each group's first calls measured again, each group in a
  fresh worker (warm-up first, as always) reading the cache the cold pass filled. The rows of
  the run gain ``first_call_cold_s`` (= ``first_call_s``), ``first_call_warm_s``,
  ``cache_hits`` (persistent-cache hits during the warm first call) and the warm first call's
  split (``warm_trace_s``, ``warm_lower_s``, ``warm_compile_s``, ``warm_cache_retrieval_s``).

The adapters do the framework side when ``JITBENCH_COMPILE_CACHE`` names the folder: JAX sets
``jax_compilation_cache_dir`` and lowers ``jax_persistent_cache_min_compile_time_secs`` (1 s by
default) and ``jax_persistent_cache_min_entry_size_bytes`` so every program is cached; TF
passes ``--tf_xla_persistent_cache_directory`` in ``TF_XLA_FLAGS`` (XLA's persistent cache,
which serves ``jit_compile=True`` functions in TF 2.21; graph mode compiles nothing to cache).
TF keys an entry by the concrete function's name, ``__inference_<fn>_<uid>``, whose uid counts
the functions the process traced before: a new process hits only if it traced the same
functions in the same order, which the warm pass's fresh worker (warm-up, then one group)
rarely does; its rows then say ``warm_note``.
"""

from __future__ import annotations

from typing import Any

from jitbench.protocol.settings import Protocol

# first call, one more call, one sample: enough to read a first call, nothing more
FIRST_CALL_ONLY = Protocol(min_time=1e-6, min_samples=1, max_samples=1, max_time=1e-6,
                           early_calls=1, warmup_min_calls=1, warmup_max_time=0.0,
                           alone_samples=0, aa_control="off")

# warm first call's counters -> row fields
_WARM = {"first_call_s": "first_call_warm_s", "first_cache_hits": "cache_hits",
         "first_cache_misses": "warm_cache_misses", "first_trace_s": "warm_trace_s",
         "first_lower_s": "warm_lower_s", "first_compile_s": "warm_compile_s",
         "first_cache_retrieval_s": "warm_cache_retrieval_s"}


def warm_pass(session) -> int:
    """Measure every group's first calls again, a fresh worker per group, on a loop of the
    run's ``session`` (``jitbench.run.session.Session``: its record, a worker's start never cut
    by a signal), and add the warm fields to the run's rows (``RunRecord.rewrite_rows``:
    results.jsonl rewritten in place, atomically). Returns the number of rows that gained
    them. A group whose warm worker fails keeps its cold row and says why (``warm_error``)."""
    from jitbench.define.workload import Case, group_cases

    record = session.record
    rows = record.rows_as_written()
    ok = [r for r in rows if r.get("status") == "ok"]
    cases = {r["case_id"]: Case.from_row(r) for r in ok}
    warm: dict[str, dict[str, Any]] = {}

    def say(group) -> None:
        first = group[0]
        session.progress(f"warm compile cache: {first.workload} {first.variant} {first.size} "
                         f"{first.framework} [{','.join(c.mode for c in group)}]")

    # its workers recorded in meta.json beside the run's own (``warm:`` groups)
    loop = session.loop(FIRST_CALL_ONLY, capture=False, fresh_worker_per_group=True,
                        log_prefix="warm-", env_group_prefix="warm:")
    try:
        loop.run(group_cases(list(cases.values())),
                 on_row=lambda row, _: warm.__setitem__(row["case_id"], row),
                 on_failure=lambda case, exc, log, _: warm.setdefault(
                     case.case_id, {"warm_error": str(exc)[:500]}),
                 on_group=say)
    finally:
        loop.close()
    added = 0
    for r in rows:
        w = warm.get(r.get("case_id"))
        if w is None:
            continue
        r["first_call_cold_s"] = r.get("first_call_s")
        if "warm_error" in w or w.get("status") != "ok":
            r["warm_error"] = w.get("warm_error") or w.get("error") or w.get("status")
            continue
        r.update({new: w.get(old, 0 if "cache" in new else None) for old, new in _WARM.items()})
        if r.get("jit") and not r["cache_hits"]:
            # TF 2.21 keys its entries by the concrete function's process-unique name
            # (__inference_<fn>_<uid>): a process that traced other functions first misses
            r["warm_note"] = "no persistent-cache hit on the warm first call"
        added += 1
    record.rewrite_rows(rows)
    return added
