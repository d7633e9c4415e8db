"""A cheap certified upper bound on ``Delta^2(j -> a)`` for one observer and every target at
once: the box bound (secure-summation view, one observer; the setting and notation of
:mod:`sparsedp.gossip.batched`).

With W entrywise non-negative the exact lags ``r_l = e_a^T W^l`` are non-negative, so
``G_j`` (lower-triangular Toeplitz of ``r_l[j]``) is, and for every sign vector c

    |G_j c| <= G_j 1 = b_j = C r_j        (entrywise; C the T x T lower-triangular ones)

hence, ``|A|`` the entrywise absolute value,

    c^T M_j c = (G_j c)^T K^{-1} (G_j c) <= b_j^T |K^{-1}| b_j <= rho ||b_j||^2,
    rho = lambda_max(|K^{-1}|)   (the Perron root of the symmetric non-negative |K^{-1}|).

``rho`` is one number per observer (``O(T^2)`` once ``K^{-1}`` is known) and ``||b_j||^2`` a
cumulative sum and a column norm of the T x n lags: ``O(T n)`` for all targets, no matrix
product.  The bound is loose (on the graph of ``bench/privacy_map_full.py`` at T = 100, 2 to
6 times the c = 1 value; ``b^T |K^{-1}| b`` is hardly tighter), but it separates the few
pairs that can be a target's worst case from the many that cannot
(:mod:`sparsedp.maps.worst_case`).

Certification (:func:`box_radius`, :func:`box_upper`).  ``X = fl(Linv^T Linv)`` and ``delta
>= ||X - K_hat^{-1}||_2`` (:func:`sparsedp.gossip.batched_entrywise.certified_inverse`);
``||K^{-1} - K_hat^{-1}||_2 <= dK / (lam (lam - dK))``.  With ``F = K^{-1} - X``:
``|K^{-1}| <= |X| + |F| <= A + |F|`` entrywise for ``A = max(|X|, |X|^T)`` (exact,
symmetric), and ``b^T |F| b <= || |F| ||_2 ||b||^2 <= ||F||_F ||b||^2 <= sqrt(T) ||F||_2
||b||^2``.  ``lambda_max(A)`` is bounded above by the Collatz-Wielandt ratio ``max_i (A v)_i /
v_i`` for any positive v (v from a few power iterations; the rounding of ``A v``, non-negative
terms, charged with ``gamma``) and by ``max_i sum_k A_ik``; the smaller is used.  So

    rho <= min(CW(A), ||A||_inf) + sqrt(T) (delta + dK / (lam (lam - dK))).

The exact ``b_j``: the computed lags satisfy ``|fl(r) - r| <= e r`` (``e =
gamma((T-1)(d+1))``), so ``b_j <= C fl(r_j) / (1 - e)``; the cumulative sum of non-negative
terms is within ``gamma_T`` of ``C fl(r_j)`` and so is the sum of squares, giving
``||b_j||^2 <= fl(||fl(b_j)||^2) / ((1 - e)^2 (1 - gamma_T)^3)``.  The result is capped at T
(``M_j <= I``).

W must be entrywise non-negative (every row-stochastic gossip matrix the package accepts is:
``check_gossip_matrix`` refuses negative entries); with a negative entry ``|G_j c| <= G_j 1``
fails and the bound does not hold.
"""

from __future__ import annotations

import math

import numpy as np

from sparsedp.gossip.batched import ObserverBatch
from sparsedp.gossip.batched_entrywise import CertifiedInverse
from sparsedp.linalg.certified import UNIT_ROUNDOFF, gamma

POWER_ITERATIONS = 30


def box_radius(batch: ObserverBatch, i: int, inverse: CertifiedInverse) -> float:
    """Certified ``rho >= lambda_max(|K^{-1}|)`` for the exact K of observer ``i`` (module
    docstring); ``inverse``: its :func:`~sparsedp.gossip.batched_entrywise.certified_inverse`."""
    T, u, lam = batch.T, UNIT_ROUNDOFF, batch.lam
    dK = float(batch.dK[i])
    absolute = np.abs(inverse.X)
    A = np.maximum(absolute, absolute.T)  # exact, symmetric, >= |X| and |X|^T
    v = np.ones(T)
    for _ in range(POWER_ITERATIONS):
        v = A @ v
        v /= v.max()
    v = np.maximum(v, 1e-3)  # positive (any positive v gives a bound)
    ratio = float(((A @ v) / v).max()) * (1 + gamma(2 * T + 4))  # exact (A v)_i / v_i below
    row_sums = float(A.sum(axis=1).max()) * (1 + gamma(2 * T + 2))
    model = dK / (lam * (lam - dK)) * (1 + 8 * u)  # ||K^{-1} - K_hat^{-1}||_2
    perturbation = math.sqrt(T) * (inverse.delta + model) * (1 + 8 * u)
    return (min(ratio, row_sums) + perturbation) * (1 + 4 * u)


def box_upper(batch: ObserverBatch, i: int, radius: float, targets=None) -> np.ndarray:
    """Certified ``Delta^2(j -> a) <= rho ||b_j||^2`` (capped at T) for observer ``i`` of the
    batch and every target (``None``: all rows); ``radius``: :func:`box_radius`.  ``O(T n)``:
    a cumulative sum and column norms of the lags."""
    T, u = batch.T, UNIT_ROUNDOFF
    R = batch.lags[i] if targets is None else batch.lags[i][:, targets]
    B = np.cumsum(R, axis=0)
    squares = np.einsum("tj,tj->j", B, B)
    e, g = batch.lag_error, gamma(T + 1)
    factor = 1.0 / ((1 - e) ** 2 * (1 - g) ** 3) * (1 + 8 * u)
    return np.minimum(squares * (factor * radius) * (1 + 4 * u), float(T))
