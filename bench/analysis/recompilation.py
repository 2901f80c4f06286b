"""Recompile sweeps (``sweep.jsonl``, see ``jitbench.run.sweep``) -> what each mode does per
signature.

Data only: one dict per (workload, sweep, framework, mode), the sentences are the renderer's.
"""

from __future__ import annotations

import statistics
from typing import Any, Iterable, Mapping

KEY = ("workload", "sweep", "framework", "mode")


def _median(values: list[float]) -> float | None:
    return statistics.median(values) if values else None


def per_mode(rows: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Per mode of each sweep:

    ``compiles_new`` / ``traces_new``: per new signature, in call order (e.g. ``[1, 1, 1]``);
    ``compiles_revisit`` / ``traces_revisit``: total over the calls that came back to an
    earlier signature; ``revisit_free``: those compiled and traced nothing;
    ``new_s``: median wall time of a new signature after the first (the first also pays
    one-time start-up), ``first_s`` that first call, ``revisit_s`` median of the revisits;
    ``compile_s_new``: median compile seconds of a new signature; ``errors`` and the first
    ``error``; ``skipped``: why the mode made no call (no such device here), else None;
    ``reasons``: the first few reasons the framework gave after the first call.
    """
    groups: dict[tuple, list[Mapping[str, Any]]] = {}
    for r in rows:
        groups.setdefault(tuple(r.get(k) for k in KEY), []).append(r)
    out = []
    for key, calls in groups.items():
        calls = sorted(calls, key=lambda r: r.get("step", 0))
        ok = [r for r in calls if r.get("status") == "ok"]
        new = [r for r in ok if not r.get("revisit")]
        back = [r for r in ok if r.get("revisit")]
        errors = [r for r in calls if r.get("status") not in ("ok", "skipped")]
        skipped = [r for r in calls if r.get("status") == "skipped"]
        reasons = [x for r in calls[1:] for x in r.get("reasons") or []]
        out.append(dict(
            zip(KEY, key), jit=calls[0].get("jit"),
            signatures=len({r.get("signature") for r in calls}),
            compiles_new=[int(r.get("compiles", 0)) for r in new],
            traces_new=[int(r.get("traces", 0)) for r in new],
            compiles_revisit=sum(int(r.get("compiles", 0)) for r in back),
            traces_revisit=sum(int(r.get("traces", 0)) for r in back),
            revisit_free=bool(back) and not any(r.get("compiles") or r.get("traces")
                                                for r in back),
            first_s=new[0]["wall_s"] if new else None,
            new_s=_median([r["wall_s"] for r in new[1:]]),
            compile_s_new=_median([r.get("compile_s", 0.0) for r in new[1:]]),
            revisit_s=_median([r["wall_s"] for r in back]),
            errors=len(errors), error=errors[0].get("error") if errors else None,
            skipped=skipped[0].get("error") or "skipped" if skipped else None,
            reasons=reasons[:3]))
    return out


def verdict(s: Mapping[str, Any]) -> str:
    """One line: "1 compile per new signature; revisits free" and the like."""
    if s.get("skipped") and not s["compiles_new"]:
        return f"skipped: {s['skipped'][:120]}"
    if s["errors"] and not s["compiles_new"]:
        return f"failed: {(s['error'] or '')[:120]}"
    per_new = sorted(set(s["compiles_new"][1:] or s["compiles_new"]))
    traces = sorted(set(s["traces_new"][1:] or s["traces_new"]))
    parts = []
    if per_new and per_new != [0]:
        parts.append(f"{'-'.join(map(str, per_new))} compile(s) per new signature")
    elif traces and traces != [0]:
        parts.append(f"{'-'.join(map(str, traces))} retrace(s) per new signature, no XLA "
                     f"compile")
    else:
        parts.append("no compile or trace counted")
    if s["revisit_free"]:
        parts.append("revisits free")
    elif s["compiles_revisit"] or s["traces_revisit"]:
        parts.append(f"revisits: {s['compiles_revisit']} compile(s), "
                     f"{s['traces_revisit']} trace(s)")
    if s["errors"]:
        parts.append(f"{s['errors']} call(s) failed: {(s['error'] or '')[:80]}")
    return "; ".join(parts)
