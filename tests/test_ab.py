"""``jitbench ab``: two environments in alternating fresh processes, a verdict per case.

Unit tests of the arm specs (Hypothesis: what a user types is parsed back as written) and of
the process-pair statistics on made-up rows; end to end with real JAX at tiny sizes: a planted
slowdown in arm B, run by a second virtual environment that reuses this one's packages, is
called ``slower`` and nothing else is; an interpreter without jitbench is exit 2, one line."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import sysconfig
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, strategies as st

from jitbench.analysis import ab_verdicts as stats
from jitbench.errors import UserError
from jitbench.run.ab_arms import Arm, differences, parse_arm

ROOT = Path(__file__).resolve().parent.parent
CASE = "matmul_relu-fused-jax-jit-cpu-float32-512x512x512"


# --------------------------------------------------------------------------- arm specs

@pytest.mark.unit
def test_an_empty_spec_is_this_environment():
    arm = parse_arm("a", "")
    assert arm == Arm("a") and arm.describe() == "this interpreter" and not arm.foreign


@pytest.mark.unit
def test_a_spec_takes_an_interpreter_and_assignments_whose_values_hold_equals_signs():
    arm = parse_arm("b", f"python={sys.executable} XLA_FLAGS='--xla_a=1 --xla_b=2' "
                         f"JITBENCH_TEST_SLOWDOWN={CASE}=x1.1")
    assert arm.python == str(Path(sys.executable).absolute())
    assert arm.env_dict == {"XLA_FLAGS": "--xla_a=1 --xla_b=2",
                            "JITBENCH_TEST_SLOWDOWN": f"{CASE}=x1.1"}
    assert not arm.foreign  # this very interpreter


@pytest.mark.unit
@pytest.mark.parametrize("spec, says", [
    ("python=/no/such/python", "'/no/such/python' does not exist"),
    ("1BAD=x", "'1BAD=x' is neither python=PATH nor NAME=VALUE"),
    ("XLA_FLAGS='--open", "quote a value"),
    (f"python={sys.executable} python={sys.executable}", "two interpreters"),
])
def test_a_bad_spec_names_the_bad_word(spec, says):
    with pytest.raises(UserError, match="--b") as err:
        parse_arm("b", spec)
    assert says in str(err.value)


names = st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,12}", fullmatch=True).filter(
    lambda n: n != "python")
values = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"),
                 max_size=30)


@pytest.mark.unit
@given(st.dictionaries(names, values, max_size=4))
def test_an_arms_spec_parses_back_to_the_same_arm(env):
    arm = Arm("a", None, tuple(env.items()))
    assert parse_arm("a", arm.spec) == arm


@pytest.mark.unit
def test_what_the_arms_differ_in_beyond_what_was_asked_is_listed():
    a = {"packages": {"jax": "0.4.30", "numpy": "1.26.4"}, "python_version": "3.11.7"}
    b = {"packages": {"jax": "0.4.31", "numpy": "1.26.4", "scipy": "1.13"},
         "python_version": "3.11.7"}
    assert differences(a, b) == ["jax: 0.4.30 in A, 0.4.31 in B",
                                 "scipy: not installed in A, 1.13 in B"]
    assert differences(a, a) == []


# --------------------------------------------------------------------------- statistics

def _rows(ratio: float, noise: float, pairs: int, seed: int = 0, case: str = "c1",
          status_b: str = "ok") -> list[dict]:
    """Rows of one case over ``pairs`` rounds: A's process times scatter by ``noise`` (a
    log-normal process effect), B's are ``ratio`` times A's, with their own scatter."""
    rng = np.random.default_rng(seed)
    out = []
    for rnd in range(pairs):
        level = math.exp(rng.normal(0, noise))
        for arm, factor in (("a", 1.0), ("b", ratio)):
            t = 1e-3 * level * factor * math.exp(rng.normal(0, noise))
            out.append({"case_id": case, "workload": "w", "variant": "v", "framework": "jax",
                        "mode": "jit", "device": "cpu", "dtype": "float32", "size": "s",
                        "jit": True, "status": "ok" if arm == "a" else status_b,
                        "median_s": t, "ab_arm": arm, "ab_round": rnd,
                        "first_call_s": 0.01, "first_compiles": 1,
                        "hlo_fingerprint": "f1" if arm == "a" else "f2"})
    return out


def _verdicts(rows, max_pairs=10, final=True):
    return stats.verdicts(pd.DataFrame(rows), tolerance=0.05, confidence=0.95,
                          max_pairs=max_pairs, final=final)


@pytest.mark.unit
def test_looks_are_spaced_and_share_the_error_rate():
    assert stats.looks(10) == [4, 6, 9, 10]
    assert stats.looks(3) == [3]
    assert stats.alpha_per_look(0.95, 10) == pytest.approx(0.0125)


@pytest.mark.unit
def test_a_planted_step_is_slower_with_an_interval_around_it():
    t = _verdicts(_rows(1.2, 0.02, 10)).iloc[0]
    assert t["verdict"] == "slower" and t["decided_at"] == 4
    assert t["ci_low"] < 1.2 < t["ci_high"] and t["ci_low"] > 1.0
    assert t["program"] == "changed"


@pytest.mark.unit
def test_a_faster_b_is_faster():
    assert _verdicts(_rows(0.8, 0.02, 10)).iloc[0]["verdict"] == "faster"


@pytest.mark.unit
def test_unchanged_code_is_never_slower_or_faster_over_many_seeds():
    calls = [_verdicts(_rows(1.0, 0.1, 10, seed=s)).iloc[0]["verdict"] for s in range(200)]
    wrong = sum(v in ("slower", "faster") for v in calls)
    assert wrong <= 200 * 0.05  # the error rate the looks share
    assert "unresolved" in calls


@pytest.mark.unit
def test_quiet_unchanged_code_is_same():
    assert _verdicts(_rows(1.0, 0.005, 10)).iloc[0]["verdict"] == "same"


@pytest.mark.unit
def test_open_until_the_run_ends_then_unresolved_or_failed():
    noisy = _rows(1.0, 0.2, 3)
    assert _verdicts(noisy, final=False).iloc[0]["verdict"] == "open"
    assert _verdicts(noisy, final=True).iloc[0]["verdict"] == "unresolved"
    broken = _rows(1.0, 0.01, 3, status_b="crashed")
    t = _verdicts(broken).iloc[0]
    assert t["verdict"] == "failed" and t["pairs"] == 0 and "crashed 3" in t["status_b"]
    no_gpu = [dict(r, status="skipped") for r in broken]  # e.g. --device gpu without one
    assert _verdicts(no_gpu).iloc[0]["verdict"] == "skipped"


@pytest.mark.unit
def test_a_round_with_one_arm_only_is_no_pair():
    rows = _rows(1.1, 0.01, 4)
    rows.append(dict(rows[0], ab_round=4))  # arm A of round 5, then the run was stopped
    assert stats.pair_units(pd.DataFrame(rows))["ab_round"].tolist() == [0, 1, 2, 3]


# --------------------------------------------------------------------------- end to end

def _second_venv(path: Path) -> Path:
    """A virtual environment without packages of its own that reuses this one's (a .pth file
    that adds this environment's site-packages, editable installs included)."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(path)], check=True)
    purelib = sysconfig.get_paths()["purelib"]
    site = next((path / "lib").glob("python*/site-packages"))
    (site / "reuse.pth").write_text(f"import site; site.addsitedir({purelib!r})\n")
    return path / "bin" / "python"


