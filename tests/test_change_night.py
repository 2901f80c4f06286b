"""A night whose software changed decides by A/B (jitbench.nightly.change): what changed between
two nights' records and which cases it touches, the two environments as arms, and end to end a
night whose workload file changed measuring the last good night's copy of the file beside
tonight's."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from jitbench.analysis.ab_verdicts import LOOK_PAIRS
from jitbench.define.workload import FILES_VAR, Case
from jitbench.nightly import change, change_ab
from jitbench.results.files import SUMMARY_NAME

WORKLOAD = Path(__file__).parent / "workloads" / "nightly_small.py"


def _last_good(results_root, judged):
    from jitbench.nightly.state import last_good

    return last_good(results_root, judged)[0]


def _case(workload="mmd", framework="jax", mode="jit", device="cpu", size="n512"):
    return Case(workload, "default", size, "{}", "float32", framework, device, mode)


def _meta(**over):
    meta = {"run_id": "n1", "frameworks": {"jax": "0.4.30", "jaxlib": "0.4.30",
                                           "tensorflow": "2.16.1"},
            "env": {"XLA_FLAGS": "--a"}, "workload_sources": {"mmd": "aa", "rnn": "bb"},
            "git_commit": "c1", "jitbench_version": "0.1.0",
            "machine": {"python": "3.11.7", "executable": sys.executable, "gpus": []},
            "workload_files": {"jitbench.suites.mmd": "sources/mmd.py"}}
    for key, value in over.items():
        meta[key] = {**meta[key], **value} if isinstance(value, dict) else value
    return meta


@pytest.mark.unit
def test_nothing_changed_is_no_change_and_a_fact_one_night_lacks_is_none():
    assert change.what_changed(_meta(), _meta()) == []
    older = _meta()
    del older["jitbench_version"], older["workload_sources"]["rnn"]
    older["frameworks"].pop("tensorflow")  # its worker did not run that night
    assert change.what_changed(older, _meta()) == []


@pytest.mark.unit
def test_each_change_touches_the_cases_it_can_move():
    tf, jax_mmd, jax_rnn = _case(framework="tf", mode="xla"), _case(), _case(workload="rnn")
    eager = _case(mode="eager")

    def touched_by(**over):
        (one,) = change.what_changed(_meta(), _meta(**over))
        return one, [c for c in (tf, jax_mmd, jax_rnn, eager) if one.touches(c)]

    one, hit = touched_by(frameworks={"jaxlib": "0.4.31"})
    assert one.kind == "package" and hit == [jax_mmd, jax_rnn, eager]
    one, hit = touched_by(env={"TF_XLA_FLAGS": "--tf_xla_auto_jit=2"})
    assert one.was is None and hit == [tf]
    one, hit = touched_by(env={"XLA_FLAGS": "--b"})  # XLA's flags: both frameworks
    assert hit == [tf, jax_mmd, jax_rnn, eager]
    one, hit = touched_by(workload_sources={"rnn": "cc"})
    assert one.kind == "workload" and hit == [jax_rnn]
    # the test hook is a change like any other, and touches the cases its glob names
    one, hit = touched_by(env={change.HOOK: f"{jax_mmd.case_id}=x1.1"})
    assert hit == [jax_mmd]
    # two steps planted in one night (';'): each entry's cases
    one, hit = touched_by(env={change.HOOK: f"{jax_mmd.case_id}=x1.1;{tf.case_id}=x1.05"})
    assert hit == [tf, jax_mmd]
    one, hit = touched_by(git_commit="c2")
    assert one.kind == "jitbench" and len(hit) == 4
    assert "c1 -> c2" in one.text()
    # where both nights fingerprint jitbench's own code, a commit that left it alone (a
    # workload's file changed) is not jitbench's change
    prints = {"jitbench_fingerprint": "f1"}
    assert change.what_changed(_meta(**prints), _meta(git_commit="c2", **prints)) == []
    (one,) = change.what_changed(_meta(**prints), _meta(jitbench_fingerprint="f2"))
    assert one.kind == "jitbench" and one.name == "jitbench_fingerprint"


@pytest.mark.unit
def test_the_arms_give_a_its_old_values_and_files_and_say_what_cannot_run_again(tmp_path):
    old_dir = tmp_path / "n1"
    (old_dir / "sources").mkdir(parents=True)
    (old_dir / "sources" / "mmd.py").write_text("# the old file\n")
    new = _meta(env={"XLA_FLAGS": "--b"}, workload_sources={"mmd": "zz"})
    plan = change.arms(old_dir, _meta(), new, change.what_changed(_meta(), new))
    assert plan.blocked is None and plan.arm_a.python is None
    a, b = plan.arm_a.env_dict, plan.arm_b.env_dict
    assert a["XLA_FLAGS"] == "--a" and b["XLA_FLAGS"] == "--b" and FILES_VAR not in b
    assert json.loads(a[FILES_VAR]) == {
        "jitbench.suites.mmd": str((old_dir / "sources" / "mmd.py").absolute())}
    # a package upgraded in the interpreter the last good night ran: it cannot run again
    new = _meta(frameworks={"jax": "0.5.0"})
    plan = change.arms(old_dir, _meta(), new, change.what_changed(_meta(), new))
    assert plan.arm_a is None and "changed in place" in plan.blocked
    # a changed workload whose old file was not kept
    bare = _meta(workload_files={})
    bare["workload_files"] = {}
    new = _meta(workload_sources={"mmd": "zz"})
    plan = change.arms(old_dir, bare, new, change.what_changed(bare, new))
    assert "kept no copy" in plan.blocked


@pytest.mark.unit
def test_the_last_good_night_skips_a_night_that_regressed(tmp_path):
    for run_id, regressed in (("n1", False), ("n2", True), ("n3", False)):
        (tmp_path / run_id).mkdir()
        (tmp_path / run_id / "meta.json").write_text(json.dumps({"status": "complete"}))
        (tmp_path / run_id / SUMMARY_NAME).write_text(
            json.dumps({"regression": regressed}))
    assert _last_good(tmp_path, ["n1", "n2", "n3"]) == "n1"
    assert _last_good(tmp_path, ["n1", "n2"]) == "n1"
    assert _last_good(tmp_path, ["n1"]) is None
    # a night whose judgement never finished (the nightly crashed) is no reference either;
    # nor is a run no night judged (a `jitbench run` into the results folder, no summary)
    from jitbench.results.files import PENDING, write_summary

    write_summary(tmp_path / "n3", {"latest_run": "n3", PENDING: "..."})
    (tmp_path / "n4").mkdir()
    (tmp_path / "n4" / "meta.json").write_text(json.dumps({"status": "complete"}))
    assert _last_good(tmp_path, ["n1", "n2", "n3", "n4"]) == "n1"
    assert _last_good(tmp_path, ["n1", "n2", "n3", "n4", "n5"]) == "n1"


def _night(tmp_path, suite_file, run_id, *extra):
    cmd = [sys.executable, "-m", "jitbench", "nightly", "--results", str(tmp_path / "results"),
           "--reports", str(tmp_path / "reports"), "--suite-file", str(suite_file),
           "--suite", "nightly_small", "--framework", "jax", "--mode", "jit",
           "--device", "cpu", "--size", "quick", "--min-time", "0.1", "--run-id", run_id,
           *extra]
    env = {**os.environ, "XLA_FLAGS": "--xla_cpu_multi_thread_eigen=false"}
    env.pop(change.HOOK, None)
    return subprocess.run(cmd, check=False, capture_output=True, text=True, env=env,
                          timeout=600)


def test_a_night_whose_workload_changed_measures_the_old_file_beside_the_new(tmp_path):
    """Night n1 measures the workload (one case: n128, jit); its file then changes so that the
    function does its work three times; night n2 is a change night: the A/B runs n1's kept
    copy of the file in arm A and tonight's in arm B, and calls the case slower, naming the
    file's change."""
    original = WORKLOAD.read_text().replace("for n in (128, 256)", "for n in (128,)")
    suite = tmp_path / "nightly_small.py"
    suite.write_text(original)
    first = _night(tmp_path, suite, "n1")
    assert first.returncode == 0, first.stdout + first.stderr[-3000:]
    kept = tmp_path / "results" / "n1" / "sources" / "nightly_small.py"
    assert kept.read_text() == original
    suite.write_text(original.replace(
        "    return [lambda x, w: jnp.tanh(x @ w) + x]",
        "    return [lambda x, w: jnp.tanh(jnp.tanh(jnp.tanh(x @ w) @ w) @ w) * 0 "
        "+ jnp.tanh(x @ w) + x]"))
    second = _night(tmp_path, suite, "n2")
    assert second.returncode == 1, second.stdout + second.stderr[-3000:]
    slow = "nightly_small-default-jax-jit-cpu-float32-n128"
    assert f"REGRESSION {slow} ab_time" in second.stdout
    summary = json.loads((tmp_path / "reports" / "nightly-summary.json").read_text())
    facts = summary["change"]
    assert facts["reference"] == "n1" and facts["changes"][0].startswith("workload nightly_small")
    # the time per call fails it; a bigger program may compile longer too (its first call)
    (rec,) = [r for r in summary["confirmed"] if r["metric"] == "ab_time"]
    assert {r["metric"] for r in summary["confirmed"]} <= {"ab_time", "ab_first_call"}
    assert rec["case_id"] == slow and rec["low"] > 1.0
    assert "workload nightly_small" in rec["text"]
    # arm A loaded n1's copy: its workers ran with the file named, B's with tonight's
    ab_meta = json.loads((Path(facts["run"]) / "meta.json").read_text())
    env_a = ab_meta["ab"]["arms"]["a"]["env"]
    assert json.loads(env_a[FILES_VAR]) == {str(suite): str(kept.absolute())}
    assert FILES_VAR not in ab_meta["ab"]["arms"]["b"]["env"]
    # a pinned CPU night on two cores measures its pairs as duets, and says so
    duet = len(os.sched_getaffinity(0)) >= 2
    assert ab_meta["ab"]["settings"]["pairing"] == ("duet" if duet else "alternating")
    assert ("pairs, duets: both processes at once" in second.stdout) == duet
    # the touched case was measured in both arms, pair by pair, up to the first look at least
    rows = [json.loads(x) for x in (Path(facts["run"]) / "results.jsonl").read_text().splitlines()]
    pairs = {(r["ab_arm"], r["ab_round"]) for r in rows if r["case_id"] == slow}
    assert len(pairs) >= 2 * LOOK_PAIRS[0] and len(pairs) % 2 == 0
    page = (tmp_path / "reports" / "index.html").read_text()
    assert "workload nightly_small" in page and "side by side" in page
    # the night's pairs make a corpus of change nights, which --evaluate replays
    corpus = tmp_path / "change-nights.json"
    done = subprocess.run([sys.executable, "-m", "jitbench", "nightly", "--results",
                           str(tmp_path / "results"), "--change-corpus", str(corpus),
                           "--evaluate", str(corpus), "--json"],
                          check=False, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    (night,) = json.loads(corpus.read_text())["nights"]
    assert night["run_id"] == "n2" and list(night["pairs"]) == [slow]
    assert len(night["pairs"][slow]) == len(pairs) // 2
    replay = json.loads(done.stdout.splitlines()[-1])
    assert replay["nights"] == 1 and replay["false_alerts"] == 1  # the step is real here


def _corpus(noise: float, nights: int = 30, cases: int = 6, pairs: int = 12, seed: int = 0):
    """Change nights of an inert change: arm B's time is arm A's times a log-normal noise of
    ``noise`` per pair (a fresh process pair's scatter)."""
    import numpy as np
    from jitbench.nightly.change_nights import FORMAT

    rng = np.random.default_rng(seed)
    out = []
    for k in range(nights):
        ids = [f"w-default-jax-jit-cpu-float32-n{i}" for i in range(cases)]
        out.append({"run_id": f"n{k}", "night_s": 100.0, "ab_s": 120.0, "rounds": pairs,
                    "changes": ["variable JITBENCH_TEST_SLOWDOWN: x1 -> x1.0"], "touched": ids,
                    "pairs": {c: [[1e-3, 1e-3 * float(np.exp(rng.normal(0, noise)))]
                                  for _ in range(pairs)] for c in ids}})
    return {"format": FORMAT, "nights": out}


@pytest.mark.unit
def test_the_replay_counts_false_alerts_steps_found_and_the_cost():
    from jitbench.nightly.change_nights import evaluate

    quiet = evaluate(_corpus(0.02))
    assert quiet["nights"] == 30 and quiet["touched_cases"] == 180
    assert quiet["false_alerts"] <= 2  # 5% a night, shared out over its cases
    assert quiet["detection"]["0.1"] >= 0.95 and quiet["detection"]["0.2"] == 1.0
    assert quiet["detection_all"] == quiet["detection"]  # every case here is a JIT mode's
    # a 2% pair scatter decides a 10% step at the first look (9 pairs); a change night still
    # measures every open case to the floor of 12 pairs: its run plus the 12 recorded rounds
    assert quiet["pairs_used"]["0.1"] == change_ab.LOOK_PAIRS[0]
    assert quiet["cost_ratio"] == pytest.approx(1.0 + 120 / 12 * change_ab.MIN_PAIRS / 100)
    # at 2% scatter, 12 pairs rule a 10% step out for every unchanged case: nothing undecided
    assert quiet["undecided"] == 0 and quiet["false_named"] >= quiet["false_alerts"]
    # a 10% step is named wherever it fails the night; a 5% one is named more often than it
    # fails (its interval rules the 10% threshold out)
    assert quiet["named"]["0.1"] >= quiet["detection"]["0.1"]
    assert quiet["named"]["0.05"] > quiet["detection"]["0.05"]
    # a change that moves all six cases together: the pooled verdict sees 5% every night
    assert quiet["pooled_named"]["0.05"] == 1.0
    noisy = evaluate(_corpus(0.15))
    assert noisy["named"]["0.1"] < 0.5 < quiet["named"]["0.05"]
    # ``detection`` counts the JIT modes' cases (the history's series), ``detection_all``
    # every touched case: here a bimodal JIT-off mode beside each quiet JIT one
    mixed = _corpus(0.02)
    for night in mixed["nights"]:
        for i, (case_id, pairs) in enumerate(list(night["pairs"].items())):
            if i % 2:
                eager = case_id.replace("-jit-", "-eager-")
                night["pairs"][eager] = [[a, b * (1.5 if k % 2 else 1 / 1.5)]
                                         for k, (a, b) in enumerate(pairs)]
                del night["pairs"][case_id]
    both = evaluate(mixed)
    assert both["detection"]["0.1"] >= 0.95 and both["detection_all"]["0.1"] < 0.75


@pytest.mark.unit
def test_evaluate_tells_a_change_corpus_from_a_history_corpus(tmp_path, capsys):
    from jitbench.cli.main import main
    from jitbench.nightly import corpus

    path = corpus.save(_corpus(0.02, nights=3), tmp_path / "change-nights.json.gz")
    assert main(["nightly", "--evaluate", str(path), "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["nights"] == 3 and set(result["detection"]) == {"0.05", "0.1", "0.2"}
    assert main(["nightly", "--evaluate", str(path)]) == 0
    assert "3 change nights" in capsys.readouterr().out


@pytest.mark.unit
def test_a_corpus_of_no_change_night_and_too_few_pairs_are_clear_errors(tmp_path, capsys):
    from jitbench.cli.main import main

    (tmp_path / "results").mkdir()
    assert main(["nightly", "--results", str(tmp_path / "results"), "--change-corpus",
                 str(tmp_path / "c.json")]) == 2
    assert "none of these nights measured a change" in capsys.readouterr().err
    assert main(["nightly", "--results", str(tmp_path / "results"), "--change-pairs", "2",
                 "--no-run"]) == 2
    assert "--change-pairs 2: at least 3" in capsys.readouterr().err


@pytest.mark.unit
def test_the_recorded_change_nights_replay_within_the_issues_bounds():
    """The shipped corpus (tests/fixtures/nightly-corpus/README.md, "Change nights"): 30
    nights of an inert change on the 2-core host, 12 pairs each; the rule replayed on them."""
    from jitbench.nightly import corpus
    from jitbench.nightly.change_nights import evaluate

    found = evaluate(corpus.read(Path(__file__).parent / "fixtures" / "nightly-corpus"
                                 / "change-nights.json.gz"))
    assert found["nights"] >= 30 and found["false_alerts"] <= 1
    assert found["detection"]["0.1"] >= 0.95 and found["cost_ratio"] <= 2
    assert found["named"]["0.05"] is not None and found["pooled"]["0.05"] is not None


def _with_installed(meta, distributions, reach):
    return {**meta, "distributions": distributions, "reach": reach}


@pytest.mark.unit
def test_every_installed_distribution_is_a_change_placed_on_the_frameworks_it_reaches():
    reach = {"tf": ["keras", "ml-dtypes", "numpy", "tensorflow"],
             "jax": ["jax", "jax-cuda12-plugin", "jaxlib", "ml-dtypes", "numpy"]}
    installed = {"jax": "0.4.30", "jaxlib": "0.4.30", "tensorflow": "2.16.1", "numpy": "2.4.6",
                 "ml-dtypes": "0.5.1", "keras": "3.6.0", "jax-cuda12-plugin": "0.4.30",
                 "pandas": "2.2.0", "pip": "24.0"}
    old = _with_installed(_meta(), installed, reach)
    tf, jax_case = _case(framework="tf", mode="xla"), _case()

    def changed(**versions):
        new = _with_installed(_meta(), {**installed, **versions}, reach)
        new["distributions"] = {k: v for k, v in new["distributions"].items() if v}
        return change.what_changed(old, new)

    (numpy,) = changed(numpy="2.4.5")
    assert numpy.touches(tf) and numpy.touches(jax_case)
    assert "numpy: 2.4.6 -> 2.4.5 (reached by TensorFlow and JAX)" in numpy.text()
    (keras,) = changed(keras="3.7.0")
    assert keras.touches(tf) and not keras.touches(jax_case) and "TensorFlow)" in keras.text()
    (plugin,) = changed(**{"jax-cuda12-plugin": "0.4.31"})
    assert plugin.framework == "jax" and not plugin.touches(tf)
    # one neither framework reaches cannot be placed: it touches every case
    (pandas,) = changed(pandas="2.3.0")
    assert pandas.touches(tf) and pandas.touches(jax_case) and "every case" in pandas.text()
    # added and removed distributions are changes too; the installer is not
    added = changed(**{"nvidia-cudnn-cu12": "9.1"})
    assert [c.text() for c in added] == [
        "package nvidia-cudnn-cu12: (unset) -> 9.1 (reached by neither framework: touches "
        "every case)"]
    (gone,) = changed(keras=None)
    assert gone.now is None
    assert changed(pip="25.0") == []
    # a framework's version is one change, not two (its adapter reports it as well)
    (jax,) = change.what_changed(old, {**_with_installed(
        _meta(frameworks={"jax": "0.4.31"}), {**installed, "jax": "0.4.31"}, reach)})
    assert jax.name == "jax" and jax.framework == "jax"


@pytest.mark.unit
def test_this_interpreters_distributions_and_what_each_framework_reaches():
    from jitbench.results import installed

    facts = installed.facts()
    assert facts["distributions"]["numpy"] and "pandas" in facts["distributions"]
    for framework in ("tf", "jax"):
        reached = set(facts["reach"][framework])
        assert {"numpy", "ml-dtypes"} <= reached and "pandas" not in reached
    assert "keras" in facts["reach"]["tf"] and "keras" not in facts["reach"]["jax"]
    assert "jaxlib" in facts["reach"]["jax"] and "tensorflow" not in facts["reach"]["jax"]


@pytest.mark.unit
def test_a_new_gpu_driver_cannot_run_again_and_leaves_the_night_to_the_history(tmp_path):
    gpu = {"machine": {"gpus": [{"name": "H100", "driver_version": "550"}]}}
    new = {"machine": {"gpus": [{"name": "H100", "driver_version": "560"}]}}
    old_meta, new_meta = _meta(**gpu), _meta(**new)
    plan = change.arms(tmp_path, old_meta, new_meta, change.what_changed(old_meta, new_meta))
    assert plan.arm_a is None and "driver" in plan.blocked


@pytest.mark.unit
@pytest.mark.parametrize("verdict, high, said", [
    ("slower", 1.15, "fails"), ("slower", 1.08, "smaller"), ("unresolved", 1.12, "undecided"),
    ("unresolved", 1.07, "clear"), ("unresolved", float("nan"), "undecided"),
    ("same", 1.01, "clear"), ("faster", 0.9, "clear")])
def test_one_threshold_decides_what_fails_a_change_night(verdict, high, said):
    from jitbench.analysis.ab_verdicts import against_threshold

    assert against_threshold(verdict, high, 0.10) == said


def _ab_rows(ratios: dict[str, list[float]]):
    """A/B rows: per case and round, arm A at 1 ms and arm B at ratio x 1 ms."""
    import pandas as pd

    rows = []
    for case_id, values in ratios.items():
        for i, r in enumerate(values):
            for arm, t in (("a", 1e-3), ("b", 1e-3 * r)):
                rows.append({"case_id": case_id, "ab_round": i, "ab_arm": arm, "status": "ok",
                             "median_s": t, "workload": "mmd", "variant": "default",
                             "framework": "jax", "mode": case_id.split("-")[3],
                             "device": "cpu", "dtype": "float32", "size": "n512", "jit": True})
    return pd.DataFrame(rows)


@pytest.mark.unit
def test_a_change_night_on_pinned_workers_samples_longer():
    """Pinned (the stable profile, or a duet), a process's own sampling is most of a pair's
    scatter, so each process samples a group longer; unpinned, jitbench ab's short sample."""
    from jitbench.run.ab_arms import PROTOCOL

    assert change_ab.settings(2, "stable", None, pairing="duet").budget == \
        change_ab.PINNED_BUDGET > PROTOCOL.budget
    assert change_ab.settings(2, "stable", None).budget == change_ab.PINNED_BUDGET
    assert change_ab.settings(2, "default", None).budget == PROTOCOL.budget
    # a corpus's fixed pairs keep the night's sampling
    assert change_ab.settings(2, "stable", None, pairs=12, pairing="duet").budget == \
        change_ab.PINNED_BUDGET


@pytest.mark.unit
def test_a_change_night_names_small_steps_fails_on_the_threshold_and_pools_its_cases():
    import numpy as np
    from jitbench.analysis.ab_verdicts import pair_units, verdicts

    rng = np.random.default_rng(1)
    big, small, noisy, quiet = (f"mmd-default-jax-{m}-cpu-float32-n512" for m in
                                ("jit", "aot", "eager", "jit2"))
    ratios = {big: list(1.30 * np.exp(rng.normal(0, 0.02, 12))),
              small: list(1.04 * np.exp(rng.normal(0, 0.005, 12))),
              noisy: list(np.exp(rng.normal(0, 0.4, 12)))}
    df = _ab_rows(ratios)
    ids = set(ratios)
    rule = change_ab.settings(len(ids), "default", None)
    table = verdicts(df, tolerance=rule.tolerance, confidence=rule.confidence,
                     max_pairs=rule.max_pairs, final=True, look_pairs=rule.look_pairs)
    plan = change.Plan("n1", (change.Change("variable", "XLA_FLAGS", "--a", "--b"),))
    said = change_ab.judged(table, pair_units(df), ids, plan, rule, 0.10)
    assert [r["case_id"] for r in said["fails"] if r["metric"] == "ab_time"] == [big]
    assert [r["case_id"] for r in said["smaller"]] == [small]
    assert "threshold ruled out" in said["smaller"][0]["text"]
    assert "XLA_FLAGS" in said["fails"][0]["text"]
    assert said["undecided"] == [noisy]
    # the pooled verdict: the JIT modes' touched cases (jit and aot), slower as a whole
    assert said["pooled"]["cases"] == sorted([big, small])
    assert said["pooled"]["verdict"] == "slower"


RECORDED = Path(__file__).parent / "fixtures" / "nightly-history" / "results"


@pytest.mark.unit
def test_an_accepted_night_is_the_reference_from_then_on(tmp_path, capsys):
    import shutil

    from jitbench.cli.main import main
    from jitbench.nightly.past_nights import analyse

    results = tmp_path / "results"
    shutil.copytree(RECORDED, results)
    nights = sorted(p.name for p in results.iterdir())
    for night in nights[2:]:  # the third night regressed, the fourth too (the same step)
        (results / night / SUMMARY_NAME).write_text(json.dumps({"regression": True}))
    assert _last_good(results, nights) == nights[1]
    assert analyse(results).accepted == {}
    # a mistake is one line naming the bad value, exit 2, and nothing is written
    assert main(["nightly", "--results", str(results), "--accept", "night9", "--reason",
                 "x"]) == 2
    assert "'night9': no such night" in capsys.readouterr().err
    assert main(["nightly", "--results", str(results), "--accept", nights[2]]) == 2
    assert "--accept needs --reason" in capsys.readouterr().err
    assert not list(results.glob("*/accepted.json"))
    assert main(["nightly", "--results", str(results), "--accept", nights[2], "--reason",
                 "XLA's new fusion: 8% on one case, 30% won elsewhere"]) == 0
    assert f"accepted {nights[2]} as the reference" in capsys.readouterr().out
    # the next night is measured against it, and the history starts from it
    assert _last_good(results, nights) == nights[2]
    h = analyse(results)
    assert h.judged_against == nights[2:]
    assert h.accepted[nights[2]]["reason"].startswith("XLA's new fusion")


def test_an_accepted_night_is_shown_in_every_later_summary_and_on_the_page(tmp_path, capsys):
    import shutil

    from jitbench.cli.main import main

    results = tmp_path / "results"
    shutil.copytree(RECORDED, results)
    nights = sorted(p.name for p in results.iterdir())
    assert main(["nightly", "--results", str(results), "--accept", nights[2], "--reason",
                 "XLA's new fusion: 8% on one case, 30% won elsewhere"]) == 0
    reports = tmp_path / "reports"
    assert main(["nightly", "--no-run", "--no-recheck", "--on-change", "history", "--results",
                 str(results), "--reports", str(reports)]) == 0
    assert f"{nights[2]} accepted as the reference (XLA's new fusion" in capsys.readouterr().out
    said = json.loads((reports / SUMMARY_NAME).read_text())
    assert [a["run_id"] for a in said["accepted"]] == [nights[2]]
    page = (reports / "index.html").read_text()
    assert f"Accepted as the reference: {nights[2]} (XLA&#39;s new fusion" in page


@pytest.mark.unit
@pytest.mark.parametrize("said, code", [
    ({"regression": True, "undecided": ["c1"]}, 1), ({"regression": False, "undecided": ["c1"]}, 3),
    ({"regression": False, "undecided": []}, 0)])
def test_an_undecided_change_night_exits_with_its_own_code(monkeypatch, tmp_path, capsys,
                                                           said, code):
    from jitbench.cli.main import UNDECIDED_EXIT, main
    from jitbench.nightly import night

    assert UNDECIDED_EXIT == 3

    def fake_night(*args, **kwargs):  # the summary's facts the exit is decided on
        return {"latest_run": "n2", "regression": said["regression"], "confirmed": [
            {"case_id": "c1", "metric": "ab_time", "text": "slower"}] if said["regression"]
            else [], "undecided": said["undecided"], "suspected": [], "note": None,
            "undecided_note": "UNDECIDED: 1 touched case(s) ... c1 (not a pass)"}

    monkeypatch.setattr(night, "nightly", fake_night)
    assert main(["nightly", "--results", str(tmp_path), "--reports", str(tmp_path),
                 "--no-run"]) == code
    out = capsys.readouterr().out
    assert ("UNDECIDED" in out) == (code == 3)
