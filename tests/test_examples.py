"""The recipes in examples/ are what a team copies: the GitHub Actions workflow validates
against GitHub's workflow schema (SchemaStore's, vendored by check-jsonschema: no network),
and every jitbench command the workflow and the SLURM script run is one jitbench's own parser
accepts, so a renamed or removed option fails here, not on a team's first night."""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

EXAMPLES = Path(__file__).parent.parent / "examples"
WORDS = {"$JITBENCH": "jitbench", "$STATE": "/srv/jitbench", "$NIGHT": "night-1",
         "$REQUIREMENTS": "requirements.txt", "$SHARDS": "4",
         "\\$SLURM_ARRAY_TASK_ID": "1", "${{ matrix.shard }}": "1"}


def _commands(text: str) -> list[list[str]]:
    """Every `jitbench ...` command in a script's text (continuations joined), as words."""
    text = re.sub(r"\\\n\s*", " ", text).replace('"', "")
    for name, value in WORDS.items():
        text = text.replace(name, value)
    out = []
    for match in re.finditer(r"(?:^|[\s\"'(;&])jitbench ((?:nightly|merge|run)\b[^\"'\n;&)]*)",
                             text):
        out.append(shlex.split(match.group(1)))
    return out


def _workflow_runs() -> str:
    flow = yaml.safe_load((EXAMPLES / "nightly-gpu.yml").read_text())
    return "\n".join(step.get("run", "") for job in flow["jobs"].values()
                     for step in job["steps"])


@pytest.mark.unit
@pytest.mark.parametrize("source", ["workflow", "slurm"])
def test_every_command_of_the_recipes_parses(source):
    from jitbench.cli.args import build_parser

    text = _workflow_runs() if source == "workflow" else \
        (EXAMPLES / "nightly-slurm.sh").read_text()
    commands = _commands(text)
    # prepare, a shard, merge, the judged night
    assert len(commands) == 4, commands
    assert [c[0] for c in commands] == ["nightly", "nightly", "merge", "nightly"]
    for words in commands:
        args = build_parser().parse_args(words)
        if words[0] == "nightly":
            assert args.environments == "/srv/jitbench/envs", words
    prepare, shard, _, judge = (build_parser().parse_args(w) for w in commands)
    assert prepare.prepare and prepare.requirements
    assert shard.shard == "1/4" and shard.run_id == "night-1" and not shard.requirements
    assert judge.no_run


@pytest.mark.unit
def test_the_workflow_guards_concurrency_and_keeps_its_logic_in_jitbench():
    flow = yaml.safe_load((EXAMPLES / "nightly-gpu.yml").read_text())
    assert flow["concurrency"]["cancel-in-progress"] is False
    runs = _workflow_runs()
    # no parsing of summaries or choosing of environments in shell: jitbench does it
    assert "python3 -c" not in runs and "last_good" not in runs


def test_the_workflow_validates_against_githubs_schema():
    done = subprocess.run([sys.executable, "-m", "check_jsonschema", "--builtin-schema",
                           "vendor.github-workflows", str(EXAMPLES / "nightly-gpu.yml")],
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stdout + done.stderr


def _sbatch_calls() -> list[str]:
    """Every `sbatch ...` call of the SLURM script, continuations joined, up to its --wrap."""
    text = re.sub(r"\\\n\s*", " ", (EXAMPLES / "nightly-slurm.sh").read_text())
    return [m.group(1) for m in re.finditer(r"sbatch ([^\n]*?)--wrap", text)]


@pytest.mark.unit
def test_the_slurm_shards_run_at_once_and_only_prepare_and_judge_are_singletons():
    """Slurm runs the jobs of one name and user one at a time under singleton: an array given
    it runs its tasks one after another. Every job has a time limit."""
    prepare, shards, judge = _sbatch_calls()
    assert "--array=" in shards and "singleton" not in shards
    assert "--job-name=jitbench-nightly-shard" in shards
    for job in (prepare, judge):
        assert "singleton" in job and '"${common[@]}"' in job
    assert "--job-name=jitbench-nightly " in (EXAMPLES / "nightly-slurm.sh").read_text()
    assert all("--time=" in job for job in (prepare, shards, judge))


@pytest.mark.unit
def test_every_job_of_the_workflow_has_a_time_limit():
    flow = yaml.safe_load((EXAMPLES / "nightly-gpu.yml").read_text())
    limits = {name: job.get("timeout-minutes") for name, job in flow["jobs"].items()}
    assert all(isinstance(v, int) and 0 < v <= 24 * 60 for v in limits.values()), limits
