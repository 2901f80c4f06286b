"""The ladder (``jitbench.releases.ladder``) over a stand-in for the A/B engine: each A/B's rows
made up from a level per arm (no process started), written where the engine writes them, so
the ladder's own work is tested exactly: which pairs it measures, a failed release named and
passed over, each measure's ratio and verdict per step, the facts that changed, the bisect's
A/B runs, ``releases.json`` and the page (Hypothesis: release names and case ids as users
write them are shown as text)."""

from __future__ import annotations

import html as htmllib
import json
import math
import re

import markupsafe
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from jitbench.errors import UserError
from jitbench.releases import ladder
from jitbench.releases import record as record_file
from jitbench.releases.ladder import Rung
from jitbench.run import ab_arms

pytestmark = pytest.mark.unit

CASES = {"eager": "w-default-jax-eager-cpu-float32-n8", "jit": "w-default-jax-jit-cpu-float32-n8",
         "aot": "w-default-jax-aot-cpu-float32-n8"}


class FakeEngine:
    """``ab_arms.run_ab`` that writes made-up rows: per arm (its ``LEVEL`` variable) a factor
    on the jit and aot times; ``PROGRAM`` its fingerprint, ``AOT=broken`` fails aot; every
    process's times scattered by 2% (seeded); ``ERR`` the max relative error of every case
    (rtol 1e-3)."""

    def __init__(self, pairs: int = 6):
        self.pairs, self.calls = pairs, []
        self.rng = np.random.default_rng(7)

    def __call__(self, cases, out_root, arms, settings, *, case_timeout, run_id, command,
                 on_progress):
        self.calls.append((arms[0].env_dict.get("NAME"), arms[1].env_dict.get("NAME"),
                           settings.time_limit))
        run_dir = out_root / run_id
        run_dir.mkdir(parents=True)
        return self.write(run_dir, arms, settings, self.pairs)

    def write(self, run_dir, arms, settings, pairs: int, status: str = "complete"):
        """``pairs`` rounds of rows of both arms and meta.json with ``status`` (the arms'
        specs recorded as the A/B engine records them) in ``run_dir``."""
        run_id = run_dir.name
        rows = []
        for rnd in range(pairs):
            for arm in arms:
                env = arm.env_dict
                level = float(env.get("LEVEL", "1"))
                eager = 80e-6 * math.exp(self.rng.normal(0, 0.02))
                for mode, cid in CASES.items():
                    row = dict(case_id=cid, workload="w", variant="default", framework="jax",
                               mode=mode, device="cpu", dtype="float32", size="n8",
                               jit=mode != "eager", ab_arm=arm.name, ab_round=rnd, run_id=run_id,
                               status="ok", schema_version=1, rtol=1e-3,
                               max_rel_err=float(env.get("ERR", "1e-7")),
                               first_compiles=3 if mode == "eager" else 1,
                               first_call_s=0.05 * math.exp(self.rng.normal(0, 0.02)))
                    if mode == "eager":
                        row["median_s"] = eager
                    else:
                        row["median_s"] = 16e-6 * level * math.exp(self.rng.normal(0, 0.02))
                        row["verdict_speedup"] = eager / row["median_s"]
                        row["hlo_fingerprint"] = env.get("PROGRAM", "p1")
                    if mode == "aot" and env.get("AOT") == "broken":
                        row.update(status="runtime_error", median_s=None,
                                   error="AttributeError: no <aot> API & such")
                    rows.append(row)
        (run_dir / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
        (run_dir / "meta.json").write_text(json.dumps({
            "run_id": run_id, "status": status, "kind": "ab",
            "ab": {"settings": {"tolerance": settings.tolerance,
                                "confidence": settings.confidence,
                                "max_pairs": settings.max_pairs}, "rounds": pairs,
                   "warnings": [], "arms": {a.name: {"packages": {}, "env": a.env_dict,
                                                     "spec": a.spec} for a in arms}}}))
        return run_dir


@pytest.fixture
def engine(monkeypatch):
    fake = FakeEngine()
    monkeypatch.setattr(ab_arms, "run_ab", fake)
    return fake


def rung(name: str, error: str | None = None, **env) -> Rung:
    spec = " ".join(f"{k}={v}" for k, v in {"NAME": name, **env}.items())
    return Rung(name, spec, error, {"reused": True})


def by_case(step):
    return {c["mode"]: c for c in step["cases"]}


SETTINGS = ladder.Settings(ab=ab_arms.Settings(max_pairs=6), threshold=0.10)


def test_each_neighbouring_pair_is_one_ab_and_a_failed_release_is_named_and_passed_over(
        engine, tmp_path):
    rungs = [rung("0.4.31"), rung("0.4.33", error="No matching distribution for jaxlib"),
             rung("0.4.35", LEVEL=1.0), rung("0.5.0", LEVEL=2.0, PROGRAM="p2")]
    record = ladder.run_ladder(["a case"], rungs, tmp_path / "lad", SETTINGS, package="jax")
    assert [(a, b) for a, b, _ in engine.calls] == [("0.4.31", "0.4.35"), ("0.4.35", "0.5.0")]
    assert record["failed"] == [{"name": "0.4.33",
                                 "error": "No matching distribution for jaxlib"}]
    assert [(s["before"], s["after"]) for s in record["steps"]] == [("0.4.31", "0.4.35"),
                                                                     ("0.4.35", "0.5.0")]
    first, second = (by_case(s) for s in record["steps"])
    assert all(c["stepped"] == [] for c in first.values())
    # the A/B calls the jit case the same; the step's interval, at the confidence shared out
    # over its 8 judgements (3 times, 2 speedups, 3 first calls), is wider
    assert first["jit"]["time"]["ab_verdict"] == "same"
    assert record["steps"][0]["judged"] == 8
    assert record["steps"][0]["confidence"] == pytest.approx(1 - 0.05 / 8)
    assert first["jit"]["time"]["verdict"] in ("same", "unresolved")
    jit = second["jit"]
    assert jit["stepped"] == ["time", "jit_speedup", "program"]
    assert jit["time"]["verdict"] == "slower"
    assert jit["time"]["ci_low"] < 2.0 < jit["time"]["ci_high"]
    # the JIT's share of eager's time doubled: its speedup halved, a step of its own
    assert jit["jit_speedup"]["verdict"] == "lower"
    assert jit["jit_speedup"]["ci_low"] < 0.5 < jit["jit_speedup"]["ci_high"] < 1
    assert jit["jit_speedup"]["after"] == pytest.approx(jit["jit_speedup"]["before"] / 2, rel=0.05)
    assert jit["program"] == {"before": ["p1"], "after": ["p2"], "changed": True}
    assert second["eager"]["stepped"] == [] and second["eager"]["jit_speedup"]["verdict"] is None
    # per release: each measure with its interval over processes, the middle one from both A/Bs
    mid = record["cases"][CASES["jit"]]["0.4.35"]
    assert mid["processes"] == 12 and mid["time"]["n"] == 12
    assert mid["time"]["ci_low"] < mid["time"]["value"] < mid["time"]["ci_high"]
    assert record["cases"][CASES["jit"]]["0.5.0"]["time"]["value"] == pytest.approx(
        2 * mid["time"]["value"], rel=0.05)
    assert record["cost"] == {"environments": 3, "environments_reused": 3, "comparisons": 2,
                              "comparisons_reused": 0, "pairs": 12, "sessions": 1,
                              "wall_s": record["cost"]["wall_s"]}
    assert record["status"] == "complete" and record["planned"] == [["0.4.31", "0.4.35"],
                                                                    ["0.4.35", "0.5.0"]]
    on_disk = json.loads((tmp_path / "lad" / "releases.json").read_text())
    assert on_disk == record and record_file.load(tmp_path / "lad") == record
    text = "\n".join(record_file.lines(record))
    assert "not measured: 0.4.33: No matching distribution for jaxlib" in text
    assert re.search(r"0\.4\.35 -> 0\.5\.0: 2 of 3 cases stepped", text)
    assert "time slower 2.0" in text


def test_a_case_that_breaks_is_a_step_with_its_error(engine, tmp_path):
    record = ladder.run_ladder(["a case"], [rung("1"), rung("2", AOT="broken")],
                               tmp_path / "lad", SETTINGS)
    aot = by_case(record["steps"][0])["aot"]
    assert aot["stepped"] == ["status"] and aot["status"]["change"] == "broke"
    assert "no <aot> API" in aot["status"]["error_after"]
    assert "broke (AttributeError: no <aot> API & such)" in "\n".join(record_file.lines(record))


def test_an_error_that_moves_at_round_off_is_no_step_and_one_nearing_the_tolerance_is(
        engine, tmp_path):
    """Another summation order moves a float32 error of 1e-7 by 2-5x between releases: shown,
    not a step; an error that grows 2x or more to a tenth of the case's rtol or beyond is."""
    rungs = [rung("1", ERR=1e-7), rung("2", ERR=5e-7), rung("3", ERR=2e-4), rung("4", ERR=8e-5)]
    record = ladder.run_ladder(["a case"], rungs, tmp_path / "lad", SETTINGS)
    steps = [by_case(s)["eager"] for s in record["steps"]]
    assert [s["error"]["changed"] for s in steps] == [False, True, True]
    assert steps[0]["error"] == {"before": 1e-7, "after": 5e-7, "floor": pytest.approx(1e-4),
                                 "changed": False}
    assert "error" not in steps[0]["stepped"] and "error" in steps[1]["stepped"]
    assert "error changed (5e-07 -> 0.0002)" in "\n".join(record_file.lines(record))


def test_the_time_limit_is_shared_out_between_the_steps_left(engine, tmp_path):
    s = ladder.Settings(ab=ab_arms.Settings(max_pairs=6, time_limit=300.0))
    ladder.run_ladder(["a case"], [rung("1"), rung("2"), rung("3")], tmp_path / "lad", s)
    assert engine.calls[0][2] == pytest.approx(150, abs=2)
    assert engine.calls[1][2] == pytest.approx(300, abs=2)


def test_a_ladder_needs_two_measurable_releases_and_names_the_failed_ones(engine, tmp_path):
    with pytest.raises(UserError, match=r"1 of 2 environments .* \(failed: 2: boom\)"):
        ladder.run_ladder(["c"], [rung("1"), rung("2", error="boom")], tmp_path / "l", SETTINGS)
    with pytest.raises(UserError, match="1 named more than once"):
        ladder.run_ladder(["c"], [rung("1"), rung("1")], tmp_path / "l", SETTINGS)


def test_releases_are_put_in_version_order_and_a_bad_one_is_named():
    assert ladder.ordered(["0.10.2", "0.4.31", "0.5.0"]) == ["0.4.31", "0.5.0", "0.10.2"]
    with pytest.raises(UserError, match=r"release 'latest' is not a version"):
        ladder.ordered(["0.4.31", "latest"])
    with pytest.raises(UserError, match=r"'0\.5' is named twice \('0\.5\.0'"):
        ladder.ordered(["0.5.0", "0.5"])


def test_arms_of_variables_are_rungs_named_by_their_spec():
    rungs = ladder.rungs_from_specs(["", "XLA_FLAGS=--xla_cpu_use_thunk_runtime=false"])
    assert [r.name for r in rungs] == ["this environment",
                                       "XLA_FLAGS=--xla_cpu_use_thunk_runtime=false"]
    with pytest.raises(UserError, match="given twice"):
        ladder.rungs_from_specs(["A=1", "A=1"])
    with pytest.raises(UserError, match="neither python=PATH nor NAME=VALUE"):
        ladder.rungs_from_specs(["1A=1"])


def test_a_bisect_measures_fewer_releases_than_the_ladder_and_passes_over_a_failed_one(
        engine, tmp_path):
    names = [f"0.{i}.0" for i in range(1, 10)]
    levels = {n: (3.0 if i >= 6 else 1.0) for i, n in enumerate(names)}  # 0.7.0 is slower
    rungs = [rung(n, LEVEL=levels[n]) if n != "0.5.0" else rung(n, error="cannot import")
             for n in names]
    record = ladder.run_bisect(["c"], rungs, tmp_path / "bis", names[0], names[-1], SETTINGS,
                               package="jax")
    b = record["bisect"]
    assert {(s["before"], s["after"], s["case_id"]) for s in b["steps"]} == {
        ("0.6.0", "0.7.0", CASES["jit"]), ("0.6.0", "0.7.0", CASES["aot"])}
    assert "0.5.0" not in b["measured"] and b["environments"] < len(names)
    assert b["pairs"] == 6 * len(engine.calls) == record["cost"]["pairs"]
    # the step between neighbours is the ladder's step in the record
    assert [(s["before"], s["after"]) for s in record["steps"] if any(
        c["stepped"] for c in s["cases"])] == [("0.6.0", "0.7.0")]
    assert "bisect 0.1.0 .. 0.9.0: 2 step(s)" in "\n".join(record_file.lines(record))


def test_a_bisect_end_that_cannot_be_measured_is_refused(engine, tmp_path):
    with pytest.raises(UserError, match="--bad 2: its environment cannot be measured"):
        ladder.run_bisect(["c"], [rung("1"), rung("2", error="x")], tmp_path / "b", "1", "2",
                          SETTINGS)


# --------------------------------------------------------------------------- the page

NAMES = st.text(st.characters(codec="utf-8", exclude_categories=("Cs", "Cc")), min_size=1,
                max_size=12).filter(lambda s: s.strip() and s.strip() == s)


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                  HealthCheck.function_scoped_fixture])
@given(names=st.lists(NAMES, min_size=2, max_size=3, unique=True), workload=NAMES)
def test_the_page_shows_release_names_and_case_ids_as_text(names, workload, tmp_path_factory,
                                                           monkeypatch):
    from jitbench.report.html import template_environment
    from jitbench.report.releases_page import render

    monkeypatch.setattr(ab_arms, "run_ab", FakeEngine(pairs=4))
    folder = tmp_path_factory.mktemp("lad")
    rungs = [Rung(n, f"NAME=x{i} LEVEL={1 + i}", None, {}) for i, n in enumerate(names)]
    record = ladder.run_ladder(["c"], rungs, folder / "l", SETTINGS)
    for step in record["steps"]:  # a user's workload named anyhow
        for c in step["cases"]:
            c["workload"] = workload
    page = render(json.loads(json.dumps(record)), template_environment())
    for n in [*names, workload]:  # escaped where the page shows it
        assert str(markupsafe.escape(n)) in page
    text = htmllib.unescape(re.sub(r"<[^>]+>", " ", page))
    for n in names:
        assert n in text
    assert workload in text
    assert text.count("step(s)") >= 1  # LEVEL differs between neighbours: jit stepped


