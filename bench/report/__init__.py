"""The HTML report: one self-contained page per run (figures inlined, no network)."""

from jitbench.report.html import write_report

__all__ = ["write_report"]
