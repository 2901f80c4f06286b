"""The pytest-benchmark front door: the registry's cases as ``pytest --benchmark-only`` tests,
and (``jitbench.pytest_plugin.fixture``) the ``jit_benchmark`` fixture for a user's own functions.

Installing jitbench registers this module in every project (``pytest11`` entry point
``jitbench``); ``suites/conftest.py`` registers it where that did not happen, and
``suites/test_bench.py`` holds the one test function. The registry is expanded only when a
test asks for a case, so another project never loads jitbench's suites. Everything else is
the harness itself: ``expand``/``Filters`` choose the cases,
the adapters place, build and sync, ``timing.first_and_warmup`` runs the first call and the
warm-up (outside the timed region), ``casework`` checks the answer, and only the
steady-state calls go through ``benchmark.pedantic`` -- each one ending with the adapter's sync.

Differences from ``jitbench run``, on purpose or by necessity:

- One pytest process runs TensorFlow *and* JAX (``jitbench run`` gives each its own worker).
- A mode whose declared environment (``Mode.env``) differs from this process's is skipped with
  that reason (``jitbench.define.modes.environment_problem``), and so is one its adapter cannot run
  here
  (``Adapter.mode_problem``: TF auto-clustering on CPU where TensorFlow started before the
  adapter could add its flag).
- Each test is one mode, so modes are not interleaved sample by sample; JIT on and off of a case
  share a ``benchmark.group`` and run one after the other.
- TensorFlow's XLA compile counters come from its log, which only a worker redirects to a file;
  here they are left out of ``extra_info`` (JAX's come from ``jax.monitoring`` and are kept).
- pytest-benchmark stores only measured benchmarks: a failed, xfailed or skipped case is in
  pytest's report, not in the JSON.

Heavy imports (TensorFlow, JAX, numpy) happen inside the functions that need them, so a bare
``pytest`` that deselects the benchmarks never pays for them.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import os
import time
from typing import Any, NoReturn

import pytest

from jitbench.define.modes import (
    DEVICES,
    FRAMEWORKS,
    MODES,
    SPECS,
    counts_in_process,
    environment_problem,
    modes_for,
)
from jitbench.define.workload import SIZE_SETS, Case, Filters, discover, expand, load_workload
from jitbench.errors import UserError
from jitbench.pytest_plugin.fixture import jit_benchmark  # noqa: F401  (the fixture, found by name)
from jitbench.results import row as rows
from jitbench.results.pytest_import import EXTRA_INFO_SCHEMA  # the reader owns the format's version
from jitbench.xla import capture as insight

SIZE_ENV = "JITBENCH_SIZE"
FIXTURE = "jitbench_case"
FILTER_NAMES = ("suite", "framework", "mode", "device", "dtype", "variant")
MAX_ROUNDS = 10_000  # beyond this, more iterations per round instead (bounds the JSON's size)
PIPELINED_SAMPLES = 5  # throughput samples beside pytest-benchmark's synced rounds
XLA_ENV_PREFIXES = ("TF_XLA_", "XLA_", "JAX_", "TF_ENABLE_ONEDNN_OPTS", "CUDA_VISIBLE_DEVICES")
_UNUSED_FIXTURE = "ignore:Benchmark fixture was not used at all"

_STATE = pytest.StashKey["_PluginState"]()


# --------------------------------------------------------------------------- options

def pytest_addoption(parser) -> None:
    g = parser.getgroup("jitbench", "jitbench cases (the same filters as `jitbench run`)")
    g.addoption("--jitbench-size", choices=SIZE_SETS, default=None,
                help=f"parameter grid: quick (default) or full; also ${SIZE_ENV}")
    helps = {"suite": "workloads, e.g. matmul_relu,mmd", "framework": "tf, jax",
             "mode": "; ".join(f"{', '.join(modes_for(f))} ({f})" for f in FRAMEWORKS),
             "device": "cpu, gpu (gpu cases skip where no GPU is seen)",
             "dtype": "float32, float64", "variant": "workload variants, e.g. fused,split"}
    for name in FILTER_NAMES:
        g.addoption(f"--jitbench-{name}", metavar="LIST", default=None,
                    help=f"comma list: {helps[name]}")
    g.addoption("--jitbench-suite-file", action="append", default=[], metavar="FILE.py",
                help="also load the workload defined in this file (repeatable)")


def filters_from(config) -> Filters:
    size = config.getoption("jitbench_size") or os.environ.get(SIZE_ENV) or "quick"
    return Filters(**{n: Filters.split(config.getoption(f"jitbench_{n}"))
                      for n in FILTER_NAMES},
                   size=size, suite_files=tuple(config.getoption("jitbench_suite_file")),
                   every_variant=True)  # pytest's own -k chooses among all of them


# --------------------------------------------------------------------------- collection

@dataclasses.dataclass
class _Group:
    """What the modes of one case group share: placed inputs, the reference
    (``jitbench.protocol.case_setup.Casework``) and the JIT-off answers to check the JIT-on modes
    with."""

    key: tuple
    work: Any = None
    nojit_outputs: dict[str, Any] = dataclasses.field(default_factory=dict)  # mode -> numpy


@dataclasses.dataclass
class _PluginState:
    """What the plugin keeps over one pytest session (in ``config.stash``): the filters, the
    environment before any framework import, the cases, the adapters and the group in hand.
    Not a run's session (``jitbench.run.session.Session``): no folder, no record."""

    filters: Filters
    env: dict[str, str]  # the XLA-related environment as it was before any framework import
    config: Any = None
    _cases: dict[str, Case] | None = None
    adapters: dict[str, Any] = dataclasses.field(default_factory=dict)
    group: _Group | None = None
    reference_key: tuple | None = None
    reference: Any = None
    deselected: int = 0

    @property
    def cases(self) -> dict[str, Case]:
        """The registry's cases, expanded when a test first asks for them: a project that only
        has jitbench installed never loads jitbench's suites (nor registers their markers)."""
        if self._cases is None:
            try:
                self._cases = {c.case_id: c for c in expand(self.filters)}
            except UserError as exc:
                raise pytest.UsageError(f"jitbench: {exc}") from None
            _add_markers(self.config, self.filters)
        return self._cases

    def adapter(self, framework: str):
        if framework not in self.adapters:
            from jitbench.frameworks import get_adapter

            if not counts_in_process(framework):
                # Nothing here reads TF's log (its counters need the worker's log file), so
                # keep its INFO/VLOG chatter out of captured output.
                os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "1")
            self.adapters[framework] = get_adapter(framework)
        return self.adapters[framework]


