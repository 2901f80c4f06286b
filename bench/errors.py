"""User-facing errors, warnings and interruptions; caught only at the CLI boundary."""

from __future__ import annotations

import signal


class UserError(Exception):
    """Something the user typed or pointed at is wrong. The message names the bad value and,
    where there is a fixed set, the valid ones. The CLI prints it as one line, exit code 2."""


def check_choice(what: str, value, valid, error: type[Exception] = UserError) -> None:
    """``error("unknown <what> <value>; valid: a, b")`` unless ``value`` is one of ``valid``."""
    if value not in valid:
        raise error(f"unknown {what} {value!r}; valid: {', '.join(map(str, valid))}")


class DataWarning(UserWarning):
    """A results file was readable but not intact (e.g. a truncated last line was skipped).
    The CLI prints it as one ``jitbench: warning:`` line."""


class Interrupted(KeyboardInterrupt):
    """The run was stopped by a signal (Ctrl-C, SIGTERM, SIGHUP). Every completed row is kept;
    ``run_dir`` is the folder to pass to ``jitbench run --resume``.

    A KeyboardInterrupt, so code that only knows about Ctrl-C still stops."""

    def __init__(self, signum: int, run_dir=None, recorded: int | None = None,
                 total: int | None = None, resume: str | None = "jitbench run --resume"):
        super().__init__(signum)
        self.resume = resume
        self.signum = signum
        self.run_dir = run_dir
        self.recorded = recorded
        self.total = total

    @property
    def signal_name(self) -> str:
        try:
            return signal.Signals(self.signum).name
        except ValueError:
            return f"signal {self.signum}"

    @property
    def exit_code(self) -> int:
        """The shell's convention for a process ended by a signal: 128 + its number."""
        return 128 + self.signum


# the exit when a judgement was left undecided (`jitbench nightly`: a change night's A/B left a
# touched case neither slower nor the same, a step of --threshold not ruled out; `jitbench
# releases`: a step that measured no case on both sides): not 0, so that an undecided answer
# is never read as a pass; not 1, so that CI can tell it apart from a regression
UNDECIDED_EXIT = 3
