"""A cheap certified upper bound on ``Delta^2(j -> a)`` for one observer and every target at
once: the box bound (secure-summation view, one observer; the setting and notation of
:mod:`sparsedp.gossip.batched`).

With W entrywise non-negative the exact lags ``r_l = e_a^T W^l`` are non-negative, so
``G_j`` (lower-triangular Toeplitz of ``r_l[j]``) is, and for every sign vector c

    |G_j c| <= G_j 1 = b_j = C r_j        (entrywise; C the T x T lower-triangular ones)

hence ``||G_j c|| <= ||b_j||`` and

    c^T M_j c = (G_j c)^T K^{-1} (G_j c) <= ||G_j c||^2 / lambda_min(K) <= rho ||b_j||^2,
    rho = 1 / lambda_min(K).

(``b_j^T |K^{-1}| b_j`` also bounds it, but is larger: ``lambda_max(|K^{-1}|) >=
||K^{-1}||_2``.)  ``rho`` is one number per observer (one smallest eigenvalue and one
Cholesky, ``O(T^3)``) and ``||b_j||^2`` running sums of the T x n lags: ``O(T n)`` for all
targets, no matrix product.  The bound is loose (on the graph of
``bench/privacy_map_full.py`` at T = 100, about 1.5 to 5 times the c = 1 value), but it
separates the few pairs that can be a target's worst case from the many that cannot
(:mod:`sparsedp.maps.worst_case`).

Certification (:func:`box_radius`, :func:`box_upper`).  LAPACK's smallest eigenvalue of
``K_hat`` (not trusted) gives a shift ``mu`` just below it (``1e-6`` relative, then 8 times
farther until it works), certified when LAPACK's Cholesky of ``K_hat - mu I`` succeeds, so
``lambda_min(K_hat) >= mu - (gamma_(T+1) T + 4u) (||K_hat||_F + mu)`` (the Cholesky
backward error and the rounding of forming ``K_hat - mu I``, as in
:func:`sparsedp.linalg.certified.certified_lambda_max`), and ``lambda_min(K) >=
lambda_min(K_hat) - dK`` (Weyl); the analytic ``lam`` is used when larger.

The exact ``b_j``: the computed lags satisfy ``|fl(r) - r| <= e r`` (``e =
gamma((T-1)(d+1))``), so ``b_j <= C fl(r_j) / (1 - e)``; the cumulative sum of non-negative
terms is within ``gamma_T`` of ``C fl(r_j)`` and so is the sum of squares, giving
``||b_j||^2 <= fl(||fl(b_j)||^2) / ((1 - e)^2 (1 - gamma_T)^3)`` (the rounding model of
the batched engine: no underflow in the lags).  The result is capped at T (``M_j <= I``).

W must be entrywise non-negative (every row-stochastic gossip matrix the package accepts is:
``check_gossip_matrix`` refuses negative entries); with a negative entry ``|G_j c| <= G_j 1``
fails and the bound does not hold.
"""

from __future__ import annotations

import numpy as np
import scipy.linalg

from sparsedp.gossip.batched import ObserverBatch
from sparsedp.linalg.certified import UNIT_ROUNDOFF, cholesky_succeeds, frobenius, gamma

SHIFT_MARGIN = 1e-6  # the first shift: this far below the computed lambda_min(K_hat)
SHIFT_TRIES = 6


def box_radius(batch: ObserverBatch, i: int) -> float:
    """Certified ``rho >= 1 / lambda_min(K)`` for the exact K of observer ``i`` (module
    docstring)."""
    T, u, lam = batch.T, UNIT_ROUNDOFF, batch.lam
    K, dK = batch.K[i], float(batch.dK[i])
    estimate = float(scipy.linalg.eigh(K, subset_by_index=[0, 0], eigvals_only=True,
                                       check_finite=False)[0])
    scale = frobenius(K)
    identity = np.eye(T)
    floor = lam  # the analytic lambda_min(K) bound
    margin = SHIFT_MARGIN
    for _ in range(SHIFT_TRIES):
        mu = estimate * (1 - margin)
        allowance = (gamma(T + 1) * T + 4 * u) * (scale + mu)
        if mu - allowance - dK <= floor:
            break
        if cholesky_succeeds(K - mu * identity):
            floor = (mu - allowance - dK) * (1 - 4 * u)
            break
        margin *= 8
    return 1.0 / floor * (1 + 4 * u)


def box_upper(batch: ObserverBatch, i: int, radius: float, targets=None) -> np.ndarray:
    """Certified ``Delta^2(j -> a) <= rho ||b_j||^2`` (capped at T) for observer ``i`` of the
    batch and every target (``None``: all rows); ``radius``: :func:`box_radius`.  ``O(T n)``:
    running sums of the lags and of their squares, in the order of t."""
    T = batch.T
    R = batch.lags[i] if targets is None else batch.lags[i][:, targets]
    partial = np.zeros(R.shape[1])  # fl(b_j[t]): the running sum over the lags
    squares = np.zeros(R.shape[1])  # fl(sum_t b_j[t]^2), summed in order
    term = np.empty(R.shape[1])
    for row in R:  # row by row: 0.5 ms for T = 100, n = 10^4 against 4 ms for np.cumsum(axis=0)
        partial += row
        np.multiply(partial, partial, out=term)
        squares += term
    return certified_box(squares, T, batch.lag_error, radius)


def certified_box(squares: np.ndarray, T: int, lag_error: float, radius: float,
                  terms: int | None = None) -> np.ndarray:
    """``rho ||b_j||^2`` capped at T from ``squares = fl(||fl(b_j)||^2)``, the running sums
    of :func:`box_upper` (module docstring: ``|fl(r) - r| <= lag_error r``; ``terms``
    squares summed, default T, e.g. ``m T`` for m observed rows, whose ``||G_j c||^2 <=
    ||G_j 1||^2`` holds the same way); shared with the online accountants of tracked sets
    (:mod:`sparsedp.accountant.sets`)."""
    u = UNIT_ROUNDOFF
    e, g = lag_error, gamma(max(T, terms or T) + 1)
    factor = 1.0 / ((1 - e) ** 2 * (1 - g) ** 3) * (1 + 8 * u)
    return np.minimum(squares * (factor * radius) * (1 + 4 * u), float(T))
