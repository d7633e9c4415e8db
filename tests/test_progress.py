"""Progress modes (sparsedp.progress): auto / always / never, whole lines off a terminal."""

import io
import shutil
import subprocess
import sys

import pytest

from sparsedp.errors import ParameterError
from sparsedp.progress import _Lines, progress_bar, progress_mode

COMMAND = [shutil.which("sparsedp")] if shutil.which("sparsedp") else [
    sys.executable, "-m", "sparsedp.cli"]


@pytest.mark.parametrize("given, mode", [(None, "auto"), (True, "always"), (False, "never"),
                                         ("auto", "auto"), ("never", "never")])
def test_progress_modes(given, mode):
    assert progress_mode(given) == mode


def test_unknown_progress_mode_is_refused():
    with pytest.raises(ParameterError, match="progress must be one of"):
        progress_mode("sometimes")


def test_never_gives_no_bar():
    assert progress_bar("never", total=10, desc="x", unit="it") is None


def test_redraws_become_whole_lines():
    out = io.StringIO()
    lines = _Lines(out)
    lines.write("\rsparse products:  10%")
    lines.write("\r")
    lines.write("\rsparse products:  20%")
    lines.write("\n\rCholesky factorisation:   2%\x1b[A")  # a second bar, placed below
    assert out.getvalue() == ("sparse products:  10%\nsparse products:  20%\n"
                              "Cholesky factorisation:   2%\n")


@pytest.mark.slow  # the installed command in subprocesses
@pytest.mark.parametrize("mode, shown", [("always", True), ("auto", False), ("never", False)])
def test_progress_in_a_log_file(mode, shown):
    """stderr is a pipe here (as in a batch job): 'always' prints whole progress lines from
    the start, 'auto' stays silent for a short run, 'never' always."""
    run = subprocess.run([*COMMAND, "account", "--rounds", "50", "--progress", mode],
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    assert ("sparse products" in run.stderr) == shown
    assert "\r" not in run.stderr
    if shown:
        assert all(line.startswith("sparse products") for line in run.stderr.splitlines())


@pytest.mark.slow  # the installed command in subprocesses
@pytest.mark.parametrize("command, label", [
    (("randomwalk", "--generator", "ring:200", "--rounds", "3000", "--sigma", "5",
      "--method", "series"), "walk steps"),
    (("randomwalk", "--generator", "ring:200", "--rounds", "3000", "--sigma", "5",
      "--method", "log-green"), "Chebyshev terms"),
    (("muffliato", "--generator", "ring:200", "--rounds", "3000", "--sigma", "5"),
     "Muffliato rounds"),
    (("muffliato", "--generator", "ring:200", "--rounds", "3000", "--sigma", "5",
      "--method", "propagation"), "Muffliato rounds x chunks"),
])
def test_randomwalk_and_muffliato_show_progress(command, label):
    """The random-walk and Muffliato loops report progress too ('always' off a terminal)."""
    run = subprocess.run([*COMMAND, *command, "--progress", "always", "--json"],
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    assert label in run.stderr and "\r" not in run.stderr
    quiet = subprocess.run([*COMMAND, *command, "--progress", "never", "--json"],
                           capture_output=True, text=True, timeout=120)
    assert quiet.returncode == 0 and quiet.stderr == ""
