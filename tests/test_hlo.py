"""jitbench.xla.hlo_text: facts and fingerprints from optimized HLO text, on text XLA really printed
(JAX in this process; TensorFlow in a subprocess, as the harness never mixes the two)."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

from jitbench.xla import hlo_text as hlo

# What XLA:CPU printed for relu(W @ X) (jax 0.10), trimmed: a dot in a custom fusion, then the
# relu as a loop fusion reading the dot's output.
TWO_KERNELS = """\
HloModule jit__lambda, is_scheduled=true, entry_computation_layout={(f32[4,4]{1,0}, f32[4,4]{1,0})->f32[4,4]{1,0}}

FileNames
1 "/tmp/a.py"

StackFrames
1 {file_location_id=1 parent_frame_id=1}


%fused_computation (param_0: f32[4,4], param_1: f32[4,4]) -> f32[4,4] {
  %param_0 = f32[4,4]{1,0} parameter(0)
  %param_1 = f32[4,4]{1,0} parameter(1)
  ROOT %dot.0 = f32[4,4]{1,0} dot(%param_0, %param_1), lhs_contracting_dims={1}, rhs_contracting_dims={0}, metadata={op_name="jit(<lambda>)/dot_general" stack_frame_id=2}
}

%fused_computation.1 (param_0.1: f32[4,4]) -> f32[4,4] {
  %param_0.1 = f32[4,4]{1,0} parameter(0)
  %constant.2 = f32[] constant(0)
  %max.5 = f32[4,4]{1,0} broadcast(%constant.2), dimensions={}
  ROOT %max.4 = f32[4,4]{1,0} maximum(%param_0.1, %max.5), metadata={op_name="jit(<lambda>)/max"}
}

