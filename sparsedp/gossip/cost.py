"""What a squared-sensitivity request costs, estimated from its sizes before anything is
allocated: memory in bytes and sparse (block) products, per method.

``n`` nodes, ``nnz`` stored entries of W, ``m`` observed rows, ``T`` rounds, ``p`` the power
offset of the view.  Every method holds the ``T x T`` matrices of the sandwich and of the
bounds (``16 T^2`` doubles) and a few ``m T x T`` blocks (G, X, K X, the residual); the dense
methods hold ``K_T`` and its Cholesky factor (``2 (m T)^2``); the lag-based methods the
propagated vectors.  The formulas are margins over measured peaks where peaks were measured
(:func:`structured_memory`), upper estimates elsewhere; they decide whether a request is
refused (:func:`sparsedp.resources.require_within`), never a number that is reported as a
bound.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from sparsedp.linalg import gram, kernels
from sparsedp.linalg.operators import CHUNK_BLOCK_ENTRIES, DEFAULT_MEMORY_BUDGET, MIN_CHUNK_COLUMNS
from sparsedp.reprs import short_repr
from sparsedp.resources import QUERY_OVERHEAD

__all__ = ["Cost", "method_cost", "minimal_memory", "sparse_rate",
           "structured_memory"]


@dataclass(frozen=True)
class Cost:
    """Estimated peak memory (bytes) and sparse products of one request."""

    method: str
    memory: int
    sparse_products: int
    note: str = ""
    work: float = 0.0  # the time model's units (method_cost): seconds = work / rate

    __repr__ = short_repr

    def to_dict(self) -> dict:
        return {"method": self.method, "memory_bytes": self.memory,
                "sparse_products": self.sparse_products, "note": self.note}


def minimal_memory(T: int, m: int = 1) -> int:
    """What every method holds: ``8 (16 T^2 + 4 m T^2)`` bytes (the sandwich and bound
    matrices, the ``m T x T`` blocks).  Checked before W is even looked at, so that an absurd
    T is refused at once."""
    return 8 * (16 * T * T + 4 * m * T * T)


def banded_memory(n: int, T: int) -> int:
    """What ``method="banded"`` holds before its band's width is known
    (:mod:`sparsedp.gossip.banded`, which checks the band's own memory once it is): the
    propagated vectors and the lags."""
    return 8 * (8 * n + 8 * T)


def structured_memory(m: int, T: int, dense_certificate: bool = False) -> int:
    """Bytes the structured path's dense work may hold at once, with a margin:
    ``8 (c (mT)^2 + 4 mT T + 16 T^2)`` (K, its Cholesky factor and the solve's copies, the
    mT x T blocks G, X, K X, R, the T x T matrices of the sandwich and the bounds).  ``c = 3``
    where ``lambda_min(K_T)`` has an analytic bound (traced peaks 2.3-2.5 (mT)^2 at
    mT = 700-3500); ``c = 6`` where it is certified numerically (``dense_certificate``: power
    offset or known noise removed, :func:`sparsedp.gossip.certified_solve.
    analytic_lambda_min_lower_bound` is ``None``; K, its reduced copy and the certificate's
    factorisation: traced peaks 5.1-5.3 (mT)^2).  Whole processes measured 3.9 GB at m = 1,
    T = 5000 (this gives 4.4 GB)."""
    mT = m * T
    squares = 6 if dense_certificate else 3
    return 8 * (squares * mT * mT + 4 * mT * T + 16 * T * T)


def _operator_block(n: int, T: int) -> int:
    """The ``(T, n, r)`` intermediate of one K application, ``r`` its column chunk
    (:meth:`sparsedp.linalg.operators.GossipSystem.chunk_columns`)."""
    columns = max(MIN_CHUNK_COLUMNS, CHUNK_BLOCK_ENTRIES // max(n, 1))
    return min(8 * T * n * columns, DEFAULT_MEMORY_BUDGET)


# PCG iterations assumed by the estimates (block applications of K_T): the innovation
# preconditioner took 17-25 on hub neighbourhood views of Chung-Lu graphs (n = 3000-10^4,
# T = 50-100, rtol 1e-10); the stationary one 100-5000 on those, 20-60 on ER graphs.
PCG_ITERATIONS = {"gram": 2, "innovation": 30, "stationary": 200}
GRAM_SQUARES = 6  # mT x mT matrices of the gram path at once (traced up to 4.9)
PCG_BLOCKS = 16  # m T x T blocks alive in block_cg and its preconditioner at once (measured)
DENSE_FLOP_WEIGHT = 0.1  # a dense BLAS flop against a sparse multiply-add (time per unit)


def pcg_iterations(preconditioner: str) -> int:
    """:data:`PCG_ITERATIONS` of a resolved preconditioner (an assumption for the estimate:
    the solve runs until its residual passes, whatever it costs)."""
    return PCG_ITERATIONS[preconditioner]


def method_cost(method: str, n: int, nnz: int, m: int, T: int, p: int = 0,
                preconditioner: str = "stationary", dense_certificate: bool = False) -> Cost:
    """The :class:`Cost` of ``method`` (one of structured, gram, dense, matrix-free).

    structured: :func:`structured_memory` plus ``4 (m + 1)`` propagated n-vectors; about
    ``2 (T + p)`` block products.  gram: the lags ``8 n m T`` and :data:`GRAM_SQUARES` times
    the Gram's ``8 (mT)^2``; ``T - 1 + p`` products.  dense: K and its factor and the operator's
    intermediate; ``2 T`` products per K application, ``m T`` columns.  matrix-free: the PCG
    blocks (:data:`PCG_BLOCKS` of ``m T x T``), the operator's intermediate and, with the
    ``"gram"`` preconditioner (resolved, not ``"auto"``), the Gram assembly's; ``2 T``
    products per iteration times :func:`pcg_iterations` (an assumption).  ``work``: the
    time model, sparse multiply-adds of the products plus :data:`DENSE_FLOP_WEIGHT` times
    the dense flops (Cholesky ``(mT)^3 / 3``, solves).  ``dense_certificate``: as for
    :func:`structured_memory`."""
    mT = m * T
    common = 8 * (4 * mT * T + 16 * T * T) + QUERY_OVERHEAD
    vectors = 8 * n * (m + 1) * 4 + 8 * nnz  # propagated vectors and one transposed copy of W
    row = nnz + n  # multiply-adds of one product with one column, with the additions
    cholesky = DENSE_FLOP_WEIGHT * (mT**3 / 3 + 2 * mT * mT * T)
    if method == "structured":
        memory = structured_memory(m, T, dense_certificate) + vectors + QUERY_OVERHEAD
        return Cost(method, memory, 2 * (T + p),
                    work=2 * (T + p) * (m + 1) * row + cholesky)
    if method == "gram":  # K, its reduced copy and the certificate's factorisation
        lags, square = gram.gram_memory(n, m, T)
        return Cost(method, lags + GRAM_SQUARES * square + common + vectors, T - 1 + p,
                    work=T * m * row + DENSE_FLOP_WEIGHT * n * mT * mT + cholesky)
    if method == "dense":
        return Cost(method, 16 * mT * mT + _operator_block(n, T) + common + vectors,
                    2 * T * mT, work=2 * T * mT * row + cholesky)
    iterations = pcg_iterations(preconditioner)
    memory = 8 * PCG_BLOCKS * mT * T + _operator_block(n, T) + common + vectors
    work: float = iterations * 2 * T * T * row
    if preconditioner == "gram":
        lags, square = gram.gram_memory(n, m, T)
        memory += lags + 2 * square
        work += T * m * row + DENSE_FLOP_WEIGHT * n * mT * mT + cholesky
    return Cost(method, memory, 2 * T * iterations,
                f"sparse products: 2 T per PCG iteration, {iterations} iterations assumed "
                f"({preconditioner} preconditioner)", work=work)


RATE_COLUMNS = 16  # columns of the block timed by sparse_rate


def sparse_rate(W: sp.csr_matrix) -> float:
    """Sparse multiply-adds per second on this machine now: the best of three products of
    W with an ``n x RATE_COLUMNS`` block (a few milliseconds at n = 10^4), the rate that
    turns a :class:`Cost`'s ``work`` into seconds.  An estimate for planning, never a bound:
    a busy machine makes the run slower than its estimate."""
    block = np.ones((W.shape[0], RATE_COLUMNS))
    best = np.inf
    for _ in range(3):
        start = time.perf_counter()
        kernels.spmm(W, block)
        best = min(best, time.perf_counter() - start)
    return (W.nnz + W.shape[0]) * RATE_COLUMNS / max(best, 1e-9)
