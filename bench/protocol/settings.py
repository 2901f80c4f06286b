"""The measurement protocol's settings (:class:`Protocol`): one frozen object a run passes
down, records in ``meta.json`` and reads back on ``--resume``. What the settings do is
``jitbench.protocol.timing`` (the phases), ``jitbench.protocol.rounds`` (the round loop) and
``jitbench.protocol.sequential`` (the stopping rule); the many modules that only carry the
settings import this module alone."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Collection, Mapping
from typing import Any

from jitbench.errors import check_choice

# How the timed phase alternates the modes of a group. Drift (thermal, other processes) hits
# interleaved modes alike, so their ratio survives it; but a mode may also disturb the next one
# (a thread pool still spinning, evicted caches), which the interference check measures.
INTERLEAVE_SCHEMES = {
    "sample": "one sample of each mode in turn, always in the same order",
    "block": "block_samples samples of a mode in a row, then the next mode",
    "random": "one sample of each mode per round, in a new random order each round",
    "abba": "block_samples samples of a mode in a row, the order of the modes reversed every "
            "round (A B C C B A ...): each mode follows each other one as often as it "
            "precedes it, so what a mode leaves behind for the next one cancels",
}
STOP_WHEN = ("verdict", "precise")
AA_CONTROL = ("first", "every", "off")  # which groups of a worker carry the A/A control


# the shortest sample on a CPU that the nightly's histories and the change-night corpus were
# recorded with, every mode alike (no ``pipeline_time``): a night compares only runs under its
# own protocol
RECORDED_SAMPLE_MIN_TIME = 0.001

# fields added after messages and runs were recorded without them, and the value that measures
# as jitbench did before each existed: a message or a record that lacks one means that value,
# not today's default (a resumed older night, an older parent's worker)
BEFORE = {"pipeline_time": None, "min_block_time": None}


@dataclasses.dataclass(frozen=True)
class Protocol:
    min_time: float = 0.5  # seconds of valid timed samples per mode (at least)
    min_samples: int = 7
    max_samples: int = 500
    max_time: float = 30.0  # hard cap on the timed phase of one mode
    early_calls: int = 4  # calls 2..5, timed one by one
    warmup_min_calls: int = 3  # consecutive compile-free calls needed
    warmup_max_time: float = 5.0
    settle_tolerance: float = 0.25  # last warm-up call within 25% of the median of the last few
    target_overhead: float = 0.01  # timer + sync overhead per sample, as a fraction
    max_loops: int = 10_000
    # with sequential stopping, a sample lasts this long at least (the overhead rule alone
    # gave a few calls per sample and the speedup moved with that number from run to run,
    # docs/lab/interleaving-and-the-harness/index.md)
    sample_min_time: float = 0.001
    # ...and, for a mode whose calls pipeline (JAX dispatches asynchronously: a short jitted
    # call takes longer alone, synced, than its share of calls back to back), long enough that
    # the dispatch a sample's last sync leaves unhidden costs under ``target_overhead`` of it,
    # up to this long. At 1 ms for every mode a 0.5-ms jitted training step made 1-2 calls a
    # sample and read 1.2-1.4x the time of the user's own loop; at 10 ms for every mode it
    # read within 10% of the loop (docs/lab/measure-vs-loop/index.md), but a mode that does not
    # pipeline (TF on a CPU) gained nothing and a run took longer. None: every mode samples
    # ``sample_min_time`` (the nightly and the change night's A/B, as their histories and
    # corpus were recorded)
    pipeline_time: float | None = 0.01
    # on a GPU, a sample lasts this long at least (with sequential stopping): at 1 ms a 67-us
    # TF32 matmul made 6 calls a sample and read 0.82x as fast as a plain loop of the same
    # jitted function, a 1.4-ms one was timed one call a sample (latency, not throughput); at
    # 10 ms, 55 calls and within 2% of the loop (docs/lab/h200-first-runs/index.md). Kept apart
    # from sample_min_time, which recorded runs name too
    gpu_sample_min_time: float = 0.01
    # block: the scheme whose interleaved speedups agreed with the modes measured alone
    # (docs/protocol.md: TF rnn forward xla vs graph, 3 runs of each scheme)
    interleave: str = "block"  # a key of INTERLEAVE_SCHEMES
    block_samples: int = 5  # samples per turn, "block" and "abba" only
    # untimed calls of a mode each time the timed loop switches to it. With 1, the first
    # sample of each block ran 1-8% slower than the rest (TF eager <-> graph worst), which
    # made the 0-cluster auto-clustering rows read 1.01-1.02x "faster" than graph, the same
    # program; with 5 the first sample is within 0.3-0.9% and they read 1.00x (docs/protocol.md,
    # "Measurement protocol"). None: 5 with the fixed protocol; 1 with sequential stopping,
    # whose unit is a block's median, which one slow first sample does not move (3 quick runs:
    # the 0-cluster and A/A verdicts, docs/statistics.md, "What each piece costs")
    switch_calls: int | None = None
    alone_samples: int = 5  # interference check: samples per block alone (0: no check)
    # which groups of a worker run the interference check: "first" (the check of the scheme
    # once per worker, ~10% of a run's time when every group ran it) or "every"
    interference_check: str = "first"
    alone_max_time: float = 2.0  # per block; at least 3 samples are taken anyway
    interference_tolerance: float = 0.03  # a smaller shift is never called interference
    interference_z: float = 3.0  # ...nor one within z robust sigmas of the interleaved blocks
    seed: int = 0  # of the "random" order
    # the worker measures its framework's nearest JIT-off mode a second time, built afresh and
    # interleaved like a JIT mode: in each group ("every"), or in the first group it runs.
    # One group's interval is too narrow a yardstick: in 3 runs of matmul_relu tf, the 0-cluster
    # auto-clustering ratios fell inside the first group's A/A interval in 3-4 of 6 groups,
    # inside the band of all groups' A/A intervals in 6 of 6 (docs/protocol.md, "A/A control")
    aa_control: str = "every"
    # sequential stopping (jitbench.protocol.sequential): each group samples until every pair's
    # verdict is known at this precision (half-width of the interval, a fraction), or until
    # ``budget`` seconds of its timed phase are spent. None: the fixed protocol (min_time /
    # min_samples per mode), kept for comparison (``--precision off``)
    precision: float | None = 0.05
    budget: float = 6.0  # seconds of interleaved sampling per group, at most
    block_time: float = 0.25  # with sequential stopping, a block ends after 3 samples and this
    # ...or after 3 samples that lasted this long together (a block's median outvotes one slow
    # sample with 3 as with 5; long samples made 5-sample blocks cost more than their verdicts
    # needed, docs/lab/make-bench-time/index.md). None: 5 samples (block_samples) until
    # block_time, as the nightly's histories and the change corpus were recorded
    min_block_time: float | None = 0.01
    tolerance: float = 0.05  # the "same" band: within +-5% of 1.00x
    confidence: float = 0.95
    # between-build standard deviation of a speedup's log, added to the blocks' error
    # (jitbench.protocol.sequential): identical builds side by side (A/A controls and 0-cluster
    # auto-clustering rows) land further apart than their blocks say, by about this much
    # (docs/lab/where-the-variance-lives/index.md, "Builds hardly differ; time does")
    build_sigma: float = 0.01
    # when a pair has sampled enough: "verdict" (its verdict is known: the default) or
    # "precise" (its interval is within +-precision whatever the verdict: the nightly, which
    # follows each ratio from night to night rather than its verdict)
    stop_when: str = "verdict"
    # latency beside throughput (jitbench.protocol.latency): after the interleaved sampling,
    # rounds of one synced call per mode for this long, at least synced_min_rounds rounds
    synced_time: float = 0.3
    synced_min_rounds: int = 5
    synced_max_rounds: int = 200

    @classmethod
    def from_message(cls, fields: Mapping[str, Any]) -> tuple[Protocol, list[str]]:
        """The protocol a worker's message describes, and the names of the fields in it that
        this jitbench's Protocol does not know (sorted). A parent of a newer jitbench may send
        fields added after this one was released; they are left out, so the worker measures
        with its own defaults for them instead of failing every group it is sent. A field of
        :data:`BEFORE` the message lacks (an older parent's) is measured as before it existed."""
        known = {f.name for f in dataclasses.fields(cls)}
        return (cls(**{**BEFORE, **{k: v for k, v in fields.items() if k in known}}),
                sorted(set(fields) - known))

    def as_message(self, known: Collection[str] | None = None
                   ) -> tuple[dict[str, Any], list[str]]:
        """This protocol's fields as a worker's message carries them, keeping only those in
        ``known`` (the fields the worker's jitbench knows; None: all), and the names of the
        fields left out. A released jitbench's worker cannot be taught to ignore a field it
        does not know, so its parent must not send one (``jitbench.run.ab_arms``: an older
        jitbench in an A/B's arm)."""
        fields = dataclasses.asdict(self)
        if known is None:
            return fields, []
        # a field of BEFORE at its old value is how the older worker measures anyway
        return ({k: v for k, v in fields.items() if k in known},
                [k for k in fields if k not in known
                 and not (k in BEFORE and fields[k] == BEFORE[k])])

    @property
    def switches(self) -> int:
        """Untimed calls after each switch of mode (``switch_calls``, or its default)."""
        if self.switch_calls is not None:
            return self.switch_calls
        return 5 if self.precision is None else 1

    def rule(self):
        """The stopping rule of ``precision``, its error rate split over the looks a group
        can make before ``max_samples``, plus the final one at the budget."""
        from jitbench.protocol.sequential import LOOK_ROUNDS, Rule

        per_turn = self.block_samples if self.interleave in ("block", "abba") else 1
        if self.min_block_time is not None:  # a block may end after MIN_BLOCK samples
            from jitbench.protocol.sequential import MIN_BLOCK

            per_turn = min(per_turn, MIN_BLOCK)
        max_rounds = max(1, math.ceil(self.max_samples / per_turn))
        looks = sum(1 for n in LOOK_ROUNDS if n <= max_rounds) + 1
        return Rule(precision=self.precision or 0.05, tolerance=self.tolerance,
                    confidence=self.confidence, looks=looks, build_sigma=self.build_sigma,
                    stop_when=self.stop_when)

    def for_device(self, device: str) -> "Protocol":
        """The settings a group on ``device`` measures with: on a GPU a sample lasts at least
        ``gpu_sample_min_time``."""
        if device != "gpu" or self.gpu_sample_min_time <= self.sample_min_time:
            return self
        return dataclasses.replace(self, sample_min_time=self.gpu_sample_min_time)

    def __post_init__(self):
        for what, value, valid in (("interleave scheme", self.interleave, INTERLEAVE_SCHEMES),
                                   ("aa_control", self.aa_control, AA_CONTROL),
                                   ("stop_when", self.stop_when, STOP_WHEN),
                                   ("interference_check", self.interference_check,
                                    ("first", "every"))):
            check_choice(what, value, tuple(valid), ValueError)
        if self.block_samples < 1 or self.switches < 0 or self.alone_samples < 0:
            raise ValueError(f"block_samples must be >= 1, switch_calls and alone_samples "
                             f">= 0; got {self.block_samples}, {self.switch_calls}, "
                             f"{self.alone_samples}")
        if self.precision is not None and not 0 < self.precision < 1:
            raise ValueError(f"precision must be a fraction in (0, 1) or None (off); got "
                             f"{self.precision!r}")
        if not (self.budget > 0 and self.block_time > 0 and self.sample_min_time >= 0
                and self.gpu_sample_min_time >= 0
                and (self.pipeline_time is None or self.pipeline_time >= 0)
                and (self.min_block_time is None or self.min_block_time >= 0)
                and 0 < self.tolerance < 1
                and 0.5 < self.confidence < 1):
            raise ValueError(f"budget and block_time must be > 0 s, sample_min_time and "
                             f"pipeline_time and min_block_time >= 0 s, "
                             f"tolerance in (0, 1), confidence in (0.5, 1); got "
                             f"{self.budget!r}, {self.block_time!r}, {self.sample_min_time!r}, "
                             f"{self.pipeline_time!r}, {self.min_block_time!r}, "
                             f"{self.tolerance!r}, {self.confidence!r}")
