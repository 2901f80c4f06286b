"""What an A/B arm's interpreter is (``python -m jitbench.run.arm_probe FRAMEWORK...``, run by
``jitbench.run.ab_arms`` in the arm's own environment): one JSON line with its executable, Python
version, the versions of the packages that decide what XLA builds and how fast it runs, and
the frameworks asked for that it cannot import. It imports what a worker imports
(``jitbench.run.worker``) but no framework, so it answers in a second: a missing dependency
fails here, as one line, before any measuring.

The A/B runs this module through a script of its own (``jitbench.run.ab_arms.PROBE``), which
then prints the protocol settings the arm's jitbench knows: the arm may run an older jitbench,
whose copy of this module cannot be changed, so whatever an A/B needs to ask every release
goes there, not here."""

from __future__ import annotations

import importlib.metadata as metadata
import importlib.util
import json
import platform
import re
import sys

# distributions whose version an A/B records: the frameworks, XLA's wheels and plugins, the
# numerics under them, and jitbench itself
RELEVANT = re.compile(r"^(jax|jaxlib|jax[-_].*|tensorflow.*|tf[-_]keras|keras|ml[-_]dtypes|"
                      r"numpy|scipy|opt[-_]einsum|nvidia[-_].*|libtpu.*|xla.*|jitbench|"
                      r"flatbuffers|protobuf)$", re.IGNORECASE)
IMPORT_NAME = {"tf": "tensorflow", "jax": "jax"}


def packages() -> dict[str, str]:
    """{distribution name (lower case): version} of the relevant installed distributions."""
    out = {}
    for dist in metadata.distributions():
        name = (dist.metadata.get("Name") or "").lower()
        if name and RELEVANT.match(name):
            out[name] = dist.version
    return dict(sorted(out.items()))


def main(argv: list[str]) -> int:
    import jitbench.run.worker  # noqa: F401  (what every worker imports: numpy, jitbench)

    missing = [fw for fw in argv if importlib.util.find_spec(IMPORT_NAME.get(fw, fw)) is None]
    print(json.dumps({"python": sys.executable, "python_version": platform.python_version(),
                      "packages": packages(), "missing_frameworks": missing}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
