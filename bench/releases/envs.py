"""One virtual environment per framework release, built once into a cache folder and reused
(issue 65, item 1): what a ladder or a bisect of releases measures in.

``ensure("jax==0.4.31")`` returns a :class:`ReleaseEnv`: the environment's interpreter, or
``python=None`` and the installer's reason when the release cannot install or import on this
interpreter. The installer resolves the framework's own companions (jaxlib with jax: a bare
``jax==X`` is installed as ``jax[cpu]==X``, the extra that pins the matching jaxlib; keras with
tensorflow) together with the same jitbench as the caller's, built once as a wheel from its
source and installed non-editable, so each environment measures with the caller's code and
its own framework. ``uv`` installs where it is found (the ``releases`` extra), pip otherwise.

The cache folder (:func:`default_cache`) holds, per environment name (:func:`env_name`):

- ``NAME/``: the environment, present only once its import check passed: it is built in
  ``.building-NAME-*`` and renamed into place, so a build that was killed never reads as
  cached (the next build of NAME removes what it left); reused only while its interpreter
  runs (a patch upgrade of the base Python can leave ``bin/python`` pointing at nothing), else
  rebuilt;
- ``NAME/jitbench-env.json``: what was installed (requirement, installer, versions, the hash
  of the jitbench source it holds and the requirements its wheel declared); when the caller's
  jitbench source changed since, jitbench is reinstalled alone (``--no-deps``), and its
  requirements installed beside the release's when they changed;
- ``NAME.failed``: why the last build failed, so the next call returns that reason at once
  instead of trying again for minutes (``retry=True`` tries again). Only a failure of the
  release's own is remembered, and only for the installer, jitbench source and interpreter
  that met it: a timeout, a kill (the OOM killer's included) or a network error
  (:func:`transient`) is tried again by the next call;
- ``NAME.lock``: held (``fcntl.flock``) while NAME is built or refreshed, so two processes
  asking for the same release at once build it once;
- ``.jitbench-wheels/HASH/``: the wheel of jitbench's source with that content hash.
"""

from __future__ import annotations

import contextlib
import datetime
import email.parser
import fcntl
import hashlib
import json
import os
import re
import shutil
import sys
import tempfile
import zipfile
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from jitbench import launch
from jitbench.errors import UserError
from jitbench.releases import installers
from jitbench.releases.installers import INSTALLERS, find_uv, has_pip, transient

__all__ = ["INSTALLERS", "ReleaseEnv", "default_cache", "ensure", "ensure_all", "env_name",
           "find_uv", "has_pip", "releases", "source_hash", "transient"]

# the distributions whose versions an environment reports (ReleaseEnv.versions), besides the
# one asked for
REPORTED = ("jax", "jaxlib", "tensorflow", "keras", "numpy", "ml_dtypes", "jitbench")
# a distribution whose import name is not its own name with "-" as "_"
IMPORT_NAMES = {"tensorflow-cpu": "tensorflow", "tensorflow-intel": "tensorflow",
                "tf-nightly": "tensorflow", "jax-cuda12-plugin": "jax_cuda12_plugin"}
MARKER = "jitbench-env.json"
WHEELS = ".jitbench-wheels"
# the folders and files of jitbench's source that make its wheel (setup.py maps bench/ and
# suites/ to jitbench and jitbench.suites; pyproject.toml names README.md as the readme)
SOURCE_PARTS = ("bench", "suites", "setup.py", "pyproject.toml", "README.md")
# a release's whole install (TensorFlow's wheels are ~600 MB): past this it is a failure
INSTALL_TIMEOUT_S = 1800.0
IMPORT_TIMEOUT_S = 300.0
Log = Callable[[str], None]


