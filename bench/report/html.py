"""Render a run (or a pytest-benchmark JSON) into reports/<run_id>/index.html.

The page is its sections (``jitbench.report.sections``), in order: each turns the run's analysis
(``jitbench.report.facts.RunFacts``) into plain values for its template block and names the
figures it shows; the figures of every section are drawn together, in parallel
(``jitbench.report.draw``). The templates (jinja2, autoescaped) only lay values out. Nothing from
a run is ever marked safe: error messages carry <, >, & and quotes and are shown as text.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from jitbench import analysis
from jitbench.errors import UserError
from jitbench.report import draw, fmt, sections
from jitbench.report.facts import RunFacts
from jitbench.results.files import load_meta, load_results


def template_environment():
    import jinja2

    env = jinja2.Environment(
        loader=jinja2.PackageLoader("jitbench.report", "templates"),
        autoescape=jinja2.select_autoescape(["html", "j2"], default=True),
        undefined=jinja2.StrictUndefined)
    env.filters.update(secs=fmt.secs, num=fmt.num, times=fmt.times, calls=fmt.calls,
                       pct=fmt.pct, interval=fmt.interval, flop=fmt.flop,
                       signed_pct=fmt.signed_pct)
    return env


def build_context(df, meta: dict[str, Any], *, n_boot: int = analysis.N_BOOT,
                  workers: int | None = None) -> dict:
    """The template's values: the run's id and each section's block (name, title, template,
    its values ``data``, its navigation links).
    ``workers``: processes that draw the figures (default: every usable CPU)."""
    with draw.collector_paused():
        run = RunFacts(df, meta, n_boot=n_boot)  # the bootstrap: on first use, while it draws
        everyone = sections.registered()
        unmet = {s.name: why for s in everyone if (why := s.unmet(run))}
        secs = [s for s in everyone if s.name not in unmet]
        jobs = {(s.name, key): job for s in secs for key, job in s.figures(run).items()}
        data = {}
        with draw.Drawing(jobs, workers) as images:  # sections' values computed while it draws
            # those whose figures are all drawn already first: the last figures are the
            # speedups', and the sections showing them wait for them
            for s in sorted(secs, key=lambda s: images.deferred(s.name)):
                data[s.name] = s.data(run, images.of(s.name))
    blocks = [{"name": s.name, "title": s.title, "template": s.template,
               "data": data[s.name], "nav": s.links(data[s.name])} if s.name in data else
              {"name": s.name, "title": s.title, "template": "section_unmet.html.j2",
               "data": {"why": unmet[s.name]}, "nav": [(s.name, s.title)]}
              for s in everyone]
    return {"run_id": str(meta.get("run_id", "")), "sections": blocks}


def render(df, meta: dict[str, Any], **kw) -> str:
    page = template_environment().get_template("report.html.j2")
    return page.render(**build_context(df, meta, **kw))


def write_report(source: Path | str, out_dir: Path | str) -> Path:
    """Write index.html for a run folder (or results file); return its path."""
    source, out_dir = Path(source), Path(out_dir)
    df = load_results(source)
    if df.empty:
        raise UserError(f"{str(source)!r} holds no result rows")
    meta = load_meta(source) if source.is_dir() else {"run_id": source.stem}
    if source.is_dir():  # sections may read the folder's other files (a sweep's sweep.jsonl)
        # a copy for the page: the run's meta.json is read, never changed, here
        meta = {"run_dir": str(source), "report_dir": str(out_dir),  # links, relative
                **meta}
    if meta.get("kind") == "ab":  # two environments side by side (jitbench ab)
        from jitbench.report.ab_page import render_ab

        html = render_ab(df, meta, template_environment())
    else:
        html = render(df, meta)
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
        page = out_dir / "index.html"
        page.write_text(html, encoding="utf-8")
    except OSError as exc:
        raise UserError(f"cannot write the report to {str(out_dir)!r}: {exc.strerror}") from exc
    return page
