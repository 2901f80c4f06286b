"""results.jsonl as a killed run leaves it, and as a future (or foreign) jitbench writes it."""

from __future__ import annotations

import json
import warnings

import pytest

from jitbench.errors import DataWarning, UserError
from jitbench.results.files import (
    SCHEMA_VERSION,
    ResultWriter,
    load_meta,
    load_results,
    read_rows,
    repair_tail,
)

pytestmark = pytest.mark.unit  # no child process, no framework import


def row(case_id, **kw):
    return {"schema_version": SCHEMA_VERSION, "run_id": "r", "case_id": case_id,
            "workload": "w", "variant": "v", "size": "n8", "dtype": "float32",
            "framework": "jax", "mode": "jit", "device": "cpu", "status": "ok", **kw}


def write(path, rows, tail=""):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows) + tail)
    return path


def test_a_truncated_last_line_is_skipped_with_a_warning_naming_file_and_line(tmp_path):
    f = write(tmp_path / "results.jsonl", [row("a"), row("b")],
              tail='{"schema_version": 1, "case_id": "c", "sta')
    with pytest.warns(DataWarning, match=r"results\.jsonl:3: truncated last line skipped"):
        rows = read_rows(f)
    assert [r["case_id"] for r in rows] == ["a", "b"]
    with pytest.warns(DataWarning):
        assert list(load_results(tmp_path)["case_id"]) == ["a", "b"]


def test_a_damaged_line_elsewhere_is_refused(tmp_path):
    f = write(tmp_path / "results.jsonl", [row("a")], tail="not json\n" + json.dumps(row("b"))
              + "\n")
    with pytest.raises(UserError, match=r"results\.jsonl:2 is not a JSON row"):
        read_rows(f)


def test_a_json_line_that_is_not_an_object_is_refused(tmp_path):
    f = write(tmp_path / "results.jsonl", [row("a")], tail="[1, 2]\n")
    with pytest.raises(UserError, match=r":2 is not a JSON object"):
        read_rows(f)


@pytest.mark.parametrize("version, says", [
    (SCHEMA_VERSION + 1, "newer than the 1 this jitbench reads: upgrade jitbench"),
    (0, "older than the 1 this jitbench reads: load it with the jitbench version that wrote "
        "it, or re-run"),
    (None, "schema_version None; this jitbench reads version 1 only"),
    ("1", "schema_version '1'"),
])
def test_an_unknown_schema_version_is_refused_saying_what_to_do(tmp_path, version, says):
    bad = row("b")
    if version is None:
        del bad["schema_version"]
    else:
        bad["schema_version"] = version
    f = write(tmp_path / "results.jsonl", [row("a"), bad])
    with pytest.raises(UserError) as err:
        read_rows(f)
    assert "results.jsonl:2 has " in str(err.value) and says in str(err.value)


def test_writer_appends_whole_lines_after_cutting_a_truncated_one(tmp_path):
    f = write(tmp_path / "results.jsonl", [row("a")], tail='{"schema_version": 1, "cas')
    with pytest.warns(DataWarning, match="dropped a truncated last line"):
        with ResultWriter(f) as w:
            w.write(row("b", median_s=float("nan"), max_abs_err=float("inf")))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # intact now: no warning
        rows = read_rows(f)
    assert [r["case_id"] for r in rows] == ["a", "b"]
    assert rows[1]["median_s"] is None and rows[1]["max_abs_err"] == "inf"


@pytest.mark.parametrize("content, kept", [
    (b"", b""), (b"abc", b""), (b'{"a": 1}\n', b'{"a": 1}\n'),
    (b'{"a": 1}\n{"b"', b'{"a": 1}\n'), (b"x" * 200_000, b""),
    (b'{"a": 1}\n' + b"x" * 200_000, b'{"a": 1}\n'),
    (b'{"a": 1}\n{"b": 2}', b'{"a": 1}\n{"b": 2}\n'),  # whole, only the newline missing
    (b'{"a": 1}\n{"b": "\xc3', b'{"a": 1}\n'),  # cut in the middle of a UTF-8 character
])
def test_repair_tail_keeps_exactly_the_complete_lines(tmp_path, content, kept):
    f = tmp_path / "results.jsonl"
    f.write_bytes(content)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert repair_tail(f) == (len(kept) < len(content))
    assert f.read_bytes() == kept


def test_not_a_run_and_damaged_meta_are_user_errors(tmp_path):
    with pytest.raises(UserError, match="is not a run folder"):
        load_results(tmp_path)
    with pytest.raises(UserError, match="does not exist"):
        load_results(tmp_path / "nope")
    other = tmp_path / "notes.txt"
    other.write_text("hello\n")
    with pytest.raises(UserError, match="neither a run folder nor a results .jsonl file"):
        load_results(other)
    (tmp_path / "meta.json").write_text("{oops")
    with pytest.raises(UserError, match="meta.json' is damaged"):
        load_meta(tmp_path)
    assert load_meta(tmp_path / "nope") == {}
