"""Progress modes (sparsedp.progress): auto / always / never, whole lines off a terminal."""

import io
import re
import shutil
import subprocess
import sys
import time

import pytest

import sparsedp.progress as progress_module
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


def _stage(log, desc, seconds):
    """A stage of ``seconds`` with an update every 20 ms; the lines the log got meanwhile."""
    before = len(log.getvalue().splitlines())
    bar = progress_bar("auto", total=None, desc=desc, unit="it")
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        bar.update()
        time.sleep(0.02)
    bar.close()
    return log.getvalue().splitlines()[before:]


def test_a_log_shows_a_job_of_short_stages_every_interval(monkeypatch):
    """Off a terminal in mode auto, the interval runs across the stages of a job: stages that
    are each shorter than it still give a line once the interval has passed since the job
    began (before, each stage had its own interval and such a job printed nothing), then
    not before another interval.  After an idle gap longer than the interval a new job
    begins, silent again.  The line's rate is the stage's own (updates over its age), not
    the updates over the interval."""
    monkeypatch.setattr(progress_module, "LOG_INTERVAL", 2.0)  # conftest: a new clock
    log = io.StringIO()
    log.isatty = lambda: False
    monkeypatch.setattr(sys, "stderr", log)
    assert _stage(log, "first", 1.2) == []
    second = _stage(log, "second", 1.2)  # the interval ends 0.8 s into it
    assert len(second) == 1 and second[0].startswith("second")
    done, rate = re.search(r"(\d+)it \[[^,]*, ([\d.]+)it/s", second[0]).groups()
    assert float(rate) >= int(done) / 1.25  # its age is at most 1.2 s (not 2 s and more)
    assert _stage(log, "third", 0.9) == []  # 0.4-1.3 s after the line
    time.sleep(2.6)  # idle: the next call is a new job
    assert _stage(log, "fourth", 1.2) == []


def test_a_bar_that_advances_keeps_the_job_going():
    """A job lasts while its bars advance: a stage of 40 s whose bar printed nothing yet
    (its updates are the activity) is followed by a stage due at once, not by a new job;
    after 55 s without any bar a new job waits the whole interval again."""
    now = [0.0]
    clock = progress_module._LogClock(clock=lambda: now[0])
    interval = progress_module.LOG_INTERVAL
    assert clock.delay() == interval  # the job begins
    for now[0] in (10.0, 20.0, 28.0):  # the first stage's updates
        clock.active()
    now[0] = 40.0  # next stage: 12 s after the last update, 40 s into a silent job
    assert clock.delay() == 0.0
    clock.printed()
    now[0] = 55.0
    assert clock.delay() == interval - 15.0
    now[0] = 120.0  # idle since 55 s
    assert clock.delay() == interval


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
