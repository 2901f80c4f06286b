"""A night's state that no fault can fake (jitbench.nightly.state), a change night's A/B judged
on what it measured and nothing else (jitbench.nightly.change_ab.judged), and small steps that
add up (jitbench.nightly.creep): the pieces, with no child process. The faults provoked for
real are in tests/test_nightly_faults.py."""

from __future__ import annotations

import dataclasses
import json
import shutil
from pathlib import Path

import pandas as pd
import pytest
from jitbench.nightly import change, change_ab, creep, state
from jitbench.nightly.change import Change, Plan
from jitbench.results.files import (SUMMARY_NAME, load_night, load_summary, write_acceptance,
                                    write_summary)

pytestmark = pytest.mark.unit


def _run(folder: Path, status: str = "complete") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "meta.json").write_text(json.dumps({"status": status, "run_id": folder.name}))
    (folder / "results.jsonl").write_text("")
    return folder


def _judged(folder: Path, **said) -> None:
    state.finished(folder, "run")
    write_summary(folder, {"latest_run": folder.name, "regression": False, **said})
    state.finished(folder, "judgement")


def test_a_night_is_no_reference_until_its_judgement_finished(tmp_path):
    night = state.begin(tmp_path / "n1")
    assert load_summary(night)["pending"] and load_night(night)["phases"] == {}
    _run(night)
    said = state.state(night)
    assert (said.name, said.good) == ("unfinished", False)
    assert "stopped during its run" in said.why
    state.finished(night, "run")
    state.finished(night, "report")
    assert "after its report phase" in state.state(night).why
    # killed while its summary was being written: the phase is what counts
    write_summary(night, {"latest_run": "n1", "regression": False})
    assert state.state(night).name == "unfinished"
    state.finished(night, "judgement")
    assert state.state(night).good


@pytest.mark.parametrize("said, name", [
    ({"regression": True, "confirmed": [{"case_id": "c1"}]}, "regressed"),
    ({"undecided": ["c1"]}, "undecided"), ({}, "good")])
def test_a_judged_night_is_good_unless_it_regressed_or_left_a_case_open(tmp_path, said, name):
    night = _run(state.begin(tmp_path / "n1"))
    _judged(night, **said)
    assert state.state(night).name == name
    write_acceptance(night, "wanted", "2026-11-28T00:00:00+00:00")
    assert state.state(night).name == "accepted" and state.is_good(night)


def test_an_interrupted_run_an_unjudged_run_and_a_lost_shard_are_never_good(tmp_path):
    killed = _run(state.begin(tmp_path / "n1"), status="interrupted")
    assert state.state(killed).name == "interrupted"
    stray = _run(tmp_path / "n2")  # `jitbench run --out RESULTS`: no night judged it
    assert state.state(stray).name == "unjudged"
    merged = _run(state.begin(tmp_path / "n3", kind="merged", shards=3,
                              missing_shards=["2/3"]))
    _judged(merged)
    assert state.state(merged).name == "incomplete" and "2/3" in state.state(merged).why
    good = _run(state.begin(tmp_path / "n0"))
    _judged(good)
    ref, skipped = state.last_good(tmp_path, ["n0", "n1", "n2", "n3", "n4"])
    assert ref == "n0"
    assert [s["run_id"] for s in skipped] == ["n3", "n2", "n1"]
    note = state.unusable_note(skipped, ref)
    assert "n1 (interrupted" in note and "against the last good night, n0" in note
    # the recipe asks before tonight exists: every night of the order counts
    assert state.last_good(tmp_path, ["n0", "n1"], tonight="")[0] == "n0"


