"""Nights of two processes from two streams of one-process nights recorded at the same time, one
stream per core: night i of the first stream gets night i of the second as its further process
(``<night>/repeats/<night>-p2``, what ``jitbench nightly`` writes when it measures a second
process beside its run), in a new results folder of symbolic links. ``jitbench nightly --corpus``
of that folder reads each series' point as the two processes' combination.

    python docs/lab/nightly-corpora/pair_nights.py A/results B/results AB/results

With one stream, ``--consecutive``: night 2i-1 of the stream gets night 2i as its second process
(two processes one after the other on the same core, what ``--max-processes 2`` measures now),
half as many nights:

    python docs/lab/nightly-corpora/pair_nights.py --consecutive A/results AA/results
"""

from __future__ import annotations

import sys
from pathlib import Path

from jitbench.nightly.runs import run_dirs

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # docs/lab: labkit
from labkit import usage  # noqa: E402

usage(__doc__)


def pair(first: Path, second: Path, out: Path) -> int:
    a, b = run_dirs(first), run_dirs(second)
    n = min(len(a), len(b))
    out.mkdir(parents=True, exist_ok=True)
    for night, other in zip(a[:n], b[:n]):
        dest = out / night.name
        dest.mkdir(exist_ok=True)
        for item in night.iterdir():
            if item.name not in ("repeats", "rechecks") and not (dest / item.name).exists():
                (dest / item.name).symlink_to(item.resolve())
        (dest / "repeats").mkdir(exist_ok=True)
        link = dest / "repeats" / f"{night.name}-p2"
        if not link.exists():
            link.symlink_to(other.resolve())
    return n


def consecutive(stream: Path, out: Path) -> int:
    nights = run_dirs(stream)
    tmp_a, tmp_b = out.parent / f".{out.name}-odd", out.parent / f".{out.name}-even"
    for tmp, part in ((tmp_a, nights[0::2]), (tmp_b, nights[1::2])):
        tmp.mkdir(parents=True, exist_ok=True)
        for night in part:
            if not (tmp / night.name).exists():
                (tmp / night.name).symlink_to(night.resolve())
    return pair(tmp_a, tmp_b, out)


if __name__ == "__main__":
    if sys.argv[1] == "--consecutive":
        stream, out = map(Path, sys.argv[2:4])
        print(f"{consecutive(stream, out)} nights of two consecutive processes in {out}")
    else:
        first, second, out = map(Path, sys.argv[1:4])
        print(f"{pair(first, second, out)} nights of two processes in {out}")
