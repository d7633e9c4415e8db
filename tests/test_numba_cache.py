"""The numba cache lives outside the package and heals itself when corrupt."""

from __future__ import annotations

import os
import pickle
import site
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from sparsedp.linalg import numba_cache

PACKAGE = Path(__file__).resolve().parents[1] / "sparsedp"
QUERY = ("import networkx as nx, sparsedp; W = sparsedp.gossip_matrix(nx.karate_club_graph()); "
         "print(sparsedp.squared_sensitivity(W, 0, [5], 10, exact=True).upper)")


def _query(env_extra: dict) -> subprocess.CompletedProcess:
    env = {**os.environ, **env_extra}
    return subprocess.run([sys.executable, "-c", QUERY], capture_output=True, text=True,
                          env=env, timeout=600)


@pytest.mark.slow  # a fresh interpreter compiles every kernel: 30-50 s
def test_cache_goes_to_numba_cache_dir_and_a_corrupt_one_is_rebuilt(tmp_path):
    first = _query({"NUMBA_CACHE_DIR": str(tmp_path)})
    assert first.returncode == 0, first.stderr
    files = [p for p in tmp_path.rglob("_numba_kernels.*") if p.suffix in (".nbi", ".nbc")]
    assert files, "no cache written to NUMBA_CACHE_DIR"
    for path in files:  # corrupt every file: truncated pickles
        path.write_bytes(path.read_bytes()[:7])
    second = _query({"NUMBA_CACHE_DIR": str(tmp_path)})
    assert second.returncode == 0, second.stderr
    assert second.stdout == first.stdout
    warnings = [line for line in second.stderr.splitlines() if "corrupt numba cache" in line]
    assert len(warnings) == 1 and "Traceback" not in second.stderr
    third = _query({"NUMBA_CACHE_DIR": str(tmp_path)})  # healed: silent again
    assert third.returncode == 0 and "corrupt" not in third.stderr


@pytest.mark.slow  # a fresh interpreter compiles every kernel: 30-50 s
def test_default_cache_is_per_user_not_in_the_package(tmp_path):
    before = {p for p in PACKAGE.rglob("*.nb[ic]")}
    env = {"XDG_CACHE_HOME": str(tmp_path), "HOME": str(tmp_path)}
    run = subprocess.run([sys.executable, "-c", QUERY], capture_output=True, text=True,
                         env={k: v for k, v in {**os.environ, **env}.items()
                              if k != "NUMBA_CACHE_DIR"}, timeout=600)
    assert run.returncode == 0, run.stderr
    assert {p for p in PACKAGE.rglob("*.nb[ic]")} <= before  # nothing new in the package
    assert list(tmp_path.rglob("_numba_kernels.*.nbi"))


def test_heal_removes_only_unreadable_caches(tmp_path):
    good = tmp_path / "_numba_kernels.refresh-14.py311.nbi"
    good.write_bytes(pickle.dumps("version") + pickle.dumps(("stamp", {})))
    assert not numba_cache.heal(tmp_path) and good.exists()
    bad = tmp_path / "_numba_kernels.refresh-14.py311.1.nbc"
    bad.write_bytes(b"\x80\x04garbage")
    other = tmp_path / "someone_else.f-1.py311.nbi"
    other.write_bytes(b"not ours")
    with pytest.warns(UserWarning, match="corrupt numba cache"):
        assert numba_cache.heal(tmp_path)
    assert not good.exists() and not bad.exists() and other.exists()


@pytest.mark.slow  # a fresh interpreter compiles every kernel: 30-50 s
def test_a_non_editable_install_leaves_no_cache_in_site_packages(tmp_path):
    """pip-install the project (not editable) into a fresh venv that borrows the other
    dependencies, run a query from outside the source tree: no .nbi/.nbc file in its
    site-packages, the cache is in the per-user directory."""
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    python = venv / "bin" / "python"
    _borrow_this_environments_packages(python)
    install = subprocess.run([str(python), "-m", "pip", "install", "-q", "--no-deps",
                              str(PACKAGE.parent)], capture_output=True, text=True, timeout=600)
    assert install.returncode == 0, install.stderr[-2000:]
    cache = tmp_path / "cache"
    env = {k: v for k, v in os.environ.items() if k not in ("NUMBA_CACHE_DIR", "PYTHONPATH")}
    env["XDG_CACHE_HOME"] = str(cache)
    run = subprocess.run([str(python), "-c", "import sparsedp; print(sparsedp.__file__); "
                          + QUERY], capture_output=True, text=True, env=env, cwd=tmp_path,
                         timeout=600)
    assert run.returncode == 0, run.stderr
    installed = Path(run.stdout.splitlines()[0]).parent
    assert installed.is_relative_to(venv)  # the installed copy, not the source tree
    assert not list(installed.rglob("*.nb[ic]"))
    assert list(cache.rglob("_numba_kernels.*.nbi"))


def _borrow_this_environments_packages(python: Path) -> None:
    """Make the venv of ``python`` see the packages of the environment running the tests.

    ``venv --system-site-packages`` is not enough: run from inside a venv (or a conda env) it
    exposes the *base* interpreter's site-packages, not this environment's, and the
    dependencies are missing there.  A ``.pth`` file in the new venv's site-packages listing
    this environment's site directories works for a venv, a conda env and a system Python
    alike.  Its directories are appended after the venv's own, so the project installed into
    the venv wins over an editable install here (the ``.pth`` files inside the borrowed
    directories, such as the editable install's, are not processed)."""
    where = "import sysconfig; print(sysconfig.get_path('purelib'))"
    target = subprocess.run([str(python), "-c", where], capture_output=True, text=True,
                            check=True).stdout.strip()
    ours = [*site.getsitepackages(), sysconfig.get_path("purelib"), sysconfig.get_path("platlib")]
    if site.ENABLE_USER_SITE:
        ours.append(site.getusersitepackages())
    lines = dict.fromkeys(d for d in ours if Path(d).is_dir())  # ordered, without repeats
    (Path(target) / "borrowed_test_environment.pth").write_text("\n".join(lines) + "\n")
