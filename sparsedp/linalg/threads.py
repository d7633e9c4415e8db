"""Thread count of the BLAS/LAPACK library during the package's dense linear algebra.

On the 2-core reference machine multi-threaded OpenBLAS factorisations were erratic: an
800 x 800 Cholesky took 0.01 s on one thread and up to 1.1 s on two (thread wake-up and
contention with numba's worker threads).  The engine therefore runs its dense work with
``SPARSEDP_BLAS_THREADS`` BLAS threads (default 1); parallelism comes from numba kernels.
"""

from __future__ import annotations

import functools
import os
import threading

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


@functools.lru_cache(maxsize=1)
def _controller() -> ThreadpoolController:
    """The loaded thread pools, found once (discovery reads /proc: about 1 ms a call)."""
    return ThreadpoolController()
