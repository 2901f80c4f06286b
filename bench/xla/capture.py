"""A look inside what each mode ran: XLA's program, its cost analysis, and a profiler trace.

Called by the worker after a group's timed samples (never inside them), per mode:

- **always** (cheap): the optimized HLO of the programs the mode runs
  (``adapter.compiled_programs``), summarized into row fields by
  :func:`jitbench.xla.hlo_text.summarize`
  (``hlo_programs``, ``hlo_kernels``, ``hlo_fusions``, ``hlo_elementwise_fused``,
  ``hlo_fingerprint``, ...) and XLA's cost analysis next to the workload's formula
  (``xla_flops``, ``xla_bytes_accessed``, ``xla_flops_ratio``, ``xla_flops_mismatch``). A mode
  with no XLA program (op-by-op, TF graph) gets ``hlo_note`` saying why; a framework with no
  cost analysis ``cost_note``. ``insight_s`` is the time all this took (the always-on cost).
- **with --dump-hlo**: the HLO text, its Graphviz source and (where ``dot`` is installed) an
  SVG, in ``<run>/cases/<case_id>/``, listed in ``hlo_files`` (paths relative to the run).
- **with --profile**: a trace of :data:`PROFILE_CALLS` steady-state calls in
  ``<run>/cases/<case_id>/profile/`` (``profile_files``, ``profile_note``).

Nothing here may fail a row: every problem becomes a note.
"""

from __future__ import annotations

import dataclasses
import os
import re
import shutil
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from jitbench import launch
from jitbench.xla import hlo_text

PROFILE_CALLS = 5
DOT_TIMEOUT_S = 60.0


@dataclasses.dataclass(frozen=True)
class Options:
    """What to keep beyond the always-on facts. ``folder``: where per-case folders go
    (``<run>/cases``); required for ``dump_hlo`` and ``profile``."""

    dump_hlo: bool = False
    profile: bool = False
    folder: str | None = None

    @classmethod
    def from_message(cls, msg: Mapping[str, Any] | None) -> Options:
        known = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in (msg or {}).items() if k in known})


def _safe(name: str) -> str:
    return re.sub(r"[^\w.\-]+", "_", name)


def case_folder(options: Options, case_id: str) -> Path:
    return Path(options.folder) / _safe(case_id)


def _relative(path: Path, options: Options) -> str:
    """``path`` relative to the run folder (the parent of ``options.folder``)."""
    return os.path.relpath(path, Path(options.folder).parent)


def cost_fields(cost: Mapping[str, float] | None, formula_flops: float | None,
                note: str = "") -> dict[str, Any]:
    """XLA's cost analysis next to the workload's formula FLOPs. XLA's counts are known to be
    wrong in places, so they are a cross-check, flagged when more than
    :data:`jitbench.xla.hlo_text.FLOPS_MISMATCH` apart."""
    if cost is None:
        return {"cost_note": note or "no XLA cost analysis for this mode"}
    out: dict[str, Any] = {"xla_flops": cost["flops"],
                           "xla_transcendentals": cost["transcendentals"],
                           "xla_bytes_accessed": cost["bytes_accessed"]}
    if cost["bytes_accessed"]:
        out["xla_intensity"] = cost["flops"] / cost["bytes_accessed"]
    if formula_flops:
        ratio = cost["flops"] / formula_flops
        out["xla_flops_ratio"] = ratio
        out["xla_flops_mismatch"] = abs(ratio - 1.0) > hlo_text.FLOPS_MISMATCH
    return out


def render_svg(dot_path: Path, timeout: float = DOT_TIMEOUT_S,
               which: Callable[[str], str | None] = shutil.which) -> tuple[Path | None, str]:
    """``dot -Tsvg`` of a Graphviz file: (svg path, "") or (None, why not)."""
    exe = which("dot")
    if exe is None:
        return None, ("Graphviz `dot` is not installed: the graph is left as .dot source "
                      "(apt-get install graphviz, then `dot -Tsvg FILE.dot -o FILE.svg`)")
    svg = dot_path.with_suffix(".svg")
    done = launch.tool([exe, "-Tsvg", str(dot_path), "-o", str(svg)], timeout)
    if done is None or done.returncode != 0:
        why = "did not finish" if done is None else \
            f"exited with {done.returncode}: {done.stderr.strip()}"
        return None, f"dot failed on {dot_path.name}: {why}"[:500]
    return svg, ""