@dataclass(frozen=True)
class ReleaseEnv:
    """One release's environment, built or not (module docstring)."""

    requirement: str           # as asked, e.g. "jax==0.4.31" or "tensorflow==2.16.2"
    path: Path                 # its folder under the cache
    python: Path | None        # the interpreter; None when it could not be built
    error: str | None          # the installer's (or the import's) reason, its last lines
    reused: bool               # the cache already held it (built, or its failure remembered)
    versions: dict[str, str] = field(default_factory=dict)  # installed distributions that
    # matter (REPORTED and the one asked for)
    installer: str | None = None  # "uv" or "pip": what built it
    jitbench_hash: str | None = None  # the content hash of the jitbench source it holds

    @property
    def ok(self) -> bool:
        return self.python is not None


def default_cache() -> Path:
    """``$JITBENCH_ENVS``, else ``~/.cache/jitbench/envs``."""
    given = os.environ.get("JITBENCH_ENVS")
    return Path(given).expanduser() if given else Path.home() / ".cache" / "jitbench" / "envs"


def parse(requirement: str) -> Requirement:
    """The requirement, or a UserError naming it and the form expected."""
    try:
        parsed = Requirement(requirement)
    except InvalidRequirement as e:
        raise UserError(f"not a requirement: {requirement!r} ({e}); expected a package and "
                        f"its release, e.g. 'jax==0.4.31' or 'tensorflow==2.16.2'") from None
    if parsed.url or parsed.marker:
        raise UserError(f"a release is a package and a version, not {requirement!r} "
                        f"(a URL or an environment marker)")
    return parsed


def env_name(requirement: str, extras: Sequence[str] = (), *, jitbench: bool = True) -> str:
    """The environment's folder name: the requirement and its extra requirements as a slug,
    this interpreter's version, and ``-bare`` without jitbench (e.g. ``jax-0.4.31-py311``).
    A package's extra is part of it (``jax[cuda12]==0.4.31`` and ``jax[cpu]==0.4.31`` are
    two environments), but for the one a bare requirement is installed with
    (:func:`install_spec`: ``jax[cpu]==X`` is ``jax==X``'s environment)."""
    words = [_slug(_as_named(parse(requirement))), *sorted(_slug(parse(e)) for e in extras)]
    slug = "+".join(words)
    if len(slug) > 80:  # long lists of extras: a readable head and a hash of the whole
        slug = slug[:60] + "-" + hashlib.sha256(slug.encode()).hexdigest()[:12]
    return f"{slug}-py{sys.version_info[0]}{sys.version_info[1]}" + ("" if jitbench else "-bare")


def _slug(requirement: Requirement) -> str:
    """``jax-0.4.31`` for ``jax==0.4.31``; any other requirement with what a folder name
    should not hold as ``_``."""
    specs = list(requirement.specifier)
    if not requirement.extras and len(specs) == 1 and specs[0].operator == "==":
        return f"{canonicalize_name(requirement.name)}-{specs[0].version}"
    text = str(requirement).replace(" ", "")
    # the operators become "_": the hash keeps "keras<3.5" and "keras>3.5" apart
    return (re.sub(r"[^A-Za-z0-9.+-]+", "_", text).strip("_") + "-"
            + hashlib.sha256(text.encode()).hexdigest()[:8])


def _as_named(requirement: Requirement) -> Requirement:
    """``jax[cpu]==X`` as ``jax==X``: the same install (:func:`install_spec`), one name."""
    if canonicalize_name(requirement.name) == "jax" and \
            {canonicalize_name(e) for e in requirement.extras} == {"cpu"} and \
            requirement.specifier:
        return Requirement(f"{requirement.name}{requirement.specifier}")
    return requirement


def install_spec(requirement: str) -> str:
    """What the installer is given for ``requirement``: a bare ``jax==X`` gets the ``cpu``
    extra, which pins the jaxlib of the same release (jax alone accepts an older jaxlib, or
    none); any other requirement as it is (tensorflow brings its keras itself)."""
    parsed = parse(requirement)
    if canonicalize_name(parsed.name) == "jax" and not parsed.extras and parsed.specifier:
        return f"jax[cpu]{parsed.specifier}"
    return str(parsed)


# --------------------------------------------------------------------------- jitbench's source

