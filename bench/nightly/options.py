"""What a night is asked to do, built once (``jitbench nightly``'s options, or a caller's
keywords) and frozen: the night, its repeats, its rechecks, its A/B and its shards read the
same object, and what the workers of each get (:meth:`NightOptions.runner_kw`) is said in one
place."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import Any

from jitbench.analysis.history import Thresholds
from jitbench.nightly.recheck import RECHECK_ROUNDS
from jitbench.nightly.repeats import MAX_PROCESSES


@dataclasses.dataclass(frozen=True)
class NightOptions:
    """A night's options.

    ``process_profile``: how its workers (and its rechecks') start
    (``jitbench.run.options.PROCESS_PROFILES``; None: the default, or with ``do_run`` off the
    profile the latest night was measured in, so its rechecks measure as it did).
    ``max_processes``: a series is measured in up to this many fresh processes, as many as its
    own scatter needs (``jitbench.nightly.repeats``), within ``repeat_budget`` seconds (None: as
    long as the night's own run took, so a night costs at most about twice one run).
    ``confirm_ab``: a confirmed step on a night whose software changed is measured in both
    environments side by side (``jitbench.nightly.change.side_by_side``) where the last good
    night's interpreter is still there. ``on_change``: ``ab`` (a night whose software changed
    since the last good night decides by measuring both environments side by side,
    ``jitbench.nightly.change``; a night where nothing changed reports what the history sees as
    the machine's) or ``history`` (every night decided by its history alone).
    ``change_pairs``: a change night measures exactly that many pairs (to record a corpus of
    change nights). ``pairing``: how a change night's pairs run
    (``jitbench.nightly.change_ab.pairing_for``)."""

    protocol: Any = None  # jitbench.protocol.settings.Protocol
    thresholds: Thresholds = dataclasses.field(default_factory=Thresholds)
    do_run: bool = True
    recheck: bool = True
    recheck_rounds: int = RECHECK_ROUNDS
    recheck_decisive: bool = False
    case_timeout: float = 1800.0
    command: Sequence[str] | None = None
    on_progress: Callable | None = None
    run_id: str | None = None
    process_profile: str | None = None
    confirm_ab: bool = False
    max_processes: int = MAX_PROCESSES
    repeat_budget: float | None = None
    on_change: str = "ab"
    change_pairs: int | None = None
    pairing: str = "auto"

    def runner_kw(self) -> dict[str, Any]:
        """What every run of the night passes to ``jitbench.run.runner.run`` (its own run, its
        repeats, its rechecks, a shard's run): the protocol, the time limit per group, the
        command, the progress printer and the process profile."""
        return {"protocol": self.protocol, "case_timeout": self.case_timeout,
                "command": self.command, "on_progress": self.on_progress,
                "process_profile": self.process_profile or "default"}
