"""The working side of ``jitbench doctor``: a tiny real run (the smallest float32 matmul+relu,
fused, every mode) per installed framework and requested device, through the same workers and
protocol as ``jitbench run``, then checks on its rows. A framework and device whose synced calls
read far faster than their pipelined ones run again, fresh, before the sync check fails
(:data:`SYNC_RUNS`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

from jitbench.define.workload import Filters, expand
from jitbench.doctor import CUDA_INSTALL, Check
from jitbench.frameworks import FRAMEWORKS, installed, not_installed
from jitbench.protocol import gpu_state
from jitbench.protocol.settings import Protocol
from jitbench.results.files import load_meta, read_rows
from jitbench.run import runner

BUDGET_S = 1.0  # of interleaved sampling per group: enough for verdicts on a 64^3 matmul
MEMORY_RANGE = (32 * 1024, 16 * 2 ** 20)  # a 64^3 float32 program's compiled memory, bytes
SYNC_FLOOR = 0.5  # a mode whose synced call took under this share of its pipelined one does not
# wait for its work; the two are measured at different times, so on a busy host a working sync
# can read faster than the pipelined calls did (SYNC_RUNS)
SYNC_RUNS = 3  # tiny runs of a framework and device, at most, before its sync check fails: a
# sync that waits for nothing reads fast in every fresh run, a burst of load on the host in one


def checks(devices: list[str], out_root: Path) -> tuple[list[Check], Path | None]:
    """The checks of a tiny run into ``out_root``, and its run folder (None if nothing ran)."""
    frameworks = installed()
    if not frameworks:
        return [Check("frameworks", "fail", "neither TensorFlow nor JAX is installed",
                      'pip install "jitbench[jax]", "jitbench[tf]" or both')], None
    cases = expand(Filters(suite=("matmul_relu",), variant=("fused",), dtype=("float32",),
                           framework=tuple(frameworks), device=tuple(devices)))
    smallest = cases[0].size
    cases = [c for c in cases if c.size == smallest]
    run_dir = _tiny_run(cases, out_root, "doctor")
    rows = read_rows(run_dir / "results.jsonl")
    meta = load_meta(run_dir)
    versions = meta.get("frameworks") or {}
    seen = sorted({f"{d.get('framework')} {d.get('device')}" for d in meta.get("devices") or []})
    absent = [why for fw in FRAMEWORKS if (why := not_installed(fw))]
    out = [Check("frameworks", "ok", "; ".join(
                 [", ".join(f"{k} {v}" for k, v in versions.items()) or ", ".join(frameworks)]
                 + absent)),
           Check("devices the frameworks see", "ok", ", ".join(seen) or "none reported")]
    gpu_here = "gpu" in devices and gpu_state.read() is not None
    for fw in frameworks:
        for device in devices:
            mine = [r for r in rows if r["framework"] == fw and r["device"] == device]

            def again(n: int, fw=fw, device=device) -> list[dict[str, Any]]:
                group = [c for c in cases if c.framework == fw and c.device == device]
                folder = _tiny_run(group, out_root, f"doctor-{fw}-{device}-{n}")
                return read_rows(folder / "results.jsonl")

            out += _group_checks(fw, device, mine, again, gpu_here=gpu_here)
    return out, run_dir


def _tiny_run(cases, out_root: Path, run_id: str) -> Path:
    """The run folder of ``cases`` measured at the doctor's budget under ``out_root/run_id``."""
    return runner.run(cases, out_root, protocol=Protocol(budget=BUDGET_S),
                      command=["jitbench", "doctor"], run_id=run_id)


