"""Thread counts: the BLAS/LAPACK library's during dense linear algebra, numba's per kernel.

BLAS.  On the 2-core reference machine multi-threaded OpenBLAS factorisations were erratic:
an 800 x 800 Cholesky took 0.01 s on one thread and up to 1.1 s on two (thread wake-up and
contention with numba's worker threads).  The engine therefore runs its dense work with
``SPARSEDP_BLAS_THREADS`` BLAS threads (default 1); parallelism comes from numba kernels.

numba.  A parallel region ends at a barrier that waits for its slowest thread.  On a machine
whose cores are taken by other work, a thread of ours may wait a whole scheduler time slice
for a core, so a region that does a millisecond of work can take tens of milliseconds:
an ER(10^4) query at T = 100 took 0.15-0.25 s on one thread and 0.6-6.7 s on two with the
machine busy (load 9 on 2 cores; 62 products of 63 ms each instead of 2-3 ms).  Each parallel
kernel call therefore asks :func:`kernel_threads` for its thread count, given its work (in
multiply-adds): one thread below ``PARALLEL_MIN_WORK``, and, while the machine is busy (the
one-minute load average above the core count), one thread below ``BUSY_PARALLEL_MIN_WORK``,
where a region lasts long enough (about 50 ms on one core) for a lost time slice to cost
little.  ``SPARSEDP_THREADS`` caps the count (``1``: never parallel; default: numba's own
thread count, ``NUMBA_NUM_THREADS``, all cores).

The load changes no result: row-parallel kernels sum each row alone, and the Gram sums of
:func:`sparsedp.linalg.kernels.spmm_fused` run over a fixed number of row chunks
(``FUSED_CHUNKS``, or :func:`kernel_thread_cap` for wide blocks), not over the threads
:func:`kernel_threads` chooses, so a query gives the same bounds bit for bit on a busy
machine and on a quiet one (tests/test_threads.py).
"""

from __future__ import annotations

import contextlib
import functools
import os
import threading
import time
from collections.abc import Iterator

from threadpoolctl import ThreadpoolController


def blas_threads() -> int:
    """The BLAS thread count the engine uses (``SPARSEDP_BLAS_THREADS``, default 1)."""
    return max(1, int(os.environ.get("SPARSEDP_BLAS_THREADS", "1")))


def limit_blas_threads(function):
    """Decorator: run ``function`` with the BLAS thread pool limited to :func:`blas_threads`
    (inside another such function, the limit is already in place and is not set again)."""

    @functools.wraps(function)
    def wrapper(*args, **kwargs):
        if getattr(_state, "limited", False):
            return function(*args, **kwargs)
        with _controller().limit(limits=blas_threads(), user_api="blas"):
            _state.limited = True
            try:
                return function(*args, **kwargs)
            finally:
                _state.limited = False

    return wrapper


_state = threading.local()  # whether this thread runs inside limit_blas_threads


@contextlib.contextmanager
def one_blas_thread() -> Iterator[None]:
    """Inside: one BLAS thread, for many small products (a stack of ``20 x 7480`` Grams took
    0.06 s on one thread and 4-45 s on two with the machine busy: a barrier per product)."""
    with _controller().limit(limits=1, user_api="blas"):
        yield


@functools.lru_cache(maxsize=1)
def _controller() -> ThreadpoolController:
    """The loaded thread pools, found once (discovery reads /proc: about 1 ms a call)."""
    return ThreadpoolController()


PARALLEL_MIN_WORK = 200_000  # multiply-adds below which a parallel region costs more than it saves
BUSY_PARALLEL_MIN_WORK = 20_000_000  # the same while the machine is busy (module docstring)
_LOAD_REFRESH_SECONDS = 1.0


def kernel_thread_cap() -> int:
    """The most threads a numba kernel uses: ``SPARSEDP_THREADS`` if set, else numba's own
    count (``NUMBA_NUM_THREADS``: the machine's cores unless set).

    Raises
    ------
    ValueError
        If ``SPARSEDP_THREADS`` is not a positive integer.
    """
    import numba

    setting = os.environ.get("SPARSEDP_THREADS", "").strip()
    if not setting:
        return int(numba.config.NUMBA_NUM_THREADS)
    if not setting.isdigit() or int(setting) < 1:
        raise ValueError(f"SPARSEDP_THREADS must be a positive integer, got {setting!r}")
    return min(int(setting), int(numba.config.NUMBA_NUM_THREADS))


def machine_busy() -> bool:
    """Whether the one-minute load average exceeds the core count (read at most once a
    second; ``False`` where the load average is not available)."""
    now = time.monotonic()
    if now - _load_state.read_at >= _LOAD_REFRESH_SECONDS:
        try:
            load = os.getloadavg()[0]
        except OSError:
            load = 0.0
        _load_state.busy = load > (os.cpu_count() or 1)
        _load_state.read_at = now
    return _load_state.busy


def kernel_threads(work: float) -> int:
    """Threads for one parallel kernel call of ``work`` multiply-adds (module docstring):
    1 below ``PARALLEL_MIN_WORK``, or below ``BUSY_PARALLEL_MIN_WORK`` while the machine is
    busy; else :func:`kernel_thread_cap`."""
    if work < PARALLEL_MIN_WORK or (work < BUSY_PARALLEL_MIN_WORK and machine_busy()):
        return 1
    return kernel_thread_cap()


@contextlib.contextmanager
def numba_threads_for(work: float) -> Iterator[int]:
    """Run the block's numba parallel regions with :func:`kernel_threads` ``(work)`` threads
    (numba's count is per calling thread; the previous count is restored)."""
    import numba

    previous = numba.get_num_threads()
    threads = kernel_threads(work)
    if threads != previous:
        numba.set_num_threads(threads)
    try:
        yield threads
    finally:
        if threads != previous:
            numba.set_num_threads(previous)


class _LoadState:
    read_at = -float("inf")
    busy = False


_load_state = _LoadState()
