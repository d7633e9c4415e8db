"""The memory budget of a request, checked before the work allocates anything.

Every entry point estimates what a request needs (each family has its cost model, e.g.
:mod:`sparsedp.gossip.cost`) and calls :func:`require_within` before it allocates: a request
over the budget is refused at once with the estimate and what would fit, instead of running
into the kernel's OOM killer or a ``MemoryError`` after minutes.  The budget is
``MEMORY_FRACTION`` of the physical memory, or what the caller passes as ``max_memory``
(``--max-memory`` on the command line, e.g. ``8G``), or the budget set for a block of
work with :func:`memory_limit` (every check inside it, generators included, uses it: the CLI
sets ``--max-memory`` this way for the whole command).
"""

from __future__ import annotations

import contextlib
import contextvars
import math
import os
import re
import time
from collections.abc import Iterator

import numpy as np

from sparsedp.errors import ParameterError, ResourceLimitError

MEMORY_FRACTION = 0.8  # of the physical memory, the default budget of one request
#: What any query holds besides the arrays that grow with its sizes (small arrays, the
#: result, a closed form's length-T arrays): traced peaks of 85-350 KiB.  Added to every
#: memory estimate (gossip, maps, matrix factorisation); all of a closed-form answer's.
QUERY_OVERHEAD = 2**20
_UNITS = {"": 1, "b": 1, "k": 2**10, "m": 2**20, "g": 2**30, "t": 2**40}
_LIMIT: contextvars.ContextVar[int | None] = contextvars.ContextVar("sparsedp_memory_limit",
                                                                   default=None)


def physical_memory() -> int:
    """Bytes of physical memory of this machine (8 GiB where the OS does not say, e.g. on
    Windows, which has no ``os.sysconf``)."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (AttributeError, ValueError, OSError):
        return 8 * 2**30


def parse_size(text: str | int | float) -> int:
    """Bytes from ``"8G"``, ``"512M"``, ``"1.5GiB"``, ``"2e9"`` or a number (binary units)."""
    if isinstance(text, (int, float)) and not isinstance(text, bool):
        value, unit = float(text), ""
    else:
        match = re.fullmatch(r"\s*([0-9.eE+]+)\s*([kKmMgGtT]?)(?:i?[bB])?\s*", str(text))
        if not match:
            raise ParameterError(f"memory size {text!r} not understood; write e.g. 8G or 512M")
        value, unit = float(match.group(1)), match.group(2).lower()
    size = value * _UNITS[unit]
    if not (math.isfinite(size) and size > 0):
        raise ParameterError(f"memory size must be > 0, got {text!r}")
    return int(size)


def memory_budget(max_memory=None) -> int:
    """Bytes one request may use: ``max_memory`` (bytes or a size string), else the limit of
    the enclosing :func:`memory_limit` block, else ``MEMORY_FRACTION`` of the physical
    memory."""
    if max_memory is not None:
        return parse_size(max_memory)
    limit = _LIMIT.get()
    return int(MEMORY_FRACTION * physical_memory()) if limit is None else limit


@contextlib.contextmanager
def memory_limit(max_memory) -> Iterator[None]:
    """Within the block, the default budget of every check is ``max_memory`` (bytes or a
    size string; ``None`` leaves the default)::

        with sparsedp.resources.memory_limit("2G"):
            G = sparsedp.graphs.erdos_renyi(10**7, 1e-6)   # refused: needs more than 2 GiB
    """
    token = _LIMIT.set(None if max_memory is None else parse_size(max_memory))
    try:
        yield
    finally:
        _LIMIT.reset(token)


def format_bytes(size: float) -> str:
    """``1.5 GiB``-style text."""
    for unit in ("B", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if abs(size) < 1024 or unit == "PiB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    raise AssertionError("unreachable")


def require_within(needed: float, budget: int, what: str, advice: str = "") -> None:
    """Refuse (:class:`ResourceLimitError`) a request whose estimate exceeds the budget."""
    if needed > budget:
        raise ResourceLimitError(
            f"{what} needs about {format_bytes(needed)}, more than the memory budget of "
            f"{format_bytes(budget)} (max_memory / --max-memory)"
            + (f"; {advice}" if advice else "")
        )


def largest_fitting(memory_of, budget: int, low: int = 1) -> int | None:
    """The largest integer x >= low with ``memory_of(x) <= budget`` (``memory_of``
    increasing), or ``None`` when even ``low`` does not fit."""
    if memory_of(low) > budget:
        return None
    high = low
    while memory_of(high * 2) <= budget:
        high *= 2
    top = high * 2
    while top - high > 1:
        middle = (high + top) // 2
        high, top = (middle, top) if memory_of(middle) <= budget else (high, middle)
    return high


def require_fits(memory_of, T: int, budget: int, what: str, low: int = 1,
                 unit: str = "rounds") -> None:
    """Refuse (:func:`require_within`) the request when ``memory_of(T)`` exceeds the budget,
    naming the largest ``T >= low`` that fits (``memory_of`` increasing in T; ``unit`` names
    what T counts)."""
    needed = memory_of(T)
    advice = ""
    if needed > budget:
        largest = largest_fitting(memory_of, budget, low)
        advice = (f"at most T = {largest} {unit} fit" if largest else f"not even T = {low} fits"
                  ) + " (or raise max_memory)"
    require_within(needed, budget, what, advice)


def dense_product_rate() -> float:
    """Flops per second of a 768 x 768 x 768 dense product, the faster of two timed now (for
    time estimates and estimated progress only)."""
    a = np.ones((768, 768))
    seconds = []
    for _ in range(2):
        start = time.perf_counter()
        a @ a
        seconds.append(time.perf_counter() - start)
    return 2.0 * 768**3 / max(min(seconds), 1e-6)
