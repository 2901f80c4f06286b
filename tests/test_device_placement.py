"""A worker placed on one device of several (as on one GPU of a multi-GPU machine) finds every
array its workloads' builders make there, not on the framework's default device. Two host
devices stand in for two GPUs (``XLA_FLAGS=--xla_force_host_platform_device_count=2``)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

CODE = r'''
import functools, json
import jax
from jitbench.define.workload import discover
from jitbench.frameworks import get_adapter
from jitbench.protocol.case_setup import on_device

adapter = get_adapter("jax")


def arrays(obj, seen, depth=0):
    """Every jax.Array reachable from a builder's stages: closures, defaults, partials, lists."""
    if id(obj) in seen or depth > 8:
        return []
    seen.add(id(obj))
    if isinstance(obj, jax.Array):
        return [obj]
    found = []
    if isinstance(obj, (list, tuple, set)):
        items = list(obj)
    elif isinstance(obj, dict):
        items = list(obj.values())
    elif isinstance(obj, functools.partial):
        items = [obj.func, *obj.args, *obj.keywords.values()]
    elif callable(obj):
        items = [c.cell_contents for c in (getattr(obj, "__closure__", None) or ())
                 if c.cell_contents is not None] + list(getattr(obj, "__defaults__", None) or ())
    else:
        items = []
    for item in items:
        found += arrays(item, seen, depth + 1)
    return found


out = {}
for scoped in (True, False):
    where = []
    for name, (_, wl) in sorted(discover().items()):
        if wl.jax is None:
            continue
        for variant in wl.variants:
            params, dtype = wl.grid["quick"][0], wl.dtypes[0]
            if scoped:
                with on_device(adapter, "cpu"):
                    stages = wl.jax(params, dtype, variant)
            else:
                stages = wl.jax(params, dtype, variant)
            for a in arrays(stages, set()):
                where += [d.id for d in a.devices()]
    out["scoped" if scoped else "unscoped"] = where
print(json.dumps(out))
'''


def test_a_worker_on_the_second_device_finds_every_suite_constant_there():
    pytest.importorskip("jax")
    env = dict(os.environ, XLA_FLAGS="--xla_force_host_platform_device_count=2",
               JITBENCH_DEVICE_INDEX="1", JAX_PLATFORMS="cpu")
    done = subprocess.run([sys.executable, "-c", CODE], capture_output=True, text=True,
                          env=env, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert out["scoped"] and set(out["scoped"]) == {1}, out
    # without the worker's scope they land on the default device: what the scope is for
    assert set(out["unscoped"]) == {0}, out
