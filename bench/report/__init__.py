"""The HTML report: one self-contained page per run (figures inlined, no network)."""

from bench.report.html import write_report

__all__ = ["write_report"]
