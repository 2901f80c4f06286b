"""``jitbench.measure`` on tiny real TF and JAX functions: the rows, the table, the summary line,
bad input as one ``UserError``, auto-clustering in-process (skipped where TensorFlow started
before its flag, measured where the process started with it) and in a worker
(``isolate=True``)."""

from __future__ import annotations

import re
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

import jitbench
from jitbench.errors import UserError
from jitbench.protocol.settings import Protocol
from jitbench.results.files import COLUMNS

QUICK = Protocol(min_time=0.02, min_samples=5, warmup_max_time=1.0, budget=1.0)
SUMMARY = re.compile(r"^jit is \d[\d.]*× (faster|slower) than eager \[[\d.]+–[\d.]+\] "
                     r"\(pipelined; each call synced: [\d.]+× \[[\d.]+–[\d.]+\]\); "
                     r"compile \S+ m?s; (pays off after \d+ calls?|never pays off)$|"
                     r"^jit is no faster than eager \(")


def _inputs():
    rng = np.random.default_rng(0)
    return (rng.standard_normal((16, 16)).astype(np.float32),
            rng.standard_normal((16, 8)).astype(np.float32))


def jax_layer(w, x):
    import jax

    return jax.nn.relu(w @ x)


def tf_layer(w, x):
    import tensorflow as tf

    return tf.nn.relu(tf.matmul(w, x))


def jax_branchy(w, x):  # Python `if` on a traced value: fine op by op, jax.jit cannot trace it
    return w @ x if float((w @ x).sum()) > -1e9 else x


def test_measure_jax_rows_table_summary_html():
    jax = pytest.importorskip("jax")
    x64_before = jax.config.read("jax_enable_x64")
    w, x = (jax.numpy.asarray(a) for a in _inputs())
    r = jitbench.measure(jax_layer, w, x, protocol=QUICK,
                      reference=lambda w, x: np.maximum(w @ x, 0.0))
    assert jax.config.read("jax_enable_x64") == x64_before  # the user's session unchanged

    df = r.table()
    assert list(df.columns[:len(COLUMNS)]) == COLUMNS
    assert list(df["mode"]) == ["eager", "jit", "aot"] and set(df["status"]) == {"ok"}
    assert (df["median_s"] > 0).all() and (df["first_call_s"] > 0).all()
    assert list(df["jit"]) == [False, True, True] and set(df["framework"]) == {"jax"}
    assert (df["max_rel_err"] < 1e-5).all()  # against the float64 reference given
    jit = df[df["mode"] == "jit"].iloc[0]
    assert jit["max_rel_err_vs_nojit"] < 1e-5 and jit["nojit_mode"] == "eager"
    assert jit["first_compiles"] >= 1  # JAX's compile counter, in this process
    assert jit["size"] == "16x16,16x8" and jit["dtype"] == "float32"

    line = r.summary()
    assert SUMMARY.match(line.split(". ")[0]), line  # then the same for aot
    assert line.split(". ")[1].startswith("aot is "), line
    html = r._repr_html_()
    assert html.startswith("<p>jit is ") and "<table" in html and "eager" in html
    assert r.speedups()["nearest"].tolist() == [True, True]


# A fresh process each: whether auto-clustering can run depends on what the process's TensorFlow
# did before jitbench's adapter was imported.
TF_IN_A_SESSION = """
import json, sys
import numpy as np
import tensorflow as tf
import jitbench
from jitbench.protocol.settings import Protocol


def tf_deep(w, x):  # enough ops for TF's minimum cluster size
    h = tf.nn.relu(tf.matmul(w, x))
    return tf.reduce_sum(tf.tanh(h) * 2.0 + h, axis=0)


rng = np.random.default_rng(0)
w = tf.constant(rng.standard_normal((16, 16)).astype(np.float32))
x = tf.constant(rng.standard_normal((16, 8)).astype(np.float32))  # TF started: too late
from tensorflow.python.eager import context


def call_options():  # what the user's own tf.functions are called with in this thread
    return context.context().function_call_options.config_proto_serialized.hex()


for arg in sys.argv[1:]:  # one session, one line each
    modes = None if arg == "default" else ["graph", "autoclustering"]
    before = call_options()
    r = jitbench.measure(tf_deep, w, x, modes=modes, protocol=Protocol(
        min_time=0.02, min_samples=5, warmup_max_time=1.0, budget=1.0))
    print(json.dumps({"rows": [[row["mode"], row["status"], row.get("error")]
                               for row in r.rows], "summary": r.summary(),
                      "call_options_kept": call_options() == before}))
"""


