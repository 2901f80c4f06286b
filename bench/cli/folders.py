"""The output-folder options every measuring command shares (``run``, ``sweep``, ``ab``):
where its folder goes, where its page goes, whether a page is written, and the folder's
name."""

from __future__ import annotations

import argparse


def add_output_folders(p: argparse.ArgumentParser, what: str) -> None:
    """``--out``, ``--reports``, ``--no-report``, ``--run-id``; ``what`` names the folder
    (the run, the sweep, the A/B)."""
    p.add_argument("--out", default="results", metavar="DIR",
                   help=f"results root; {what} goes to DIR/<run_id>/ (default: results)")
    p.add_argument("--reports", default="reports", metavar="DIR",
                   help="reports root; the page goes to DIR/<run_id>/ (default: reports)")
    p.add_argument("--no-report", action="store_true", help="do not write the HTML page")
    p.add_argument("--run-id", metavar="ID", help="name of the run folder")
