"""Batched c = 1 values of a colluding set of observers against every target: one propagation
and one factorisation of the set's ``K_T`` serve all targets.

The secure-summation view with a set S of m distinct observers (v2 Lemma 10 and Remark 11;
the neighbourhood view of a node a is this view with S its closed neighbourhood), T rounds,
one constant non-negative row-stochastic W:

    r_l = S W^l                                       (m x n, l = 0..T-1)
    K[(t, i), (t', i')] = sum_{k <= min(t, t')} r_(t-k)[i] . r_(t'-k)[i']      (mT x mT)
    b_j[(t, i)] = sum_{l <= t} r_l[i, j],   i.e.  b_j = (C (x) I_m) r_j
    1^T M_j 1 = b_j^T K^{-1} b_j = ||L^{-1} b_j||^2,        K = L L^T,

with ``r_j`` the lags of target j stacked ``(t, i)``, C the T x T lower-triangular ones: one
``mT x mT`` triangular solve with ``n`` right-hand sides for every target.  For exactly
symmetric W the blocks ``r_t r_t'^T = S W^(t+t') S^T`` need only the 2T - 1 moment blocks
``S W^k S^T`` (``2 T m^2 n`` work instead of ``T^2 m^2 n``).

Certified per target from the triangular solve itself, not from a sandwich of the whole
``mT x mT`` matrix ``C^T K^{-1} C`` (whose rounding allowances grow with ``||K|| ||K^{-1}||^2``
and lost 2.7e-8 relative on a row-normalised star at T = 13, where the exact value is T):

1. ``b_hat = fl(C r)``: running sums of the non-negative computed lags, so ``|b_hat - b| <=
   gamma(T + (T-1)(d+1)) b`` entrywise (the lags' own rounding, ``gamma((T-1)(d+1))``, as in
   :mod:`sparsedp.gossip.batched`), and ``sqrt(v)`` moves by at most ``||b - b_hat|| /
   sqrt(lam)``.
2. K is a Gram assembly of non-negative lag products: ``||K_hat - K||_2 <= dK``
   (:func:`sparsedp.linalg.gram.rounding_norm_bound`); the analytic ``lambda_min(K_T) >= lam
   = 1 / (1 + ||W||_2)^2`` holds for any set of distinct observers
   (:func:`sparsedp.linalg.certified.gossip_lambda_min_lower_bound`).
3. The Cholesky factor (Higham, *Accuracy and Stability of Numerical Algorithms*, Thm 10.3):
   ``L L^T = K_hat + E``, ``|E| <= gamma(N + 1) |L| |L|^T``, N = mT, so ``||L L^T - K||_2
   <= dK + gamma(N + 1) rho =: eps``, ``rho >= || |L| |L|^T ||_inf >= || |L| ||_2^2``;
   ``sqrt(b_hat^T (L L^T)^{-1} b_hat)`` gives ``sqrt(v)`` for K as in step 3 of
   :mod:`sparsedp.gossip.batched` (:func:`sparsedp.gossip.batched.perturbed_roots_to_values`,
   ``eps`` for ``dK``).
4. The solve ``y = fl(L^{-1} b_hat)`` (Thm 8.5, ``gamma(N)``, with two more roundings for a
   BLAS that multiplies by the diagonal's reciprocals): ``(L + F) y = b_hat``, ``|F| <=
   gamma(N + 2) |L|``, so ``||y - L^{-1} b_hat|| = ||L^{-1} F y|| <= g sqrt(rho /
   lambda_min(L L^T)) ||y||``, ``lambda_min(L L^T) >= lam - eps``: a relative error of order
   ``N u sqrt(||K|| / lam)``, against ``N u ||K|| / lam`` for a perturbation of K.

The interval is about 1e-9 relative wide on that star (``||K|| / lam`` near 9000), as narrow
as the single-pair call's, whose ``K`` rounding it shares (``tests/test_privacy_map.py``);
the solve has half the multiply-adds of the product ``(L^{-1} C) R`` that it replaces.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import scipy.linalg
import scipy.sparse as sp

from sparsedp import validation
from sparsedp.errors import ParameterError
from sparsedp.gossip.batched import lambda_min_lower_bound, perturbed_roots_to_values
from sparsedp.linalg import gram, kernels
from sparsedp.linalg.certified import UNIT_ROUNDOFF, gamma
from sparsedp.linalg.stochastic import matrix_facts


@dataclass(frozen=True)
class SetOnes:
    """Certified ``low <= 1^T M_j 1 <= high`` of the set against each target (arrays over the
    targets; ``low`` is a certified lower bound on ``Delta^2(j -> S)``), the sparse
    ``products`` (on n x m blocks) and the analytic ``lam``."""

    low: np.ndarray
    high: np.ndarray
    products: int
    lam: float


def set_ones(W: sp.csr_matrix, observers, T: int, targets=None, *, backend: str = "auto",
             symmetric: bool | None = None) -> SetOnes:
    """The certified c = 1 interval of every target (``None``: all rows; else row indices)
    against the set ``observers`` (distinct rows of W; module docstring).  ``W``: a checked
    gossip matrix (canonical CSR, non-negative, row-stochastic)."""
    T = validation.rounds(T)
    n = W.shape[0]
    observers = validation.node_set(observers, n, "observers")  # distinct, at least one
    m = observers.size
    facts = matrix_facts(W)
    symmetric = facts.symmetric if symmetric is None else symmetric
    WT = W if symmetric else W.T.tocsr()
    lags = np.empty((T, m, n))
    current = np.zeros((n, m))
    current[observers, np.arange(m)] = 1.0
    lags[0] = current.T
    for lag in range(1, T):
        current = kernels.spmm(WT, current, backend=backend)
        lags[lag] = current.T
    K = _set_k(lags, symmetric)
    d = int(np.bincount(W.indices, minlength=n).max())  # longest row of W^T
    dK = gram.rounding_norm_bound(K, 2 * (T - 1) * (d + 1) + n + T)
    lam = lambda_min_lower_bound(W)
    try:
        L = np.linalg.cholesky(K)
    except np.linalg.LinAlgError:
        L = None
    rho = 0.0 if L is None else _factor_rounding(L)
    factor_error = (dK + gamma(T * m + 1) * rho) * (1 + 4 * UNIT_ROUNDOFF)
    if L is None or factor_error >= 0.25 * lam:
        raise ParameterError("the rounding of K_T is too large for the analytic lambda_min "
                             "bound (a long chain far from mixing): query these pairs one by "
                             "one with squared_sensitivity, which certifies lambda_min itself")
    B = lags if targets is None else lags[:, :, np.asarray(targets, dtype=np.int64)]
    for t in range(1, T):  # b_j = (C (x) I_m) r_j: running sums over the rounds, in place
        B[t] += B[t - 1]
    B = B.reshape(T * m, -1)
    b2 = np.einsum("tj,tj->j", B, B)
    Y = scipy.linalg.solve_triangular(L, B, lower=True, overwrite_b=True, check_finite=False)
    y2 = np.einsum("tj,tj->j", Y, Y)
    low, high = _certify(y2, b2, T * m, factor_error, rho, lam, T + (T - 1) * (d + 1))
    return SetOnes(low=low, high=high, products=T - 1, lam=lam)


def _factor_rounding(L: np.ndarray) -> float:
    """``rho >= || |L| |L|^T ||_inf`` (module docstring, steps 3 and 4): non-negative sums,
    their rounding ``gamma(2N + 2)`` charged."""
    N = L.shape[0]
    A = np.abs(np.tril(L))
    return float((A @ (A.T @ np.ones(N))).max()) * (1 + gamma(2 * N + 2))


def _certify(y2: np.ndarray, b2: np.ndarray, N: int, factor_error: float, rho: float,
             lam: float, sum_depth: int) -> tuple[np.ndarray, np.ndarray]:
    """Certified ``(low, high)`` around ``b^T K^{-1} b`` per target (module docstring, steps
    1-4) from ``y2 = fl(||y||^2)`` and ``b2 = fl(||b_hat||^2)`` (sums of N = mT terms),
    ``factor_error >= ||L L^T - K||_2``, ``rho`` of :func:`_factor_rounding` and ``|b_hat -
    b| <= gamma(sum_depth) b`` entrywise."""
    u = UNIT_ROUNDOFF
    # the solve: ||y_hat|| within a factor 1 -+ g sqrt(rho / lambda_min(L L^T)) of ||L^-1 b||
    g = gamma(N + 2)
    solve = g * math.sqrt(rho / ((lam - factor_error) * (1 - 4 * u))) * (1 + 8 * u)
    y_low = np.sqrt(y2 / (1 + gamma(N + 1))) * (1 - 4 * u) / (1 + solve) * (1 - 2 * u)
    y_high = np.sqrt(y2 / (1 - gamma(N + 1))) * (1 + 4 * u) / (1 - solve) * (1 + 2 * u)
    # b_hat -> b: sqrt(v) moves by at most ||b - b_hat|| / sqrt(lam)
    e = gamma(sum_depth)
    b_norm = np.sqrt(b2 * (1 + gamma(N + 1))) * (1 + 4 * u)  # >= ||b_hat||
    shift = e / (1 - e) * b_norm / math.sqrt(lam) * (1 + 8 * u)
    return perturbed_roots_to_values(y_low, y_high, factor_error, lam, shift)


def _set_k(lags: np.ndarray, symmetric: bool) -> np.ndarray:
    """``K`` (mT x mT, index ``(t, i)``) from the lags ``(T, m, n)``: the blocks
    ``Gamma(t, t') = r_t r_t'^T`` (from the moment blocks for symmetric W, the odd ones
    symmetrised) and ``K[t, t'] = Gamma(t, t') + K[t-1, t'-1]``."""
    T, m, _ = lags.shape
    if symmetric:
        mu = np.empty((2 * T - 1, m, m))
        mu[0::2] = np.einsum("tin,tkn->tik", lags, lags)
        odd = np.einsum("tin,tkn->tik", lags[:-1], lags[1:])
        mu[1::2] = 0.5 * (odd + odd.transpose(0, 2, 1))
        blocks = mu[np.add.outer(np.arange(T), np.arange(T))]  # (T, T, m, m)
    else:
        flat = lags.reshape(T * m, -1)
        blocks = (flat @ flat.T).reshape(T, m, T, m).transpose(0, 2, 1, 3)
    for t in range(1, T):
        blocks[t, 1:] += blocks[t - 1, :-1]
    return np.ascontiguousarray(blocks.transpose(0, 2, 1, 3).reshape(T * m, T * m))