def jitbench_source() -> Path:
    """The source tree of the running jitbench (its checkout: ``bench/`` is the package), or a
    UserError when it runs from an installed copy, which has no source to build a wheel of."""
    import jitbench

    root = Path(jitbench.__file__).resolve().parent.parent
    if all((root / part).exists() for part in SOURCE_PARTS):
        return root
    raise UserError(f"the running jitbench ({Path(jitbench.__file__).parent}) is not a "
                    f"checkout: environments per release install jitbench from its source; run "
                    f"jitbench from a checkout (pip install -e .), or pass source=")


def _source_files(source: Path) -> Iterator[Path]:
    for part in SOURCE_PARTS:
        path = source / part
        if path.is_file():
            yield path
        elif path.is_dir():
            yield from sorted(p for p in path.rglob("*") if p.is_file()
                              and "__pycache__" not in p.parts and p.suffix != ".pyc"
                              and not any(q.endswith(".egg-info") for q in p.parts))


def source_hash(source: Path) -> str:
    """A content hash of jitbench's source (:data:`SOURCE_PARTS`; bytecode and egg-info
    left out): two trees with the same files and bytes have the same hash."""
    digest = hashlib.sha256()
    for path in _source_files(Path(source)):
        digest.update(path.relative_to(source).as_posix().encode() + b"\0")
        digest.update(path.read_bytes() + b"\0")
    return digest.hexdigest()[:16]


def _wheel(source: Path, cache: Path, digest: str, log: Log) -> Path:
    """The wheel of ``source`` (content hash ``digest``), built once per hash: from a copy of
    the source, so the build leaves nothing in the caller's tree (setuptools writes build/
    and egg-info where it builds)."""
    folder = cache / WHEELS / digest
    found = sorted(folder.glob("jitbench-*.whl"))
    if found:
        return found[0]
    (cache / WHEELS).mkdir(parents=True, exist_ok=True)
    with _locked(cache / WHEELS / f"{digest}.lock"):
        found = sorted(folder.glob("jitbench-*.whl"))
        if found:
            return found[0]
        log(f"building jitbench's wheel from {source} ({digest})")
        with tempfile.TemporaryDirectory(prefix="jitbench-source-") as tmp:
            copy = Path(tmp) / "src"
            for path in _source_files(source):
                dest = copy / path.relative_to(source)
                dest.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(path, dest)
            out = Path(tmp) / "wheel"
            argv, what = installers.wheel_command(copy, out)
            done = launch.tool(argv, timeout=600)
            wheels = sorted(out.glob("jitbench-*.whl"))
            if done is None or done.returncode != 0 or not wheels:
                raise UserError(f"could not build jitbench's wheel from {source}: "
                                + installers.reason(done, what))
            staging = cache / WHEELS / f".{digest}-{os.getpid()}"
            staging.mkdir()
            shutil.copy2(wheels[0], staging / wheels[0].name)
            staging.rename(folder)
    return next(folder.glob("jitbench-*.whl"))


def wheel_requires(wheel: Path) -> list[str]:
    """The requirements a wheel declares for itself (its METADATA's ``Requires-Dist`` without
    those of an extra), normalised and sorted: what installing it with its dependencies adds."""
    with zipfile.ZipFile(wheel) as zf:
        name = next(n for n in zf.namelist()
                    if n.count("/") == 1 and n.endswith(".dist-info/METADATA"))
        metadata = email.parser.HeaderParser().parsestr(zf.read(name).decode("utf-8"))
    found = set()
    for line in metadata.get_all("Requires-Dist") or []:
        requirement = Requirement(line)
        if requirement.marker is None or "extra" not in str(requirement.marker):
            found.add(str(requirement))
    return sorted(found)


# --------------------------------------------------------------------------- building

@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    """An exclusive ``flock`` on ``path`` (created), released when the block ends (or the
    process dies)."""
    with open(path, "a+") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def _python(env: Path) -> Path:
    return env / "bin" / "python"