ENTRY %main.2 (w.1: f32[4,4], x.1: f32[4,4]) -> f32[4,4] {
  %w.1 = f32[4,4]{1,0} parameter(0), metadata={op_name="w"}
  %x.1 = f32[4,4]{1,0} parameter(1), metadata={op_name="x"}
  %ynn_fusion = f32[4,4]{1,0} fusion(%w.1, %x.1), kind=kCustom, calls=%fused_computation, backend_config={"fusion_config":{"kind":"__ynn_fusion"}}
  ROOT %broadcast_maximum_fusion = f32[4,4]{1,0} fusion(%ynn_fusion), kind=kLoop, calls=%fused_computation.1
}
"""


@pytest.mark.unit
def test_facts_count_kernels_fusions_and_an_unfused_elementwise_op():
    f = hlo.facts(TWO_KERNELS)
    assert (f.kernels, f.fusions) == (2, 2)
    assert f.fusion_kinds == {"kCustom": 1, "kLoop": 1}
    # the relu reads the matmul's output from memory: not fused into its producer
    assert f.unfused_elementwise == ["broadcast_maximum_fusion"]


@pytest.mark.unit
def test_an_elementwise_kernel_on_parameters_is_fused_unless_a_stage_produced_them():
    relu_alone = TWO_KERNELS.split("ENTRY")[0].split("%fused_computation.1")[0] + textwrap.dedent(
        """\
        %fused_computation.1 (param_0.1: f32[4,4]) -> f32[4,4] {
          %param_0.1 = f32[4,4]{1,0} parameter(0)
          ROOT %neg = f32[4,4]{1,0} negate(%param_0.1)
        }

        ENTRY %main (x.1: f32[4,4]) -> f32[4,4] {
          %x.1 = f32[4,4]{1,0} parameter(0)
          ROOT %neg_fusion = f32[4,4]{1,0} fusion(%x.1), kind=kLoop, calls=%fused_computation.1
        }
        """)
    assert hlo.facts(relu_alone).unfused_elementwise == []
    assert hlo.facts(relu_alone, after_another=True).unfused_elementwise == ["neg_fusion"]
    two = hlo.summarize([hlo.Program("a", TWO_KERNELS), hlo.Program("b", relu_alone)])
    assert two["hlo_programs"] == 2 and two["hlo_kernels"] == 3 and two["hlo_fusions"] == 3
    assert two["hlo_elementwise_fused"] is False
    assert two["hlo_unfused_elementwise"] == ["broadcast_maximum_fusion", "neg_fusion"]


@pytest.mark.unit
def test_control_flow_bodies_count_and_scalar_lambdas_do_not():
    text = textwrap.dedent("""\
        HloModule m
        %add (a: f32[], b: f32[]) -> f32[] {
          %a = f32[] parameter(0)
          %b = f32[] parameter(1)
          ROOT %s = f32[] add(%a, %b)
        }
        %body (p: (s32[], f32[4])) -> (s32[], f32[4]) {
          %p = (s32[], f32[4]) parameter(0)
          %i = s32[] get-tuple-element(%p), index=0
          %v = f32[4] get-tuple-element(%p), index=1
          %t = f32[4] tanh(%v)
          ROOT %r = (s32[], f32[4]) tuple(%i, %t)
        }
        %cond (p.1: (s32[], f32[4])) -> pred[] {
          %p.1 = (s32[], f32[4]) parameter(0)
          ROOT %c = pred[] constant(true)
        }
        ENTRY %main (x: f32[4]) -> f32[] {
          %x = f32[4] parameter(0)
          %z = s32[] constant(0)
          %init = (s32[], f32[4]) tuple(%z, %x)
          %w = (s32[], f32[4]) while(%init), condition=%cond, body=%body
          %out = f32[4] get-tuple-element(%w), index=1
          %zero = f32[] constant(0)
          ROOT %sum = f32[] reduce(%out, %zero), dimensions={0}, to_apply=%add
        }
        """)
    f = hlo.facts(text)
    # tanh in the loop body and the reduce: the add inside the reduce's lambda is no kernel
    assert f.kernels == 2 and f.fusions == 0
    assert f.unfused_elementwise == []  # tanh reads a loop-carried value, not a kernel's output


@pytest.mark.unit
def test_fingerprint_ignores_names_metadata_and_source_tables():
    renamed = (TWO_KERNELS.replace("jit__lambda", "jit_other").replace("w.1", "weights.7")
               .replace("/tmp/a.py", "/elsewhere/b.py").replace('op_name="w"', 'op_name="q"')
               .replace("main.2", "main.9"))
    assert hlo.fingerprint(renamed) == hlo.fingerprint(TWO_KERNELS)
    changed = TWO_KERNELS.replace("maximum(", "minimum(")
    assert hlo.fingerprint(changed) != hlo.fingerprint(TWO_KERNELS)
    assert hlo.fingerprint(TWO_KERNELS.replace("f32[4,4]", "f32[4,8]")) != \
        hlo.fingerprint(TWO_KERNELS)


@pytest.mark.unit
def test_cost_sums_and_missing_costs():
    a = {"flops": 10.0, "transcendentals": 1.0, "bytes_accessed": 40.0}
    assert hlo.sum_costs([a, a]) == {"flops": 20.0, "transcendentals": 2.0,
                                     "bytes_accessed": 80.0}
    assert hlo.sum_costs([a, None]) is None


@pytest.mark.unit
def test_dot_draws_every_kernel_and_its_inputs():
    dot = hlo.to_dot(TWO_KERNELS, "relu(W @ X)")
    assert '"0:ynn_fusion" -> "0:broadcast_maximum_fusion"' in dot
    assert '"0:w.1" -> "0:ynn_fusion"' in dot
    assert dot.startswith("digraph") and dot.rstrip().endswith("}")


# --------------------------------------------------------------------------- real XLA text

def _jax_text(fn, *shapes):
    jax = pytest.importorskip("jax")
    import jax.numpy as jnp

    args = [jnp.ones(s, jnp.float32) for s in shapes]
    return jax.jit(fn).lower(*args).compile().as_text()


def test_real_jax_programs_fuse_elementwise_chains_into_one_kernel():
    import jax.numpy as jnp

    text = _jax_text(lambda x: jnp.tanh(x) * 2.0 + 1.0, (8, 8))
    f = hlo.facts(text)
    assert f.kernels == 1 and f.fusions == 1 and f.unfused_elementwise == []
    assert hlo.facts(_jax_text(lambda x, y: jnp.tanh(x @ y), (8, 8), (8, 8))).kernels >= 1


def test_real_jax_fingerprint_same_program_same_print_other_program_other_print():
    import jax.numpy as jnp

    def first(x):
        return jnp.tanh(x) * 2.0

    def second_name_same_math(y):
        return jnp.tanh(y) * 2.0

    a = hlo.fingerprint(_jax_text(first, (8, 8)))
    assert a == hlo.fingerprint(_jax_text(second_name_same_math, (8, 8)))
    assert a != hlo.fingerprint(_jax_text(lambda x: jnp.tanh(x) * 3.0, (8, 8)))
    assert a != hlo.fingerprint(_jax_text(first, (8, 16)))


TF_SCRIPT = """
import json
import tensorflow as tf
from jitbench.xla import hlo_text as hlo

def ir(fn, *shapes):
    args = [tf.ones(s) for s in shapes]
    return tf.function(fn, jit_compile=True).experimental_get_compiler_ir(*args)(
        stage="optimized_hlo")

relu = lambda w, x: tf.nn.relu(tf.linalg.matmul(w, x))
first = ir(relu, (8, 8), (8, 8))
for i in range(3):  # TF numbers every traced function: later names differ
    tf.function(lambda x: x + i)(tf.ones(2))
again = ir(relu, (8, 8), (8, 8))
other = ir(lambda w, x: tf.nn.relu(tf.linalg.matmul(w, x)) + 1.0, (8, 8), (8, 8))
print(json.dumps({"names_differ": first.splitlines()[0] != again.splitlines()[0],
                  "same": hlo.fingerprint(first) == hlo.fingerprint(again),
                  "other": hlo.fingerprint(first) != hlo.fingerprint(other),
                  "kernels": hlo.facts(first).kernels}))
"""


def test_real_tf_fingerprint_is_stable_across_tf_function_counters():
    out = subprocess.run([sys.executable, "-c", TF_SCRIPT], capture_output=True, text=True,
                         timeout=300, check=False)
    assert out.returncode == 0, out.stderr[-2000:]
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert got["names_differ"]  # the raw text changed between the two traces ...
    assert got["same"] and got["other"]  # ... the fingerprint only with the program
    assert got["kernels"] >= 1
