"""Solving ``K_T X = G_T`` for the T right-hand sides of ``M_T = G_T^T K_T^{-1} G_T``.

Two solvers, each returning ``X`` together with ``K X`` so that the caller can certify the
result from the true residual (:mod:`sparsedp.linalg.certified`):

* :func:`block_cg` — block (preconditioned) conjugate gradients (O'Leary 1980) on the
  matrix-free ``K_T``: one Krylov space shared by every column, so a direction found for one
  column serves all of them (fewer block applications when the columns are related, e.g.
  time shifts of one impulse response), restarted from the true residual until every column
  meets the tolerance.
* :func:`cholesky_solve` — dense Cholesky of an explicit ``K_T`` (structured path).

The stationary preconditioner
-----------------------------
For a primitive W with ``W^l -> 1 pi^T`` the moments tend to ``mu_l -> p 1 1^T`` with
``p = ||pi||^2`` (``1/n`` for doubly stochastic W), and ``K_T`` tends to

    K_stat = I_T kron (I_m - q u u^T) + J kron (q u u^T),   u = 1_m / sqrt(m),  q = p m,

with ``J[t, s] = min(t, s)``.  Its inverse is explicit: the identity orthogonal to ``u``
and, along ``u``, ``((1-q) I + q J)^{-1} = J^{-1} ((1-q) J^{-1} + q I)^{-1}`` where
``J^{-1} = D^T D`` is tridiagonal (D the backward difference; diagonal 2, ..., 2, 1 and
off-diagonal -1).  Applying it costs one tridiagonal solve, O(T m) per column.  The
remaining transient part of ``K_T`` is bounded independently of T for a primitive W, so the
iteration count levels off as T grows (checked in the tests).

The innovation preconditioner
-----------------------------
When the observed rows are a large set ``S`` (the neighbourhood view of a hub), many of them
barely mix: a low-degree neighbour of a hub keeps most of its mass under Metropolis weights,
so its messages behave like a random walk, and ``K_T`` has about ``(2T / pi)^2`` times the
identity along each of them, which the stationary model does not see (hundreds to thousands
of PCG iterations).  The messages on ``S`` obey, exactly,

    y_t = W_(t-1)[S, S] y_(t-1) + e_t,     e_t = z_t[S] + W_(t-1)[S, O] s_(t-1)[O]

(``O`` the unobserved nodes), i.e. ``K_T = L^{-1} Cov(e) L^{-T}`` with ``L`` block lower
bidiagonal (identity blocks, ``-W_(t-1)[S, S]`` below them).  The innovations ``e`` are the
fresh noise plus what flows in from outside ``S``; their mixed part is the drift of the
global mean, ``r s_bar_(t-1)`` with ``r = W[S, O] 1`` and a variance growing by ``p`` a round.
So ``Cov(e) ~ I_T kron (I_m - u u^T) + (I_T + gamma J) kron u u^T`` (``u = r / ||r||``,
``gamma = p ||r||^2``), and :class:`InnovationPreconditioner` applies
``L^T Cov(e)_approx^{-1} L``: two sparse products with the small ``W[S, S]`` per round and
one tridiagonal solve, ``O(T (nnz(W[S, S]) + m))`` per column.  Measured on Chung-Lu graphs
(exponent 2.3, average degree 20), the hub's neighbourhood view: n = 1000, T = 15,
condition number 152 -> 6.1; n = 3000, T = 50: 122 PCG iterations -> 17.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import scipy.linalg
import scipy.linalg.lapack
import scipy.sparse as sp

from sparsedp.linalg.blas_in_place import cholesky_in_place
from sparsedp.progress import progress_bar, run_with_estimated_progress
from sparsedp.resources import dense_product_rate

CHOLESKY_PROGRESS_ORDER = 6000  # factorisations of this order or more show progress (7e10 flops)


class _RankOneInTime:
    """Apply the inverse of ``I_T kron (I_m - u u^T) + (a I_T + b J) kron u u^T`` (u a unit
    vector, ``a > 0``, ``b >= 0``, ``J[t, s] = min(t, s)``) to ``(T, m, r)`` blocks: the
    identity orthogonal to u and, along u, ``(a I + b J)^{-1} = (a J^{-1} + b I)^{-1} J^{-1}``
    with the tridiagonal ``J^{-1}`` (one banded solve)."""

    def __init__(self, T: int, u: np.ndarray, a: float, b: float):
        self.T, self.u = T, np.asarray(u, dtype=np.float64)
        jinv_diag = np.full(T, 2.0)
        jinv_diag[-1] = 1.0
        self._banded = np.zeros((2, T))  # upper form for solveh_banded
        self._banded[0, 1:] = -a
        self._banded[1] = a * jinv_diag + b
        self._solve = a > 0.0  # a = 0: J^{-1} alone
        self._scalar = 1.0 / (a + b)  # T = 1: the matrix is [a + b]

    @staticmethod
    def _apply_jinv(y: np.ndarray) -> np.ndarray:
        """``J^{-1} y = D^T D y``: ``2 y_t - y_{t-1} - y_{t+1}``, last row ``y_T - y_{T-1}``."""
        out = 2.0 * y
        out[1:] -= y[:-1]
        out[:-1] -= y[1:]
        out[-1] -= y[-1]
        return out

    def __call__(self, Y: np.ndarray) -> np.ndarray:
        y_par = np.einsum("tar,a->tr", Y, self.u)  # (T, r): coordinates along u
        if self.T == 1:
            z = self._scalar * y_par
        else:
            z = self._apply_jinv(y_par)
            if self._solve:
                z = scipy.linalg.solveh_banded(self._banded, z, check_finite=False)
        return Y + self.u[None, :, None] * (z - y_par)[:, None, :]


class StationaryPreconditioner:
    """Apply ``K_stat^{-1}`` to blocks shaped ``(T, m, r)`` (see the module docstring)."""

    def __init__(self, T: int, m: int, p: float):
        self.T, self.m = T, m
        self.q = float(min(max(p * m, 0.0), 1.0))
        self._inverse = _RankOneInTime(T, np.full(m, 1.0 / np.sqrt(m)), 1.0 - self.q, self.q)

    def __call__(self, Y: np.ndarray) -> np.ndarray:
        return self._inverse(Y)


class InnovationPreconditioner:
    """Apply ``L^T Cov(e)_approx^{-1} L`` to blocks shaped ``(T, m, r)``: the exact
    dynamics of the observed rows among themselves and the drift of the mean flowing in
    (see the module docstring).

    Parameters
    ----------
    blocks : sequence of sparse m x m matrices ``W_t[S, S]``, one per round (index t is
        used between rounds t and t + 1; one matrix for constant W).
    inflow : ``r = W[S, O] 1``, the weight each observed row takes from outside S.
    p : the mean's variance per round, ``||pi||^2`` (``1/n`` for doubly stochastic W).
    """

    def __init__(self, blocks, inflow: np.ndarray, p: float):
        self.blocks = [sp.csr_matrix(b) for b in blocks]
        self.blocks_T = [b.T.tocsr() for b in self.blocks]
        self.m = self.blocks[0].shape[0]
        inflow = np.asarray(inflow, dtype=np.float64)
        norm2 = float(inflow @ inflow)
        self._mean = None
        if norm2 > 0.0:
            self._mean = (inflow / np.sqrt(norm2), max(p, 0.0) * norm2)
        self._T = None

    def _block(self, t: int, transposed: bool = False) -> sp.csr_matrix:
        blocks = self.blocks_T if transposed else self.blocks
        return blocks[t if len(blocks) > 1 else 0]

    def __call__(self, Y: np.ndarray) -> np.ndarray:
        T = Y.shape[0]
        E = Y.copy()  # L Y: e_t = y_t - W_(t-1)[S, S] y_(t-1)
        for t in range(1, T):
            E[t] -= self._block(t - 1) @ Y[t - 1]
        if self._mean is not None:
            if self._T != T:
                u, gamma = self._mean
                self._inverse, self._T = _RankOneInTime(T, u, 1.0, gamma), T
            E = self._inverse(E)
        out = E.copy()  # L^T E: out_t = e_t - W_t[S, S]^T e_(t+1)
        for t in range(T - 1):
            out[t] -= self._block(t, transposed=True) @ E[t + 1]
        return out


@dataclass(frozen=True)
class SolveInfo:
    """What a solve did: iterations (block applications of K), restarts, final residual."""

    iterations: int
    restarts: int
    max_relative_residual: float
    converged: bool


def block_cg(
    apply_A: Callable[[np.ndarray], np.ndarray],
    B: np.ndarray,
    precondition: Callable[[np.ndarray], np.ndarray] | None = None,
    rtol: float = 1e-10,
    maxiter: int = 2000,
    max_restarts: int = 3,
    progress: bool | None = None,
) -> tuple[np.ndarray, np.ndarray, SolveInfo]:
    """Solve ``A X = B`` (A symmetric positive definite) by block CG; return ``X``, ``A X``
    and a :class:`SolveInfo` (``iterations``: block applications of A).

    ``B`` has shape ``(..., r)`` (the leading axes are the layout ``apply_A`` and
    ``precondition`` expect).  Each iteration A-orthogonalises the preconditioned residual
    block ``Z = precondition(R)`` (``Z = R`` without a preconditioner) against the previous
    search block, applies A once, A-orthonormalises the new block (an eigen-decomposition of
    its ``r x r`` Gram after scaling its columns to unit norm; directions with a Gram
    eigenvalue below ``1e-12`` of the largest are linearly dependent on the others and
    dropped) and takes the Galerkin step ``X += P P^T R``: with ``P^T A P = I`` and error
    ``E``, ``||E - P c||_A^2 = ||E||_A^2 - 2 c^T P^T R + ||c||^2`` is least at
    ``c = P^T R``, whatever the directions P are, so the step minimises the A-norm of the
    error over the new directions and the error never grows, whatever the preconditioner
    or the rounding does to the conjugacy.  With a symmetric positive definite
    ``precondition`` (block PCG, O'Leary 1980) the search blocks span the preconditioned
    block Krylov space, one space shared by every column.  When the
    recursive residual of every column is below ``rtol / 2`` relative to its right-hand side,
    the true residual ``B - A X`` is formed and, if a column misses ``rtol``, the iteration
    restarts on the correction (at most ``max_restarts`` times).  Only a solver: callers
    certify from the true residual.
    """
    shape = B.shape
    flat = (int(np.prod(shape[:-1])), shape[-1])  # explicit: no columns is a valid block
    b_norm = np.linalg.norm(B.reshape(flat), axis=0)
    b_norm[b_norm == 0.0] = 1.0
    X = np.zeros(flat)
    AX = np.zeros_like(X)
    iterations = restarts = 0
    desc = "block CG" if precondition is None else "block PCG"
    bar = progress_bar(progress, total=maxiter, desc=desc, unit="it")
    while True:
        R = B.reshape(flat) - AX
        if (np.linalg.norm(R, axis=0) / b_norm).max(initial=0.0) <= rtol \
                or restarts > max_restarts or iterations >= maxiter:
            break
        if iterations > 0:
            restarts += 1
        P = AP = None
        while iterations < maxiter:
            Z = R if precondition is None else precondition(R.reshape(shape)).reshape(flat)
            D = Z if P is None else Z - P @ (AP.T @ Z)  # A-orthogonal to the last block
            AD = apply_A(D.reshape(shape)).reshape(flat)
            iterations += 1
            if bar is not None:
                bar.update(1)
            P, AP = _a_orthonormal(D, AD)
            if P.shape[1] == 0:  # no new direction: stagnation (the true residual decides)
                break
            alpha = P.T @ R
            X += P @ alpha
            R = R - AP @ alpha
            if (np.linalg.norm(R, axis=0) / b_norm).max() <= 0.5 * rtol:
                break
        AX = apply_A(X.reshape(shape)).reshape(flat)
        iterations += 1
    if bar is not None:
        bar.close()
    rel = np.linalg.norm(B.reshape(flat) - AX, axis=0) / b_norm
    max_rel = float(rel.max()) if rel.size else 0.0
    info = SolveInfo(iterations, restarts, max_rel, bool(max_rel <= rtol))
    return X.reshape(shape), AX.reshape(shape), info


def _a_orthonormal(D: np.ndarray, AD: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(P, A P)`` with ``P^T A P = I`` spanning the independent directions of D
    (:func:`block_cg`)."""
    scale = np.linalg.norm(D, axis=0)
    scale[scale == 0.0] = 1.0
    gram = (D / scale).T @ (AD / scale)
    lam, V = np.linalg.eigh(0.5 * (gram + gram.T))
    keep = lam > 1e-12 * lam[-1] if lam[-1] > 0 else np.zeros(lam.size, dtype=bool)
    S = V[:, keep] / np.sqrt(lam[keep]) / scale[:, None]
    return D @ S, AD @ S


def cholesky_factor(K: np.ndarray, progress=None) -> np.ndarray:
    """The lower Cholesky factor of a symmetric positive definite ``K`` (LAPACK ``potrf``,
    the upper triangle left as it was: only :func:`cholesky_solve` reads it).

    ``progress`` (:mod:`sparsedp.progress`): from order ``CHOLESKY_PROGRESS_ORDER`` on (about
    7e10 flops: seconds to minutes), a bar over its ``N^3 / 3`` flops while ``potrf`` runs in
    another thread (:func:`~sparsedp.linalg.blas_in_place.cholesky_in_place`, the same
    routine and result without the GIL); LAPACK reports nothing until it returns, so the bar
    advances at the rate of a dense product timed just before (an estimate: it stops at 99 %
    until the factor is done).
    """
    n = K.shape[0]
    bar = None
    if n >= CHOLESKY_PROGRESS_ORDER:
        bar = progress_bar(progress, total=max(round(n**3 / 3e9), 1), unit="Gflop",
                           desc=f"Cholesky factorisation ({n:,} x {n:,}, estimated)")
    if bar is None:
        factor, info = scipy.linalg.lapack.dpotrf(K, lower=1, clean=0)
    else:
        factor = np.array(K, dtype=np.float64, order="F")
        try:
            info = run_with_estimated_progress(cholesky_in_place, factor, bar,
                                               rate=dense_product_rate())
        finally:
            bar.close()
    if info != 0:
        raise np.linalg.LinAlgError(f"K is not positive definite (potrf info {info})")
    return factor


def cholesky_solve(K: np.ndarray, G: np.ndarray, factor: np.ndarray | None = None
                   ) -> np.ndarray:
    """``X = K^{-1} G`` by LAPACK Cholesky (``K`` symmetric positive definite): ``potrf``
    and ``potrs`` called directly, as ``scipy.linalg.cho_factor`` / ``cho_solve`` do, without
    their per-call checks (tens of microseconds on the small systems).  ``factor``: K's
    :func:`cholesky_factor` when already known."""
    if factor is None:
        factor = cholesky_factor(K)
    X, info = scipy.linalg.lapack.dpotrs(factor, G, lower=1)
    if info != 0:
        raise ValueError(f"potrs failed (info {info})")
    return X
