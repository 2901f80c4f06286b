"""XLA's own dump (``XLA_FLAGS=--xla_dump_to=DIR``), read back as programs.

The only view of what TensorFlow auto-clustering compiled: its clusters are built inside the
graph runtime, with no API returning them. XLA reads ``XLA_FLAGS`` when it first compiles, so
a worker can still set it after importing TensorFlow (checked with TF 2.21). The dump is
limited to the modules matching ``module_re`` (auto-clustering's ``cluster_<n>`` modules), so
the other modes' compilations are neither slowed down nor mixed in.

Files per module: ``module_<id>.<name>.<stage>.txt`` and more (LLVM IR, object code, buffer
assignment); the optimized HLO is ``*after_optimizations.txt`` (``cpu_`` / ``gpu_`` prefixed).
Pure file handling: imports no framework.
"""

from __future__ import annotations

import atexit
import os
import re
import shutil
import tempfile
from collections.abc import MutableMapping
from pathlib import Path

from jitbench.xla.hlo_text import Program

_MODULE = re.compile(r"^module_(\d+)\.(.+?)\.(?:\w+_)?after_optimizations\.txt$")
_DUMP_TO = re.compile(r"--xla_dump_to=(\S+)")


class DumpReader:
    """New optimized-HLO modules in a dump folder, since the last :meth:`mark`."""

    def __init__(self, folder: str | os.PathLike, owned: bool, module_re: str = ""):
        self.folder = Path(folder)
        self.owned = owned  # a folder of ours: read modules are deleted
        self._only = re.compile(module_re)  # a user's own dump holds every module
        self._seen: set[str] = set()

    @classmethod
    def install(cls, environ: MutableMapping[str, str], near: str | None,
                module_re: str) -> DumpReader:
        """Add a dump of the modules matching ``module_re`` to ``environ["XLA_FLAGS"]``, in a
        new folder next to ``near`` (a log file) or in the temp folder. A user's own
        ``--xla_dump_to`` is kept and read instead (nothing deleted)."""
        flags = environ.get("XLA_FLAGS", "")
        mine = _DUMP_TO.search(flags)
        if mine:
            return cls(mine.group(1), owned=False, module_re=module_re)
        parent = Path(near).parent if near else None
        folder = tempfile.mkdtemp(prefix="xla-dump-", dir=parent)
        environ["XLA_FLAGS"] = " ".join(filter(None, (
            flags, f"--xla_dump_to={folder}", "--xla_dump_hlo_as_text",
            f"--xla_dump_hlo_module_re={module_re}")))
        reader = cls(folder, owned=True, module_re=module_re)
        atexit.register(reader.remove)
        return reader

    def _modules(self) -> dict[str, tuple[int, str, Path]]:
        found = {}
        if self.folder.is_dir():
            for path in self.folder.iterdir():
                m = _MODULE.match(path.name)
                if m and self._only.search(m.group(2)):
                    found[path.name] = (int(m.group(1)), m.group(2), path)
        return found

    def mark(self) -> None:
        """Forget every module dumped so far (and delete it, in a folder of ours)."""
        for name, (_, _, path) in self._modules().items():
            self._seen.add(name)
            self._delete(path)

    def new_programs(self) -> list[Program]:
        """Modules dumped since :meth:`mark` / the previous call, in compile order."""
        new = sorted((v for k, v in self._modules().items() if k not in self._seen))
        programs = []
        for module_id, name, path in new:
            self._seen.add(path.name)
            programs.append(Program(f"{module_id}-{name.split('__')[0]}", path.read_text()))
            self._delete(path)
        return programs

    def _delete(self, path: Path) -> None:
        """All files of ``path``'s module, in a folder of ours (object code, LLVM IR...)."""
        if not self.owned:
            return
        prefix = path.name.split(".", 1)[0] + "."
        for other in self.folder.glob(prefix + "*"):
            try:
                other.unlink()
            except OSError:
                pass

    def remove(self) -> None:
        if self.owned:
            shutil.rmtree(self.folder, ignore_errors=True)