def _jitbench(*args, cwd, timeout=300):
    env = dict(os.environ, PYTHONPATH="")
    return subprocess.run([sys.executable, "-m", "jitbench", *args], capture_output=True,
                          text=True, timeout=timeout, cwd=cwd, env=env)


def test_an_interpreter_without_jitbench_is_exit_2_and_one_line(tmp_path):
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(tmp_path / "bare")],
                   check=True)
    bare = tmp_path / "bare" / "bin" / "python"
    done = _jitbench("ab", "--b", f"python={bare}", "--suite", "matmul_relu", "--framework",
                     "jax", cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "cannot run jitbench's worker" in lines[0], done.stderr
    assert "No module named" in lines[0] and "pip install jitbench" in lines[0]
    assert not list((tmp_path / "results").glob("*"))  # no run folder: nothing half-written


def test_a_slowdown_planted_in_another_interpreter_is_called_slower_and_nothing_else(tmp_path):
    other = _second_venv(tmp_path / "other")
    done = _jitbench("ab", "--suite", "matmul_relu", "--framework", "jax", "--variant", "fused",
                     "--mode", "eager,jit", "--device", "cpu", "--budget", "0.15",
                     "--b", f"python={other} JITBENCH_TEST_SLOWDOWN={CASE}=x2",
                     "--max-pairs", "6", "--json", "--out", "results", "--reports", "reports",
                     cwd=tmp_path, timeout=400)
    assert done.returncode == 0, done.stderr[-3000:]
    summary = json.loads(done.stdout)
    cases = {c["case_id"]: c for c in summary["cases"]}
    assert cases[CASE]["verdict"] == "slower", cases[CASE]
    # 2x and up to 6 pairs, not 1.5x and 3: beside other tests on a 2-core CI host a pair's
    # ratio scatters widely (a planted 1.5x once read 2.1x; once 3 pairs left it unresolved,
    # and a 2x with 4 pairs was left unresolved by one disturbed pair in 4: 3 degrees of
    # freedom leave a t interval that wide). Slower by about the factor, no upper
    # bound; how often the interval covers the factor is a rate (docs/lab/ab-on-the-cpu/index.md)
    assert cases[CASE]["ratio"] > 1.4 and cases[CASE]["ci_low"] > 1.0
    # the step is the planted case's alone: an unchanged case may be called by chance at the
    # per-case error rate, but none is shown clear of 1.25x as the planted one is
    assert all(c["ci_low"] < 1.25 for c in cases.values() if c is not cases[CASE])
    assert {c["pairs"] for c in cases.values()} <= {4, 6}  # the looks of 6 pairs at most
    assert summary["arms"]["b"]["python"] == str(other)
    assert summary["arms"]["a"]["python"] != str(other)
    assert summary["warnings"] == []  # the same packages, reused
    assert summary["arms"]["b"]["env"] == {"JITBENCH_TEST_SLOWDOWN": f"{CASE}=x2"}
    run_dir = next((tmp_path / "results").iterdir())
    rows = [json.loads(x) for x in (run_dir / "results.jsonl").read_text().splitlines()]
    rounds = max(c["pairs"] for c in cases.values())
    assert {(r["ab_arm"], r["ab_round"]) for r in rows} == {(a, n) for a in "ab"
                                                           for n in range(rounds)}
    # A B in round 1, B A in round 2: the order alternates
    firsts = [min((r for r in rows if r["ab_round"] == n), key=lambda r: r["started_at"])
              ["ab_arm"] for n in range(rounds)]
    assert firsts == ["a", "b"] * (rounds // 2)
    meta = json.loads((run_dir / "meta.json").read_text())
    assert meta["kind"] == "ab" and meta["status"] == "complete"
    page = (tmp_path / "reports" / run_dir.name / "index.html").read_text()
    assert "jitbench ab: B against A" in page and "slower" in page and str(other) in page


@pytest.mark.unit
def test_compare_of_runs_in_two_environments_gives_the_ab_command():
    from types import SimpleNamespace

    from jitbench.report.compare_page import ab_line

    a = {"frameworks": {"jax": "0.10.1"}, "machine": {"executable": "/e1/bin/python"},
         "command": ["jitbench", "run", "--suite", "mmd", "--size", "quick", "--no-report"]}
    b = dict(a, frameworks={"jax": "0.10.2"}, machine={"executable": "/e2/bin/python"})
    said = ab_line(SimpleNamespace(meta_a=a, meta_b=b))
    assert said.endswith("jitbench ab --a python=/e1/bin/python --b python=/e2/bin/python "
                         "--suite mmd --size quick")
    assert ab_line(SimpleNamespace(meta_a=a, meta_b=a)) is None  # one environment: no line


def test_the_nightly_measures_a_changed_environments_step_side_by_side(tmp_path):
    """``nightly --confirm-ab``: the alert's case group in the last good night's environment
    and tonight's, alternated; the alert gets the verdict (here a planted 1.5x in tonight's)."""
    from jitbench.define.workload import Filters, expand
    from jitbench.nightly.change import side_by_side
    from jitbench.run.ab_arms import Settings

    cases = [c for c in expand(Filters(suite=("matmul_relu",), framework=("jax",),
                                       mode=("jit",), device=("cpu",), variant=("fused",)))
             if c.size == "512x512x512"]
    from jitbench.analysis.ab_verdicts import ab_command

    # the alert of a night whose environment gained a variable (here the test slowdown)
    rec = {"case_id": CASE, "text": "jit_ratio: 1 -> 2",
           **ab_command({"env": {}}, {"env": {"JITBENCH_TEST_SLOWDOWN": f"{CASE}=x2"}},
                        ["--suite", "matmul_relu"])}
    side_by_side(rec, cases, tmp_path, settings=Settings(max_pairs=6, budget=0.15))
    assert rec["ab_verdict"] == "slower", rec
    # 2x and up to 6 pairs for the reason the test above gives; slower by about the factor, no
    # upper bound; how often the interval covers it is the lab notebook's
    assert rec["ab_ratio"] > 1.4 and rec["ab_ci_low"] > 1.0 and rec["ab_pairs"] in (4, 6)
    assert f"side by side in both environments ({rec['ab_pairs']} process pairs)" in rec["text"]
    gone = dict(rec, ab_note="upgraded in place", ab_verdict=None)
    side_by_side(gone, cases, tmp_path)  # the old interpreter is gone: nothing is measured
    assert gone["ab_verdict"] is None


def _two_cases_two_arms_and_a_ctrl_c(when: str):
    """Two tiny JAX cases (one group), arm B with an XLA flag, and a progress callback that
    stops the run (as Ctrl-C does) when its line starts with ``when``."""
    from jitbench.define.workload import Filters, expand

    cases = [c for c in expand(Filters(suite=("matmul_relu",), framework=("jax",),
                                       mode=("eager", "jit"), device=("cpu",),
                                       variant=("fused",)))
             if c.size == "64x64x64"]
    arms = (parse_arm("a", ""), parse_arm("b", "XLA_FLAGS=--xla_cpu_enable_fast_math=false"))

    def ctrl_c(progress):
        if progress.current.startswith(when):
            raise KeyboardInterrupt

    return cases, arms, ctrl_c


def test_an_interrupted_ab_keeps_its_rows_and_resumes_with_its_own_arms(tmp_path):
    from jitbench.errors import Interrupted
    from jitbench.run.ab_arms import Settings, resume_ab, run_ab

    cases, arms, ctrl_c_in_round_2 = _two_cases_two_arms_and_a_ctrl_c("round 2 arm")
    with pytest.raises(Interrupted) as stopped:
        run_ab(cases, tmp_path, arms, Settings(max_pairs=3, budget=0.15), run_id="ab",
               on_progress=ctrl_c_in_round_2)
    assert stopped.value.resume == "jitbench ab --resume"
    run_dir = tmp_path / "ab"
    kept = (run_dir / "results.jsonl").read_text().splitlines()
    assert len(kept) == 4  # round 1: both modes in both arms, nothing of round 2
    assert json.loads((run_dir / "meta.json").read_text())["status"] == "interrupted"
    resume_ab(run_dir)
    rows = [json.loads(x) for x in (run_dir / "results.jsonl").read_text().splitlines()]
    assert sorted({(r["ab_arm"], r["ab_round"]) for r in rows}) == [
        (a, n) for a in "ab" for n in range(3)]
    meta = json.loads((run_dir / "meta.json").read_text())
    assert meta["status"] == "complete" and meta["ab"]["rounds"] == 3
    assert meta["ab"]["arms"]["b"]["env"] == {"XLA_FLAGS": "--xla_cpu_enable_fast_math=false"}


@pytest.mark.unit
def test_a_run_that_ends_before_its_next_look_looks_at_the_pairs_it_has():
    """A change night's A/B stopped by its time limit at 19 pairs (looks planned at 9, 12, 20
    and 30): the seven pairs after the look at 12 are judged at the end, in place of the looks
    the run did not reach, at the same per-look error rate; before the end they are not."""
    units = [0.1 + 0.14 * (-1) ** i for i in range(19)]
    rule = dict(tolerance=0.02, confidence=0.975, max_pairs=30, look_pairs=(9, 12, 20))
    assert stats.decide(units, **rule) == (None, None)  # still running: 20 not reached
    assert stats.decide(units[:12], **rule, final=True) == (None, None)  # 12 was a look
    assert stats.decide(units, **rule, final=True) == ("slower", 19)
    _, _, ratio, lo, hi = stats.decide_interval(units, **rule)
    assert 1.0 < lo < ratio < hi
    # the looks made (9, 12, 19) stay within the planned four: the same alpha per look
    assert stats.alpha_per_look(0.975, 30, (9, 12, 20)) == pytest.approx(0.025 / 4)


# --------------------------------------------------------------------------- duet pairs

@pytest.mark.unit
def test_a_duet_needs_two_cores_and_cases_on_the_cpu(monkeypatch):
    from jitbench.define.workload import Filters, expand
    from jitbench.nightly.change_ab import pairing_for
    from jitbench.run import ab_arms

    cpu = [c for c in expand(Filters(suite=("matmul_relu",), framework=("jax",),
                                     device=("cpu",)))]
    gpu = [c for c in expand(Filters(suite=("matmul_relu",), framework=("jax",),
                                     device=("gpu",)))]
    monkeypatch.setattr(ab_arms, "usable_cores", lambda: [0, 1])
    monkeypatch.setattr("jitbench.results.meta.gpus", lambda: [{"name": "H100"}])
    assert ab_arms.duet_cores(cpu) == (0, 1)
    with pytest.raises(UserError, match=r"CPU cases only \(these run on gpu\).*alternating"):
        ab_arms.duet_cores(cpu + gpu)
    # auto: a duet only where the night is pinned, on the CPU, with two cores
    assert pairing_for("auto", cpu, "stable") == "duet"
    assert pairing_for("auto", cpu, "default") == "alternating"
    assert pairing_for("auto", cpu + gpu, "stable") == "alternating"
    monkeypatch.setattr("jitbench.results.meta.gpus", lambda: [])  # no GPU: skipped rows
    assert ab_arms.duet_cores(cpu + gpu) == (0, 1)
    monkeypatch.setattr(ab_arms, "usable_cores", lambda: [3])
    with pytest.raises(UserError, match=r"two cores this process may use; it has 1 \(\[3\]\)"):
        ab_arms.duet_cores(cpu)
    assert pairing_for("auto", cpu, "stable") == "alternating"
    with pytest.raises(UserError, match="two cores"):
        pairing_for("duet", cpu, "stable")
    with pytest.raises(UserError, match="'trio': not one of alternating, duet"):
        ab_arms.Settings(pairing="trio").check()


@pytest.mark.unit
def test_an_ab_samples_as_its_corpus_was_recorded_while_a_run_samples_longer():
    """A run's samples of a mode whose calls pipeline last up to 10 ms (a user's loop
    pipelines its calls); the A/B's arms keep 1 ms for every mode on a CPU, where the
    change-night corpus was recorded, and a GPU's 10 ms."""
    from jitbench.protocol.settings import Protocol
    from jitbench.run import ab_arms

    ab = ab_arms.Settings(budget=1.5).protocol
    assert ab.budget == 1.5 and ab.aa_control == "off"
    assert ab.for_device("cpu").sample_min_time == 0.001
    assert ab.for_device("gpu").sample_min_time == 0.01
    assert ab.pipeline_time is None
    run = Protocol().for_device("cpu")
    assert run.sample_min_time == 0.001 and run.pipeline_time == 0.01


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="a duet needs two cores")
def test_a_duet_measures_both_arms_at_once_each_on_its_own_core_and_ctrl_c_ends_both(tmp_path):
    """Each round's two processes run together, pinned to the two cores, swapped every round,
    each group measured by both at the same time; a Ctrl-C (in the main thread, arm A's)
    ends both arms, no worker left, and the A/B resumes as a duet."""
    from jitbench.errors import Interrupted
    from jitbench.run.ab_arms import Settings, resume_ab, run_ab
    from jitbench.run.worker_parent import live_workers

    cases, arms, ctrl_c_in_round_2 = _two_cases_two_arms_and_a_ctrl_c("round 2 arm A")
    with pytest.raises(Interrupted):
        run_ab(cases, tmp_path, arms, Settings(max_pairs=3, budget=0.15, pairing="duet"),
               run_id="ab", on_progress=ctrl_c_in_round_2)
    assert not [w for w in live_workers() if w.alive()]
    run_dir = tmp_path / "ab"
    kept = [json.loads(x) for x in (run_dir / "results.jsonl").read_text().splitlines()]
    assert sorted((r["ab_arm"], r["ab_round"]) for r in kept) == [("a", 0)] * 2 + [("b", 0)] * 2
    meta = json.loads((run_dir / "meta.json").read_text())
    assert meta["status"] == "interrupted" and meta["process_profile"] == "stable"
    resume_ab(run_dir)
    rows = [json.loads(x) for x in (run_dir / "results.jsonl").read_text().splitlines()]
    assert sorted({(r["ab_arm"], r["ab_round"]) for r in rows}) == [
        (a, n) for a in "ab" for n in range(3)]
    meta = json.loads((run_dir / "meta.json").read_text())
    assert meta["status"] == "complete" and meta["ab"]["settings"]["pairing"] == "duet"
    cores = meta["ab"]["cores"]
    by_pid = {w["pid"]: w for w in meta["workers"]}
    for n in range(3):
        rnd = {r["ab_arm"]: r for r in rows if r["ab_round"] == n and r["mode"] == "jit"}
        # each arm on its own core, A on cores[n % 2]: swapped every round
        assert by_pid[rnd["a"]["worker_pid"]]["cpu_affinity"] == [cores[n % 2]]
        assert by_pid[rnd["b"]["worker_pid"]]["cpu_affinity"] == [cores[1 - n % 2]]
        # the two measured the group at the same time
        assert abs(rnd["a"]["started_at"] - rnd["b"]["started_at"]) < 0.5, rnd
        assert rnd["a"]["started_at"] < rnd["b"]["finished_at"]
        assert rnd["b"]["started_at"] < rnd["a"]["finished_at"]