def dump(programs: Sequence[hlo_text.Program], folder: Path, options: Options) -> dict[str, Any]:
    """Write each program's HLO, graph and SVG into ``folder``; the row fields naming them."""
    folder.mkdir(parents=True, exist_ok=True)
    files, notes = [], []
    for i, prog in enumerate(programs):
        stem = f"hlo-{i}-{_safe(prog.name)[:60]}"
        text = folder / f"{stem}.txt"
        text.write_text(prog.hlo)
        dot = folder / f"{stem}.dot"
        dot.write_text(prog.dot or hlo_text.to_dot(prog.hlo, prog.name))
        files += [text, dot]
        svg, why = render_svg(dot)
        if svg is not None:
            files.append(svg)
        elif why not in notes:
            notes.append(why)
    out: dict[str, Any] = {"hlo_files": [_relative(f, options) for f in files]}
    if notes:
        out["hlo_graph_note"] = "; ".join(notes)
    return out


def programs_fields(adapter, mode: str, stages, device: str, placed, formula_flops,
                    options: Options, case_id: str) -> dict[str, Any]:
    """The always-on facts of one mode (and its HLO files with ``dump_hlo``)."""
    started = time.perf_counter()
    out: dict[str, Any] = {}
    try:
        programs = adapter.compiled_programs(stages, mode, device, placed,
                                             graph=options.dump_hlo)
    except hlo_text.NoProgram as exc:
        programs, out["hlo_note"] = [], str(exc)
    except Exception as exc:  # noqa: BLE001 -- extra information, never a failed row
        programs = []
        out["hlo_note"] = f"could not get XLA's program: {type(exc).__name__}: {exc}"[:500]
    if programs:
        out.update(hlo_text.summarize(programs))
        out.update(hlo_text.compiled_memory(programs))
        notes = sorted({p.cost_note for p in programs if p.cost is None and p.cost_note})
        out.update(cost_fields(hlo_text.sum_costs(p.cost for p in programs), formula_flops,
                               "; ".join(notes)))
        out["insight_s"] = time.perf_counter() - started  # the always-on part
        if options.dump_hlo and options.folder:
            out.update(dump(programs, case_folder(options, case_id), options))
    else:
        out["insight_s"] = time.perf_counter() - started
    return out


def profile_fields(adapter, call: Callable[[], Any], options: Options,
                   case_id: str) -> dict[str, Any]:
    """A profiler trace of a few calls of a mode that already ran (``--profile``)."""
    folder = case_folder(options, case_id) / "profile"
    try:
        written = adapter.profile(call, PROFILE_CALLS, str(folder))
    except Exception as exc:  # noqa: BLE001 -- extra information, never a failed row
        return {"profile_note": f"profiling failed: {type(exc).__name__}: {exc}"[:500]}
    out: dict[str, Any] = {"profile_files": [_relative(Path(p), options) for p in written]}
    if not written:
        out["profile_note"] = "the profiler wrote no file"
    return out


def capture(adapter, cases, stages_of: Mapping[str, Any], placed, timed, results,
            formula_flops, options: Options) -> dict[str, dict[str, Any]]:
    """Row fields per mode of a group (see the module docstring); modes that failed get the
    program facts only where the framework can still give them."""
    calls = {t.name: t.call for t in timed}
    out: dict[str, dict[str, Any]] = {}
    for case in cases:
        mode = case.mode
        try:
            fields = programs_fields(adapter, mode, stages_of[mode], case.device, placed,
                                     formula_flops, options, case.case_id)
        except Exception as exc:  # noqa: BLE001 -- e.g. HLO text we cannot read: a note
            fields = {"hlo_note": f"reading XLA's program failed: {type(exc).__name__}: "
                                  f"{exc}"[:500]}
        r = results.get(mode)
        if options.profile and options.folder and r is not None and r.ok:
            fields.update(profile_fields(adapter, calls[mode], options, case.case_id))
        out[mode] = fields
    notes = getattr(adapter, "compile_notes", None)
    if notes is not None:
        notes()  # compiles of ours above are no reason the next group's modes compiled
    return out