def xla_env(environ=os.environ) -> dict[str, str]:
    return {k: v for k, v in sorted(environ.items()) if k.startswith(XLA_ENV_PREFIXES)}


def pytest_configure(config) -> None:
    try:
        filters = filters_from(config)
    except UserError as exc:
        raise pytest.UsageError(f"jitbench: {exc}") from None
    state = config.stash[_STATE] = _PluginState(filters, xla_env(), config)
    if any(config.getoption(f"jitbench_{n}") for n in (*FILTER_NAMES, "size", "suite_file")):
        _ = state.cases  # options given: a bad one is a usage error now, before collection


def _add_markers(config, filters: Filters) -> None:
    names = sorted(discover(filters.suite_files))
    markers = {"jitbench": "a jitbench benchmark case (suites/test_bench.py)",
               "jit": "JIT (XLA) on", "nojit": "JIT off"}
    markers.update({f: f"framework {f}" for f in FRAMEWORKS})
    markers.update({d: f"device {d}" for d in DEVICES})
    markers.update({m: f"mode {m}" for (_, m) in MODES if m not in markers})
    markers.update({n: f"workload {n}" for n in names if n not in markers})
    for name, text in markers.items():
        config.addinivalue_line("markers", f"{name}: {text}")


def environment_skip(case: Case, env: dict[str, str]) -> str | None:
    """Why this process cannot run ``case``'s mode (``jitbench.define.modes.environment_problem``,
    read
    from the environment pytest started with), or None."""
    why = environment_problem(case.framework, case.mode, env)
    return why and f"{why}; run `jitbench run --mode {case.mode}` (a worker of its own)"


def _marks(case: Case, env: dict[str, str]) -> list:
    names = ["jitbench", case.framework, case.mode, case.device, case.workload,
             "jit" if case.jit else "nojit"]
    marks = [getattr(pytest.mark, n) for n in dict.fromkeys(names)]
    # a case that fails or xfails before timing leaves the fixture unused on purpose
    marks.append(pytest.mark.filterwarnings(_UNUSED_FIXTURE))
    why = environment_skip(case, env)
    if why:
        marks.append(pytest.mark.skip(reason=why))
    return marks


def pytest_generate_tests(metafunc) -> None:
    if FIXTURE not in metafunc.fixturenames:
        return
    state = metafunc.config.stash[_STATE]
    metafunc.parametrize(FIXTURE, [pytest.param(cid, id=cid, marks=_marks(c, state.env))
                                   for cid, c in state.cases.items()])


def _opted_in(config) -> bool:
    """A bare ``pytest`` (testpaths) runs the harness tests; the benchmarks run when asked for:
    ``--benchmark-only``, ``--benchmark-enable``, or a path such as ``suites/`` named."""
    if config.getoption("benchmark_only", False) or config.getoption("benchmark_enable", False):
        return True
    source = getattr(config, "args_source", None)
    if source is not None:
        return source != config.ArgsSource.TESTPATHS
    return list(config.args) != list(config.getini("testpaths"))