def test_a_merge_names_the_shards_that_never_reached_it(tmp_path):
    from jitbench.nightly.shards import merge

    shards = []
    for k in (1, 3):  # shard 2 of 3 lost its folder; shard 3 was killed in its run
        d = state.begin(tmp_path / "shards" / str(k) / "N", kind="shard", shard=f"{k}/3")
        _run(d, status="complete" if k == 1 else "interrupted")
        (d / "results.jsonl").write_text(json.dumps({"case_id": f"c{k}", "status": "ok",
                                                     "schema_version": 1}) + "\n")
        shards.append(d)  # shard 1's run completed (by `jitbench run --resume`, no phase)
    out = merge(shards, tmp_path / "N")
    said = load_night(out)
    assert said["kind"] == "merged" and said["missing_shards"] == ["2/3", "3/3"]
    assert "merge" in said["phases"] and load_summary(out)["pending"]
    assert state.state(out).name == "incomplete"


def _plan() -> Plan:
    return Plan("n1", (Change("variable", "XLA_FLAGS", None, "--x"),))


def _table(**rows) -> pd.DataFrame:
    base = {"ratio": 1.0, "ci_low": 0.98, "ci_high": 1.02, "pairs": 12, "verdict": "same",
            "status_a": "ok 12", "status_b": "ok 12", "compiles_a": [1], "compiles_b": [1],
            "error_a": None, "error_b": None, "workload": "w", "framework": "jax",
            "mode": "jit"}
    return pd.DataFrame([{**base, "case_id": c, **r} for c, r in rows.items()])


def _judge(t, ids, **kw):
    settings = change_ab.settings(len(ids), "default", None)
    return change_ab.judged(t, pd.DataFrame(columns=["case_id", "ab_round", "log_ratio"]),
                            set(ids), _plan(), settings, 0.10, **kw)


def test_a_touched_case_the_ab_never_measured_is_undecided_never_clear():
    said = _judge(_table(c1={}), ["c1", "c2"])
    assert said["not_measured"] == ["c2"] and said["undecided"] == ["c2"]
    assert not said["fails"]


def test_ok_in_a_and_failing_in_b_fails_and_failing_in_both_is_not_measurable():
    said = _judge(_table(
        c1={"status_b": "compile_error 12", "error_b": "XlaRuntimeError: boom",
            "verdict": "failed"},
        c2={"status_a": "runtime_error 12", "status_b": "runtime_error 12", "verdict": "failed",
            "error_a": "no kernel"},
        c3={"status_b": "ok 11, crashed 1"}), ["c1", "c2", "c3"])
    (fail,) = said["fails"]
    assert fail["case_id"] == "c1" and fail["metric"] == "ab_status"
    assert "compile_error 12 in B" in fail["text"] and "boom" in fail["text"]
    assert [r["case_id"] for r in said["not_measurable"]] == ["c2"]
    assert "no kernel" in said["not_measurable"][0]["why"]
    assert not said["undecided"]  # one crash in twelve pairs is the host's as likely


