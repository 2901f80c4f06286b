"""The lab's shared helpers: the one place a lab script imports another's code from.

A script in an entry folder (``docs/lab/<entry>/script.py``) finds this package from its own
place, with the same two lines everywhere::

    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # docs/lab: labkit
    from labkit import usage

- ``usage(__doc__)``: ``-h``/``--help`` prints the script's docstring and exits, before any
  experiment starts (``tests/test_lab.py`` runs every script's ``--help`` this way);
- ``labkit.userloop``: a user's plain loop timed beside jitbench (``loop_time``,
  ``between_loops``, ``between_mode_loops``, ...);
- ``labkit.steps``: the training steps the loops and jitbench measure (a JAX MLP update, a
  flax step, a Keras ``train_step``, the transformer block);
- ``labkit.spy``: the ``Timed`` objects ``jitbench.measure`` samples, captured from one call;
- ``labkit.pooled``: ``measure_vs_loop.py`` in fresh processes, pooled over processes.

A helper is added here when a second script needs it; a script never imports a sibling script.
"""

from __future__ import annotations

import sys

__all__ = ["usage"]


def usage(doc: str | None, argv: list[str] | None = None) -> None:
    """Print ``doc`` and exit 0 when ``argv`` (default ``sys.argv[1:]``) asks for help.

    For the scripts that read ``sys.argv`` or environment variables themselves: their
    docstring is their usage."""
    args = sys.argv[1:] if argv is None else argv
    if "-h" in args or "--help" in args:
        print((doc or "").strip())
        raise SystemExit(0)
