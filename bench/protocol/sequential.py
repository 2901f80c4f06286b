"""Stop when the verdict is known: block-level speedups, looked at a few spaced times.

The unit. Samples of one block (consecutive samples of one mode) share the machine's state of
those seconds, so they are not independent; blocks of two modes measured next to each other
share it too, and their ratio cancels it. So each block of a JIT-on mode gives one unit: the
log of its median over the geometric mean of the medians of the baseline's blocks just before
and just after it (drift that is linear over the three blocks cancels). The pair's speedup is
exp(mean unit); its interval is Student's t on the units, with a standard error that allows for
their correlation (:func:`standard_error`). A block's median, not its mean, so
one sample slowed by the switch from another mode does not move it.

Builds. Two builds of the same program, measured side by side, differ by more than their
blocks say (docs/statistics.md, "Where the variance lives"): the interval adds that
between-build standard deviation (``Rule.build_sigma``, on the log scale) to the blocks'
standard error, so it is as wide as a second build of the same group would find it.

The looks. Sampling goes on in rounds (a block of every live mode); the pairs are judged only
after rounds in :data:`LOOK_ROUNDS` (geometrically spaced) and when the budget runs out, each
look at the error rate ``(1 - confidence) / looks`` (Bonferroni over the looks a group can
make), so that looking early does not turn noise into verdicts.

The verdicts, from the interval [lo, hi] of a speedup and the tolerance band
[1 / (1 + tol), 1 + tol] around 1.00x:

- ``same``: the interval lies inside the band;
- ``faster`` / ``slower``: it lies above / below 1.00x and not inside the band;
- otherwise undecided: ``unresolved`` once the budget is spent.

A pair stops at a look where it is decided and its interval is either narrower than
``precision`` (half-width as a fraction) or clear of the band altogether; or where more blocks
can no longer narrow it much (their standard error is under half the between-build one), if
decided or if not even endless blocks would decide it. The A/A
control is judged at the same looks and stops as a real pair would, but never keeps a group
sampling: it is measured the way the real pairs are, for no longer than they are.

Blocks. A block is ``block_samples`` samples of a mode, or fewer (at least :data:`MIN_BLOCK`)
once it has lasted ``block_time``: slow modes then give units as often as fast ones; or
:data:`MIN_BLOCK` samples once they lasted ``min_block_time`` (where set; not a pipelining
mode's, whose first samples after a switch still fill its pipeline): a block of long samples
costs no more than its median needs. A mode
whose :data:`MIN_BLOCK` calls would outlast ``block_time`` (:func:`long_calls`) takes, after
its first block, as few samples as fill ``block_time`` (one for a call that long), and no
untimed call after a switch: what the previous mode left running is a small share of such a
call, and the switch call and two more samples made each of its units cost four calls, so a
large speedup over a slow op-by-op call was left unresolved (docs/lab/where-the-variance-lives/index.md,
"Slow calls").
"""

from __future__ import annotations

import dataclasses
import math
import statistics
from typing import Any, Sequence

from jitbench.protocol.rounds import END_BLOCK, MORE, Stopping
from jitbench.protocol.samples import ModeResult

# ``p``: a jitbench.protocol.timing.Protocol (not imported: timing imports this module)
Protocol = Any

# rounds after which the pairs are judged: 4, 8, 16, 32, 64, 128, ... (doubling: few looks,
# so each keeps most of the error rate). Not from 3: on the simulated host, identical streams
# were then called faster or slower in 5.6% of 1000 pairs, against 4.1% (tests/test_sequential)
LOOK_ROUNDS = tuple(4 * 2 ** k for k in range(12))
MIN_UNITS = 3  # an interval needs at least this many blocks of the JIT mode
HAC_MIN_UNITS = 8  # from this many units on, their autocorrelation widens the error
# a block has at least this many samples (its median then ignores one slow first sample) and
# ends there once it has lasted ``Protocol.block_time``: 5-sample blocks of a mode of
# quarter-second calls made 4 rounds outlast the budget (docs/lab/where-the-variance-lives/index.md)
MIN_BLOCK = 3
VERDICTS = ("faster", "slower", "same", "unresolved")


