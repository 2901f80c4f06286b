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
