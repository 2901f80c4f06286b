"""The docs' CLI page, generated from the parser itself so it cannot drift: every command with
its options and their help."""

from __future__ import annotations

import argparse

from jitbench.cli.args import build_parser


def commands(parser: argparse.ArgumentParser | None = None
             ) -> dict[str, argparse.ArgumentParser]:
    """Each ``jitbench`` command's parser, by name, in the order ``--help`` lists them."""
    parser = parser or build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(sub.choices.items())


def options(command: argparse.ArgumentParser) -> list[argparse.Action]:
    """The options and positionals of one command, without ``--help``."""
    return [a for a in command._actions if not isinstance(a, argparse._HelpAction)]


def undocumented() -> list[str]:
    """``command --option`` for every option without help text (a test keeps this empty)."""
    return [f"{name} {'/'.join(a.option_strings) or a.dest}"
            for name, cmd in commands().items() for a in options(cmd)
            if not (a.help and a.help.strip()) and a.help != argparse.SUPPRESS]


def cli_markdown() -> str:
    """The CLI page: one section per command, its usage and a table of its options."""
    parser = build_parser()
    out = ["# Command line", "",
           "Generated from the parser (`bench/cli/args.py`). Filters take comma lists and "
           "default to everything. Bad input is one line naming the bad value and the valid "
           "ones, exit code 2; `jitbench --debug COMMAND ...` shows the traceback. "
           "`python -m jitbench` is the same program.", ""]
    for name, cmd in commands(parser).items():
        out += [f"## jitbench {name}", ""]
        if cmd.description:
            out += [cmd.description, ""]
        out += ["```", cmd.format_usage().replace("usage: ", "").strip(), "```", "",
                "| option | what |", "|---|---|"]
        for a in options(cmd):
            flag = ", ".join(f"`{s}`" for s in a.option_strings) or f"`{a.metavar or a.dest}`"
            text = (a.help or "") % {"default": a.default, "prog": name} if a.help else ""
            out.append(f"| {flag} | {text.replace('|', '&#124;')} |")
        out.append("")
    return "\n".join(out)