@dataclasses.dataclass(frozen=True)
class Rule:
    precision: float = 0.05  # stop when the interval's half-width is below this (fraction)
    tolerance: float = 0.05  # "same" band: within +-tolerance of 1.00x
    confidence: float = 0.95  # over all looks together
    looks: int = 8  # how many looks the error rate is split over
    build_sigma: float = 0.0  # between-build standard deviation of a log ratio
    # "verdict": stop once the verdict is known (precise enough, or clear of the band);
    # "precise": only once the interval is within +-precision (a nightly follows the ratio)
    stop_when: str = "verdict"

    def alpha(self) -> float:
        return (1.0 - self.confidence) / max(1, self.looks)


@dataclasses.dataclass
class Estimate:
    speedup: float
    ci_low: float
    ci_high: float
    n_units: int
    verdict: str | None  # None: not decided at this look
    se_blocks: float = 0.0  # standard error of the mean unit (log scale), blocks only

    @property
    def half_width(self) -> float:
        """Relative half-width of the interval: sqrt(hi / lo) - 1."""
        if not (self.ci_low > 0 and math.isfinite(self.ci_high)):
            return math.inf
        return math.sqrt(self.ci_high / self.ci_low) - 1.0


def units(blocks: Sequence[tuple[int, str, float]], jit: str, baseline: str) -> list[float]:
    """Log ratios log(baseline / jit), one per block of ``jit`` that has a baseline block
    before or after it. ``blocks``: (sequence number, mode, block median) in time order."""
    base = [(s, m) for s, name, m in blocks if name == baseline and m > 0]
    out = []
    for seq, name, med in blocks:
        if name != jit or med <= 0:
            continue
        before = [m for s, m in base if s < seq]
        after = [m for s, m in base if s > seq]
        near = ([before[-1]] if before else []) + ([after[0]] if after else [])
        if near:
            out.append(sum(math.log(m) for m in near) / len(near) - math.log(med))
    return out


def standard_error(us: Sequence[float]) -> float:
    """Standard error of the mean of the units ``us``, robust to their autocorrelation: the
    larger of the plain one and the one that adds their autocovariances up to floor(n^(1/4))
    lags (a truncated kernel, every lag weighted fully: the correlation a shared block makes
    is at lag 1, which Bartlett's weights would shrink), from :data:`HAC_MIN_UNITS` units on.
    Neighbouring units share a baseline block (the one between them), and a JIT mode's ratio
    to a noisier baseline drifts: units of JAX jit/aot against op-by-op eager correlated from
    one to the next and the plain error was too small for them
    (docs/lab/where-the-variance-lives/index.md, "Are block units independent?"). Never narrower than the
    plain
    error: a negative correlation estimated from a few units is noise, not precision."""
    n = len(us)
    mean = sum(us) / n
    d = [u - mean for u in us]
    squares = sum(x * x for x in d)
    plain = squares / (n - 1) / n
    if n < HAC_MIN_UNITS:
        return math.sqrt(plain)
    lags = int(n ** 0.25)
    v = squares / n
    for k in range(1, lags + 1):
        v += 2.0 * sum(d[i] * d[i + k] for i in range(n - k)) / n
    return math.sqrt(max(plain, v / (n - 1)))


def _t_quantile(p: float, df: int) -> float:
    from scipy.special import stdtrit  # Student's t quantile; scipy.stats imports far more

    return float(stdtrit(df, p))


def estimate(us: Sequence[float], rule: Rule, alpha: float | None = None) -> Estimate | None:
    """Speedup, interval and verdict from the units ``us`` (None with too few)."""
    n = len(us)
    if n < MIN_UNITS:
        return None
    mean = sum(us) / n
    a = rule.alpha() if alpha is None else alpha
    se = standard_error(us)
    half = _t_quantile(1 - a / 2, n - 1) * math.sqrt(se ** 2 + rule.build_sigma ** 2)
    lo, hi = math.exp(mean - half), math.exp(mean + half)
    return Estimate(math.exp(mean), lo, hi, n, judge(lo, hi, rule.tolerance), se)


def judge(lo: float, hi: float, tolerance: float) -> str | None:
    band_lo, band_hi = 1.0 / (1.0 + tolerance), 1.0 + tolerance
    if band_lo <= lo and hi <= band_hi:
        return "same"
    if lo > 1.0:
        return "faster"
    if hi < 1.0:
        return "slower"
    return None