def _runs(python: Path) -> bool:
    """Whether the environment's interpreter still starts: its link leads somewhere and it
    runs (``-I -S``: no site, a few milliseconds)."""
    if not (python.exists() and os.access(python, os.X_OK)):
        return False
    done = launch.tool([str(python), "-I", "-S", "-c", "pass"], timeout=60)
    return done is not None and done.returncode == 0


# run in the new environment: check that the release declares the extras asked of it (an
# installer only warns about one it does not know, and builds without it), import what was
# asked for (and jitbench), check that jitbench's own requirements are installed (an import of
# jitbench/__init__ alone would not see one missing), print the versions
_CHECK = r"""
import importlib, importlib.metadata as md, json, re, sys
asked = json.loads(sys.argv[1])
def extra_name(e):
    return re.sub(r"[-_.]+", "-", e).lower()
for dist, wanted in asked["extras"].items():
    declared = sorted({extra_name(e) for e in md.metadata(dist).get_all("Provides-Extra") or []})
    unknown = [e for e in wanted if extra_name(e) not in declared]
    if unknown:
        sys.exit(f"{dist} {md.version(dist)} declares no extra "
                 + ", ".join(repr(e) for e in unknown)
                 + f" (its extras: {', '.join(declared) or 'none'})")
for name in sys.argv[2:]:
    importlib.import_module(name)
if "jitbench" in sys.argv[2:]:
    from packaging.requirements import Requirement  # a requirement of jitbench's own
    unmet = []
    for line in md.requires("jitbench") or []:
        req = Requirement(line)
        if req.marker is not None and not req.marker.evaluate({"extra": ""}):
            continue
        try:
            have = md.version(req.name)
        except md.PackageNotFoundError:
            unmet.append(f"{req} (not installed)")
            continue
        if not req.specifier.contains(have, prereleases=True):
            unmet.append(f"{req} ({have} installed)")
    if unmet:
        sys.exit("jitbench's requirements not met: " + ", ".join(unmet))
versions = {}
for dist in asked["dists"]:
    try:
        versions[dist] = md.version(dist)
    except md.PackageNotFoundError:
        pass
print("JITBENCH-VERSIONS " + json.dumps(versions))
"""


def _check(python: Path, requirement: Requirement, jitbench: bool
           ) -> tuple[dict[str, str] | None, str | None, bool]:
    """(versions, None, False) when the release declares the extras asked of it and it (and
    jitbench, its requirements met) import in the environment, else (None, the reason,
    whether it is :func:`transient`)."""
    name = canonicalize_name(requirement.name)
    modules = [IMPORT_NAMES.get(name, name.replace("-", "_"))] + (["jitbench"] if jitbench
                                                                   else [])
    asked = {"dists": list(dict.fromkeys([name, *REPORTED])),
             "extras": {name: sorted(requirement.extras)} if requirement.extras else {}}
    # isolated (-I): neither PYTHONPATH nor the current folder (a checkout's egg-info) counts
    done = launch.tool([str(python), "-I", "-c", _CHECK, json.dumps(asked), *modules],
                       timeout=IMPORT_TIMEOUT_S, cwd=str(python.parent))
    line = next((s for s in (done.stdout.splitlines() if done is not None else [])
                 if s.startswith("JITBENCH-VERSIONS ")), None)
    if done is None or done.returncode != 0 or line is None:
        return None, installers.reason(done, f"import {', '.join(modules)}"), transient(done)
    return json.loads(line.split(" ", 1)[1]), None, False


def _read_failed(failed: Path) -> dict | None:
    """What ``NAME.failed`` remembers (an unreadable one: that the build failed), or None."""
    if not failed.is_file():
        return None
    try:
        remembered = json.loads(failed.read_text())
    except (OSError, ValueError):
        remembered = None
    return remembered if isinstance(remembered, dict) else {}


def _read_marker(env: Path) -> dict | None:
    try:
        return json.loads((env / MARKER).read_text())
    except (OSError, ValueError):
        return None


