"""Run folders as users leave them: a killed run's truncated last line, no meta.json, rows of
an older schema, a hand-edited row, an empty run, a pytest-benchmark JSON with no jitbench
extra_info. ``report``, ``compare``, ``nightly --no-run`` and ``load_results`` either work
(a warning naming file and line) or exit 2 with one line; never a traceback, never a row lost
or rewritten. In-process (``jitbench.cli.main.main``), on the recorded runs of
tests/fixtures/compare:
no framework is imported."""

from __future__ import annotations

import json
import shutil
import warnings
from pathlib import Path

import pytest

import jitbench
from jitbench.cli.main import main
from jitbench.errors import DataWarning, UserError

pytestmark = pytest.mark.unit
RUN = Path(__file__).parent / "fixtures" / "compare" / "same-a"


def _copy(tmp_path, name="run") -> Path:
    d = tmp_path / name
    shutil.copytree(RUN, d)
    return d


def _lines(run: Path) -> list[str]:
    return (run / "results.jsonl").read_text(encoding="utf-8").splitlines(keepends=True)


def truncated(run):  # a run killed while writing its last row
    text = (run / "results.jsonl").read_text(encoding="utf-8")
    (run / "results.jsonl").write_text(text[:-40], encoding="utf-8")


def no_meta(run):
    (run / "meta.json").unlink()


def hand_edited(run):  # a field deleted, a field of the wrong type, a string for a number
    lines = _lines(run)
    rows = [json.loads(x) for x in lines[:3]]
    del rows[0]["mode"]
    rows[1]["median_s"] = "fast"
    rows[2]["samples"] = "[1, 2]"
    rows[2]["jit"] = "yes"
    (run / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows)
                                       + "".join(lines[3:]), encoding="utf-8")


DAMAGE = {"truncated": truncated, "no_meta": no_meta, "hand_edited": hand_edited}


@pytest.mark.parametrize("damage", sorted(DAMAGE))
def test_damaged_run_reports_with_a_warning_and_keeps_every_row(tmp_path, damage, capsys):
    run = _copy(tmp_path)
    DAMAGE[damage](run)
    n_whole = len([x for x in _lines(run) if x.endswith("\n")])  # a cut last line is no row
    before = (run / "results.jsonl").read_bytes()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert main(["report", str(run), "-o", str(tmp_path / "reports")]) == 0
    assert (run / "results.jsonl").read_bytes() == before  # a report never rewrites a run
    assert "Traceback" not in capsys.readouterr().err
    named = [str(w.message) for w in caught if issubclass(w.category, DataWarning)]
    if damage in ("truncated", "hand_edited"):  # the warning names file and line
        assert any(m.startswith(f"{run / 'results.jsonl'}:") for m in named), named
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DataWarning)
        df = jitbench.load_results(run)
    assert len(df) == n_whole  # every complete row is a row


def test_compare_of_a_damaged_run_works(tmp_path, capsys):
    a, b = _copy(tmp_path, "a"), _copy(tmp_path, "b")
    hand_edited(b)
    truncated(a)
    assert main(["compare", str(a), str(b), "-o", str(tmp_path / "cmp")]) == 0
    assert (tmp_path / "cmp" / "index.html").is_file()
    assert "Traceback" not in capsys.readouterr().err


def _older_schema(run):
    rows = [dict(json.loads(x), schema_version=0) for x in _lines(run)]
    (run / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))


def _empty(run):
    (run / "results.jsonl").write_text("")


@pytest.mark.parametrize("damage,says", [(_older_schema, "older than the 1 this jitbench reads"),
                                         (_empty, "holds no result rows")],
                         ids=["older_schema", "empty"])
@pytest.mark.parametrize("command", ["report", "compare"])
def test_unreadable_run_is_one_line_and_exit_2(tmp_path, capsys, damage, says, command):
    run = _copy(tmp_path)
    damage(run)
    argv = (["report", str(run), "-o", str(tmp_path / "r")] if command == "report" else
            ["compare", str(_copy(tmp_path, "other")), str(run), "-o", str(tmp_path / "c")])
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("jitbench: error: ") and says in err[0], err


def test_nightly_history_with_damaged_runs(tmp_path, capsys):
    results = tmp_path / "results"
    results.mkdir()
    for i, damage in enumerate([None, truncated, no_meta, hand_edited]):
        run = _copy(results, f"2026110{i}-000000-1")
        meta = run / "meta.json"
        if meta.is_file():
            m = json.loads(meta.read_text())
            m["run_id"] = run.name
            meta.write_text(json.dumps(m))
        if damage:
            damage(run)
    code = main(["nightly", "--no-run", "--results", str(results),
                 "--reports", str(tmp_path / "reports")])
    err = capsys.readouterr().err
    assert code in (0, 1, 2) and "Traceback" not in err
    if code == 2:
        assert len(err.strip().splitlines()) >= 1 and "jitbench: error:" in err
    else:
        assert (tmp_path / "reports" / "index.html").is_file()


def test_pytest_benchmark_json_without_jitbench_extra_info(tmp_path, capsys):
    f = tmp_path / "plain.json"
    f.write_text(json.dumps({"benchmarks": [{
        "name": "test_sum", "fullname": "t.py::test_sum", "group": None, "extra_info": {},
        "stats": {"min": 1e-6, "max": 2e-6, "mean": 1.5e-6, "stddev": 1e-7, "median": 1.4e-6,
                  "iqr": 1e-7, "rounds": 10, "iterations": 1, "data": [1.4e-6] * 10}}]}))
    code = main(["report", str(f), "-o", str(tmp_path / "r")])
    err = capsys.readouterr().err
    assert "Traceback" not in err
    assert code == 2 and err.startswith("jitbench: error: ") and "no jitbench benchmarks" in err
    with pytest.raises(UserError, match="no jitbench benchmarks"):
        jitbench.load_results(f)


def test_merge_copies_a_hand_edited_row_as_it_is(tmp_path):
    """merge writes rows back: a field a user edited stays what they wrote, never '?'/null."""
    from jitbench.nightly.shards import merge

    shard = _copy(tmp_path, "shard1")
    hand_edited(shard)
    edited = [json.loads(x) for x in _lines(shard)]
    out = merge([shard], tmp_path / "merged")
    merged = [json.loads(x) for x in (out / "results.jsonl").read_text().splitlines()]
    assert [dict(r, run_id=None) for r in merged] == [dict(r, run_id=None) for r in edited]
    assert merged[1]["median_s"] == "fast" and "mode" not in merged[0]


@pytest.mark.unit
def test_a_merge_keeps_every_shards_machine_and_says_when_they_differ():
    from jitbench.results.meta import merged

    def meta(shard, gpu, driver="580.1"):
        return {"run_id": "night", "shard": shard, "status": "complete",
                "started_at": f"2026-01-0{shard[0]}", "finished_at": f"2026-01-0{shard[0]}",
                "machine": {"cpu_model": "Xeon", "cpu_count": 16,
                            "gpus": [{"name": gpu, "driver_version": driver}]}}

    same = merged([meta("1/2", "H200"), meta("2/2", "H200")], "night", 10)
    assert "machine_note" not in same and same["n_cases"] == 10
    assert [s["shard"] for s in same["shard_machines"]] == ["1/2", "2/2"]
    other = merged([meta("1/2", "H200"), meta("2/2", "H100")], "night", 10)
    assert "2 different machines" in other["machine_note"]
    assert other["shard_machines"][1]["machine"]["gpus"][0]["name"] == "H100"
    assert "different" in merged([meta("1/2", "H200"), meta("2/2", "H200", "570")], "n",
                                 1)["machine_note"]
