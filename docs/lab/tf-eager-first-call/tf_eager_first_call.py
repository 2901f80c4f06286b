"""Why is TF eager's first call dearer in a worker's first group? (issue 10, item 2)

    python docs/lab/tf-eager-first-call/tf_eager_first_call.py

One fresh process per scenario and repeat, built like a jitbench TF worker (the adapter,
``jitbench.run.worker_warmup``, ``place``/``reset``/``build`` as ``jitbench.run.worker.run_group`` calls
them):
the first eager call of matmul_relu split 256^3 after nothing / the worker's warm-up / the
warm-up plus an eager matmul_relu fused group at 64^3 or 256^3 (kernel cache cleared after it,
as between groups). Measured here (3 processes each): 26.3-28.0 ms / 5.9-7.7 ms / 1.65-1.94 ms
/ 1.58-1.64 ms. The warm-up's tiny function has no Relu: the first use of an op type in TF
eager costs ~4-6 ms, and the first group using it pays, whatever its shape.
"""
import json
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from jitbench.frameworks import get_adapter
from jitbench.run import worker_warmup as warmup
from jitbench.suites import matmul_relu as MR

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # docs/lab: labkit
from labkit import usage  # noqa: E402

SCENARIOS = ["none", "warm", "warm+mm64", "warm+mm256"]


def child(scenario: str) -> float:
    """In this fresh process: the first eager call of matmul_relu split 256^3, in seconds."""
    ad = get_adapter("tf", None)
    if scenario != "none":
        warmup.run(ad, "cpu", ["eager", "graph", "xla", "autoclustering"])

    def group(n, variant):
        p = dict(m=n, k=n, n=n)
        placed = ad.place(MR.inputs(p, "float32", np.random.default_rng(0)), "cpu")
        ad.reset()
        fn = ad.build(MR.tf_stages(p, "float32", variant), "eager", "cpu")
        t = time.perf_counter()
        ad.sync(fn(*placed))
        first = time.perf_counter() - t
        for _ in range(20):
            ad.sync(fn(*placed))
        return first

    if scenario.startswith("warm+mm"):
        group(int(scenario.split("mm")[1]), "fused")
    return group(256, "split")


def main() -> None:
    for scenario in SCENARIOS:
        firsts = []
        for _ in range(3):
            out = subprocess.run([sys.executable, __file__, "--child", scenario],
                                 capture_output=True, text=True, check=True)
            firsts.append(json.loads(out.stdout.strip().splitlines()[-1]) * 1e3)
        print(f"{scenario:<12} first eager call, ms: {' '.join(f'{x:6.2f}' for x in firsts)}")


if __name__ == "__main__":
    usage(__doc__)
    if sys.argv[1:2] == ["--child"]:
        print(json.dumps(child(sys.argv[2])))
    else:
        main()