@pytest.mark.parametrize("argv, says", [
    (["jax", "0.4.31", "latest"], "release 'latest' is not a version"),
    (["jax", "0.4.31"], "a ladder needs two releases at least, got 1 (0.4.31)"),
    (["jax", "0.10.2", "0.10.2"], "to measure a release against itself, name its "
                                  "environment's interpreter twice: --arm python="),
    ([], "name a package and its releases"),
    (["jax", "0.4.31", "--arm", "", "--arm", "A=1"], "leave out the package and releases"),
    (["--arm", "A=1"], "two --arm at least, got 1"),
    (["jax", "--good", "0.4.31"], "a bisect needs both --good V and --bad V"),
    (["jax", "0.4.31", "0.5.0", "--candidates", "0.4.35"], "--candidates goes with --good"),
])
def test_a_bad_releases_command_line_is_exit_2_and_one_line_naming_it(argv, says, tmp_path,
                                                                        capsys):
    from jitbench.cli.main import main

    code = main(["releases", *argv, "--suite", "matmul_relu", "--framework", "jax",
                 "--out", str(tmp_path / "r"), "--reports", str(tmp_path / "p")])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and says in err[0], err


@pytest.mark.unit
def test_a_step_that_measured_no_case_on_both_sides_is_named_never_a_quiet_pass():
    from jitbench.cli.releases import unmeasured_steps

    def step(before, after, *statuses):
        return {"before": before, "after": after,
                "cases": [{"status": {"before": a, "after": b, "change": c}}
                          for a, b, c in statuses]}

    record = {"steps": [step("0.4.31", "0.4.33", ("ok 4", "ok 4", None),
                             ("skipped 4", "skipped 4", None)),
                        step("0.4.33", "0.5.0", ("skipped 4", "skipped 4", None)),
                        step("0.5.0", "0.5.3", ("ok 4", "runtime_error 4", "broke")),
                        step("0.5.3", "0.7.2", ("runtime_error 4", "runtime_error 4", None))]}
    assert unmeasured_steps(record) == ["0.4.33 -> 0.5.0", "0.5.3 -> 0.7.2"]
    assert unmeasured_steps({"steps": []}) == [] and unmeasured_steps({}) == []
