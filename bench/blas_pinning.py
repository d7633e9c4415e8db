"""One BLAS thread count for a timed comparison, on both sides.

The engine runs its dense work on ``SPARSEDP_BLAS_THREADS`` BLAS threads (default 1,
:mod:`sparsedp.linalg.threads`), while a dense or scipy baseline in the same process runs on
whatever BLAS starts with (every core): the dense reference's time moved from 0.1 s to 4.6 s
with the thread count, so a speed-up means nothing without it.  :func:`pinned_blas` sets both
to the same count, and every script that prints a ratio records ``blas_threads`` next to it.
"""

from __future__ import annotations

import argparse
import contextlib
import os

from threadpoolctl import threadpool_limits

DEFAULT_BLAS_THREADS = 1  # the engine's own default


def add_blas_option(parser: argparse.ArgumentParser) -> None:
    """Add ``--blas-threads K`` (default 1) to a bench script's parser."""
    parser.add_argument("--blas-threads", type=int, default=DEFAULT_BLAS_THREADS,
                        help="BLAS threads for the engine and every dense / scipy baseline "
                             "alike (default %(default)s)")


@contextlib.contextmanager
def pinned_blas(threads: int = DEFAULT_BLAS_THREADS):
    """Inside: the BLAS pools limited to ``threads`` (threadpoolctl) and the engine told the
    same (``SPARSEDP_BLAS_THREADS``); both restored after.  Yields ``threads``."""
    if threads < 1:
        raise ValueError(f"BLAS threads must be >= 1, got {threads}")
    before = os.environ.get("SPARSEDP_BLAS_THREADS")
    os.environ["SPARSEDP_BLAS_THREADS"] = str(threads)
    try:
        with threadpool_limits(limits=threads, user_api="blas"):
            yield threads
    finally:
        if before is None:
            del os.environ["SPARSEDP_BLAS_THREADS"]
        else:
            os.environ["SPARSEDP_BLAS_THREADS"] = before
