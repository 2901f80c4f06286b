"""The ``jit_benchmark`` pytest fixture: your own function, every JIT mode, one
pytest-benchmark entry per mode.

    def test_loss(jit_benchmark):
        x, y = make_inputs()
        jit_benchmark(loss_fn, x, y)                               # framework from the inputs
        jit_benchmark(loss_fn, x, y, modes=["eager", "jit"], reference=loss_np)

Installing jitbench registers it (``pytest11`` entry point ``jitbench`` ->
``jitbench.pytest_plugin.plugin``, which imports this fixture). The modes are measured together
with the harness protocol (``jitbench.userfn.as_workload.run``: first call apart, warm-up until
compiles stop, synced samples, modes interleaved); each mode's samples then become a
pytest-benchmark entry named ``test_loss[<framework>-<mode>]``, grouped per test, with the same
``extra_info`` as
jitbench's own suites (``jitbench.pytest_plugin.plugin.run_case``), so ``--benchmark-json``,
``--benchmark-compare``, ``--benchmark-histogram`` and ``jitbench report out.json`` read them.

Sampling stops as in ``jitbench run``: when each JIT mode's verdict against its nearest JIT-off
mode is known (``precision=0.05``) or ``budget`` seconds (default 6) are spent; the verdict is
in each JIT entry's ``extra_info`` (``verdict``, ``verdict_speedup``, ``verdict_ci_low`` /
``_high``). With ``precision="off"``, pytest-benchmark's options set the time per mode:
``--benchmark-max-time`` of valid samples (default 1 s), at least ``--benchmark-min-rounds``
samples. A failure (the function raises with
JIT off, a JIT-on mode fails or gives another answer) fails that test only, before anything is
stored; a mode this process cannot run (TF auto-clustering on CPU where TensorFlow started
before its flag was set) skips the test with that reason.
"""

from __future__ import annotations

import copy
import os
from typing import Any

import pytest

from jitbench.errors import UserError


def _entry_name(name: str, suffix: str) -> str:
    """``test_x`` -> ``test_x[jax-jit]``; ``test_x[p1]`` -> ``test_x[p1-jax-jit]``."""
    if name.endswith("]") and "[" in name:
        return f"{name[:-1]}-{suffix}]"
    return f"{name}[{suffix}]"


def protocol_from(config):
    """The harness protocol under pytest-benchmark's own options."""
    from jitbench.protocol.settings import Protocol

    max_time = float(config.getoption("benchmark_max_time"))
    return Protocol(min_time=max_time, min_samples=int(config.getoption("benchmark_min_rounds")),
                    max_time=max(30.0, 2 * max_time))


def extra_info(row: dict[str, Any]) -> dict[str, Any]:
    """The row's fields (``jitbench.results.row.extra_info_fields``) under the format's version,
    which
    ``jitbench.results.pytest_import`` reads back into a row."""
    from jitbench.results.pytest_import import EXTRA_INFO_SCHEMA
    from jitbench.results.row import extra_info_fields

    return {"jitbench_schema": EXTRA_INFO_SCHEMA, **extra_info_fields(row)}


