"""Batched certified upper bounds: the entrywise bound ``sum_st |M_j[s, t]|`` for one
observer and every target at once (secure-summation view, one observer; the setting and
notation of :mod:`sparsedp.gossip.batched`).

For every sign vector c, ``c^T M c <= sum_st |M_st|`` (v2 Thm 12, the matrix-mechanism
bound); when ``M_j`` is entrywise non-negative (the common case) it equals the c = 1 value, so
the bound is then tight.  Column s of ``G_j`` is ``S^s r_j`` (``S`` the down-shift, ``r_j``
the lags at j), so with ``P_s = L^{-1} S^s`` (T x T, one per s; ``K_hat = L L^T``)

    M_j[s, s'] = (S^s r_j)^T K^{-1} (S^s' r_j) ~ y_s . y_s',    y_s = P_s r_j,

all targets at once: ``Y = [P_0; ...; P_(T-1)] R`` (one T^2 x T by T x n product) and the
T x T Gram of each target's ``y``: ``T^3 n`` work per observer instead of a T x T solve and
bound evaluation per pair.

Certification, per observer (T^2 x T^2 work, hence ``T <= MAX_T``), then per target:

1. ``Q = Sigma^T K_hat^{-1} Sigma`` for ``Sigma = [S^0 ... S^(T-1)]`` (T x T^2) is sandwiched
   from the residual of ``X = K_hat^{-1} Sigma`` (:func:`certified.sandwich_from_solve`) and
   ``||Pi^T Pi - Q||_2 <= delta`` for ``Pi = [P_0 ... P_(T-1)]`` as stored (every rounding
   charged); with ``x = e_s kron r``: ``|(S^s r)^T K_hat^{-1} (S^s' r) - (P_s r).(P_s' r)| <=
   delta ||r||^2`` for every entry.
2. ``|fl(P_s r) - P_s r| <= gamma_T |P_s| r`` gives ``e_s = gamma_T ||P_s||_F ||r||``; with
   ``n_s >= ||fl(y_s)||``, ``N = sum n_s``, ``E = sum e_s``: ``sum |y.y - fl(Y^T Y)| <=
   gamma_T N^2 + 2 E N + E^2``.
3. K_hat to K: ``|x^T (K^{-1} - K_hat^{-1}) y| <= dK ||K^{-1} x|| ||K_hat^{-1} y||``, so each
   entry moves by ``c sqrt(M_ss M'_s's')``, ``c = dK / sqrt(lam (lam - dK))``, in sum at most
   ``c f D^2`` with ``D = sum_s sqrt((n_s + e_s)^2 + delta ||r||^2)`` and ``f = (sqrt(c^2+4)
   + c) / 2`` (the relative factor of :mod:`sparsedp.gossip.batched`).
4. Computed to exact lags (``|fl(r) - r| <= e r``, ``e' = e / (1 - e)``): M is a bilinear
   form in r with ``|(S^s x)^T K^{-1} (S^s' y)| <= ||x|| ||y|| / lam``, so the sum moves by at
   most ``T^2 e' (2 + e') ||r||^2 / lam``.

The bound is the computed ``sum |fl(M)|`` plus all of the above (and ``min(., T)``, since
``M <= I``).
"""

from __future__ import annotations

import math

import numpy as np
import scipy.linalg

from sparsedp.gossip.batched import ObserverBatch
from sparsedp.linalg import certified, kernels
from sparsedp.linalg.certified import UNIT_ROUNDOFF, frobenius, gamma

MAX_T = 48  # the T^2 x T^2 certification (about 0.4 GB of work arrays at T = 48)


def shift_stack(T: int) -> np.ndarray:
    """``Sigma = [S^0 S^1 ... S^(T-1)]`` (T x T^2): ``S^s[t, t - s] = 1`` for ``t >= s``."""
    Sigma = np.zeros((T, T, T))  # [t, s, k]
    for s in range(T):
        Sigma[np.arange(s, T), s, np.arange(T - s)] = 1.0
    return Sigma.reshape(T, T * T)