def _write_json(path: Path, data: dict) -> None:
    """Written whole or not at all (a temporary file renamed over it), by the one writer of
    JSON files (``jitbench.results.files``; deferred: it costs 0.2 s to import)."""
    from jitbench.results.files import write_json

    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    write_json(tmp, data)
    os.replace(tmp, path)


def _cache_folder(cache: Path) -> Path:
    """``cache``, created where it is missing; a UserError naming it and why when it cannot
    be created or written."""
    try:
        cache.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        why = ("it is a file, not a folder" if cache.exists() and not cache.is_dir()
               else e.strerror or str(e))
        raise UserError(f"the environments' cache {cache} cannot be created: {why}; name a "
                        f"folder jitbench may create (--envs DIR, $JITBENCH_ENVS)") from None
    if not os.access(cache, os.W_OK | os.X_OK):
        raise UserError(f"the environments' cache {cache} is not writable; name a folder "
                        f"jitbench may write (--envs DIR, $JITBENCH_ENVS)")
    return cache


def _now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")


def ensure(requirement: str, cache: Path | str | None = None, *, extras: Sequence[str] = (),
           log: Log | None = None, retry: bool = False, installer: str | None = None,
           jitbench: bool = True, source: Path | str | None = None) -> ReleaseEnv:
    """The environment of ``requirement`` (e.g. ``"jax==0.4.31"``) under ``cache`` (default
    :func:`default_cache`): built when missing, reused when there, jitbench reinstalled alone
    when its source changed since (module docstring).

    ``extras``: further requirements installed with it (e.g. ``"jax[cuda12]"``'s plugin, a
    pinned keras). ``log``: called with a line per step (building, reusing, refreshing).
    ``retry``: try again a release whose last build failed (by default its remembered reason
    is returned at once). ``installer``: ``"uv"`` or ``"pip"`` (default: uv where
    :func:`find_uv` finds it). ``jitbench=False``: the release alone, without jitbench.
    ``source``: the jitbench source tree to install (default: the running one's checkout).

    A release that cannot install or import is a ReleaseEnv with ``python=None`` and the
    installer's (or the import's) last lines as ``error``; bad input (a requirement that does
    not parse, an unknown installer) is a UserError."""
    log = log or (lambda line: None)
    parsed = parse(requirement)
    for extra in extras:
        parse(extra)
    if installer is not None and installer not in INSTALLERS:
        raise UserError(f"unknown installer {installer!r}; valid: {', '.join(INSTALLERS)}")
    uv = find_uv() if installer in (None, "uv") else None
    if installer == "uv" and uv is None:
        raise UserError("installer 'uv' asked for and not found: pip install 'jitbench[releases]'"
                        " (or uv on PATH), or installer='pip'")
    chosen = installer or ("uv" if uv else "pip")
    cache = _cache_folder(Path(cache).expanduser() if cache is not None else default_cache())
    name = env_name(requirement, extras, jitbench=jitbench)
    path = cache / name
    failed = cache / f"{name}.failed"
    digest = wheel = None
    if jitbench:
        src = Path(source).resolve() if source is not None else jitbench_source()
        digest = source_hash(src)
    python_version = sys.version.split()[0]
    with _locked(cache / f"{name}.lock"):
        marker = _read_marker(path)
        if marker is not None and not _runs(_python(path)):
            log(f"{requirement}: the interpreter of {path} no longer runs (built on Python "
                f"{marker.get('python', '?')}, its base moved or upgraded?), rebuilding")
            marker = None  # the folder is removed below, before the build
        if marker is not None:
            if digest is not None and marker.get("jitbench_hash") != digest:
                wheel = _wheel(src, cache, digest, log)
                return _refresh(requirement, path, marker, wheel, digest, uv, log)
            log(f"{requirement}: reusing {path}")
            return _built(requirement, path, marker, reused=True)
        remembered = _read_failed(failed) if not retry else None
        if remembered is not None:
            met = {"installer": remembered.get("installer"),
                   "jitbench": remembered.get("jitbench_hash"),
                   "Python": remembered.get("python")}
            now = {"installer": chosen, "jitbench": digest, "Python": python_version}
            changed = [what for what in met if met[what] != now[what]]
            if not changed:
                reason = remembered.get("error") or "its last build failed"
                log(f"{requirement}: failed before ({remembered.get('when', '?')}), not "
                    f"retried")
                return ReleaseEnv(requirement, path, None, reason, reused=True,
                                  installer=remembered.get("installer"))
            log(f"{requirement}: failed before with {met['installer']} (jitbench "
                f"{met['jitbench']}, Python {met['Python']}); {', '.join(changed)} changed "
                f"since, trying again")
        if digest is not None:
            wheel = _wheel(src, cache, digest, log)
        for stale in cache.glob(f".building-{name}-*"):  # left by a killed build of NAME
            shutil.rmtree(stale, ignore_errors=True)
        if path.exists():  # a folder without its marker: not an environment of ours
            shutil.rmtree(path, ignore_errors=True)
        building = Path(tempfile.mkdtemp(prefix=f".building-{name}-", dir=cache))
        try:
            versions, error, passing = _build(parsed, building,
                                              [install_spec(requirement), *extras], wheel,
                                              chosen, uv, log)
            if error is not None:
                if passing:
                    log(f"{requirement}: failed ({error.splitlines()[0]}); not remembered (a "
                        f"timeout, a kill or the network): the next call tries again")
                else:
                    _write_json(failed, {"requirement": requirement, "error": error,
                                         "installer": chosen, "jitbench_hash": digest,
                                         "when": _now(), "python": python_version})
                    log(f"{requirement}: failed ({error.splitlines()[0]})")
                return ReleaseEnv(requirement, path, None, error, reused=False,
                                  installer=chosen)
            marker = {"requirement": requirement, "extras": list(extras), "installer": chosen,
                      "jitbench_hash": digest, "versions": versions, "built": _now(),
                      "python": python_version,
                      "jitbench_requires": wheel_requires(wheel) if wheel else None}
            _write_json(building / MARKER, marker)
            _relocate(building, path)
            building.rename(path)
            failed.unlink(missing_ok=True)
        finally:
            shutil.rmtree(building, ignore_errors=True)
    log(f"{requirement}: built {path}")
    return _built(requirement, path, marker, reused=False)


