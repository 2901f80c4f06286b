"""What a run tells its caller as it goes (the CLI renders it)."""

from __future__ import annotations

import dataclasses


@dataclasses.dataclass
class Progress:
    """``done`` of ``total`` cases have a row; ``current``: what is being measured now."""

    done: int
    total: int
    current: str
    elapsed_s: float
