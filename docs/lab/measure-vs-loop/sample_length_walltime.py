"""jitbench run's wall time and verdicts over the quick matmul_relu grid, 1-ms against 10-ms
shortest samples, alternating (2 runs each).

    python docs/lab/measure-vs-loop/sample_length_walltime.py
"""
import time, tempfile
from pathlib import Path
import jitbench
from jitbench.define.workload import Filters, expand
from jitbench.protocol.settings import Protocol
from jitbench.run import runner
import sys

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # docs/lab: labkit
from labkit import usage  # noqa: E402

usage(__doc__)
cases = expand(Filters(suite=("matmul_relu",), device=("cpu",), dtype=("float32",), size="quick"))
print(len(cases), "cases")
out = {0.001: [], 0.01: []}
for r in range(2):
    for smt in ((0.001, 0.01) if r % 2 == 0 else (0.01, 0.001)):
        t0 = time.time()
        d = runner.run(cases, Path(tempfile.mkdtemp()), protocol=Protocol(sample_min_time=smt), command=["lab"])
        wall = time.time() - t0
        df = jitbench.load_results(d)
        v = df["verdict"].value_counts().to_dict() if "verdict" in df else {}
        out[smt].append(wall)
        print(f"sample_min_time {smt}: wall {wall:.0f} s, verdicts {v}", flush=True)