def entrywise_upper(batch: ObserverBatch, i: int, targets=None, backend: str = "auto"
                    ) -> np.ndarray:
    """Certified ``sum_st |M_j[s, t]|`` (capped at T) for observer ``i`` of the batch and
    every target (``None``: all rows), module docstring."""
    T, u, lam = batch.T, UNIT_ROUNDOFF, batch.lam
    if T > MAX_T:
        raise ValueError(f"the batched entrywise bound is limited to T <= {MAX_T}")
    K, dK, L = batch.K[i], float(batch.dK[i]), batch.L[i]
    lam_hat = lam - dK
    Sigma = shift_stack(T)
    Pi = scipy.linalg.solve_triangular(L, Sigma, lower=True, check_finite=False)  # T x T^2
    delta = _stack_delta(K, L, Sigma, Pi, lam_hat)
    R = batch.lags[i] if targets is None else batch.lags[i][:, targets]
    blocks = Pi.reshape(T, T, T).transpose(1, 0, 2).reshape(T * T, T)  # rows: P_s stacked
    Y = (blocks @ R).reshape(T, T, -1)  # [s, t, j]: (y_s)_t at target j
    abs_sum, diag = kernels.gram_abs_sums(Y, backend)  # sum_ss' |fl(y_s . y_s')|, fl(|y_s|^2)
    del Y
    abs_sum = abs_sum * (1 + gamma(T * T + 1))
    diag = np.clip(diag, 0.0, None)
    g = gamma(T + 1)
    n_s = np.sqrt(diag / (1 - g)) * (1 + 4 * u)  # >= ||fl(y_s)||
    r2 = np.einsum("tj,tj->j", R, R) * (1 + g)  # >= ||r_j||^2
    r_norm = np.sqrt(r2) * (1 + 2 * u)
    p_norms = np.sqrt(np.einsum("tsk,tsk->s", Pi.reshape(T, T, T), Pi.reshape(T, T, T))
                      ) * (1 + gamma(T * T + 2))  # ||P_s||_F
    e_s = g * p_norms[None, :] * r_norm[:, None] * (1 + 4 * u)
    N, E = n_s.sum(axis=1), e_s.sum(axis=1)
    N, E = N * (1 + gamma(T + 1)), E * (1 + gamma(T + 1))
    products = g * N * N + 2 * E * N + E * E
    entries = T * T * delta * r2
    c = dK / math.sqrt(lam * lam_hat) * (1 + 8 * u)
    f = (math.sqrt(c * c + 4) + c) / 2 * (1 + 8 * u)
    D = np.sqrt((n_s + e_s) ** 2 + delta * r2[:, None]).sum(axis=1) * (1 + gamma(T + 3))
    model = c * f * D * D
    e = gamma(max(batch.lag_depth, 1))
    e_prime = e / (1 - e)
    lags = T * T * e_prime * (2 + e_prime) * r2 / lam
    total = (abs_sum + products + entries + model + lags) * (1 + 16 * u)
    return np.minimum(total, float(T))


def _stack_delta(K: np.ndarray, L: np.ndarray, Sigma: np.ndarray, Pi: np.ndarray,
                 lam_hat: float) -> float:
    """``delta >= ||Pi^T Pi - Sigma^T K_hat^{-1} Sigma||_2`` (both sides of the sandwich,
    every product's rounding charged; step 1 of the module docstring)."""
    T2 = Pi.shape[1]
    X = scipy.linalg.cho_solve((L, True), Sigma, check_finite=False)
    sandwich = certified.sandwich_from_solve(Sigma, X, K @ X, lam_hat, K_dense=K)
    PtP = Pi.T @ Pi
    pi_fro = frobenius(Pi)
    gap = frobenius(PtP - sandwich.low) * (1 + gamma(T2 * T2 + 2))
    ptp_rounding = gamma(Pi.shape[0] + 1) * pi_fro * pi_fro
    excess = frobenius(sandwich.excess) * (1 + gamma(T2 * T2 + 1))  # >= ||excess||_2
    delta = gap + ptp_rounding + sandwich.eta_low + excess + sandwich.eta_excess
    return delta * (1 + 8 * UNIT_ROUNDOFF)
