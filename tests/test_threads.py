"""The numba thread policy (:mod:`sparsedp.linalg.threads`): one thread for small work and,
while the machine is busy, for anything that a lost time slice would dominate; a cap from
``SPARSEDP_THREADS``; the caller's count restored; the same products whatever the count."""

from __future__ import annotations

import numba
import numpy as np
import pytest
import scipy.sparse as sp

from sparsedp.linalg import kernels, threads


@pytest.fixture
def load(monkeypatch):
    """Set the one-minute load average the policy reads (2 cores)."""
    monkeypatch.setattr(threads.os, "cpu_count", lambda: 2)
    monkeypatch.setattr(threads, "_load_state", threads._LoadState())

    def set_load(value: float) -> None:
        monkeypatch.setattr(threads.os, "getloadavg", lambda: (value, value, value))
        threads._load_state.read_at = -float("inf")

    return set_load


def test_small_work_runs_on_one_thread_and_large_work_on_the_cap(load, monkeypatch):
    monkeypatch.delenv("SPARSEDP_THREADS", raising=False)
    load(0.5)
    assert threads.kernel_threads(threads.PARALLEL_MIN_WORK - 1) == 1
    assert threads.kernel_threads(threads.PARALLEL_MIN_WORK) == numba.config.NUMBA_NUM_THREADS
    assert not threads.machine_busy()


def test_a_busy_machine_keeps_medium_work_on_one_thread(load, monkeypatch):
    monkeypatch.delenv("SPARSEDP_THREADS", raising=False)
    load(9.0)
    assert threads.machine_busy()
    assert threads.kernel_threads(threads.BUSY_PARALLEL_MIN_WORK - 1) == 1
    assert (threads.kernel_threads(threads.BUSY_PARALLEL_MIN_WORK)
            == numba.config.NUMBA_NUM_THREADS)


def test_no_load_average_counts_as_quiet(load, monkeypatch):
    def unavailable():
        raise OSError("no load average")

    monkeypatch.setattr(threads.os, "getloadavg", unavailable)
    assert not threads.machine_busy()


def test_sparsedp_threads_caps_the_count_and_is_checked(load, monkeypatch):
    load(0.0)
    monkeypatch.setenv("SPARSEDP_THREADS", "1")
    assert threads.kernel_threads(10**12) == 1
    monkeypatch.setenv("SPARSEDP_THREADS", "10000")
    assert threads.kernel_thread_cap() == numba.config.NUMBA_NUM_THREADS
    for bad in ("0", "-2", "two"):
        monkeypatch.setenv("SPARSEDP_THREADS", bad)
        with pytest.raises(ValueError, match="SPARSEDP_THREADS"):
            threads.kernel_thread_cap()


def test_the_callers_thread_count_is_restored(load, monkeypatch):
    monkeypatch.delenv("SPARSEDP_THREADS", raising=False)
    load(0.0)
    before = numba.get_num_threads()
    with threads.numba_threads_for(1) as inside:
        assert inside == 1 == numba.get_num_threads()
    assert numba.get_num_threads() == before


@pytest.mark.skipif(numba.config.NUMBA_NUM_THREADS < 2, reason="needs two numba threads")
@pytest.mark.parametrize("width", [2, 12])  # fused into the product; BLAS Grams after it
def test_products_agree_busy_or_quiet(load, monkeypatch, width):
    """The fused product on one thread (busy) and on two (quiet): the same W X and the same
    Gram sums bit for bit (each row is summed the same way, the Gram sums over row chunks
    whose count does not follow the load; with chunks per thread a query's bounds differed
    in the last bits busy or quiet)."""
    monkeypatch.delenv("SPARSEDP_THREADS", raising=False)
    rng = np.random.default_rng(3)
    n = 40_000
    rows = np.repeat(np.arange(n), 8)
    W = sp.csr_matrix((rng.random(rows.size), (rows, rng.integers(0, n, rows.size))), (n, n))
    X = rng.standard_normal((n, width))
    work = W.nnz * width if width <= kernels.FUSED_MAX_WIDTH else n * width**2
    assert threads.PARALLEL_MIN_WORK <= work < threads.BUSY_PARALLEL_MIN_WORK
    load(0.0)
    quiet = kernels.spmm_fused(W, X, 0.25, backend="numba")
    load(9.0)
    busy = kernels.spmm_fused(W, X, 0.25, backend="numba")
    for a, b in zip(quiet, busy, strict=True):
        assert np.array_equal(a, b)
