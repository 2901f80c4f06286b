"""What an interpreter has installed: every distribution (name and version) as an import would
find it, and which of them each framework's dependencies reach. A worker reports both in its
hello (``jitbench.run.worker``), a run keeps them in its meta (``distributions``, ``reach``),
and a night's change (``jitbench.nightly.change``) places a changed distribution on the
frameworks that can see it.

Names are normalised as pip compares them (PEP 503: lower case, runs of ``-_.`` as ``-``).
Where one name is installed twice (a ``PYTHONPATH`` folder over site-packages), the first on
``sys.path`` counts: it is the one ``import`` loads.
"""

from __future__ import annotations

import re
from importlib import metadata
from typing import Iterable

# the distribution a framework's tree of dependencies starts from (the first installed)
ROOTS = {"tf": ("tensorflow", "tensorflow-cpu", "tf-nightly", "tensorflow-macos"),
         "jax": ("jax",)}


def normalise(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _installed() -> dict[str, metadata.Distribution]:
    out: dict[str, metadata.Distribution] = {}
    for dist in metadata.distributions():  # in sys.path order: the first one wins
        name = dist.metadata.get("Name")
        if name:
            out.setdefault(normalise(name), dist)
    return out


def distributions() -> dict[str, str]:
    """{normalised name: version} of every installed distribution, sorted by name."""
    return {name: dist.version for name, dist in sorted(_installed().items())}


# an extra's requirement is followed when it names one of these: what ``jax[cuda12]`` and
# ``tensorflow[and-cuda]`` install (the CUDA plugin, its PJRT, NVIDIA's wheels, a TPU
# runtime), never a framework's test or docs extras (pytest, matplotlib, ...)
_RUNTIME_EXTRA = re.compile(r"^(jax-.*|jaxlib.*|nvidia-.*|libtpu.*|tensorrt.*|tensorflow-.*)$")


def _requirements(dist: metadata.Distribution, installed: Iterable[str]) -> set[str]:
    """The installed distributions ``dist`` requires: its own requirements (their environment
    markers evaluated here) and the runtime ones of its extras (:data:`_RUNTIME_EXTRA`)."""
    from packaging.requirements import InvalidRequirement, Requirement

    extras = list(dist.metadata.get_all("Provides-Extra") or [])
    out = set()
    for text in dist.requires or []:
        try:
            req = Requirement(text)
        except InvalidRequirement:
            continue
        name = normalise(req.name)
        if name not in installed:
            continue
        if req.marker is None or req.marker.evaluate({"extra": ""}):
            out.add(name)
        elif _RUNTIME_EXTRA.match(name) and any(req.marker.evaluate({"extra": e})
                                                for e in extras):
            out.add(name)
    return out


def reach(installed: dict[str, metadata.Distribution] | None = None) -> dict[str, list[str]]:
    """{framework: every installed distribution its root depends on, directly or not, the
    root included} for each framework whose root is installed."""
    installed = _installed() if installed is None else installed
    out = {}
    for framework, roots in ROOTS.items():
        root = next((r for r in roots if r in installed), None)
        if root is None:
            continue
        seen, todo = {root}, [root]
        while todo:
            for name in _requirements(installed[todo.pop()], installed):
                if name not in seen:
                    seen.add(name)
                    todo.append(name)
        out[framework] = sorted(seen)
    return out


def facts() -> dict[str, object]:
    """What a worker reports of its interpreter: ``distributions`` and ``reach``."""
    installed = _installed()
    return {"distributions": {n: d.version for n, d in sorted(installed.items())},
            "reach": reach(installed)}