def pytest_collection_modifyitems(config, items) -> None:
    if _opted_in(config):
        return
    ours = [i for i in items if FIXTURE in getattr(i, "fixturenames", ())]
    if not ours:
        return
    ids = {id(i) for i in ours}
    items[:] = [i for i in items if id(i) not in ids]
    config.hook.pytest_deselected(items=ours)
    config.stash[_STATE].deselected = len(ours)


def pytest_report_collectionfinish(config, start_path, items):
    n = config.stash[_STATE].deselected if _STATE in config.stash else 0
    if n:
        return (f"jitbench: {n} benchmark cases deselected (a bare `pytest` runs the harness "
                f"tests); run them with `pytest --benchmark-only`, or name suites/")
    return None


# --------------------------------------------------------------------------- machine info

@functools.lru_cache(maxsize=1)
def _gpus() -> tuple[dict[str, str], ...]:
    # nvidia-smi, not a framework: the hook also runs before any test, when
    # --benchmark-compare loads a saved run, and must give the same answer then and after
    from jitbench.results.meta import gpus

    return tuple(gpus())


def machine_info(env: dict[str, str]) -> dict[str, Any]:
    """What pytest-benchmark's machine_info lacks for a JIT comparison. Deterministic within a
    session (no framework import, the environment as pytest started) so that
    ``--benchmark-compare`` does not see a spurious machine change."""
    from jitbench.results.meta import cpu_model, installed_version

    gpus = [dict(g) for g in _gpus()]
    return {"cpu_model": cpu_model(), "cpu_count": os.cpu_count(), "gpus": gpus,
            "gpu_driver": gpus[0].get("driver_version") if gpus else None,
            **{name: installed_version(*dists) for fw in FRAMEWORKS
               for name, dists in SPECS[fw].distributions.items()},
            "xla_env": dict(env)}


def update_machine_info(config, machine_info: dict) -> None:
    """pytest-benchmark's ``pytest_benchmark_update_machine_info``, for the conftest of a
    project whose benchmarks want it (``suites/conftest.py``): not a hook of this plugin, so
    other projects' machine_info stays pytest-benchmark's own."""
    env = config.stash[_STATE].env if _STATE in config.stash else xla_env()
    machine_info["jitbench"] = globals()["machine_info"](env)


# --------------------------------------------------------------------------- one case

def _fail(case: Case, status: str, text: str, expected: str | None) -> NoReturn:
    text = text.strip()[:4000]
    if expected:
        pytest.xfail(f"expected {status} ({expected}): {text.splitlines()[0] if text else ''}")
    pytest.fail(f"{case.case_id}: {status}: {text}", pytrace=False)


def _error_text(exc: BaseException, phase: str) -> str:
    return f"{type(exc).__name__} in {phase}: {str(exc).strip() or repr(exc)}"


def _prepare(state: _PluginState, case: Case, wl, adapter) -> _Group:
    """Inputs, reference and placement, shared by the modes of a group (kept one group at a
    time: a full-size case's inputs are large)."""
    from jitbench.protocol.case_setup import (Casework, matmul_precision, workload_inputs,
                                           workload_reference)

    if state.group is None or state.group.key != case.group_key:
        state.group = None  # free the previous group's device buffers first
        inputs = workload_inputs(wl, case)
        ref_key = (case.source, case.variant, case.params_json, case.dtype)
        if state.reference_key != ref_key:  # the same for every framework and mode
            state.reference = workload_reference(wl, case, inputs)
            state.reference_key = ref_key
        rtol, atol = wl.tolerance[case.dtype]
        work = Casework(adapter, case.framework, case.device, inputs, state.reference, rtol,
                        atol, precision=matmul_precision(adapter, case.device, case.dtype),
                        reduction=wl.reduction_length(case.params, case.variant))
        state.group = _Group(case.group_key, work)
    return state.group


def _rounds(per_call: float, config) -> tuple[int, int]:
    """(rounds, iterations) from pytest-benchmark's own options: a round lasts at least
    --benchmark-min-time, all rounds about --benchmark-max-time, never under
    --benchmark-min-rounds."""
    min_time = float(config.getoption("benchmark_min_time"))
    max_time = float(config.getoption("benchmark_max_time"))
    min_rounds = int(config.getoption("benchmark_min_rounds"))
    per_call = max(per_call, 1e-9)
    iterations = max(1, math.ceil(min_time / per_call))
    iterations = max(iterations, math.ceil(max_time / (MAX_ROUNDS * per_call)))
    rounds = max(min_rounds, min(MAX_ROUNDS, int(max_time / (per_call * iterations))))
    return rounds, iterations