class JitBenchmark:
    """What a test gets from the ``jit_benchmark`` fixture: call it like ``jitbench.measure``."""

    def __init__(self, benchmark, request):
        self._benchmark = benchmark
        self._request = request
        self._calls = 0

    def __call__(self, fn, /, *args, modes=None, framework=None, reference=None,
                 tolerances=None, flops=None, device=None, name=None, isolate=False,
                 protocol=None, sampling=None, timeout=None, donate=None, batch_size=None,
                 kwargs=None, rtol=None, atol=None, precision=None, budget=None, **keywords):
        """Measure ``fn(*args, **keywords)`` in ``modes`` (default: every mode this process
        can run) and store one benchmark per mode; returns the
        ``jitbench.userfn.measure.Result``. The options are ``jitbench.measure``'s, passed
        through; ``protocol`` replaces the one pytest-benchmark's options make
        (``protocol_from``), and ``--benchmark-disable`` still runs one checked call per mode.
        ``sampling`` (or its shorthand ``precision`` / ``budget``): sequential stopping; each
        JIT entry's ``extra_info`` carries its ``verdict``."""
        from jitbench.userfn.arguments import given_options, keyword_arguments
        from jitbench.userfn.as_workload import prepare, run
        from jitbench.userfn.measure import OPTIONS, Result
        from jitbench.userfn.options import check_options, option_objects

        given = given_options(JitBenchmark.__call__, locals())  # before any is reassigned
        self._calls += 1
        problem, spec = None, None
        try:
            kwargs = keyword_arguments(fn, args, keywords, kwargs, given, OPTIONS,
                                       "jit_benchmark")
            tolerances, sampling = option_objects(tolerances, sampling, rtol=rtol,
                                                  atol=atol, precision=precision,
                                                  budget=budget)
            check_options(isolate, timeout, donate, batch_size)
            if not isolate:  # workers check the modes they run: nothing skipped here
                spec = prepare(fn, args, framework=framework, modes=modes, reference=reference,
                               tolerances=tolerances, flops=flops, device=device, name=name,
                               env=os.environ, donate=donate, batch_size=batch_size,
                               kwargs=kwargs)
        except UserError as exc:
            problem = exc
        if problem:  # outside the except: one line, no chained traceback
            pytest.fail(f"jit_benchmark: {problem}", pytrace=False)
        if spec is not None and spec.skipped:
            mode, why = next(iter(spec.skipped.items()))
            pytest.skip(f"{why} (or leave {mode} out of modes)")
        bench = self._benchmark
        if bench.disabled:  # --benchmark-disable: one checked call of each mode
            from jitbench.protocol.settings import Protocol

            protocol = Protocol(min_time=0.0, min_samples=1, max_samples=1, early_calls=1,
                                warmup_min_calls=1, warmup_max_time=0.0)
        else:
            protocol = sampling.applied_to(protocol or protocol_from(self._request.config))
        try:
            if spec is None:
                from jitbench.userfn.isolate import measure_isolated

                rows = measure_isolated(fn, args, modes=modes, framework=framework,
                                        reference=reference, tolerances=tolerances,
                                        flops=flops, device=device, name=name,
                                        protocol=protocol, timeout=timeout, kwargs=kwargs)
            else:
                rows = run(spec, protocol)
        except UserError as exc:
            problem = exc
        if problem:
            pytest.fail(f"jit_benchmark: {problem}", pytrace=False)
        bad = [r for r in rows if r["status"] != "ok"]
        if bad:
            pytest.fail("jit_benchmark: " + "; ".join(
                f"{r['workload']} {r['framework']} {r['mode']}: {r['status']}: "
                f"{r.get('error')}" for r in bad), pytrace=False)
        if not bench.disabled:
            for row in rows:
                self._store(row)
        return Result(rows)

    def _store(self, row: dict[str, Any]) -> None:
        """One pytest-benchmark entry from a measured row: a copy of the test's ``benchmark``
        fixture renamed for the mode, fed the harness's per-call samples (``loops`` calls per
        sample, as pytest-benchmark's ``iterations``)."""
        node = self._request.node
        suffix = f"{row['framework']}-{row['mode']}" + (f"-{self._calls}" if self._calls > 1
                                                         else "")
        entry = copy.copy(self._benchmark)
        entry.name = _entry_name(node.name, suffix)
        entry.fullname = _entry_name(node.nodeid, suffix)
        marker = node.get_closest_marker("benchmark")
        entry.group = (marker.kwargs.get("group") if marker else None) or (
            node.nodeid + (f"-{self._calls}" if self._calls > 1 else ""))
        entry.extra_info = extra_info(row)
        entry._cleanup_callbacks = []
        # pytest-benchmark's own bookkeeping: Metadata appended to the session's benchmarks
        stats = entry._make_stats(int(row.get("loops") or 1))
        for per_call in row["samples"]:
            stats.update(per_call * stats.iterations)

    def _close(self) -> None:
        if self._calls:
            # the test's own `benchmark` fixture stayed unused on purpose: no warning for it
            self._benchmark._mode = "jit_benchmark(...)"


@pytest.fixture
def jit_benchmark(benchmark, request):
    """Measure your own TF or JAX function in every JIT mode (see
    ``jitbench.pytest_plugin.fixture``)."""
    jb = JitBenchmark(benchmark, request)
    yield jb
    jb._close()
