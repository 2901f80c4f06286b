"""``jitbench doctor``: is this machine fit to benchmark, and does jitbench work on it
(``jitbench.doctor``). A table on the terminal, or ``--json``; exit 1 when a check fails.
Without ``--device`` it checks the devices this machine has."""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

DEVICES = ("cpu", "gpu")


def add_parser(sub) -> None:
    p = sub.add_parser("doctor", help="check that this machine is fit to benchmark and that "
                                      "jitbench works on it (a tiny run per framework and "
                                      "device), with what to do about each problem")
    p.add_argument("--device", default=None, metavar="LIST",
                   help="devices to check, comma list of cpu, gpu (default: the devices this "
                        "machine has: cpu, and gpu where NVML or nvidia-smi reads one); a gpu "
                        "asked for and absent is a warning")
    p.add_argument("--json", action="store_true", help="print the checks as JSON")
    p.add_argument("--keep", metavar="DIR",
                   help="keep the tiny runs' folders under DIR (default: a temporary folder)")


def cmd(args: argparse.Namespace) -> int:
    from jitbench.doctor import machine, tiny, worst
    from jitbench.errors import UserError

    asked = args.device is not None
    devices = ([d.strip() for d in args.device.split(",") if d.strip()] if asked
               else machine.present_devices())
    bad = [d for d in devices if d not in DEVICES]
    if bad or not devices:
        raise UserError(f"unknown device {', '.join(map(repr, bad)) or repr(args.device)}; "
                        f"valid: {', '.join(DEVICES)}")
    started = time.monotonic()
    checks = [machine.devices_check(devices, asked)] + machine.checks(devices)
    with tempfile.TemporaryDirectory(prefix="jitbench-doctor-") as tmp:
        run_checks, run_dir = tiny.checks(devices, Path(args.keep or tmp))
    checks += run_checks
    verdict = worst(checks)
    elapsed = time.monotonic() - started
    if args.json:
        print(json.dumps({"verdict": verdict, "elapsed_s": round(elapsed, 1),
                          "devices": devices, "checks": [c.to_dict() for c in checks],
                          "run_dir": str(run_dir) if args.keep and run_dir else None},
                         indent=1))
    else:
        _table(checks, verdict, elapsed)
    return 1 if verdict == "fail" else 0


def _table(checks, verdict: str, elapsed: float) -> None:
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    colour = {"ok": "green", "warn": "yellow", "fail": "red"}
    table = Table(title=f"jitbench doctor: {verdict} ({elapsed:.0f} s)", show_lines=False)
    for name in ("check", "verdict", "what was seen", "what to do"):
        table.add_column(name, overflow="fold")
    for c in checks:
        # escaped: "pip install -e '.[cuda]'" is text, not a style tag rich would drop
        table.add_row(escape(c.name), f"[{colour[c.verdict]}]{c.verdict}[/]", escape(c.detail),
                      escape(c.advice))
    Console(file=sys.stdout, width=140).print(table)