def run_case(benchmark, case_id: str, config) -> None:
    """Measure one case × mode with the harness's protocol; pytest-benchmark times only the
    steady-state, synced calls."""
    import statistics

    from jitbench.protocol.case_setup import on_device
    from jitbench.protocol.samples import ModeResult, take_sample
    from jitbench.protocol.timing import Protocol, first_and_warmup

    state: _PluginState = config.stash[_STATE]
    case = state.cases[case_id]
    # JIT on and off of one case side by side (read when pedantic starts, so set it first)
    benchmark.group = (f"{case.workload}-{case.variant}-{case.framework}-{case.device}-"
                       f"{case.dtype}-{case.size}")
    wl = load_workload(case.source)
    expected = rows.expected_failure(case, wl)
    adapter = state.adapter(case.framework)
    available, why = adapter.device_available(case.device)
    why = why if not available else adapter.mode_problem(case.mode, case.device)
    if why:
        pytest.skip(why)

    try:
        group = _prepare(state, case, wl, adapter)
        adapter.reset()  # this mode's first call pays its own compilation
        with on_device(adapter, case.device):  # the builder's constants on that device
            stages = wl.builder(case.framework)(case.params, case.dtype, case.variant)
        built = group.work.build(stages, case.mode)
        timed = group.work.timed(case.mode, built)
    except Exception as exc:  # noqa: BLE001 -- the workload's setup: this case fails
        _fail(case, "runtime_error", "setup failed: " + _error_text(exc, "setup"), expected)
    work = group.work

    def synced_call():
        out = timed.call()
        adapter.sync(out)
        return out

    if benchmark.disabled:  # --benchmark-disable: one call, checked, as a smoke test
        try:
            output = benchmark.pedantic(synced_call)
        except Exception as exc:  # noqa: BLE001 -- a framework error is the outcome
            _fail(case, adapter.classify(exc, "first_call"), _error_text(exc, "first_call"),
                  expected)
        checked = work.check(work.answer(built, output))
        if checked.mismatch:
            _fail(case, "mismatch", checked.mismatch, expected)
        return

    r = first_and_warmup(timed, Protocol(), adapter.counters, time.perf_counter)
    if not r.ok:
        _fail(case, adapter.classify(r.error, r.error_phase),
              _error_text(r.error, r.error_phase), expected)
    # a JIT-on mode is compared with the group's JIT-off answers that ran before it
    checked = work.check(work.answer(built, r.output),
                         *(work.nojit(group.nojit_outputs) if case.jit else ()))
    if checked.mismatch:
        _fail(case, "mismatch", checked.mismatch, expected)
    if not case.jit:
        group.nojit_outputs[case.mode] = checked.output

    per_call = statistics.median(r.early_calls_s) if r.early_calls_s else r.first_call_s
    rounds, iterations = _rounds(per_call, config)
    before = adapter.counters()
    try:
        benchmark.pedantic(synced_call, rounds=rounds, iterations=iterations)
    except Exception as exc:  # noqa: BLE001 -- a framework error is the outcome
        _fail(case, adapter.classify(exc, "timed_samples"), _error_text(exc, "timed_samples"),
              expected)
    after = adapter.counters()
    # pytest-benchmark timed each call with its sync (latency); the throughput kind beside it
    p = Protocol().for_device(case.device)
    sample_s = max(p.sample_min_time, p.pipeline_time or 0.0)
    piped = ModeResult(case.mode, loops=max(1, math.ceil(sample_s / per_call)))
    for _ in range(PIPELINED_SAMPLES):  # samples as a run takes them: calls back to back
        take_sample(timed, piped, lambda: {}, time.perf_counter)

    flops = float(wl.flops(case.params, case.variant))
    median = benchmark.stats.stats.median
    info = benchmark.extra_info
    info.update(jitbench_schema=EXTRA_INFO_SCHEMA, **rows.case_fields(case), status="ok",
                **rows.timing_fields(r), sync_overhead_s=r.overhead_s, flops=flops,
                gflops=flops / median / 1e9 if median else None, rtol=work.rtol,
                atol=work.atol, matmul_precision=work.precision, synced_median_s=median,
                pipelined_median_s=statistics.median(piped.samples or piped.compiling_samples),
                **checked.fields)
    if counts_in_process(case.framework):
        info.update(rows.counter_fields(r.counters_first, r.counters_warmup,
                                        {k: after.get(k, 0) - before.get(k, 0) for k in after}))
        info["steady_state_compiles"] = bool(info.get("samples_compiles", 0))
    info.update(rows.expected_fields(case, wl))
    # what XLA built (jitbench.xla.capture), after the timed calls, as in a worker's row
    info.update(insight.programs_fields(adapter, case.mode, stages, case.device, work.placed,
                                        flops, insight.Options(), case_id))