def _build(requirement: Requirement, target: Path, specs: list[str], wheel: Path | None,
           installer: str, uv: str | None, log: Log
           ) -> tuple[dict | None, str | None, bool]:
    """Build the environment in ``target``: (versions, None, False), or (None, the reason,
    whether the failure is :func:`transient`)."""
    log(f"{requirement}: building with {installer} in {target}")
    done = launch.tool(installers.venv_command(installer, target, uv), timeout=300)
    if done is None or done.returncode != 0:
        return None, installers.reason(done, f"{installer} venv"), transient(done)
    args = [*specs, *([str(wheel)] if wheel is not None else [])]
    done = launch.tool(installers.install_command(installer, _python(target), uv, args),
                       timeout=INSTALL_TIMEOUT_S)
    if done is None or done.returncode != 0:
        return None, installers.reason(done, f"{installer} install {' '.join(specs)}"), transient(done)
    return _check(_python(target), requirement, jitbench=wheel is not None)


def _relocate(building: Path, path: Path) -> None:
    """What names the folder it was built in (pip's scripts' first lines, the activate
    scripts; uv's relocatable ones name none) names the folder it is renamed to."""
    old, new = str(building).encode(), str(path).encode()
    for script in (building / "bin").iterdir():
        if script.is_symlink() or not script.is_file() or script.stat().st_size > 1 << 16:
            continue
        text = script.read_bytes()
        if old in text:
            script.write_bytes(text.replace(old, new))


