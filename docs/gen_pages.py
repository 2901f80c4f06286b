"""Pages generated at build time (mkdocs-gen-files), so they cannot drift: ``index.md`` is the
README (its links into docs/ made site-relative), ``columns.md`` comes from the row's own field
list (``jitbench.results.fields``), ``cli.md`` from the argparse grammar (``jitbench.cli.args``)."""

from __future__ import annotations

from pathlib import Path

import mkdocs_gen_files

from jitbench.cli.cli_page import cli_markdown
from jitbench.results.fields import columns_markdown

with mkdocs_gen_files.open("columns.md", "w") as fh:
    fh.write(columns_markdown())

with mkdocs_gen_files.open("cli.md", "w") as fh:
    fh.write(cli_markdown())

readme = (Path(__file__).resolve().parent.parent / "README.md").read_text(encoding="utf-8")
with mkdocs_gen_files.open("index.md", "w") as fh:
    fh.write(readme.replace("](docs/", "]("))
