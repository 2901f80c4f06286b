"""The report's sections. Each module in this package registers one ``Section``; the page
shows them in ``order``. A new section is one new module here plus its template block
``bench/report/templates/section_<name>.html.j2``::

    from jitbench.report.sections import Section, register

    def _data(run, images):          # run: jitbench.report.facts.RunFacts
        return {"n": len(run.df)}    # the block reads it as d.n

    register(Section(name="rowcount", title="Row count", order=45, data=_data))

A section that cannot say anything without some part of a run declares it in ``needs``
(``jitbench.report.facts``: ``PAIRS``, ``CALIBRATION``); where the run lacks it,
the page shows the section's title and that need's one-line reason, and its ``data`` and
``figures`` are never called.
"""

from __future__ import annotations

import dataclasses
import importlib
import pkgutil
from collections.abc import Callable, Mapping
from typing import Any

_REGISTRY: dict[str, Section] = {}


def _no_figures(run) -> dict[str, Any]:
    return {}


@dataclasses.dataclass(frozen=True)
class Section:
    """One part of the page.

    ``data(run, images)`` returns the values its template block reads (as ``d``); ``images``
    holds the figures it asked for, by key, as data URIs (None: nothing to draw).
    ``needs``: what the run must hold for the section to say anything (see the module's
    docstring). ``figures(run)`` returns the figures it shows as ``{key:
    jitbench.report.draw.Job}``;
    they
    are drawn for every section together, in parallel. ``nav(d)`` gives its links in the page's
    navigation bar as (anchor, text); by default one link, ``(name, title)``.
    """

    name: str
    title: str
    order: int
    data: Callable[[Any, Mapping[str, str | None]], dict[str, Any]]
    figures: Callable[[Any], Mapping[str, Any]] = _no_figures
    nav: Callable[[dict[str, Any]], list[tuple[str, str]]] | None = None
    needs: tuple[Any, ...] = ()  # jitbench.report.facts.Need: what the run must hold

    @property
    def template(self) -> str:
        return f"section_{self.name}.html.j2"

    def unmet(self, run) -> str | None:
        """The reason of the first need ``run`` does not meet (None: it meets them all)."""
        for need in self.needs:
            why = need.missing(run)
            if why:
                return why
        return None

    def links(self, d: dict[str, Any]) -> list[tuple[str, str]]:
        return self.nav(d) if self.nav else [(self.name, self.title)]


def register(section: Section) -> Section:
    if section.name in _REGISTRY and _REGISTRY[section.name] != section:
        raise ValueError(f"two report sections are named {section.name!r}")
    _REGISTRY[section.name] = section
    return section


def registered() -> list[Section]:
    """Every section of this package, in page order (importing each module registers it)."""
    for mod in pkgutil.iter_modules(__path__):
        importlib.import_module(f"{__name__}.{mod.name}")
    return sorted(_REGISTRY.values(), key=lambda s: (s.order, s.name))