def _refresh(requirement: str, path: Path, marker: dict, wheel: Path, digest: str,
             uv: str | None, log: Log) -> ReleaseEnv:
    """Reinstall jitbench (``--no-deps``) into a built environment whose jitbench came from
    other source; when the new wheel declares other requirements than the one it was built
    with, install them too, beside the release and its extras (so the installer keeps the
    release as it is). The marker says the new hash only once it is in."""
    installer = marker.get("installer") if marker.get("installer") in INSTALLERS else "pip"
    if installer == "uv" and uv is None:
        installer = "pip"  # seeded with pip (see _venv)
    requires = wheel_requires(wheel)
    grown = requires != marker.get("jitbench_requires")
    log(f"{requirement}: jitbench changed ({marker.get('jitbench_hash')} -> {digest}), "
        + (f"reinstalling it with its dependencies in {path}" if grown
           else f"reinstalling it alone in {path}"))
    steps = [["--no-deps", "--reinstall" if installer == "uv" else "--force-reinstall",
              str(wheel)]]
    if grown:
        steps.append([install_spec(marker.get("requirement") or requirement),
                      *(marker.get("extras") or []), *requires])
    for args in steps:
        done = launch.tool(installers.install_command(installer, _python(path), uv, args), timeout=600)
        if done is None or done.returncode != 0:
            error = installers.reason(done, f"{installer} install {' '.join(args)}")
            return ReleaseEnv(requirement, path, None, error, reused=True,
                              installer=installer,
                              versions=dict(marker.get("versions") or {}))
    versions, error, _ = _check(_python(path), parse(requirement), jitbench=True)
    if error is not None:
        return ReleaseEnv(requirement, path, None, error, reused=True, installer=installer)
    marker = {**marker, "jitbench_hash": digest, "versions": versions, "refreshed": _now(),
              "jitbench_requires": requires}
    _write_json(path / MARKER, marker)
    return _built(requirement, path, marker, reused=True)


def _built(requirement: str, path: Path, marker: dict, reused: bool) -> ReleaseEnv:
    return ReleaseEnv(requirement, path, _python(path), None, reused=reused,
                      versions=dict(marker.get("versions") or {}),
                      installer=marker.get("installer"),
                      jitbench_hash=marker.get("jitbench_hash"))


def ensure_all(requirements: Sequence[str], cache: Path | str | None = None, **kw
               ) -> list[ReleaseEnv]:
    """:func:`ensure` of each requirement in turn (the same options for each), in their
    order; every requirement is checked before the first build."""
    for requirement in requirements:
        parse(requirement)
    return [ensure(requirement, cache, **kw) for requirement in requirements]


# --------------------------------------------------------------------------- the registry

def releases(package: str, since: str | None = None, until: str | None = None) -> list[str]:
    """The versions of ``package`` the registry serves for this interpreter, oldest first,
    between ``since`` and ``until`` (both included; final releases only), as pip's index
    lookup lists them (``pip index versions``)."""
    bounds = {}
    for what, value in (("since", since), ("until", until)):
        if value is not None:
            try:
                bounds[what] = Version(value)
            except InvalidVersion:
                raise UserError(f"{what} {value!r} is not a version (e.g. 0.4.31)") from None
    parse(package)
    if not installers.has_pip():  # uv has no command that lists a package's releases
        raise installers.no_pip("the registry's releases are read with pip index versions (or name "
                      "the releases yourself)")
    done = launch.tool([sys.executable, "-m", "pip", "index", "versions", package,
                        "--disable-pip-version-check"], timeout=120)
    line = next((s for s in (done.stdout.splitlines() if done is not None else [])
                 if s.startswith("Available versions:")), None)
    if line is None:
        raise UserError(f"the registry lists no release of {package!r} for this interpreter: "
                        + installers.reason(done, "pip index versions"))
    found = sorted(Version(v.strip()) for v in line.split(":", 1)[1].split(",") if v.strip())
    return [str(v) for v in found
            if ("since" not in bounds or v >= bounds["since"])
            and ("until" not in bounds or v <= bounds["until"])]
