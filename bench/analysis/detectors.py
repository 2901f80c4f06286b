"""Regression detectors for one series of nights, replayable: each reads a series' history
night by night (causally: night t sees nights <= t only) and says on which nights it alerts.

A series is the log of a paired ratio (JIT time / its nearest JIT-off mode's time, measured
interleaved in one worker, so the machine's drift cancels) with that night's own interval
(log low, log high; NaN where the night has none). Missing nights are NaN and skipped.

Detectors (``DETECTORS``), compared on recorded nights by ``jitbench.nightly.evaluate``:

- ``quantile``: the rule the nightly used until 2026-11 without its re-measurement (which
  cannot be replayed): reference = median of the previous 10 nights, noise = robust sigma
  (floor 4%), one-sided z-test, Benjamini-Hochberg q < 0.05 across the night's series, a step
  above 10% and above the 0.8 quantile of the history.
- ``ttest``: a change point at the latest nights as Apache Otava (Hunter) tests one: the last
  one or two nights against up to 30 before them, Student's t, p < 0.001, and a mean step
  above half the threshold.
- ``paired``: the night's paired interval against the series' usual spread, on the quieter of
  the series' two quantities (:func:`judge_night`: the ratio, or the JIT time against the
  machine, :func:`jit_levels`). A night is
  *suspect* when its ratio is above every one of the previous 30 nights' ratios (all but the
  highest, from 10 nights on), the step
  over their median is above the threshold, and z = step / sqrt(sigma_history² + sigma_night²)
  > 3. It alerts when a night is suspect and so is the next (it plays the part of the
  same-context re-measurement: fresh processes on the same machine), a night *near* (the
  same with z > 2, :data:`NEAR_Z`) re-measured as a suspect is, or at once when the
  night's interval alone lies wholly above the history's highest ratio by the threshold and
  the night combines two or more fresh processes (one process's interval cannot). A
  night whose JIT-off times moved more than 10% together against the 5 nights before it
  (:func:`machine_levels`) is not judged: the machine, not the code, moved that night; it
  joins the reference once a steady night was judged after it (:func:`reference_end`).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable

import numpy as np
from scipy import special

from jitbench.protocol.timing import robust_sigma


@dataclasses.dataclass(frozen=True)
class Detector:
    """``judge(x, lo, hi, threshold, start=0) -> (p_values, candidates)``, arrays over
    nights (nights before ``start`` are history only, not judged; a rule's verdicts from
    ``start + 1`` on are the same as judging every night): a night alerts where it is a
    candidate and its p-value passes (``fdr``: Benjamini-Hochberg across
    the night's series at ``alpha``; else p < alpha)."""

    name: str
    judge: Callable[..., tuple[np.ndarray, np.ndarray]]
    alpha: float
    fdr: bool = False
    doc: str = ""
    machine_gate: bool = False  # judge(..., steady=...) skips nights of a moved machine


def previous_index(x: np.ndarray, t: int, window: int) -> np.ndarray:
    """The indices of the last ``window`` nights before ``t`` that have a value."""
    return np.nonzero(~np.isnan(x[:t]))[0][-window:]


def previous_nights(x: np.ndarray, t: int, window: int) -> np.ndarray:
    return x[previous_index(x, t, window)]


def baseline_moves(log_baselines: np.ndarray, window: int = 30) -> np.ndarray:
    """[series, nights]: how far each series' own JIT-off time moved each night against its
    median over the ``window`` nights before, less the machine's share (the median of that
    move over the series that night): log units, NaN where it cannot be told. A ratio that
    rose because its own baseline fell is no JIT slowdown (:func:`paired_night`)."""
    n = log_baselines.shape[1] if log_baselines.ndim == 2 else 0
    move = np.full(log_baselines.shape, np.nan)
    for t in range(1, n):
        for s in range(log_baselines.shape[0]):
            before = previous_nights(log_baselines[s], t, window)
            if before.size and not np.isnan(log_baselines[s, t]):
                move[s, t] = log_baselines[s, t] - float(np.median(before))
    seen = ~np.all(np.isnan(move), axis=0)
    level = np.full(n, np.nan)
    level[seen] = np.nanmedian(move[:, seen], axis=0)
    return move - level


def quantile_rule(x, lo, hi, threshold=0.10, window=10, min_previous=5, floor=0.04,
                  usual=0.8, start=0):
    n = len(x)
    p, cand = np.ones(n), np.zeros(n, bool)
    for t in range(start, n):
        prev = previous_nights(x, t, window)
        if np.isnan(x[t]) or prev.size < min_previous:
            continue
        ref = float(np.median(prev))
        noise = max(robust_sigma(prev), floor)
        z = (x[t] - ref) / noise
        p[t] = 0.5 * math.erfc(z / math.sqrt(2))  # the normal tail, as scipy's norm.sf
        cand[t] = (x[t] - ref > math.log1p(threshold)
                   and x[t] > float(np.quantile(prev, usual)))
    return p, cand


def ttest_rule(x, lo, hi, threshold=0.10, window=30, min_previous=5, start=0):
    n = len(x)
    p, cand = np.ones(n), np.zeros(n, bool)
    for t in range(start, n):
        if np.isnan(x[t]):
            continue
        best = 1.0
        for m in (1, 2):
            after = x[max(0, t - m + 1):t + 1]
            after = after[~np.isnan(after)]
            prev = previous_nights(x, t - m + 1, window)
            if after.size < m or prev.size < min_previous:
                continue
            step = after.mean() - prev.mean()
            if step <= math.log1p(threshold) / 2:
                continue
            dof = prev.size + after.size - 2
            pooled = ((prev.var(ddof=1) * (prev.size - 1)
                       + (after.var(ddof=1) * (after.size - 1) if after.size > 1 else 0.0))
                      / dof)
            se = math.sqrt(max(pooled, 1e-12) * (1 / prev.size + 1 / after.size))
            best = min(best, float(special.stdtr(dof, -step / se)))  # Student's t tail
        p[t], cand[t] = best, best < 1.0
    return p, cand


PAIRED_WINDOW = 30  # earlier nights the paired rule judges a night against
PAIRED_FLOOR = 0.015  # the least sigma (log) of one process a night: a few agreeing nights are
# not a noiseless series (the quietest pinned series scatter 0.3-1.5% a night; 1% and 1.5%
# gave the same replayed figures, 2% hid steps: docs/lab/nightly-corpora/index.md); nights of k
# fresh processes each have 1/sqrt(k) of it
POWER_Z = 1.645  # a step is "visible" to the paired rule when a night shows it 95% of the time


NEAR_Z = 2.0  # a night above the line and the history's top with z above this, short of
# z_min, is re-measured (``near``): a step at the edge of what a series can see is told by
# more processes, not missed on one night's luck (docs/nightly.md)
NIGHT_SHARE = 0.5  # the part of a series' variance between nights that more processes in
# one night do not average away: streams A and B, measured at the same time on the two
# cores, shared 12-34% of theirs (median over series; docs/lab/nightly-live-check/index.md)


def processes_noise(processes: float, history_processes: float = 1.0) -> float:
    """The sigma of a point of ``processes`` fresh processes, as a share of that of the
    history's nights (``history_processes`` each): :data:`NIGHT_SHARE` of the variance stays
    whatever the count, the rest falls as 1/k."""
    def var(k: float) -> float:
        return NIGHT_SHARE + (1 - NIGHT_SHARE) / max(1.0, k)
    return math.sqrt(var(processes) / var(history_processes))


def history_processes(processes, nights: np.ndarray) -> float:
    """The fresh processes a night of the reference ``nights`` (indices) combined, their
    median (``processes``: per night; None: one each)."""
    if processes is None or not len(nights):
        return 1.0
    return float(np.median(np.asarray(processes)[nights]))


def paired_night(x: float, lo: float, hi: float, prev: np.ndarray, threshold: float = 0.10,
                 floor: float = PAIRED_FLOOR, z_min: float = 3.0, processes: int = 1,
                 base_move: float = math.nan, usual_night: float = 0.0,
                 history_processes: float = 1.0) -> dict[str, float | bool]:
    """One night of the paired rule (log values; ``prev``: the earlier nights): reference
    (median), sigma (robust, at least ``floor``), the night's own sigma from its interval,
    z, ``suspect`` (above every earlier night but the highest from 10 nights on, a step above
    the threshold, or half of it from 10 nights on, and z > z_min), ``visible`` (the
    smallest relative step a night as precise as this one shows as suspect 95% of the
    time: what this series can police) and ``decisive`` (a suspect whose interval alone
    clears the highest earlier night by the threshold: no re-measurement needed). Only a
    night of two or more fresh processes (``processes``) can be decisive: one process's
    interval does not carry the scatter between processes, and an unchanged JAX series once
    read +250% with an interval of +-6% in one pinned process (docs/lab/nightly-corpora/index.md).
    ``base_move``: the series' own JIT-off time's move that night beyond the machine's
    (:func:`baseline_moves`); a ratio that rose while the JIT time itself (the step plus that
    move) rose by less than a quarter of the step, because its baseline fell, is no JIT
    slowdown and is not suspect (``baseline_fell``): on the 2-core host
    JAX's op-by-op baseline of a memory-bound case ran 3-4x faster for minutes in two
    processes at once while its JIT time stayed put. ``usual_night``: the earlier nights' own
    sigma (median, from their intervals): their spread already carries a usual night's own
    noise, so only the part of tonight's beyond it is added (``noise``; counted whole, a
    series' within-night interval wider than its scatter between nights hid 10% steps).
    A night of more processes than the history's (``history_processes``, e.g. a
    re-measurement's) has less of the history's spread (:func:`processes_noise`). ``near``:
    the same as suspect with z > :data:`NEAR_Z`: re-measured, not alerted on."""
    ref = float(np.median(prev))
    # the highest earlier night, or the second highest from 10 nights on: one odd night must
    # not hide a step for a whole window, a level visited twice is this machine's
    top = float(np.sort(prev)[-2] if prev.size >= 10 else prev.max())
    sigma = max(robust_sigma(prev), floor)
    night = (hi - lo) / (2 * 1.96) if not (math.isnan(lo) or math.isnan(hi)) else 0.0
    step = x - ref
    noise = math.sqrt((sigma * processes_noise(processes, history_processes)) ** 2
                      + beyond_usual(night, usual_night) ** 2)
    z = step / noise
    # from 10 nights on, half the threshold: a step *of* the threshold must be seen, so the
    # line it is judged against lies below it (at the threshold itself a 10% step is a coin
    # toss). Before, the sigma of a few nights is too uncertain for that: with half the
    # threshold, z > 3 let unchanged series alert on 7 synthetic nights of 2.8% noise and on
    # the 6th live night (sigma 3.1% from 5 nights, for a series whose spread over 40 nights
    # is ~20%); docs/nightly.md
    line = math.log1p(threshold) / (2 if prev.size >= 10 else 1)
    # the JIT time's own move beyond the machine: the ratio's step plus the baseline's move;
    # under a quarter of the step, the step is the baseline's (a real slowdown that a faster
    # night of the whole group half hid still counts)
    fell = bool(not math.isnan(base_move) and step + base_move < step / 4)
    above = bool(x > top and step > line and not fell)
    suspect, near = above and z > z_min, above and z > min(NEAR_Z, z_min)
    decisive = bool(suspect and processes >= 2 and not math.isnan(lo)
                    and lo > top + math.log1p(threshold))
    # the smallest step a night like this one would show as suspect 19 times in 20: above
    # the line, z_min + 1.645 noises up, and 1.645 noises above the highest earlier night
    visible = math.expm1(max(line, (z_min + POWER_Z) * noise, top - ref + POWER_Z * noise))
    return {"reference": ref, "top": top, "sigma": sigma, "night_sigma": night, "z": z,
            "noise": noise,
            "suspect": suspect, "near": near, "decisive": decisive, "visible": visible,
            "baseline_fell": fell}


MACHINE_WINDOW = 5  # nights a night's machine speed is compared with
MACHINE_BOUND = 0.10  # a night whose JIT-off times moved more than this, all together, against
# those nights ran on a disturbed or another machine: ~3 robust sigmas of this host's
# night-to-night machine level (3.2%, docs/nightly.md)


def machine_levels(log_baselines: np.ndarray, window: int = MACHINE_WINDOW) -> np.ndarray:
    """Per night, how the machine ran: the median over series of the night's log JIT-off
    median minus the median of the same series' previous ``window`` nights (NaN on the first
    night and where no series has both). ``log_baselines``: [series, nights], NaN where
    missing. A JIT regression does not move JIT-off times; a neighbour, another VM host or a
    disturbed night moves all of them together, and the paired ratios with them (JIT modes
    slowed more than JIT-off ones on this host's disturbed nights)."""
    n = log_baselines.shape[1] if log_baselines.ndim == 2 else 0
    out = np.full(n, np.nan)
    for t in range(1, n):
        before = log_baselines[:, max(0, t - window):t]
        seen = ~np.all(np.isnan(before), axis=1) & ~np.isnan(log_baselines[:, t])
        if seen.any():
            out[t] = float(np.median(log_baselines[seen, t]
                                     - np.nanmedian(before[seen], axis=1)))
    return out


def steady_nights(levels: np.ndarray, bound: float = MACHINE_BOUND) -> np.ndarray:
    """True where the machine ran within ``bound`` of its recent level (or cannot be told)."""
    return ~(np.abs(np.nan_to_num(np.asarray(levels, float), nan=0.0)) > math.log1p(bound))


def reference_end(t: int, steady=None) -> int:
    """The nights before this index are night ``t``'s reference: the nights a moved machine
    left unjudged just before ``t`` (``steady`` False since the last steady night) wait, so
    that a step which began on them is still a step to the next steady night rather than part
    of its reference (with them in it, a 30% step that began on two disturbed nights was
    never found). Once a steady night was judged after them they count as usual."""
    k = t
    while steady is not None and k > 0 and not steady[k - 1]:
        k -= 1
    return k


def jit_levels(log_jit: np.ndarray, log_base: np.ndarray) -> np.ndarray:
    """[series, nights]: each JIT mode's own log time less the machine's level that night, the
    median over the series of their JIT-off log time against the series' first night (a
    regression of every JIT mode at once leaves the JIT-off modes, and so the level, where they
    were). A series' second quantity beside its ratio: where its JIT-off baseline has states
    of its own (op-by-op JAX, a memory-bound TF graph) the ratio carries them and this does
    not (:func:`judge_night`)."""
    if log_base.size == 0:
        return np.full(log_jit.shape, np.nan)
    first = np.array([row[~np.isnan(row)][0] if (~np.isnan(row)).any() else np.nan
                      for row in log_base])
    rel = log_base - first[:, None]
    seen = ~np.all(np.isnan(rel), axis=0)
    level = np.full(log_base.shape[1], np.nan)
    level[seen] = np.nanmedian(rel[:, seen], axis=0)
    return log_jit - level[None, :]


def usual_night_sigma(lo: np.ndarray, hi: np.ndarray) -> float:
    """The median of nights' own sigmas (log units) from their 95% intervals (``lo``, ``hi``:
    log bounds, NaN where a night has none); 0 without any."""
    width = np.asarray(hi, float) - np.asarray(lo, float)
    width = width[~np.isnan(width)]
    return float(np.median(width)) / (2 * 1.96) if width.size else 0.0


def beyond_usual(night: float, usual: float) -> float:
    """What a night's own sigma has beyond the usual one of its earlier nights, whose spread
    already carries that much (:func:`paired_night`)."""
    return math.sqrt(max(0.0, night ** 2 - usual ** 2))


def judge_night(t: int, where: np.ndarray, x, lo, hi, alt=None, threshold=0.10,
                floor=PAIRED_FLOOR, z_min=3.0, processes: int = 1,
                base_move: float = math.nan, history_processes: float = 1.0
                ) -> dict[str, float | bool | str]:
    """Night ``t`` of a series against the nights ``where`` (indices), under
    :func:`paired_night`, on the quieter of its two quantities over those nights: the paired
    ratio ``x`` (with the night's interval ``lo``/``hi`` and the baseline check), or ``alt``
    (:func:`jit_levels`: the JIT time against the machine; no interval of its own: decisive
    only where the ratio's night is) when its robust spread there is smaller. ``quantity``
    says which. A step of the JIT time whose ratio rose by less than a quarter of it while
    its own baseline rose by more than half of it is not suspect (``group_moved``): both
    modes of the group moved, which the ratio cancels (a TF float64 MMD group ran 42%
    slower, JIT and JIT-off alike, on 3 of 12 pinned nights)."""
    prev = x[where]
    usual = usual_night_sigma(lo[where], hi[where])
    if alt is not None and not np.isnan(alt[t]):
        other = alt[where]
        other = other[~np.isnan(other)]
        if other.size >= min(prev.size, 5) and other.size >= 2 and \
                robust_sigma(other) < robust_sigma(prev[~np.isnan(prev)]):
            j = paired_night(float(alt[t]), math.nan, math.nan, other, threshold, floor,
                             z_min, processes, history_processes=history_processes)
            step = float(alt[t] - j["reference"])
            ratio_step = float(x[t] - np.median(prev[~np.isnan(prev)]))
            moved = bool(j["suspect"] and ratio_step < step / 4
                         and not math.isnan(base_move) and base_move > step / 2)
            # decisive where the ratio's own interval is: the JIT time has none
            ratio = paired_night(x[t], lo[t], hi[t], prev, threshold, floor, z_min, processes,
                                 base_move, usual, history_processes)
            j = {**j, "suspect": j["suspect"] and not moved, "near": j["near"] and not moved,
                 "decisive": bool(j["suspect"] and not moved and ratio["decisive"])}
            return {**j, "quantity": "jit_time", "group_moved": moved}
    j = paired_night(x[t], lo[t], hi[t], prev, threshold, floor, z_min, processes, base_move,
                     usual, history_processes)
    return {**j, "quantity": "jit_ratio", "group_moved": False}


def paired_rule(x, lo, hi, threshold=0.10, window=PAIRED_WINDOW, min_previous=5,
                floor=PAIRED_FLOOR, z_min=3.0, steady=None, start=0, processes=None,
                base_move=None, alt=None):
    """``steady``: per night, whether the machine ran as usual (:func:`steady_nights`); a
    night that did not is not judged, and is left out of the reference until a steady night
    was judged after it (:func:`reference_end`). ``processes``: per night, the fresh
    processes its point combines (None: one each). ``base_move``: per night, the series'
    own JIT-off move beyond the machine's (:func:`baseline_moves`; None: not checked).
    ``alt``: per night, the JIT time against the machine (:func:`jit_levels`), judged
    instead of the ratio where it is the quieter (:func:`judge_night`; None: the ratio)."""
    n = len(x)
    alert = np.zeros(n, bool)
    suspect_before, before = False, np.zeros(0, int)
    for t in range(start, n):
        where = previous_index(x, reference_end(t, steady), window)
        if np.isnan(x[t]) or where.size < min_previous:
            suspect_before = False
            continue
        k = 1 if processes is None else int(processes[t])
        moved = math.nan if base_move is None else float(base_move[t])
        j = judge_night(t, where, x, lo, hi, alt, threshold, floor, z_min, k, moved,
                        history_processes(processes, where))
        if suspect_before:  # the re-measurement of last night's suspect: judged as it would
            # be that night, against the nights before the suspect one
            alert[t] = before.size >= min_previous and judge_night(
                t, before, x, lo, hi, alt, threshold, floor, z_min, k, moved,
                history_processes(processes, before))["suspect"]
        alert[t] |= j["decisive"]
        if steady is not None and not steady[t]:  # not judged; the next steady night is,
            alert[t] = suspect_before = False     # on its own
            continue
        suspect_before, before = j["near"] and not j["decisive"], where  # re-measured
    return np.where(alert, 0.0, 1.0), alert


DETECTORS = {d.name: d for d in (
    Detector("quantile", quantile_rule, alpha=0.05, fdr=True,
             doc="until 2026-11 (without its re-measurement): z over 10 nights, BH q<0.05, "
                 "step > threshold, above the 0.8 quantile"),
    Detector("ttest", ttest_rule, alpha=0.001,
             doc="change point at the last 1-2 nights, Student's t against up to 30 before, "
                 "p<0.001 (Otava's default), step > threshold/2"),
    Detector("paired", paired_rule, alpha=0.5, machine_gate=True,
             doc="on the quieter of a series' ratio and its JIT time against the machine: "
                 "two consecutive nights above the history's maximum, a step above the "
                 "threshold (half of it from 10 nights on) with z>3 (history spread and the "
                 "night's own interval; z>2 on the first of them), or one night of 2+ "
                 "processes whose interval clears the maximum by the threshold; no "
                 "judgement on a night whose JIT-off times moved >10% together against the "
                 "5 nights before"),
)}
