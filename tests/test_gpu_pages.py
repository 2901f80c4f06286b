"""The report of a run recorded on an H200 (tests/fixtures/gpu-h200): its trust section shows
every group's A/A control as numbers, and every count of identical-program verdicts on the
page equals the rows'."""

from __future__ import annotations

import html as htmllib
import re
import shutil
from collections import Counter
from pathlib import Path

import pytest

import jitbench
from jitbench.report import write_report

pytestmark = pytest.mark.unit  # no child process, no framework import

FIXTURE = Path(__file__).parent / "fixtures" / "gpu-h200" / "quick-default"
NIGHTS = Path(__file__).parent / "fixtures" / "gpu-h200" / "nightly-mmd"


@pytest.fixture(scope="module")
def page(tmp_path_factory):
    run = tmp_path_factory.mktemp("gpu") / "quick-default"
    shutil.copytree(FIXTURE, run)
    out = write_report(run, tmp_path_factory.mktemp("report"))
    return Path(out).read_text()


@pytest.fixture(scope="module")
def text(page):
    body = re.sub(r"<(script|style)[^>]*>.*?</\1>", "", page, flags=re.S)
    return htmllib.unescape(re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", body)))


@pytest.fixture(scope="module")
def rows():
    return jitbench.load_results(FIXTURE)


def trust(text: str) -> str:
    start = text.index("How far to trust this run")
    return text[start:text.index("Interference check", start)]


def test_every_group_control_is_numbers_or_says_why_not(text, rows):
    section = trust(text)
    assert "nan" not in section.lower()
    measured = rows["aa_verdict"].notna().sum()
    shown = re.findall(r"vs itself · gpu: (faster|slower|same|unresolved) \d+\.\d+×", section)
    assert len(shown) == measured == 19
    assert section.count("not measured: no valid samples") == 1  # its row's aa_error


def test_identical_program_counts_agree_with_the_rows(text, rows):
    counts = Counter(rows["aa_verdict"].dropna())
    wrong = counts["faster"] + counts["slower"]
    band = re.search(r"\((\d+) groups: (\d+) called faster or slower, (\d+) unresolved",
                     trust(text))
    assert band and [int(g) for g in band.groups()] == [sum(counts.values()), wrong,
                                                        counts["unresolved"]]
    tile = re.search(r"A/A controls: (\d+) unresolved \((\d+) called faster or slower\)", text)
    assert tile and [int(g) for g in tile.groups()] == [counts["unresolved"], wrong]
    # no second engine: no bootstrap of the controls' samples is reported beside the verdicts
    assert "significant;" not in text and "A/A controls excluded" not in text


def test_the_page_names_one_interval_method(text):
    assert text.count("The bracket is its 95% interval from the blocks") == 1
    assert "bootstrap" not in text.split("Trust Summary")[0]


def test_the_gpu_nights_history_page_reads_like_their_rows(tmp_path):
    """Five recorded GPU nights: every series' latest speedup on the page is the latest
    night's verdict speedup, every night's row count is its rows', and the night the machine
    moved says so rather than judging a step."""
    import json

    from jitbench.cli.main import main

    results = tmp_path / "results"
    shutil.copytree(NIGHTS, results)
    assert main(["nightly", "--no-run", "--results", str(results), "--reports",
                 str(tmp_path / "reports")]) == 0
    page = (tmp_path / "reports" / "index.html").read_text()
    text = htmllib.unescape(re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", re.sub(
        r"<(script|style)[^>]*>.*?</\1>", "", page, flags=re.S))))
    nights = sorted(p.name for p in NIGHTS.iterdir())
    latest = [json.loads(line) for line in (NIGHTS / nights[-1] / "results.jsonl").open()]
    for r in latest:
        if r.get("verdict_speedup"):
            series = "/".join([r["workload"], r["variant"], r["size"], r["dtype"],
                               r["framework"], r["mode"], r["device"]])
            shown = re.search(re.escape(series) + r" ([\d.]+)× \[", text)
            assert shown, series
            assert float(shown.group(1)) == pytest.approx(r["verdict_speedup"], rel=0.01)
    for night in nights:
        n = sum(1 for _ in (NIGHTS / night / "results.jsonl").open())
        assert re.search(re.escape(night) + r" \S+ complete " + f"{n} / {n}", text), night
    assert "no step is judged tonight" in text and "nan" not in text.lower()
