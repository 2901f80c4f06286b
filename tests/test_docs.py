"""The generated reference pages cannot drift: every CLI option has help text (the CLI page
is generated from the parser), every field a row carries has a description (the columns page
is generated from jitbench.results.fields), and the README keeps a newcomer's two commands on top
within 250 lines."""

from __future__ import annotations

from pathlib import Path

import pytest

pytestmark = pytest.mark.unit
ROOT = Path(__file__).resolve().parent.parent


def test_every_cli_option_has_help():
    from jitbench.cli.cli_page import undocumented

    assert undocumented() == []


def test_the_cli_page_names_every_command_and_option():
    from jitbench.cli.cli_page import cli_markdown, commands, options

    page = cli_markdown()
    for name, cmd in commands().items():
        assert f"## jitbench {name}" in page
        for a in options(cmd):
            for flag in a.option_strings:
                assert f"`{flag}`" in page, (name, flag)


def test_the_columns_page_describes_every_field_readers_rely_on():
    from jitbench.results.fields import FIELDS, columns_markdown, documented
    from jitbench.results.files import COLUMNS

    page = columns_markdown()
    assert all(f"`{name}`" in page for name in FIELDS)
    undocumented = [c for c in COLUMNS if not documented(c)]
    assert undocumented == []
    assert not documented("no_such_field_anywhere")


def test_readme_is_short_and_starts_with_the_two_commands():
    lines = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    assert len(lines) <= 250, len(lines)
    top = "\n".join(lines[:30])
    assert "make bench" in top and "make test" in top


def test_readme_links_into_docs_exist():
    import re

    text = (ROOT / "README.md").read_text(encoding="utf-8")
    for target in re.findall(r"\]\((docs/[^)#]+)", text):
        assert (ROOT / target).is_file(), target



def _doc_commands():
    """Every `jitbench ...` line of a code block in README.md and docs/*.md (the lab notebook
    apart: dated experiments keep the commands they ran), continuation lines joined:
    (where, subcommand, flags)."""
    import re
    import shlex

    out = []
    for path in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        block, pending = False, ""
        for n, line in enumerate(path.read_text().splitlines(), 1):
            if line.lstrip().startswith("```"):
                block, pending = not block, ""
                continue
            if not block:
                continue
            line = pending + line.strip().removeprefix("$ ")
            if line.endswith("\\"):
                pending = line[:-1] + " "
                continue
            pending = ""
            m = re.search(r"(?:^|&&\s*|;\s*)(?:[A-Z_]+=\S+\s+)*jitbench\s+(.*)$", line)
            if not m or line.startswith("#"):
                continue
            text = m.group(1).split("  #")[0].split(" # ")[0]
            try:
                words = shlex.split(text)
            except ValueError:  # a synopsis line's description has an apostrophe
                words = text.split()
            flags = [w.split("=")[0] for w in words[1:] if w.startswith("--")]
            out.append((f"{path.name}:{n}", words[0], flags))
    return out


def test_every_command_line_in_the_docs_names_real_commands_and_options():
    from jitbench.cli.cli_page import commands, options

    known = {name: {f for a in options(cmd) for f in a.option_strings}
             for name, cmd in commands().items()}
    found = _doc_commands()
    assert len(found) >= 25  # README's synopsis, the nightly recipe, the A/B examples, ...
    bad = [(where, sub, [f for f in flags if f not in known.get(sub, ())])
           for where, sub, flags in found
           if sub not in known or any(f not in known[sub] for f in flags)]
    assert bad == [], bad


def test_every_default_a_user_page_quotes_is_the_parsers():
    """`--flag` ... (default N): N is that option's default in some jitbench command (a
    percentage as the option takes it). Options of other tools (pytest-benchmark's) are left
    to them."""
    import re

    from jitbench.cli.cli_page import commands, options

    defaults: dict[str, set[float]] = {}
    for cmd in commands().values():
        for a in options(cmd):
            if isinstance(a.default, (int, float)) and not isinstance(a.default, bool):
                for flag in a.option_strings:
                    defaults.setdefault(flag, set()).add(float(a.default))
    quoted = []
    for path in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        for m in re.finditer(r"`(--[a-z-]+)`[^`.;]{0,60}?default:? ([0-9.]+)%?",
                             path.read_text()):
            if m.group(1) in defaults:
                quoted.append((path.name, m.group(1), float(m.group(2))))
    assert len(quoted) >= 6, quoted
    wrong = [q for q in quoted if q[2] not in defaults[q[1]]]
    assert wrong == [], wrong
