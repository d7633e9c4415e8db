"""The package as other tools see it: ``write_map``/``read_map`` exported, ``python -m
sparsedp``, ``py.typed`` with the public API's type hints checked by mypy, and the version
written once (pyproject.toml)."""

import inspect
import os
import re
import subprocess
import sys
from importlib import metadata
from pathlib import Path

import pytest

import sparsedp
from sparsedp import version
from sparsedp.maps import store

ROOT = Path(__file__).resolve().parents[1]
PYPROJECT = (ROOT / "pyproject.toml").read_text()


def _run(*args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}  # this tree, the launcher included
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, env=env,
                          cwd=ROOT, timeout=300)


def test_write_map_and_read_map_are_exported():
    assert {"write_map", "read_map"} <= set(sparsedp.__all__)
    assert sparsedp.write_map is store.write_map and sparsedp.read_map is store.read_map
    assert sparsedp.maps.write_map is store.write_map  # and from the maps package


@pytest.mark.slow  # two interpreters in subprocesses
def test_python_m_sparsedp_is_the_sparsedp_command():
    """Same output and exit status as the console entry point (``sparsedp_launcher``), for a
    success and for an input error."""
    launcher = ("import sys, sparsedp_launcher; sys.argv[0] = 'sparsedp'; "
                "sys.exit(sparsedp_launcher.main())")
    for args in (["--version"], ["account", "--graph", "no-such-file.txt", "--target", "0",
                                 "--observer", "1"]):
        as_module = _run("-m", "sparsedp", *args)
        as_command = _run("-c", launcher, *args)
        assert (as_module.returncode, as_module.stdout, as_module.stderr) == (
            as_command.returncode, as_command.stdout, as_command.stderr)
    assert as_module.returncode == 2 and "no-such-file.txt" in as_module.stderr
    assert "Traceback" not in as_module.stderr


def test_the_version_is_written_once_and_reported_everywhere():
    declared = re.search(r'^version = "([^"]+)"', PYPROJECT, re.MULTILINE).group(1)
    assert sparsedp.__version__ == metadata.version("sparsedp") == declared
    assert _run("-m", "sparsedp", "--version").stdout == f"sparsedp {declared}\n"
    written = [str(p.relative_to(ROOT)) for p in (ROOT / "sparsedp").rglob("*.py")
               if re.search(rf"""['"]{re.escape(declared)}['"]""", p.read_text())]
    assert written == []  # pyproject.toml is the one place


def test_a_source_tree_that_is_not_installed_reads_its_pyproject(monkeypatch, tmp_path):
    def not_installed(name):
        raise metadata.PackageNotFoundError(name)

    monkeypatch.setattr(metadata, "version", not_installed)
    assert version.package_version() == sparsedp.__version__  # this tree's pyproject.toml
    other = tmp_path / "pyproject.toml"
    other.write_text('[project]\nname = "sparsedp"\nversion = "9.8.7"\n\n[tool.x]\n'
                     'version = "1"\n')
    assert version.package_version(other) == "9.8.7"
    other.write_text('[project]\nname = "another"\nversion = "9.8.7"\n')
    assert version.package_version(other) == version.UNKNOWN
    assert version.package_version(tmp_path / "missing.toml") == version.UNKNOWN


def test_the_package_ships_py_typed():
    assert (ROOT / "sparsedp" / "py.typed").is_file()
    assert re.search(r'^\[tool\.setuptools\.package-data\]\nsparsedp = \["py\.typed"\]',
                     PYPROJECT, re.MULTILINE)


def _public_functions():
    return [(name, getattr(sparsedp, name)) for name in sparsedp.__all__
            if inspect.isfunction(inspect.unwrap(getattr(sparsedp, name)))]


def test_every_public_function_is_annotated():
    missing = []
    for name, function in _public_functions():
        signature = inspect.signature(function)
        missing += [f"{name}({p})" for p, parameter in signature.parameters.items()
                    if parameter.annotation is inspect.Parameter.empty]
        if signature.return_annotation is inspect.Signature.empty:
            missing.append(f"{name} -> ?")
    assert missing == []


def test_mypy_checks_every_module_of_the_public_api():
    """[tool.mypy] files covers every module that defines a name of ``sparsedp.__all__``."""
    files = set(re.findall(r'^    "(sparsedp/[\w/]+\.py)",$', PYPROJECT, re.MULTILINE))
    modules = {inspect.unwrap(getattr(sparsedp, name)).__module__ for name in sparsedp.__all__}
    needed = {module.replace(".", "/") + ".py" for module in modules}
    assert needed - files == set()
    assert "sparsedp/__init__.py" in files


@pytest.mark.slow  # mypy from a cold cache: about 25 s
def test_mypy_passes_on_the_public_api():
    pytest.importorskip("mypy")
    result = _run("-m", "mypy", "--config-file", str(ROOT / "pyproject.toml"))
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.startswith("Success: no issues found")
