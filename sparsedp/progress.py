"""Progress reporting for long work, in three modes.

``progress`` arguments of the public functions and the CLI's ``--progress`` take:

* ``"auto"`` (or ``None``, the default): a tqdm bar on stderr when stderr is a terminal and
  the work lasts more than :data:`TERMINAL_DELAY` seconds; when stderr is not a terminal (a
  batch job, a log file) one plain line every :data:`LOG_INTERVAL` seconds, so a long run
  shows that it is alive and how far it is, while short runs print nothing.  The interval
  runs across the stages of one job (:class:`_LogClock`): a job of many stages that are
  each shorter than the interval still prints a line every interval;
* ``"always"`` (or ``True``): the bar at once on a terminal, else one line every
  :data:`ALWAYS_LOG_INTERVAL` seconds from the start;
* ``"never"`` (or ``False``): nothing.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from typing import Any

from tqdm import tqdm

from sparsedp.errors import ParameterError

__all__ = ["MODES", "progress_bar", "progress_mode", "run_with_estimated_progress"]

MODES = ("auto", "always", "never")
TERMINAL_DELAY = 2.0
LOG_INTERVAL = 30.0
ALWAYS_LOG_INTERVAL = 5.0
CURSOR_UP = "\x1b[A"
ESTIMATE_TICK = 0.5  # seconds between two updates of an estimated progress bar


def progress_mode(progress: Any) -> str:
    """``progress`` as one of :data:`MODES` (``None`` -> auto, ``True`` -> always,
    ``False`` -> never)."""
    if progress is None:
        return "auto"
    if progress is True or progress is False:
        return "always" if progress else "never"
    if progress in MODES:
        return progress
    raise ParameterError(f"progress must be one of {MODES} (or True/False/None), "
                         f"got {progress!r}")


class _LogClock:
    """When a log (stderr off a terminal, mode auto) last showed that the job is alive.

    A job is a run of bars with no idle gap longer than :data:`LOG_INTERVAL` between one
    bar's last update or end and the next one's start (a notebook's separate calls are
    separate jobs).
    A new bar waits ``LOG_INTERVAL - (now - quiet_since)``: what is left of the interval
    since the log's last line, or since the job began."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock
        self.quiet_since = -float("inf")
        self.last_activity = -float("inf")

    def delay(self) -> float:
        """The delay of a bar that starts now."""
        now = self.clock()
        if now - self.last_activity > LOG_INTERVAL:
            self.quiet_since = now  # a new job
        self.last_activity = now
        return max(0.0, LOG_INTERVAL - (now - self.quiet_since))

    def active(self) -> None:
        """A bar of the job advanced or ended."""
        self.last_activity = self.clock()

    def printed(self) -> None:
        """The log showed a line."""
        self.quiet_since = self.last_activity = self.clock()


_LOG_CLOCK = _LogClock()


class _LogBar(tqdm):
    """A bar off a terminal in mode auto: a line every :data:`LOG_INTERVAL` seconds, the
    first one after :meth:`_LogClock.delay`; its updates and its end count as the job's
    activity."""

    def __init__(self, **kwargs) -> None:
        delay = _LOG_CLOCK.delay()
        # smoothing=0: the rate is the runs over the bar's age (tqdm's moving average would
        # take the first interval from the shifted last_print_t below, up to 30x too long)
        super().__init__(mininterval=LOG_INTERVAL, maxinterval=LOG_INTERVAL, delay=delay,
                         smoothing=0, **kwargs)
        if delay > 0:  # tqdm prints once mininterval has passed since its last line (here
            self.last_print_t -= LOG_INTERVAL - delay  # its start): due after delay instead

    def update(self, n: float | None = 1) -> bool | None:
        _LOG_CLOCK.active()
        return super().update(n)

    def close(self) -> None:
        super().close()
        _LOG_CLOCK.active()


class _Lines:
    """A file for tqdm that turns its carriage-return redraws into whole lines (for logs), and
    drops the cursor-up codes with which it places a second bar below an open one."""

    def __init__(self, stream) -> None:
        self.stream = stream

    def write(self, text: str) -> None:
        line = text.replace("\r", "").replace(CURSOR_UP, "").strip()
        if line:
            self.stream.write(line + "\n")
            _LOG_CLOCK.printed()

    def flush(self) -> None:
        self.stream.flush()


def progress_bar(progress: Any, *, total: float | None, desc: str, unit: str) -> tqdm | None:
    """A tqdm bar for ``progress`` (:func:`progress_mode`), or ``None`` in mode never."""
    mode = progress_mode(progress)
    if mode == "never":
        return None
    stream = sys.stderr
    if stream is not None and stream.isatty():
        return tqdm(total=total, desc=desc, unit=unit, leave=False, file=stream,
                    delay=TERMINAL_DELAY if mode == "auto" else 0.0)
    log = dict(total=total, desc=desc, unit=unit, leave=False, file=_Lines(stream),
               ascii=True, dynamic_ncols=False, ncols=80)
    if mode == "auto":
        return _LogBar(**log)
    return tqdm(mininterval=ALWAYS_LOG_INTERVAL, maxinterval=ALWAYS_LOG_INTERVAL, delay=0.0,
                **log)


def run_with_estimated_progress(routine: Callable, argument, bar: tqdm, rate: float):
    """``routine(argument)`` in a worker thread (it must release the GIL: a LAPACK call that
    reports nothing until it returns); meanwhile ``bar`` (in whole Gflop) advances by ``rate``
    flops a second (an estimate, e.g. :func:`sparsedp.resources.dense_product_rate`), up to
    99 % of its total, and is filled when the routine returns.  Returns its result."""
    shown = 0
    with ThreadPoolExecutor(1) as pool:
        job = pool.submit(routine, argument)
        start = time.perf_counter()
        while True:
            try:
                result = job.result(timeout=ESTIMATE_TICK)
                break
            except FutureTimeout:
                estimate = int(min(0.99 * bar.total, (time.perf_counter() - start) * rate / 1e9))
                if estimate > shown:
                    bar.update(estimate - shown)
                    shown = estimate
    bar.update(bar.total - shown)
    return result
