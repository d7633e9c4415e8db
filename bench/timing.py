"""Timing shared by the bench scripts: one timed call, and the calibration that every ratio is
measured against (the best of ``repeats`` scipy ``W @ x`` on the same W, in the same process)."""

from __future__ import annotations

import time

import numpy as np


def timed(f):
    """``(seconds, value)`` of one call ``f()``."""
    start = time.perf_counter()
    value = f()
    return time.perf_counter() - start, value


def matvec_seconds(W, x: np.ndarray, repeats: int = 5) -> float:
    """The best of ``repeats`` timings of one scipy ``W @ x``."""
    return min(timed(lambda: W @ x)[0] for _ in range(repeats))
