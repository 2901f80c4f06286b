"""The nested analysis of variance of ``docs/lab/where-the-variance-lives/variance_components.py`` on synthetic
streams with known components (the table in docs/statistics.md comes from it)."""

from __future__ import annotations

import importlib.util
import math
import random
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

SCRIPT = (Path(__file__).resolve().parents[1] / "docs" / "lab" / "where-the-variance-lives"
          / "variance_components.py")


def _module():
    spec = importlib.util.spec_from_file_location("variance_components", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _processes(rng, sd, n=(30, 4, 12, 5)):
    """n = processes x builds x blocks x samples; ``sd``: true sds of each level (log)."""
    out = []
    for _ in range(n[0]):
        p = rng.gauss(0, sd["process"])
        builds = []
        for _ in range(n[1]):
            b = p + rng.gauss(0, sd["build"])
            blocks = []
            for _ in range(n[2]):
                u = 0.5 + b + rng.gauss(0, sd["block"])  # the true log speedup is 0.5
                blocks.append({
                    "off": [math.exp(rng.gauss(0, sd["sample"])) for _ in range(n[3])],
                    "on": [math.exp(-u + rng.gauss(0, sd["sample"])) for _ in range(n[3])]})
            builds.append(blocks)
        out.append({"base": "off", "jit": "on", "builds": builds})
    return out


def test_each_level_of_variance_is_found_where_it_was_put():
    sd = {"sample": 0.05, "block": 0.03, "build": 0.04, "process": 0.06}
    c = _module().components(_processes(random.Random(1), sd))
    assert c["speedup"] == pytest.approx(math.exp(0.5), rel=0.05)
    assert c["n"] == (30, 4, 12, 5)
    # the sample level is what 5 samples put into a difference of two block medians
    assert math.sqrt(c["sample"]) == pytest.approx(sd["sample"] * math.sqrt(2 * math.pi / 2 / 5),
                                                   rel=0.15)
    for level in ("block", "build", "process"):
        assert math.sqrt(max(c[level], 0)) == pytest.approx(sd[level], rel=0.35), level


def test_a_level_with_no_variance_reads_about_zero():
    sd = {"sample": 0.05, "block": 0.0, "build": 0.04, "process": 0.0}
    c = _module().components(_processes(random.Random(2), sd))
    assert math.sqrt(max(c["block"], 0)) < 0.012 and math.sqrt(max(c["process"], 0)) < 0.015
    assert math.sqrt(max(c["build"], 0)) == pytest.approx(0.04, rel=0.35)
