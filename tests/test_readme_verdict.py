"""The README's verdict example is a line `jitbench run` prints: rendered here by the run's
printer (``jitbench.run.progress.group_line``) from the recorded rows of the run that printed
it, and that line says device, dtype, compile cost, break-even and error (issue 64, item 4)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from jitbench.run.progress import group_line

pytestmark = pytest.mark.unit
ROOT = Path(__file__).resolve().parent.parent
# the rows of one group (mmd/outer jax float32 n512-d64) of `jitbench run --device cpu --size
# quick` (what `make bench` runs; 2 cores, shared with other jobs), whose line the README quotes
RECORDED = ROOT / "tests" / "fixtures" / "readme-verdict" / "rows.jsonl"


def _readme_verdict() -> str:
    """The README's example of a printed verdict: the first line of a code block that reads
    like the run's progress (``[  6/18]     7.1s    ...: jit ...``)."""
    inside = False
    for line in (ROOT / "README.md").read_text(encoding="utf-8").splitlines():
        if line.startswith("```"):
            inside = not inside
        elif inside and re.match(r"\[\s*\d+/\d+\]\s+[\d.]+s {4}\S", line):
            return line
    raise AssertionError("README.md quotes no verdict line of a run")


def test_the_readme_verdict_is_the_line_the_run_printed_from_these_rows():
    rows = [json.loads(ln) for ln in RECORDED.read_text().splitlines()]
    printed = group_line(rows[0], rows)
    quoted = _readme_verdict()
    prefix = re.match(r"\[\s*\d+/\d+\]\s+[\d.]+s {4}", quoted)
    assert prefix, quoted  # the progress counter, then the group's line indented by two
    assert quoted[prefix.end():] == printed


def test_the_printed_line_says_device_dtype_compile_payoff_and_error():
    rows = [json.loads(ln) for ln in RECORDED.read_text().splitlines()]
    line = group_line(rows[0], rows)
    head, verdicts = line.split(": ", 1)
    assert head.split() == ["mmd/outer", "jax", "cpu", "float32", "n512-d64"]
    for part in verdicts.split("; "):  # one per JIT mode
        fields = part.split(", ")
        assert re.fullmatch(r"(jit|aot) [\d.]+x (faster|slower) than eager \[[\d.]+-[\d.]+\]",
                            fields[0]), part
        assert re.fullmatch(r"compile [\d.]+ (ms|s|µs)", fields[1]), part
        assert re.fullmatch(r"pays off (from the first call|after [\d,]+ calls?)|never pays off",
                            fields[2]), part
        assert re.fullmatch(r"max rel err [\d.e+-]+ vs float64", fields[3]), part


def test_a_group_without_costs_or_verdicts_still_reads():
    case = dict(workload="w", variant="v", framework="tf", device="gpu", dtype="bfloat16",
                size="s")
    assert group_line(case, [{"mode": "graph", "status": "ok"}]) == "w/v tf gpu bfloat16 s: no verdict"
    assert group_line(case, [{"mode": "xla", "status": "oom"}]) == "w/v tf gpu bfloat16 s: xla oom"


def test_break_even_only_where_the_verdict_knows_it():
    """As the report gives it: faster, the call from which it pays off; slower, never; same
    or unresolved, none (a median ratio near 1 would give any number)."""
    case = dict(workload="w", variant="v", framework="jax", device="cpu", dtype="float32",
                size="s")
    base = {"mode": "eager", "status": "ok", "first_call_s": 0.05, "median_s": 1.0e-3}

    def jit(verdict, speedup):
        return {"mode": "jit", "status": "ok", "verdict": verdict, "verdict_baseline": "eager",
                "verdict_speedup": speedup, "verdict_ci_low": speedup * 0.9,
                "verdict_ci_high": speedup * 1.1, "first_call_s": 0.2,
                "median_s": 1.0e-3 / speedup}

    assert "pays off after" in group_line(case, [base, jit("faster", 2.0)])
    assert "never pays off" in group_line(case, [base, jit("slower", 0.5)])
    for verdict in ("unresolved", "same"):
        line = group_line(case, [base, jit(verdict, 1.01)])
        assert "pays off" not in line and "compile 199 ms" in line, line
