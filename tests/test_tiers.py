"""The test suite's own contract: Ctrl-C stops it on the first press, and the tiers are
declared (the default run leaves out ``slow``; ``.ci/run`` runs both)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

SWALLOWING_TESTS = '''
import pathlib, time, pytest
HERE = pathlib.Path(__file__).parent

def test_catches_the_interrupt():
    (HERE / "ready").write_text("ready")
    try:
        time.sleep(120)
    except KeyboardInterrupt:  # as the command line's error boundary does
        pytest.fail("caught the interrupt")

def test_after():
    (HERE / "after").write_text("ran")
'''


def _interrupt_once(tmp_path: Path, *plugin_args: str) -> subprocess.CompletedProcess:
    """Run the two tests above in a pytest subprocess, SIGINT it once when the first test is
    running (waiting for its file, not a fixed time), and return the finished process."""
    (tmp_path / "test_swallow.py").write_text(SWALLOWING_TESTS)
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *plugin_args,
               "-c", str(tmp_path / "pytest.ini"), "--rootdir", str(tmp_path),
               str(tmp_path / "test_swallow.py")]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT),
                                                        os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, start_new_session=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    deadline = time.monotonic() + 300
    while not (tmp_path / "ready").exists():
        assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()[0]
        time.sleep(0.05)
    proc.send_signal(signal.SIGINT)
    output, _ = proc.communicate(timeout=300)
    return subprocess.CompletedProcess(command, proc.returncode, output)


@pytest.mark.slow  # pytest in a subprocess
def test_ctrl_c_stops_the_run_on_the_first_press_even_when_a_test_swallows_it(tmp_path):
    run = _interrupt_once(tmp_path, "-p", "tests.interrupt_plugin")
    assert not (tmp_path / "after").exists(), run.stdout
    assert run.returncode == pytest.ExitCode.INTERRUPTED, run.stdout


@pytest.mark.slow  # pytest in a subprocess
def test_without_the_plugin_a_swallowed_ctrl_c_lets_the_run_go_on(tmp_path):
    """The failure the plugin exists for (so the test above can fail)."""
    run = _interrupt_once(tmp_path)
    assert (tmp_path / "after").exists(), run.stdout
    assert run.returncode == pytest.ExitCode.TESTS_FAILED, run.stdout


def test_the_tiers_are_declared_and_ci_runs_both():
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+
    options = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["pytest"]
    options = options["ini_options"]
    assert any(m.startswith("slow:") for m in options["markers"])
    assert '-m "not slow"' in options["addopts"]
    ci = (ROOT / ".ci" / "run").read_text()
    readme = (ROOT / "README.md").read_text()
    assert 'python -m pip install -e ".[dev]" && python -m pytest -q\n' in ci
    assert 'python -m pip install -e ".[dev]" && python -m pytest -q\n' in readme
    assert "python -m pytest -q -m slow" in ci and "python -m pytest -q -m slow" in readme
