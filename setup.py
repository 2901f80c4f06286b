"""The one thing pyproject.toml cannot say: the repository's ``bench/`` and ``suites/`` folders
install as the package ``jitbench`` and ``jitbench.suites`` (every subpackage of ``bench/``
mapped under ``jitbench``), so a project with its own ``bench`` or ``suites`` keeps them."""

from setuptools import find_packages, setup

HARNESS = ["jitbench" + p[len("bench"):] for p in find_packages(include=["bench", "bench.*"])]

setup(packages=[*HARNESS, "jitbench.suites"],
      package_dir={"jitbench": "bench", "jitbench.suites": "suites"})
