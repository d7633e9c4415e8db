"""The architecture contract of pyproject.toml (import-linter): layers, no cycles, the dense
references for tests only — and a check that it does catch a forbidden import."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LINT = shutil.which("lint-imports")

pytestmark = pytest.mark.skipif(LINT is None, reason="import-linter is a dev dependency")


def _lint(cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(cwd)}
    return subprocess.run(
        [LINT, "--config", str(cwd / "pyproject.toml"), "--no-cache"],
        cwd=cwd, env=env, capture_output=True, text=True, timeout=300,
    )


def test_the_package_keeps_its_import_contract():
    run = _lint(ROOT)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "BROKEN" not in run.stdout


@pytest.mark.parametrize("module, forbidden", [
    ("linalg/certified.py", "from sparsedp.gossip import views"),  # engine -> family
    ("gossip/views.py", "from sparsedp.randomwalk import pairwise"),  # family -> family
    ("privacy/gaussian.py", "from sparsedp.testing import dense_M"),  # references in the package
])
def test_a_forbidden_import_breaks_the_contract(tmp_path, module, forbidden):
    shutil.copytree(ROOT / "sparsedp", tmp_path / "sparsedp",
                    ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    with open(tmp_path / "sparsedp" / module, "a") as handle:
        handle.write(f"\n{forbidden}  # deliberately forbidden\n")
    run = _lint(tmp_path)
    assert run.returncode != 0 and "BROKEN" in run.stdout, run.stdout + run.stderr