def test_a_compile_count_step_and_a_slower_first_call_fail_a_change_night():
    jit = "w-default-jax-jit-cpu-float32-n1"
    said = _judge(_table(**{jit: {"compiles_b": [2]}}), [jit])
    assert [r["metric"] for r in said["fails"]] == ["ab_compiles"]
    assert "[1] -> [2]" in said["fails"][0]["text"]
    # one process of B that compiled once more (a retried group) is not a retrace, nor is a
    # JIT-off mode's count
    assert not _judge(_table(**{jit: {"compiles_b": [1, 2]}}), [jit])["fails"]
    assert not _judge(_table(c1={"compiles_b": [2]}), ["c1"])["fails"]
    import numpy as np

    first = pd.DataFrame({"case_id": "c1", "ab_round": range(12),
                          "log_ratio": np.log(3.0) + 0.05 * np.sin(np.arange(12))})
    said = _judge(_table(c1={}), ["c1"], compile_threshold=0.5, first_units=first)
    assert [r["metric"] for r in said["fails"]] == ["ab_first_call"]
    same = first.assign(log_ratio=0.05 * np.sin(np.arange(12)))
    assert not _judge(_table(c1={}), ["c1"], compile_threshold=0.5,
                      first_units=same)["fails"]
    # an inert change in CI: three duet pairs of a loaded 2-core host read the first call
    # 2.19x [1.09, 4.38]; here 2.19x [1.13, 4.26]: slower, a step of 50% neither established
    # nor ruled out -- undecided (the next night's pairs are added), never a failed night and
    # never a pass
    few = pd.DataFrame({"case_id": "c1", "ab_round": range(3),
                        "log_ratio": np.log([2.0, 2.2, 2.4])})
    said = _judge(_table(c1={}), ["c1"], compile_threshold=0.5, first_units=few)
    assert not said["fails"] and not said["smaller"] and said["undecided"] == ["c1"]
    (held,) = said["first_open"]
    assert held["metric"] == "ab_first_call" and 1.0 < held["low"] < 1.5 < held["high"]
    # slower with the step ruled out: named, the night goes on
    small = pd.DataFrame({"case_id": "c1", "ab_round": range(9),
                          "log_ratio": np.log([1.11, 1.12, 1.13] * 3)})
    said = _judge(_table(c1={}), ["c1"], compile_threshold=0.5, first_units=small)
    assert not said["fails"] and not said["undecided"]
    assert [r["metric"] for r in said["smaller"]] == ["ab_first_call"]