def settled(e: Estimate | None, rule: Rule) -> bool:
    """Stop sampling this pair: decided, and precise enough or clear of the band."""
    if e is None:
        return False
    # the builds, not the blocks, set the width now: more blocks narrow it little
    small = rule.build_sigma > 0 and e.se_blocks <= rule.build_sigma / 2
    if e.verdict is None:  # stop only if no number of blocks could decide it
        return small and judge(*_limit(e, rule), rule.tolerance) is None
    if small:
        return True
    if rule.stop_when == "precise":
        return e.half_width <= rule.precision
    band_lo, band_hi = 1.0 / (1.0 + rule.tolerance), 1.0 + rule.tolerance
    return e.half_width <= rule.precision or e.ci_low > band_hi or e.ci_high < band_lo


def _limit(e: Estimate, rule: Rule) -> tuple[float, float]:
    """The interval that endless blocks would leave: the between-build error alone, at the
    normal quantile."""
    from scipy.special import ndtri

    half = float(ndtri(1 - rule.alpha() / 2)) * rule.build_sigma
    return e.speedup * math.exp(-half), e.speedup * math.exp(half)


def final(e: Estimate | None) -> str:
    """The verdict when sampling ends: the decided one, or ``unresolved``."""
    return e.verdict if e is not None and e.verdict else "unresolved"


def long_calls(r: ModeResult, block_time: float) -> bool:
    """:data:`MIN_BLOCK` calls of this mode would outlast ``block_time``: judged on its
    latest samples, or before any on its first warm-up calls."""
    recent = (r.samples + r.compiling_samples)[-MIN_BLOCK:] or r.early_calls_s
    return bool(recent) and statistics.median(recent) * r.loops * MIN_BLOCK > block_time


def _min_done(r: ModeResult, p: Protocol) -> bool:
    """A mode in no open pair stops after ``min_samples`` (or when it keeps compiling); one
    of long calls (:func:`long_calls`) after as many as the first look has."""
    least = min(p.min_samples, LOOK_ROUNDS[0]) if long_calls(r, p.block_time) else p.min_samples
    return (len(r.samples) >= least or len(r.compiling_samples) >= least
            or len(r.samples) + len(r.compiling_samples) >= p.max_samples)


