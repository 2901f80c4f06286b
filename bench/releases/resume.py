"""A ladder (or a bisect) that was stopped continues where it stopped
(``jitbench releases --resume LADDER_DIR``): each of its A/B runs is a run folder of its own
under the ladder's folder, named by its place and its two rungs, so a ladder run again in its
folder meets the A/B runs it made before. Per A/B folder (:func:`ab_state`):

- ``complete`` (its meta.json says so): reused as it is, once its two arms' specs are the
  rungs' (and its cases the ladder's): :func:`check_same`, else a UserError naming both;
- unfinished (``running``: killed outright, ``interrupted``, ``failed``): continued by the A/B
  engine's own resume (``jitbench.run.ab_arms.resume_ab``, what ``jitbench ab --resume``
  runs): the rounds after the last one begun, with its own arms and settings;
- missing, or a folder with no run in it yet (killed as it was made): measured.

A bisect's comparisons follow from what the earlier ones found, so reused A/B runs lead it
through the same halving, to the same folders.

A ladder never starts in a folder that holds another (:func:`check_folder`): the error names
the folder and the command that continues it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence

from jitbench.errors import UserError
from jitbench.releases.record import FILE, load
from jitbench.results import run_folder
from jitbench.results.files import load_meta

COMPLETE, UNFINISHED = "complete", "unfinished"


def command(folder: Path | str) -> str:
    """The command that continues the ladder in ``folder``."""
    return f"jitbench releases --resume {folder}"


def check_folder(folder: Path | str, resume: bool) -> dict[str, Any] | None:
    """The record an earlier session of the ladder in ``folder`` wrote (None: none).
    Starting a ladder (``resume`` False) in a folder that holds one, or anything else, is a
    UserError naming the folder and what to run; continuing one (``resume``) takes a folder
    with its ``releases.json``, or one that does not exist yet."""
    folder = Path(folder)
    if folder.exists() and not folder.is_dir():
        raise UserError(f"{folder} is a file, not a ladder's folder")
    held = folder.is_dir() and any(p.name != run_folder.LOCK_FILE for p in folder.iterdir())
    if not (folder / FILE).is_file():
        if held:
            raise UserError(f"{folder} exists and holds no {FILE}: not a ladder this "
                            f"jitbench can continue (a ladder killed as it began, written "
                            f"by an older jitbench, or another folder); name another "
                            f"--run-id, or move {folder} away")
        if resume and folder.exists():
            raise UserError(f"{folder} holds no {FILE}: nothing to continue; run the ladder "
                            f"with --run-id {folder.name}")
        return None
    record = load(folder)
    if resume:
        return record
    status = record.get("status") or "complete"  # before status: written at the end only
    made = len(record.get("comparisons") or [])
    if status == "complete":
        raise UserError(f"{folder} holds a complete ladder already ({made} A/B run(s)); name "
                        f"another with --run-id (`{command(folder)}` reuses every A/B run "
                        f"and writes its page again)")
    raise UserError(f"{folder} holds a ladder left {status} with {made} A/B run(s) made; "
                    f"continue it with `{command(folder)}`, or name another --run-id")


def ab_state(run_dir: Path | str) -> str | None:
    """:data:`COMPLETE`, :data:`UNFINISHED`, or None when there is nothing to reuse (no
    folder, or one with neither a run's meta.json nor any row). UserError for a folder that
    holds rows but no run this jitbench can continue."""
    run_dir = Path(run_dir)
    if not run_dir.is_dir():
        return None
    meta = load_meta(run_dir)
    results = run_dir / "results.jsonl"
    rows = results.is_file() and results.stat().st_size > 0
    if not meta.get("run_id"):
        if not rows:
            return None  # made, then killed before its record: measured afresh
        raise UserError(f"{run_dir} holds rows but no meta.json: not an A/B run this ladder "
                        f"can reuse or continue; move it away and run `{command(run_dir.parent)}`"
                        f" again")
    if meta.get("kind") != "ab":
        raise UserError(f"{run_dir} is not an A/B run (its meta.json says "
                        f"{meta.get('kind') or 'run'}); move it away and run "
                        f"`{command(run_dir.parent)}` again")
    return COMPLETE if meta.get("status") == "complete" else UNFINISHED


def check_same(run_dir: Path | str, specs: Sequence[str], names: Sequence[str],
               cases: Sequence[Any]) -> None:
    """UserError, naming both, when the A/B in ``run_dir`` measured other arms than
    ``specs`` (the rungs ``names``' arm specs, as ``jitbench.run.ab_arms.Arm.spec`` writes
    them) or other cases than ``cases`` (compared by case id where both have them)."""
    run_dir = Path(run_dir)
    arms = (load_meta(run_dir).get("ab") or {}).get("arms") or {}
    had = [(arms.get(arm) or {}).get("spec") for arm in ("a", "b")]
    if had != list(specs):
        raise UserError(
            f"{run_dir} measured A {_spec(had[0])} and B {_spec(had[1])}, but this ladder's "
            f"{names[0]} -> {names[1]} is A {_spec(specs[0])} and B {_spec(specs[1])} (another "
            f"environment cache, or other arms); continue it with the environments it was "
            f"made with, or move the folder away to measure the step again")
    asked = {getattr(c, "case_id", None) for c in cases} - {None}
    if not asked or not (run_dir / run_folder.CASES_FILE).is_file():
        return
    _, recorded, _ = run_folder.load_run(run_dir, quiet=True)
    had_cases = {c.case_id for c in recorded}
    if had_cases != asked:
        extra, missing = sorted(had_cases - asked), sorted(asked - had_cases)
        raise UserError(
            f"{run_dir} measured other cases than this ladder asks for"
            + (f" (only it: {', '.join(extra[:3])}{' ...' if len(extra) > 3 else ''})"
               if extra else "")
            + (f" (only the ladder: {', '.join(missing[:3])}"
               f"{' ...' if len(missing) > 3 else ''})" if missing else "")
            + "; a workload file changed since? move the folder away to measure the step "
              "again")


def _spec(spec: str | None) -> str:
    if spec is None:
        return "(none recorded)"
    return repr(spec) if spec else "'' (this environment)"
