"""The ladder's page (``jitbench.report.releases_page``) in a real headless Chromium
(tests/browser.py), as the run report's is: no console error, no request off the page, not
wider than the window at 1280 and 420 pixels; what it says matches its releases.json. The
ladder's A/B runs come from the stand-in engine of tests/test_releases.py (no measurement); a
step whose compiled program alone changed is counted apart from the cases that stepped."""

from __future__ import annotations

import html as htmllib
import re

import pytest

from jitbench.releases import ladder
from jitbench.report.releases_page import write_releases_page
from jitbench.run import ab_arms
from test_releases import SETTINGS, FakeEngine, rung


@pytest.fixture
def record(tmp_path, monkeypatch):
    monkeypatch.setattr(ab_arms, "run_ab", FakeEngine(pairs=4))
    rungs = [rung("0.4.31"), rung("0.4.33", error="ERROR: No matching distribution found for "
                                                   "jaxlib==0.4.33 <for this Python>"),
             rung("0.4.35"), rung("0.5.0", LEVEL=2.0, PROGRAM="p2", AOT="broken"),
             rung("0.5.1", LEVEL=2.0, PROGRAM="p3", AOT="broken")]  # another program alone
    return ladder.run_ladder(["c"], rungs, tmp_path / "lad", SETTINGS, package="jax")


def _text(page: str) -> str:
    body = re.sub(r"<(script|style)[^>]*>.*?</\1>", "", page, flags=re.S)
    return htmllib.unescape(re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", body)))


def test_the_releases_page_in_headless_chromium(record, tmp_path):
    import browser  # tests/browser.py: a headless Chromium driver, only the tests use it

    try:
        browser.find_chromium()
    except browser.BrowserUnavailable as exc:
        pytest.skip(f"no headless browser on this machine: {exc}")
    page = write_releases_page(record, tmp_path / "page")
    text = _text(page.read_text())
    assert "jitbench releases: jax, ladder" in text
    assert "No matching distribution found for jaxlib==0.4.33 <for this Python>" in text
    assert "0.4.35 → 0.5.0: 2 of 3 cases stepped" in text
    assert "0.4.31 → 0.4.35: 0 of 3 cases stepped" in text
    # a case whose compiled program alone changed (nothing measured moved) is counted apart
    assert "0.5.0 → 0.5.1: 0 of 3 cases stepped; 2 more changed program only" in text
    assert re.search(r"\b0 of 3 ?; 2 more changed program only", text)  # the steps' table
    assert "broke" in text and "AttributeError: no <aot> API & such" in text
    c = browser.check_page(page, width=1280, screenshot=tmp_path / "releases.png")
    assert c.console_errors == [] and c.failed_requests == [] and c.network_requests == []
    assert not c.overflows, (c.scroll_width, c.inner_width)
    assert c.title.startswith("jitbench releases")
    narrow = browser.check_page(page, width=420)
    assert not narrow.overflows, (narrow.scroll_width, narrow.inner_width)
    assert narrow.console_errors == []