class SequentialStop(Stopping):
    """Sequential stopping (``p.precision`` set), for :func:`jitbench.protocol.rounds.run_rounds`:
    a block ends after :data:`MIN_BLOCK` samples once it has lasted ``p.block_time`` (a slow
    mode's after one, with no untimed call after a switch: :func:`long_calls`); the pairs are
    judged at the looks; a mode stops when no open pair needs it and it has ``min_samples``;
    the group stops when every mode has stopped or ``p.budget`` seconds are spent. Each JIT
    mode's verdicts go to its result's ``verdicts``. ``controls``: pairs judged the same way
    that keep no mode sampling (the A/A control); ``others``: pairs judged once, from every
    block, when sampling ends (a JIT mode against a JIT-off mode other than its nearest: its
    interval from the same units as the real pairs'), after the real pairs in ``verdicts``."""

    def __init__(self, p: Protocol, results: dict[str, ModeResult],
                 pairs: Sequence[tuple[str, str]], controls: Sequence[tuple[str, str]] = (),
                 others: Sequence[tuple[str, str]] = ()):
        self.p, self.results, self.rule = p, results, p.rule()
        names = {name for name, r in results.items() if r.ok}
        self.open_pairs = [(j, b) for j, b in pairs if j in names and b in names and j != b]
        self.open_controls = [(j, b) for j, b in controls if j in names and b in names]
        self.judged = self.open_pairs + self.open_controls
        self.others = [(j, b) for j, b in others if j in names and b in names and j != b
                       and (j, b) not in self.judged]
        self.estimates: dict[tuple[str, str], Estimate | None] = {}
        self.taken_at: dict[tuple[str, str], tuple[int, float]] = {}
        self.blocks: list[tuple[int, str, float]] = []
        self.least, self.start = MIN_BLOCK, 0.0

    def begin(self, live, clock) -> None:
        self.start = clock()

    def begin_turn(self, t, r) -> bool:
        # its first block has MIN_BLOCK samples all the same: a row's median and spread need
        # a few, and a group may end at its budget after one round
        slow = long_calls(r, self.p.block_time)
        first = len(r.samples) + len(r.compiling_samples) < MIN_BLOCK
        self.least = 1 if slow and not first else MIN_BLOCK
        return not slow

    def block_start(self, clock) -> float:
        return clock()

    def after_sample(self, t, r, k, sample_s, began, clock) -> str:
        # a slow mode's block ends sooner (MIN_BLOCK); so does one of MIN_BLOCK long samples,
        # unless they are a pipelining mode's (probed: r.pipeline_gap_s), whose first samples
        # after a switch still fill its pipeline: 3-sample blocks read a JAX MLP step 1.12x
        # its loop (4 processes), 5-sample ones within 5% (docs/lab/make-bench-time/index.md)
        lasted = clock() - began
        if k + 1 >= self.least and lasted >= self.p.block_time:
            return END_BLOCK
        enough = self.p.min_block_time if r.pipeline_gap_s is None else None
        return END_BLOCK if enough is not None and k + 1 >= MIN_BLOCK and lasted >= enough \
            else MORE

    def after_block(self, t, r, n0, c0) -> None:
        # a sample that compiled counts in its block's median too: one is outvoted, and a mode
        # that compiles on every call (its steady state) still gets units
        taken = r.samples[n0:] + r.compiling_samples[c0:]
        if taken:
            self.blocks.append((len(self.blocks), t.name, statistics.median(taken)))

    def failed(self, t) -> None:
        self.open_pairs[:] = [pr for pr in self.open_pairs if t.name not in pr]

    def _look(self, rounds: int, clock) -> None:
        for still in (self.open_pairs, self.open_controls):
            for pair in list(still):
                e = estimate(units(self.blocks, *pair), self.rule)
                self.estimates[pair], self.taken_at[pair] = e, (rounds, clock() - self.start)
                if settled(e, self.rule):
                    still.remove(pair)

    def after_round(self, rounds, live, clock):
        p, results = self.p, self.results
        spent = clock() - self.start >= p.budget
        capped = any(len(results[t.name].samples) + len(results[t.name].compiling_samples)
                     >= p.max_samples for t in live)
        if rounds in LOOK_ROUNDS or spent or capped:
            self._look(rounds, clock)
        needed = {name for pair in self.open_pairs for name in pair}
        if self.open_pairs:  # a control is sampled while it and a real pair are both open
            needed |= {name for pair in self.open_controls for name in pair}
        live = [t for t in live if t.name in needed or not _min_done(results[t.name], p)]
        return live, spent or capped

    def finish(self, rounds, clock) -> None:
        results = self.results
        for jit, base in self.judged:
            if not (results[jit].ok and results[base].ok):
                continue
            if (jit, base) in self.open_controls:  # still open: judged on every block it took
                self.estimates[(jit, base)] = estimate(units(self.blocks, jit, base), self.rule)
                self.taken_at[(jit, base)] = (rounds, clock() - self.start)
            e = self.estimates.get((jit, base))
            n_rounds, took = self.taken_at.get((jit, base), (rounds, clock() - self.start))
            results[jit].verdicts[base] = {
                "verdict": final(e), "speedup": e.speedup if e else None,
                "ci_low": e.ci_low if e else None, "ci_high": e.ci_high if e else None,
                "blocks": e.n_units if e else len(units(self.blocks, jit, base)),
                "rounds": n_rounds, "s": round(took, 4)}
        for jit, base in self.others:  # after the real pairs: a row's verdict is its nearest's
            if not (results[jit].ok and results[base].ok):
                continue
            e = estimate(units(self.blocks, jit, base), self.rule)
            if e is not None:  # too few units: the analysis says how it bracketed the pair
                results[jit].verdicts[base] = {
                    "verdict": final(e), "speedup": e.speedup, "ci_low": e.ci_low,
                    "ci_high": e.ci_high, "blocks": e.n_units, "rounds": rounds,
                    "s": round(clock() - self.start, 4)}