def test_cases_the_night_skipped_are_not_measurable_here(tmp_path):
    rows = [{"case_id": "g1", "status": "skipped", "error": "no GPU on this machine",
             "schema_version": 1},
            {"case_id": "c1", "status": "ok", "schema_version": 1},
            {"case_id": "c2", "status": "runtime_error", "schema_version": 1}]
    (tmp_path / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    here, lost = change_ab.unmeasurable(tmp_path, {"g1", "c1", "c2"})
    assert list(here) == ["g1"] and "no GPU" in here["g1"] and not lost
    # a case the last good night measured ok and tonight skips was lost: never "not
    # measurable" (a jaxlib without its CUDA plugin would pass every GPU case)
    here, lost = change_ab.unmeasurable(tmp_path, {"g1", "c1", "c2"}, reference={"g1", "c1"})
    assert not here and "ok on the last good night, skipped tonight: no GPU" in lost["g1"]


def test_small_steps_add_up_since_the_last_accepted_night(tmp_path):
    class H:  # the history's order and the nights judged like tonight
        pass

    nights = ["n0", "n1", "n2", "n3"]
    for n in nights:
        _run(state.begin(tmp_path / n))
    _judged(tmp_path / "n0")
    for n in ("n1", "n2"):
        _judged(tmp_path / n, smaller_steps=[{"case_id": "c1", "metric": "ab_time",
                                              "ratio": 1.04}])
    h = H()
    h.order = h.judged = nights
    result = {"regression": False, "smaller_steps": [
        {"case_id": "c1", "metric": "ab_time", "ratio": 1.04}]}
    result = {**result, **creep.judge(tmp_path, h, 0.10, result)}
    (rec,) = result["creep"]
    assert rec["nights"] == ["n1", "n2", "n3"] and rec["fails"] and result["regression"]
    assert "n1 +4.0%, n2 +4.0%, n3 +4.0% = +12.5%" in result["confirmed"][0]["text"]
    # accepting n2 accepted the steps up to it: tonight's 4% and n2's are not summed
    write_acceptance(tmp_path / "n2", "wanted", "2026-11-28T00:00:00+00:00")
    result = {"regression": False, "smaller_steps": result["smaller_steps"]}
    result = {**result, **creep.judge(tmp_path, h, 0.10, result)}
    assert result["creep"][0]["nights"] == ["n3"] and not result["regression"]


def test_a_stray_run_is_not_tonight_and_tonight_is_the_run_a_night_measured(tmp_path):
    from jitbench.errors import UserError
    from jitbench.nightly.past_nights import analyse

    with pytest.raises(UserError, match="no run 'n9'"):
        analyse(Path(__file__).parent / "fixtures" / "nightly-history" / "results",
                latest="n9")
    h = analyse(Path(__file__).parent / "fixtures" / "nightly-history" / "results",
                latest="night2")
    assert h.order[-1] == "night2" and "night3" not in h.order
    assert state.last_good(Path(__file__).parent / "fixtures" / "nightly-history"
                           / "results", h.judged)[0] == "night1"
    assert (Path(__file__).parent / "fixtures" / "nightly-history" / "results" / "night1"
            / SUMMARY_NAME).is_file()


def test_arm_a_that_is_not_what_the_reference_measured_blocks_the_ab(monkeypatch):
    import dataclasses

    from jitbench.run import ab_arms

    plan = dataclasses.replace(
        _plan(), arm_a=ab_arms.Arm("a"), arm_b=ab_arms.Arm("b"),
        last_good_distributions=(("numpy", "1.26.4"), ("ml-dtypes", "0.5.0"),
                                 ("jitbench", "0.1.0")))
    seen = {}

    def probe(arm, frameworks):
        seen["frameworks"] = frameworks
        return {"packages": {"numpy": "2.1.0", "ml_dtypes": "0.5.0", "jitbench": "0.2.0"}}

    monkeypatch.setattr(ab_arms, "probe", probe)
    said = change_ab.arm_a_moved(plan, ["jax"])
    assert "numpy 1.26.4 -> 2.1.0 moved since" in said and "ml_dtypes" not in said
    assert "jitbench" not in said and seen["frameworks"] == ["jax"]
    monkeypatch.setattr(ab_arms, "probe", lambda arm, fw: {"packages": {"numpy": "1.26.4"}})
    assert change_ab.arm_a_moved(plan, ["jax"]) is None


def test_an_ab_a_kill_stopped_is_never_judged_on_what_it_reached(tmp_path):
    for name, status in (("ab1", "interrupted"), ("ab2", "complete"), ("ab3", "running")):
        _run(tmp_path / "change" / name, status)
        meta = json.loads((tmp_path / "change" / name / "meta.json").read_text())
        (tmp_path / "change" / name / "meta.json").write_text(json.dumps({**meta, "ab": {}}))
    _run(tmp_path / "change" / "ab4")  # complete, but no A/B record: half copied
    (tmp_path / "change" / "ab5").mkdir()
    (tmp_path / "change" / "ab5" / "results.jsonl").write_text("")  # no meta at all
    assert [d.name for d in change_ab.recorded(tmp_path)] == ["ab2"]


from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402


@settings(max_examples=200, deadline=None)
@given(case=st.text(), text=st.text(), change=st.one_of(st.none(), st.floats()),
       why=st.text())
def test_the_markdown_summary_keeps_its_tables_whatever_a_run_wrote(case, text, change, why):
    """A case id, a message or a reason from a run never adds a column, a line or markup to
    the Markdown a CI renders."""
    import re

    from jitbench.report.night_markdown import markdown

    said = {"latest_run": case, "regression": True, "change_note": why,
            "confirmed": [{"case_id": case, "metric": "ab_time", "change": change,
                           "text": text}],
            "not_measurable": [{"case_id": case, "why": why}]}
    lines = markdown(said, "index.html").splitlines()
    rows = [x for x in lines if x.startswith("| ") and not x.startswith("| case")]
    assert len(rows) == 2  # one a table, whatever the text held
    for row in rows:
        cells = re.split(r"(?<!\\)\|", row)
        assert len(cells) in (4, 6)  # | a | b | or | a | b | c | d |
    assert "<" not in "".join(lines[:1] + rows)


def test_status_names_who_holds_the_folder_and_what_the_next_night_is_compared_with(tmp_path):
    import os

    from jitbench.nightly import status
    from jitbench.nightly.lock import holder, night_lock

    for n in ("n1", "n2"):
        _run(state.begin(tmp_path / n))
    _judged(tmp_path / "n1", seen=[{"case_id": "c1", "up_to": 0.042, "how": "A/B interval"}],
            seen_note="the smallest step tonight could see: at most 4.2%")
    assert holder(tmp_path) is None
    with night_lock(tmp_path, "jitbench nightly --results R"):
        assert f"pid {os.getpid()}" in holder(tmp_path)
        said = status.status(tmp_path)
    assert said["last_good"] == "n1" and said["held_by"]
    text = "\n".join(status.lines(said))
    assert "last good night: n1" in text and "not a reference: n2 (unfinished)" in text
    assert "c1: nothing of more than 4.2%" in text
    assert holder(tmp_path) is None


def test_a_variable_unset_on_the_last_good_night_is_unset_in_arm_a_not_empty(monkeypatch):
    import sys

    from jitbench.run import ab_arms, worker_start
    from jitbench.run.groups import worker_environment

    old = {"run_id": "n1", "env": {}, "machine": {"executable": sys.executable}}
    new = {"run_id": "n2", "env": {"CUDA_VISIBLE_DEVICES": "0"},
           "machine": {"executable": sys.executable}}
    plan = change.arms(Path("n1"), old, new, change.what_changed(old, new))
    assert plan.arm_a.env_dict == {"CUDA_VISIBLE_DEVICES": None}
    assert "CUDA_VISIBLE_DEVICES unset" in plan.arm_a.describe()
    assert ab_arms.parse_arm("a", plan.arm_a.spec) == plan.arm_a
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0")
    merged = worker_environment(("jax", "default", "cpu"), plan.arm_a.launch_env())
    assert "CUDA_VISIBLE_DEVICES" not in worker_start.env("jax", merged)
    assert worker_start.env("jax", worker_environment(
        ("jax", "default", "cpu"), plan.arm_b.launch_env()))["CUDA_VISIBLE_DEVICES"] == "0"


def test_failures_judged_by_rate_a_fixed_case_clears_and_a_lost_one_is_undecided():
    said = _judge(_table(
        c1={"status_a": "ok 11, timeout 1", "status_b": "runtime_error 12",
            "verdict": "failed"},
        c2={"status_b": "ok 7, mismatch 5"},
        c3={"status_a": "runtime_error 12", "status_b": "ok 12", "verdict": "failed"},
        c4={"status_a": "crashed 12", "status_b": "crashed 12", "verdict": "failed"}),
        ["c1", "c2", "c3", "c4"], reference_ok={"c4"})
    assert sorted(r["case_id"] for r in said["fails"]) == ["c1", "c2"]
    assert said["verdicts"]["fixed"] == 1 and said["undecided"] == ["c4"]
    assert said["lost"][0]["case_id"] == "c4" and not said["not_measurable"]


def test_a_recovery_between_small_steps_cancels_in_the_chain(tmp_path):
    class H:
        pass

    nights = ["n0", "n1", "n2", "n3"]
    for n in nights:
        _run(state.begin(tmp_path / n))
    _judged(tmp_path / "n0")
    _judged(tmp_path / "n1", change={"ratios": {"c1": 1.06}},
            smaller_steps=[{"case_id": "c1", "metric": "ab_time", "ratio": 1.06}])
    _judged(tmp_path / "n2", change={"ratios": {"c1": 0.92}})  # 8% faster: a recovery
    h = H()
    h.order = h.judged = nights
    result = {"regression": False, "change": {"ratios": {"c1": 1.05}},
              "smaller_steps": [{"case_id": "c1", "metric": "ab_time", "ratio": 1.05}]}
    result = {**result, **creep.judge(tmp_path, h, 0.10, result)}
    (rec,) = result["creep"]
    assert rec["nights"] == ["n1", "n2", "n3"] and not rec["fails"]
    assert not result["regression"] and abs(rec["total"] - 1.06 * 0.92 * 1.05) < 1e-9


def test_a_night_is_never_written_over_nor_a_partial_night_accepted(tmp_path):
    from jitbench.errors import UserError
    from jitbench.nightly.night import nightly
    from jitbench.nightly.past_nights import accept

    night = _run(state.begin(tmp_path / "n1"))
    _judged(night)
    before = (night / SUMMARY_NAME).read_text()
    with pytest.raises(UserError, match="holds a run already"):
        nightly([object()], tmp_path, tmp_path / "P", protocol=None, run_id="n1")
    assert (night / SUMMARY_NAME).read_text() == before and state.is_good(night)
    killed = _run(tmp_path / "n2", status="interrupted")
    (killed / "meta.json").write_text(json.dumps({"status": "interrupted", "run_id": "n2",
                                                  "started_at": "2026-11-29"}))
    with pytest.raises(UserError, match="did not complete"):
        accept(tmp_path, "n2", "wanted")
    merged = _run(state.begin(tmp_path / "n3", kind="merged"))
    assert "merge never finished" in state.state(merged).why



def _ab(folder: Path, arms: tuple[str, str], ratios: dict[str, list[float]]) -> Path:
    """A finished A/B run folder of a change night: per case, one pair per ratio (B / A)."""
    folder.mkdir(parents=True)
    base = {"workload": "w", "variant": "default", "framework": "jax", "mode": "jit",
            "device": "cpu", "dtype": "float32", "size": "n1", "jit": True, "status": "ok",
            "schema_version": 1}
    rows = [{**base, "run_id": folder.name, "case_id": c, "ab_round": i, "ab_arm": arm,
             "median_s": t,
             "first_call_s": 0.1}
            for c, rs in ratios.items() for i, r in enumerate(rs)
            for arm, t in (("a", 1e-3), ("b", 1e-3 * r))]
    (folder / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    settings = dataclasses.asdict(change_ab.settings(2, "default", None))
    (folder / "meta.json").write_text(json.dumps({
        "status": "complete", "run_id": folder.name,
        "ab": {"rounds": max(len(r) for r in ratios.values()), "settings": settings,
               "arms": {"a": {"spec": arms[0]}, "b": {"spec": arms[1]}}}}))
    return folder


def test_an_undecided_nights_pairs_are_carried_to_the_next_night_of_the_same_environments(
        tmp_path):
    """A change touching more cases than a night's time limit decides is decided over nights:
    the next night that measures the same two environments judges the undecided night's pairs
    with its own and measures only the cases they left open."""
    from jitbench.run.ab_arms import Arm

    arm_a, arm_b = Arm("a", python="/old/bin/python"), Arm("b", env=(("XLA_FLAGS", "--x"),))
    ids = {"c1", "c2"}
    wide = [1.0, 1.12, 0.9, 1.1, 0.93, 1.05]  # 6 pairs: a 10% step not ruled out
    tight = [1.0, 1.004, 0.997, 1.002, 0.999, 1.001]

    def night(name: str, env: dict[str, str], **summary) -> Path:
        folder = tmp_path / name
        folder.mkdir()
        (folder / "meta.json").write_text(json.dumps({"run_id": name, "env": env}))
        write_summary(folder, {"latest_run": name, "regression": False,
                               "change": {"reference": "n1"}, **summary})
        return folder

    n2 = night("n2", {"XLA_FLAGS": "--x"}, undecided=["c1"])
    _ab(n2 / "change" / "ab-1", (arm_a.spec, arm_b.spec), {"c1": wide, "c2": tight})
    n3 = night("n3", {"XLA_FLAGS": "--x"}, pending=True)
    plan = Plan("n1", (Change("variable", "XLA_FLAGS", None, "--x"),), arm_a=arm_a,
                arm_b=arm_b, skipped=({"run_id": "n2"},))
    earlier = change_ab.carried(plan, n3)
    assert [(night, [d.name for d in runs]) for night, runs in earlier] == [("n2", ["ab-1"])]
    # what n2's pairs decided is not measured again: c2 (the same), not c1 (open)
    assert change_ab.decided_before(earlier, plan, ids, 0.10) == {"c2"}
    alone = change_ab.judge_runs(earlier[0][1], plan, ids, 0.10)
    assert alone["undecided"] == ["c1"]
    # tonight's A/B measured c1 only; its 6 pairs with n2's 6 rule a 10% step out
    tonight = _ab(n3 / "change" / "ab-1", (arm_a.spec, arm_b.spec), {"c1": tight})
    said = change_ab.judge_runs([tonight], plan, ids, 0.10, earlier=earlier)
    assert said["undecided"] == [] and not said["slower"], said["verdicts"]
    assert 1.0 < said["bounds"]["c1"] < 1.10 and said["ratios"]["c1"] > 0
    assert said["rounds"] == 12 and said["tonight_rounds"] == 6
    assert said["carried"][0]["night"] == "n2" and said["carried"][0]["rounds"] == 6
    assert said["decided"] == ["c1", "c2"]
    # a case n2 decided keeps n2's pairs and verdict: tonight's pairs of it, measured for a
    # group-mate, do not reopen it (here they read 2x)
    (tonight / "results.jsonl").unlink()
    shutil.rmtree(tonight)
    tonight = _ab(n3 / "change" / "ab-1", (arm_a.spec, arm_b.spec),
                  {"c1": tight, "c2": [2.0, 1.9, 2.1, 2.0, 2.2, 1.8]})
    again = change_ab.judge_runs([tonight], plan, ids, 0.10, earlier=earlier)
    assert again["undecided"] == [] and not again["slower"], again["slower"]
    assert again["bounds"]["c2"] == said["bounds"]["c2"]
    # not carried: a night that failed, one whose environment differs from tonight's, one
    # judged against another reference, and an A/B of other arms
    for over in ({"regression": True}, {"change": {"reference": "n0"}}):
        write_summary(n2, {"latest_run": "n2", "regression": False, "undecided": ["c1"],
                           "change": {"reference": "n1"}, **over})
        assert change_ab.carried(plan, n3) == []
    write_summary(n2, {"latest_run": "n2", "regression": False, "undecided": ["c1"],
                       "change": {"reference": "n1"}})
    (n2 / "meta.json").write_text(json.dumps({"run_id": "n2", "env": {"XLA_FLAGS": "--y"}}))
    assert change_ab.carried(plan, n3) == []
    (n2 / "meta.json").write_text(json.dumps({"run_id": "n2", "env": {"XLA_FLAGS": "--x"}}))
    other = dataclasses.replace(plan, arm_a=Arm("a", python="/older/bin/python"))
    assert change_ab.carried(other, n3) == []
    # pairs taken another way (duets against tonight's alternating turns) are not carried
    chosen = change_ab.settings(2, "default", None)
    assert change_ab.carried(plan, n3, chosen=chosen) == earlier
    assert change_ab.carried(plan, n3, chosen=dataclasses.replace(chosen, pairing="duet")) == []
    assert change_ab.carried(plan, n3) == earlier


def test_an_undecided_note_names_why_tonight_could_not_measure():
    """Carried pairs keep an open case measured, so a night whose A/B could not run has no
    case "not measured": the note still names the reason, and promises no next night."""
    from jitbench.nightly.night import _undecided_note

    note = _undecided_note({"undecided": ["c1"], "not_measured": [], "rounds": 6,
                            "error": "arm A's packages moved since the reference night"}, 0.10)
    assert "could not run tonight: arm A's packages moved" in note
    assert "goes on" not in note and note.endswith("(not a pass)")
    note = _undecided_note({"undecided": ["c1"], "not_measured": [], "rounds": 6}, 0.10)
    assert "1 touched case(s) neither slower nor the same after 6 pairs" in note
    assert "goes on from these pairs" in note
