"""The one loop that runs jobs on worker processes, how it is made (:func:`open_loop`, which a
run's session calls: ``jitbench.run.session``), with each worker's environment
(:func:`worker_environment`).

Case groups (:meth:`GroupLoop.run`): the run itself (``jitbench.run.runner``), the calibration
(``jitbench.run.calibration``), the compile cache's warm pass (``jitbench.run.compile_cache``)
and an A/B arm (``jitbench.run.ab_arms``) each give their groups, their protocol and what to do
with a row or a failure. Other jobs (:meth:`GroupLoop.run_job`): a recompile sweep's
(``jitbench.run.sweep``) and an isolated function's (``jitbench.userfn.isolate``). This loop
owns the workers either way.

- Groups that share a worker key (framework, worker group, device) share a worker process,
  started on first need (or a fresh one per group with ``fresh_worker_per_group``); one live
  worker at a time, since two would compete for the same cores.
- When a worker dies or a group exceeds its time limit, the mode it was in gets the failure;
  the group's other modes are measured again in a fresh worker, without it, and their rows say
  why (``retried``). A failure outside any one mode is every pending case's failure.
- A worker that fails to start twice is not waited on again: the rest of its groups fail at
  once with the same reason.
"""

from __future__ import annotations

import dataclasses
from collections import deque
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Sequence

from jitbench.define.modes import MODES
from jitbench.define.workload import Case
from jitbench.protocol.settings import Protocol
from jitbench.run.worker_parent import Worker, WorkerFailed, live_workers

Key = tuple[str, str, str]


def worker_key(case: Case) -> Key:
    """Cases with the same key share a worker process."""
    return (case.framework, MODES[(case.framework, case.mode)].worker_group, case.device)


def worker_environment(key: Key, *parts: Mapping[str, str] | None) -> dict[str, str]:
    """The variables a worker of ``key`` gets on top of this process's environment: its
    worker group's own (``ModeSpec.env``: TF auto-clustering's flag), then each of ``parts``
    in order (a run's options and process profile, the start-up warm-up's request, an A/B
    arm's variables). A ``*_FLAGS`` variable two of them set keeps both values (an arm's XLA
    flag keeps auto-clustering's; flags already there are not repeated); any other is the
    last one's. A value None unsets the variable in the worker."""
    framework, group_name, _ = key
    mode = next(m for (f, _), m in MODES.items()
                if f == framework and m.worker_group == group_name)
    env = dict(mode.env)
    for part in parts:
        for name, value in (part or {}).items():
            if value is None:  # unset in this worker (an A/B arm whose night had it unset)
                env[name] = None
                continue
            joined = name.endswith("_FLAGS") and env.get(name)
            if joined and set(value.split()) <= set(env[name].split()):
                continue  # every flag of it is there already
            env[name] = f"{env[name]} {value}" if joined else value
    return env


def open_loop(protocol: Protocol, timeout: float, *, log_for: Callable[[Key], Path],
              env: Callable[[Key], Sequence[Mapping[str, str] | None]] = lambda key: (),
              record=None, env_group_prefix: str = "", **options: Any) -> "GroupLoop":
    """A loop of workers, made the one way every kind of run makes it (through its session,
    ``jitbench.run.session``: a run and its resume, an A/B arm, the compile cache's warm pass,
    a sweep; outside any run, ``isolate=True``):
    each worker's environment is :func:`worker_environment` of its key and ``env(key)``'s
    parts, its log ``log_for(key)``; with a ``record`` (``jitbench.results.record``), the
    run's meta.json records each worker as it says hello and how it ended when it failed.
    ``options``: the rest of :class:`GroupLoop`'s fields (``capture``, ``critical``,
    ``fresh_worker_per_group``, ``worker_options``)."""
    if record is not None:
        options.setdefault("on_worker", lambda hello, key: record.add_worker(
            hello, env_group_prefix + key[1]))
        options.setdefault("on_worker_failed", lambda exc: record.worker_failed(
            exc.pid, exc.status, exc.exit or "", exc.phase))
    return GroupLoop(protocol, timeout, log_for=log_for,
                     env_for=lambda key: worker_environment(key, *env(key)), **options)