def _group_checks(fw: str, device: str, rows: list[dict[str, Any]],
                  again: Callable[[int], list[dict[str, Any]]],
                  gpu_here: bool = False) -> list[Check]:
    """The checks of one framework's tiny run on one device. A GPU the framework does not see
    fails where the machine has one (``gpu_here``: its build lacks CUDA), and is a warning
    where it has none (asked for, absent)."""
    where = f"{fw} on {device}"
    skipped = [r for r in rows if r["status"] == "skipped"]
    if skipped:
        why = skipped[0].get("error") or "skipped"
        if device != "gpu":
            return [Check(f"{where}: device", "warn", why)]
        if gpu_here:
            return [Check(f"{where}: device", "fail", why, "this machine has a GPU the "
                          f"framework does not see: install the CUDA builds, {CUDA_INSTALL}")]
        return [Check(f"{where}: device", "warn", f"{why} (this machine has no GPU)",
                      f"to benchmark a GPU, on a machine with one: {CUDA_INSTALL}")]
    out = [Check(f"{where}: device", "ok", f"{len(rows)} modes ran")]
    bad = [r for r in rows if r["status"] != "ok"]
    precision = ", ".join(sorted({str(r.get("matmul_precision")) for r in rows}))
    out.append(Check(f"{where}: answers", "fail" if bad else "ok",
                     "; ".join(f"{r['mode']} {r['status']}: {str(r.get('error'))[:160]}"
                               for r in bad) or
                     f"every mode matches the float64 reference at {precision}",
                     "see the run's rows and docs/failures.md" if bad else ""))
    aa = [r.get("aa_verdict") for r in rows if r.get("aa_verdict")]
    wrong = [v for v in aa if v in ("faster", "slower")]
    out.append(Check(f"{where}: identical programs", "warn" if wrong else "ok",
                     f"A/A control {', '.join(aa) or 'not measured'}",
                     "the machine is noisy right now: identical programs were judged "
                     "different; measure again when it is quiet" if wrong else ""))
    out.append(confirmed_sync_check(where, rows, again))
    sizes = {r["mode"]: r["compiled_memory_bytes"] for r in rows
             if r.get("compiled_memory_bytes")}
    if sizes:
        off = {m: b for m, b in sizes.items() if not MEMORY_RANGE[0] <= b <= MEMORY_RANGE[1]}
        out.append(Check(f"{where}: memory per mode", "warn" if off else "ok",
                         ", ".join(f"{m} {b / 1024:.0f} KiB" for m, b in sizes.items()),
                         "XLA's memory analysis is off for a 64^3 matmul: report it" if off
                         else ""))
    return out


def _measured(row: dict[str, Any]) -> bool:
    return bool(row.get("synced_median_s") and row.get("median_s"))


def suspects(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The rows whose synced call took under :data:`SYNC_FLOOR` of their pipelined one."""
    return [r for r in rows
            if _measured(r) and r["synced_median_s"] < SYNC_FLOOR * r["median_s"]]


def _read(rows: list[dict[str, Any]]) -> str:
    return "; ".join(f"{r['mode']}: synced {r['synced_median_s']:.3g} s < pipelined "
                     f"{r['median_s']:.3g} s" for r in rows)


def _clears(rows: list[dict[str, Any]]) -> bool:
    """A run that measured a synced and a pipelined call of some mode and read none suspect."""
    return any(map(_measured, rows)) and not suspects(rows)


def sync_check(where: str, runs: list[list[dict[str, Any]]]) -> Check:
    """Each mode's synced call against its pipelined one, over ``runs`` (the rows of each tiny
    run of one framework and device, first to last): a sync that does not wait for the work
    makes the synced call (dispatch only) much the faster in every run; a first run that reads
    fast and a later one that measures and does not were the host's load (the two are measured
    apart in time). A later run that measured nothing clears nothing."""
    fast = [suspects(rows) for rows in runs]
    if runs and fast[0] and not any(_clears(rows) for rows in runs[1:]):
        read = [f for f in fast if f][-1]
        return Check(f"{where}: sync", "fail", _read(read) + (
                     f" (in {sum(map(bool, fast))} of {len(runs)} runs)" if len(runs) > 1
                     else ""),
                     "the device sync does not wait for the work: times are dispatch only")
    detail = "each call synced takes about as long as a pipelined one or longer"
    if fast and fast[0]:
        detail += (f" (run {len(runs)} of {len(runs)}; run 1 read {_read(fast[0])}, measured "
                   "apart in time on a busy host)")
    return Check(f"{where}: sync", "ok", detail)


def confirmed_sync_check(where: str, rows: list[dict[str, Any]],
                         again: Callable[[int], list[dict[str, Any]]],
                         runs: int = SYNC_RUNS) -> Check:
    """:func:`sync_check` of ``rows`` and, when they read a mode suspect, of fresh runs
    (``again(n)``: the rows of the n-th) until one measures and reads none suspect, up to
    ``runs`` in all."""
    seen = [rows]
    while suspects(rows) and len(seen) < runs and not _clears(seen[-1]):
        seen.append(again(len(seen) + 1))
    return sync_check(where, seen)