def _tf_session(args: list[str], flags: str | None) -> list[dict]:
    import json
    import os

    env = {k: v for k, v in os.environ.items() if k != "TF_XLA_FLAGS"}
    if flags:
        env["TF_XLA_FLAGS"] = flags
    done = subprocess.run([sys.executable, "-c", TF_IN_A_SESSION, *args], capture_output=True,
                          text=True, env=env, cwd=Path(__file__).resolve().parent.parent,
                          timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    return [json.loads(line) for line in done.stdout.strip().splitlines()[-len(args):]]


@pytest.mark.e2e  # a user's script in a process of its own (two TensorFlow sessions)
def test_measure_tf_default_modes_and_autoclustering_after_tensorflow_started():
    pytest.importorskip("tensorflow")
    # by default: what this process can measure; then auto-clustering asked for, in the same
    # process (TensorFlow started without its flag)
    out, asked = _tf_session(["default", "asked"], None)
    assert [(m, s) for m, s, _ in out["rows"]] == [("eager", "ok"), ("graph", "ok"),
                                                   ("xla", "ok")]
    # against graph, the nearest JIT-off mode, whatever the verdict (a 16x16 call: often none
    # within the 1-s budget, "xla against graph: unresolved ...")
    head = out["summary"].split(";")[0]
    assert head.startswith("xla ") and "graph" in head and "eager" not in head, head

    out = asked
    (_, status, why), = [row for row in out["rows"] if row[0] == "autoclustering"]
    assert status == "skipped"
    assert "needs TF_XLA_FLAGS='--tf_xla_cpu_global_jit' before TensorFlow starts" in why
    assert "isolate=True" in why
    assert "autoclustering skipped (tf autoclustering on cpu needs" in out["summary"]

    # started with the flag (it changes no other mode): auto-clustering runs in-process
    out, = _tf_session(["asked"], "--tf_xla_cpu_global_jit")
    assert [(m, s) for m, s, _ in out["rows"]] == [("graph", "ok"), ("autoclustering", "ok")]
    # each mode's calls set their own call options (auto-clustering's jit level): the user's
    # own tf.functions are called as before once the measurement is over
    assert out["call_options_kept"] and asked["call_options_kept"]


USER_TF_ON_A_GPU_MACHINE = """
import numpy as np, tensorflow as tf, jitbench
from jitbench.protocol.settings import Protocol

x = tf.constant(np.ones((8, 8), np.float32))  # the user's TensorFlow runtime has started
gpu = tf.config.PhysicalDevice(name="/physical_device:GPU:0", device_type="GPU")
listed = tf.config.list_physical_devices
tf.config.list_physical_devices = lambda kind=None: (
    [gpu] if kind == "GPU" else listed(kind) + ([gpu] if kind is None else []))


def refuse(*args, **kwargs):  # what TensorFlow says once its runtime has started
    raise RuntimeError("Physical devices cannot be modified after being initialized")


tf.config.experimental.set_memory_growth = refuse
r = jitbench.measure(lambda a, b: tf.nn.relu(a @ b), x, x, modes=["graph", "xla"],
                     device="cpu", protocol=Protocol(min_time=0.02, min_samples=5, budget=1.0))
print(sorted(row["status"] for row in r.rows))
"""


@pytest.mark.e2e  # a user's script in a process of its own
def test_a_users_started_tensorflow_on_a_gpu_machine_is_measured_not_reconfigured():
    """On a machine listing a GPU, with the user's TensorFlow runtime already started,
    jitbench.measure on tf.Tensor inputs measures: the adapter never asks TensorFlow to change
    its devices (memory growth), which TensorFlow refuses once started."""
    pytest.importorskip("tensorflow")
    done = subprocess.run([sys.executable, "-c", USER_TF_ON_A_GPU_MACHINE],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip().splitlines()[-1] == "['ok', 'ok']", done.stdout[-2000:]


def test_isolate_runs_autoclustering_in_its_own_worker_with_tf_counters():
    tf = pytest.importorskip("tensorflow")

    def deep(w, x):  # enough ops for TF's minimum cluster size
        h = tf.nn.relu(tf.matmul(w, x))
        return tf.reduce_sum(tf.tanh(h) * 2.0 + h, axis=0)

    with pytest.raises(UserError, match=r"isolate=True needs a function .* importable|"
                                        r"defined inside a function"):
        jitbench.measure(deep, *_inputs(), framework="tf", isolate=True, protocol=QUICK)
    r = jitbench.measure(tf_deep, *_inputs(), framework="tf", modes=["graph", "xla",
                                                                   "autoclustering"],
                      isolate=True, protocol=QUICK, tolerances=jitbench.Tolerances(rtol=0.01))
    rows = {row["mode"]: row for row in r.rows}
    assert {m: row["status"] for m, row in rows.items()} == {
        "graph": "ok", "xla": "ok", "autoclustering": "ok"}
    assert {row["rtol"] for row in r.rows} == {0.01}  # the worker checked with the given one
    assert rows["xla"]["first_compiles"] >= 1  # read from XLA's log, which the worker keeps
    assert rows["autoclustering"]["first_clusters"] >= 1
    assert rows["autoclustering"]["jit_happened"] is True
    # one worker: its adapter added auto-clustering's flag before TensorFlow started
    assert rows["graph"]["worker_pid"] == rows["xla"]["worker_pid"] == \
        rows["autoclustering"]["worker_pid"]


def jax_sleeps_forever(w, x):
    import time

    while True:
        time.sleep(60)


def jax_raises(w, x):
    raise ValueError("shapes do not fit")


def test_a_hung_function_under_isolate_ends_as_timeout_rows_not_a_hang():
    jax = pytest.importorskip("jax")
    w, x = (jax.numpy.asarray(a) for a in _inputs())
    started = time.monotonic()
    r = jitbench.measure(jax_sleeps_forever, w, x, modes=["eager", "jit"], isolate=True,
                      timeout=5, protocol=QUICK)
    assert time.monotonic() - started < 15
    assert [(row["mode"], row["status"]) for row in r.rows] == [("eager", "timeout"),
                                                                ("jit", "timeout")]
    assert "exceeded the 5 s limit (timeout=)" in r.rows[0]["error"]
    # a function that fails with JIT off is the caller's error, from the worker as in-process
    with pytest.raises(UserError, match=r"jax_raises raised ValueError in eager mode"):
        jitbench.measure(jax_raises, w, x, isolate=True, protocol=QUICK)
    with pytest.raises(UserError, match=r"timeout needs isolate=True"):
        jitbench.measure(jax_layer, w, x, timeout=5)


def tf_deep(w, x):
    import tensorflow as tf

    h = tf.nn.relu(tf.matmul(w, x))
    return tf.reduce_sum(tf.tanh(h) * 2.0 + h, axis=0)


def test_bad_input_is_one_user_error_naming_the_problem():  # imports jax: not unit
    jax = pytest.importorskip("jax")
    tf = pytest.importorskip("tensorflow")
    w, x = _inputs()

    def broken(w, x):
        raise ValueError("shapes do not fit")

    cases = [
        (lambda: jitbench.measure(broken, jax.numpy.asarray(w), x, protocol=QUICK),
         r"^broken raised ValueError in eager mode \(JIT off, first call\): shapes do not fit"),
        (lambda: jitbench.measure(jax_layer, jax.numpy.asarray(w), tf.constant(x)),
         r"^inputs of mixed frameworks: argument 0 is a JAX \w+ and argument 1 is a "
         r"TensorFlow \w+"),
        (lambda: jitbench.measure(jax_layer, jax.numpy.asarray(w), x, modes=["eager", "xla"]),
         r"^unknown mode 'xla' for jax; valid: eager, jit, aot$"),
        (lambda: jitbench.measure(jax_layer, w, x),
         r"^cannot tell the framework from the inputs .* framework='tf' or framework='jax'"),
        (lambda: jitbench.measure(jax_layer, w, x, framework="torch"),
         r"^unknown framework 'torch'; valid: tf, jax$"),
        (lambda: jitbench.measure(jax_layer, jax.numpy.asarray(w), x, framework="tf"),
         r"^framework='tf', but argument 0 is a JAX"),
        (lambda: jitbench.measure("not a function", w, x, framework="jax"),
         r"^the function to measure is not callable"),
    ]
    for call, message in cases:
        with pytest.raises(UserError) as err:
            call()
        assert re.search(message, str(err.value)), str(err.value)


def test_failure_with_jit_only_is_a_row_and_a_wrong_answer_a_mismatch():  # imports jax: not unit
    jax = pytest.importorskip("jax")
    w, x = (jax.numpy.asarray(a) for a in _inputs())
    r = jitbench.measure(jax_branchy, w, x, protocol=QUICK)
    status = {row["mode"]: row["status"] for row in r.rows}
    assert status == {"eager": "ok", "jit": "compile_error", "aot": "compile_error"}
    assert "jit compile_error (ConcretizationTypeError: Abstract tracer" in r.summary()

    r = jitbench.measure(jax_layer, w, x, protocol=QUICK, reference=lambda w, x: w @ x + 1.0)
    assert {row["status"] for row in r.rows} == {"mismatch"}
    assert "output differs from the reference" in r.rows[0]["error"]


def test_the_option_objects_and_their_shorthand_measure_alike():
    """``tolerances=`` and ``sampling=`` reach the rows as ``rtol=``, ``atol=``,
    ``precision=`` and ``budget=`` do (tests/test_measure_options.py: the objects alone)."""
    jax = pytest.importorskip("jax")
    w, x = (jax.numpy.asarray(a) for a in _inputs())
    fixed = Protocol(min_time=0.02, min_samples=5, warmup_max_time=1.0)
    by_objects = jitbench.measure(jax_layer, w, x, modes=["eager", "jit"], protocol=fixed,
                                  tolerances=jitbench.Tolerances(rtol=0.25, atol=0.5),
                                  sampling=jitbench.Sampling(precision="off", budget=1))
    by_keywords = jitbench.measure(jax_layer, w, x, modes=["eager", "jit"], protocol=fixed,
                                   rtol=0.25, atol=0.5, precision="off", budget=1)
    for r in (by_objects, by_keywords):
        assert {(row["rtol"], row["atol"], row["status"]) for row in r.rows} == {
            (0.25, 0.5, "ok")}
        # precision "off": the fixed protocol's bootstrap verdict, never a sequential one
        assert r.verdict("jit") in ("faster", "slower", "no difference"), r.summary()


def test_import_bench_and_its_front_doors_import_no_framework():
    code = ("import sys, jitbench; jitbench.measure; "
            "import jitbench.userfn.measure, jitbench.userfn.as_workload, jitbench.userfn.isolate, "
            "jitbench.userfn.functions, jitbench.userfn.stateful, jitbench.userfn.keras_model, "
            "jitbench.userfn.keras_fit, jitbench.userfn.options, "
            "jitbench.pytest_plugin.fixture, jitbench.pytest_plugin.plugin; "
            "print(sorted(m for m in ('tensorflow', 'jax') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == "[]"