@dataclasses.dataclass
class GroupLoop:
    """Run groups on workers. ``env_for(key)`` / ``log_for(key)``: a worker's environment and
    log file; ``on_worker(hello, key)`` / ``on_worker_failed(exc)``: the run's record of its
    workers; ``critical``: a context a worker's start must not be interrupted in."""

    protocol: Protocol
    timeout: float
    log_for: Callable[[Key], Path]
    env_for: Callable[[Key], dict[str, str]] = lambda key: {}
    capture: dict[str, Any] | None = None
    fresh_worker_per_group: bool = False
    critical: Callable[[], Any] | None = None
    on_worker: Callable[[dict[str, Any], Key], None] | None = None
    on_worker_failed: Callable[[WorkerFailed], None] | None = None
    # further keywords of every Worker this loop starts (cwd, import_paths, startup_timeout)
    worker_options: dict[str, Any] = dataclasses.field(default_factory=dict)
    workers: dict[Key, Worker] = dataclasses.field(default_factory=dict)

    def worker_for(self, key: Key) -> Worker:
        """The live worker of ``key``, started on first need; any other is closed first (one
        live worker at a time: two would compete for the same cores)."""
        for other in [k for k in self.workers if k != key]:
            self.workers.pop(other).close()
        worker = self.workers.get(key)
        if worker is None or not worker.alive():
            kw = dict(self.worker_options)
            if self.critical:
                kw["critical"] = self.critical
            worker = self.workers[key] = Worker(key[0], self.env_for(key), self.log_for(key),
                                                **kw)
            if self.on_worker:
                self.on_worker(worker.hello, key)
        return worker

    def run_job(self, key: Key, msg: dict[str, Any], doing: str,
                limit: str = "--case-timeout") -> list[dict[str, Any]]:
        """One job other than a case group on ``key``'s worker (a handler named in ``msg``:
        ``jitbench.run.worker``); its rows. Raises what ``Worker.run_job`` raises; a worker
        that failed is dropped, so the next job starts a fresh one."""
        try:
            return list(self.worker_for(key).run_job(msg, self.timeout, doing, limit))
        except WorkerFailed as exc:
            self.workers.pop(key, None)
            if self.on_worker_failed:
                self.on_worker_failed(exc)
            raise

    def run(self, groups: Iterable[Sequence[Case]],
            on_row: Callable[[dict[str, Any], str | None], None],
            on_failure: Callable[[Case, WorkerFailed, Path, str | None], None],
            on_group: Callable[[Sequence[Case]], None] | None = None,
            protocol_for: Callable[[Sequence[Case]], Protocol | None] | None = None,
            ready: Callable[[Sequence[Case]], None] | None = None) -> None:
        """Measure ``groups`` (sorted by worker key, stably, so each key starts one worker).
        Every case ends in exactly one ``on_row(row, retried)`` or ``on_failure(case, exc,
        log, retried)``; ``retried`` says why a case was measured again without a group-mate
        (None when it was not). ``protocol_for(group)``: another protocol than the loop's for
        that group (the run's calibration), which then captures nothing. ``ready(group)``:
        called once the group's worker has started, just before it measures the group (an
        A/B's duet waits there for the other arm's worker)."""
        todo = deque(sorted((list(g) for g in groups), key=lambda g: worker_key(g[0])))
        start_failures: dict[Key, int] = {}
        broken: dict[Key, WorkerFailed] = {}
        retried: dict[str, str] = {}
        while todo:
            group = todo.popleft()
            key = worker_key(group[0])
            log = self.log_for(key)
            if on_group:
                on_group(group)
            for other in [k for k in self.workers if k != key]:
                self.workers.pop(other).close()
            if key in broken:
                for case in group:
                    on_failure(case, broken[key], log, retried.get(case.case_id))
                continue
            seen: set[str] = set()
            try:
                fresh = key not in self.workers or not self.workers[key].alive()
                worker = self.worker_for(key)
                if fresh:
                    start_failures.pop(key, None)
                if ready:
                    ready(group)
                own = protocol_for(group) if protocol_for else None
                for row in worker.run_group(group, own or self.protocol, self.timeout,
                                            None if own else self.capture):
                    on_row(row, retried.get(row["case_id"]))
                    seen.add(row["case_id"])
            except WorkerFailed as exc:
                self.workers.pop(key, None)
                if self.on_worker_failed:
                    self.on_worker_failed(exc)
                if exc.starting:
                    start_failures[key] = start_failures.get(key, 0) + 1
                    if start_failures[key] >= 2:
                        broken[key] = exc
                pending = [c for c in group if c.case_id not in seen]
                culprits = [c for c in pending if c.mode == exc.mode]
                rest = [c for c in pending if c.mode != exc.mode]
                if culprits and rest:
                    for case in culprits:
                        on_failure(case, exc, log, retried.get(case.case_id))
                    short_exit = (exc.exit or "").split(" (")[0]
                    what = ("timed out" if exc.status == "timeout"
                            else f"{exc.status} ({short_exit})")
                    why = (f"mode {exc.mode} of the same group {what}; measured again in a "
                           f"fresh worker without it")
                    for case in rest:
                        retried[case.case_id] = why
                    todo.appendleft(rest)
                else:
                    for case in pending:
                        on_failure(case, exc, log, retried.get(case.case_id))
            if self.fresh_worker_per_group and key in self.workers:
                self.workers.pop(key).close()

    def close(self, kill: bool = False, everyone: bool = False) -> None:
        """Close (``kill``: kill) every worker this loop started; ``everyone``: kill any other
        worker of this process still alive too (a run stopped by Ctrl-C takes them all along).
        Otherwise other loops' workers are left alone: two runs may measure in one process at
        once (threads of a caller's own), and one run's calibration closing every live worker
        would break the other off mid-run."""
        for w in list(self.workers.values()) + (live_workers() if everyone else []):
            w.kill() if kill or everyone else w.close()
        self.workers.clear()
