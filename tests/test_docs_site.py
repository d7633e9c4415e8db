"""The documentation site (issue 31, scope 7): Sphinx builds it with ``-W`` (any warning is an
error), and its API page lists, and links a page for, every name of ``sparsedp.__all__``.

The build runs on a copy of ``docs/`` in a temporary folder, so the pages that ``docs/conf.py``
generates (``api.rst``, ``generated/``) never land in the checkout.
"""

from __future__ import annotations

import os
import re
import runpy
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import sparsedp

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
SITE_PACKAGES = ("sphinx", "myst_parser", "numpydoc", "pydata_sphinx_theme")


def test_api_sections_hold_every_public_name_once():
    sections = runpy.run_path(str(DOCS / "conf.py"))["api_sections"]()
    listed = [name for _, names in sections for name in names]
    assert sorted(listed) == sorted(sparsedp.__all__)
    titles = [title for title, _ in sections]
    assert len(titles) == len(set(titles))


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """The HTML site built from a copy of docs/ with -W; (return code, output, html folder)."""
    missing = [name for name in SITE_PACKAGES if not _importable(name)]
    if missing:
        pytest.skip(f"the documentation extra is not installed (missing {', '.join(missing)}): "
                    'pip install -e ".[docs]"')
    work = tmp_path_factory.mktemp("docs")
    source = work / "docs"
    shutil.copytree(DOCS, source, ignore=shutil.ignore_patterns("_build", "generated", "api.rst"))
    html = work / "html"
    path = [str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(path)}
    done = subprocess.run([sys.executable, "-m", "sphinx", "-W", "--keep-going", "-q", "-b", "html",
                           str(source), str(html)], capture_output=True, text=True, env=env,
                          timeout=600)
    return done.returncode, done.stdout + done.stderr, html


def _importable(name: str) -> bool:
    try:
        __import__(name)
    except ImportError:
        return False
    return True


@pytest.mark.slow
def test_site_builds_without_a_warning(site):
    returncode, output, html = site
    assert returncode == 0, output
    assert output.strip() == "", output
    for page in ["index", "api", "start_accounting", "start_library", "start_benchmarking",
                 "bounds", "privacy_maps"]:
        assert (html / f"{page}.html").is_file(), page
    assert any((html / "_images").glob("*.png"))  # the figures of the Markdown pages


@pytest.mark.slow
def test_api_page_links_a_page_for_every_public_name(site):
    returncode, output, html = site
    assert returncode == 0, output
    api = (html / "api.html").read_text()
    linked = set(re.findall(r'href="generated/sparsedp\.(\w+)\.html"', api))
    public = set(sparsedp.__all__)
    assert linked == public, f"missing: {public - linked}, not public: {linked - public}"
    for name in sparsedp.__all__:
        page = (html / "generated" / f"sparsedp.{name}.html").read_text()
        assert f"sparsedp.{name}" in page, name
