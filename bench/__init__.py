"""jitbench: what turning JIT (XLA) on does to TensorFlow and JAX workloads.

``import jitbench`` is instant: TensorFlow and JAX are imported only inside worker processes
(``jitbench.frameworks``), pandas only when results are loaded.
"""

from jitbench.define.workload import Case, TrainStep, Workload
from jitbench.errors import UserError
from jitbench.userfn.options import Sampling, Tolerances

__version__ = "0.1.0"
__all__ = ["Case", "Sampling", "Tolerances", "TrainStep", "UserError", "Workload", "__version__",
           "load_results", "measure"]


def load_results(path_or_paths):
    """Load one or more runs (folders, results.jsonl files) into one tidy pandas DataFrame.

    Deferred import: pandas costs ~0.3 s and most callers of ``bench`` never load results.
    """
    from jitbench.results.files import load_results as _load

    return _load(path_or_paths)


def measure(fn, /, *args, **options):
    """What JIT does to ``fn(*args)``: see ``jitbench.userfn.measure.measure`` (deferred
    import, like ``load_results``; it imports only the framework the inputs already belong
    to)."""
    from jitbench.userfn.measure import measure as _measure

    return _measure(fn, *args, **options)
