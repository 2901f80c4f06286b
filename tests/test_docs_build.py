"""The docs site builds as ``make docs`` builds it (``mkdocs build --strict``: a broken link or
a page that fails to generate fails it), inside ``make test``; and a broken link really fails
that build (``--quiet`` would hide the warning strict mode fails on)."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def build_docs(root: Path, site: Path):
    """``mkdocs build --strict`` of ``root``'s site, as ``make docs`` runs it (and ``make
    test``, through :func:`test_the_docs_site_builds`)."""
    import os
    import subprocess
    import sys

    env = dict(os.environ, DISABLE_MKDOCS_2_WARNING="true")
    return subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir",
                           str(site)], cwd=root, env=env, capture_output=True, text=True,
                          timeout=300)


def test_make_docs_and_make_test_build_the_docs_the_same_way():
    make = (ROOT / "Makefile").read_text(encoding="utf-8")
    recipe = make[make.index("\ndocs:"):].split("\n\n")[0]
    assert "mkdocs build --strict" in recipe and "--quiet" not in recipe
    assert "mkdocs" not in make[make.index("\ntest:"):].split("\n\n")[0]  # pytest builds them


def test_the_docs_site_builds():
    import tempfile

    with tempfile.TemporaryDirectory() as site:
        done = build_docs(ROOT, Path(site))
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]


def test_a_broken_link_fails_the_docs_build(tmp_path):
    import shutil

    shutil.copytree(ROOT / "docs", tmp_path / "docs")
    for name in ("mkdocs.yml", "README.md"):  # the site's config, its home page's source
        shutil.copy(ROOT / name, tmp_path)
    page = tmp_path / "docs" / "lab" / "interleaving-and-the-harness" / "index.md"
    page.write_text(page.read_text(encoding="utf-8") + "\n[gone](nightly.md)\n",
                    encoding="utf-8")
    done = build_docs(tmp_path, tmp_path / "site")
    assert done.returncode != 0
    assert "nightly.md" in done.stdout + done.stderr
