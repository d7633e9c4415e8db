"""Batched certified upper bounds: the entrywise bound ``sum_st |M_j[s, t]|`` for one
observer and every target at once (secure-summation view, one observer; the setting and
notation of :mod:`sparsedp.gossip.batched`).

For every sign vector c, ``c^T M c <= sum_st |M_st|`` (v2 Thm 12, the matrix-mechanism
bound); when ``M_j`` is entrywise non-negative (the common case) it equals the c = 1 value, so
the bound is then tight.  Column s of ``G_j`` is ``S^s r_j`` (``S`` the down-shift, ``r_j``
the lags at j), so with ``P_s = L^{-1} S^s`` (T x T, one per s; ``K_hat = L L^T``)

    M_j[s, s'] = (S^s r_j)^T K^{-1} (S^s' r_j) ~ y_s . y_s',    y_s = P_s r_j,

all targets at once: ``P_s = L^{-1} Z^s`` is ``L^{-1}`` with its columns shifted by s, so
``Y = [P_0; ...; P_(T-1)] R`` is one T^2 x T by T x n product (in blocks of targets) and
each target's ``M_j`` the T x T Gram of its block of Y, reduced to ``sum |M_j|`` without
storing it (:func:`sparsedp.linalg.kernels.gram_abs_sums`): ``T^3 n`` work per observer
instead of a T x T solve and bound evaluation per pair.

Certification, per observer (T x T work), then per target:

1. ``K_hat^{-1}`` is sandwiched from the residual of ``X = Linv^T Linv``
   (:func:`certified.sandwich_from_solve` with ``G = I``; ``Linv`` the computed inverse of
   L), so ``||Linv^T Linv - K_hat^{-1}||_2 <= delta`` with every rounding charged; for
   ``x = Z^s r``, ``x' = Z^s' r``: ``|x^T K_hat^{-1} x' - (P_s r).(P_s' r)| <= delta ||r||^2``
   (``P_s = Linv Z^s`` exactly: a column shift).
2. ``|fl(P_s r) - P_s r| <= gamma_T |P_s| r`` gives ``e_s = gamma_T ||Linv||_F ||r||``; with
   ``n_s >= ||fl(y_s)||``, ``N = sum n_s``, ``E = sum e_s``: ``sum |y.y - fl(Y^T Y)| <=
   gamma_T N^2 + 2 E N + E^2``.
3. K_hat to K: ``|x^T (K^{-1} - K_hat^{-1}) y| <= dK ||K^{-1} x|| ||K_hat^{-1} y||``, so each
   entry moves by ``c sqrt(M_ss M'_s's')``, ``c = dK / sqrt(lam (lam - dK))``, in sum at most
   ``c f D^2`` with ``D = sum_s sqrt((n_s + e_s)^2 + delta ||r||^2)`` and ``f = (sqrt(c^2+4)
   + c) / 2`` (the relative factor of :mod:`sparsedp.gossip.batched`).
4. Computed to exact lags (``|fl(r) - r| <= e r``, ``e' = e / (1 - e)``): M is a bilinear
   form in r with ``|(Z^s x)^T K^{-1} (Z^s' y)| <= ||x|| ||y|| / lam``, so the sum moves by at
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

TARGET_BLOCK_BYTES = 128 << 20  # the T^2 x block slice of Y


def shifted_inverse(Linv: np.ndarray) -> np.ndarray:
    """``[P_0; ...; P_(T-1)]`` (T^2 x T), ``P_s = Linv Z^s``: ``P_s[t, k] = Linv[t, k + s]``
    (0 past the last column); rows ordered (s, t)."""
    T = Linv.shape[0]
    P = np.zeros((T, T, T))
    for s in range(T):
        P[s, :, : T - s] = Linv[:, s:]
    return P.reshape(T * T, T)


def entrywise_upper(batch: ObserverBatch, i: int, targets=None, backend: str = "auto"
                    ) -> np.ndarray:
    """Certified ``sum_st |M_j[s, t]|`` (capped at T) for observer ``i`` of the batch and
    every target (``None``: all rows), module docstring."""
    T = batch.T
    R = batch.lags[i] if targets is None else batch.lags[i][:, targets]
    K, L = batch.K[i], batch.L[i]
    Linv = scipy.linalg.solve_triangular(L, np.eye(T), lower=True, check_finite=False)
    delta = _inverse_delta(K, Linv, batch.lam - float(batch.dK[i]))
    blocks = shifted_inverse(Linv)
    width = max(1, TARGET_BLOCK_BYTES // (8 * T * T))
    out = np.empty(R.shape[1])
    for lo in range(0, R.shape[1], width):
        part = R[:, lo:lo + width]
        Y = (blocks @ part).reshape(T, T, -1)  # [s, t, j]: (y_s)_t at target j
        abs_sum, diag = kernels.gram_abs_sums(Y, backend)  # sum |fl(y_s.y_s')|, fl(|y_s|^2)
        out[lo:lo + width] = _bound(batch, i, part, Linv, delta, abs_sum, diag)
    return out


def _bound(batch, i, R, Linv, delta, abs_sum, diag) -> np.ndarray:
    """Steps 2-4 of the module docstring for one block of targets."""
    T, u, lam = batch.T, UNIT_ROUNDOFF, batch.lam
    dK = float(batch.dK[i])
    lam_hat = lam - dK
    abs_sum = abs_sum * (1 + gamma(T * T + 1))
    diag = np.clip(diag, 0.0, None)
    g = gamma(T + 1)
    n_s = np.sqrt(diag / (1 - g)) * (1 + 4 * u)  # >= ||fl(y_s)||
    r2 = np.einsum("tj,tj->j", R, R) * (1 + g)  # >= ||r_j||^2
    r_norm = np.sqrt(r2) * (1 + 2 * u)
    e_one = g * frobenius(Linv) * (1 + gamma(T * T + 2)) * r_norm * (1 + 4 * u)  # e_s
    N = n_s.sum(axis=1) * (1 + gamma(T + 1))
    E = T * e_one
    products = g * N * N + 2 * E * N + E * E
    entries = T * T * delta * r2
    c = dK / math.sqrt(lam * lam_hat) * (1 + 8 * u)
    f = (math.sqrt(c * c + 4) + c) / 2 * (1 + 8 * u)
    D = np.sqrt((n_s + e_one[:, None]) ** 2 + delta * r2[:, None]).sum(axis=1) \
        * (1 + gamma(T + 3))
    model = c * f * D * D
    e = gamma(max(batch.lag_depth, 1))
    e_prime = e / (1 - e)
    lags = T * T * e_prime * (2 + e_prime) * r2 / lam
    total = (abs_sum + products + entries + model + lags) * (1 + 16 * u)
    return np.minimum(total, float(T))


def _inverse_delta(K: np.ndarray, Linv: np.ndarray, lam_hat: float) -> float:
    """``delta >= ||Linv^T Linv - K_hat^{-1}||_2`` (both sides of the sandwich, every
    product's rounding charged; step 1 of the module docstring)."""
    T = K.shape[0]
    X = Linv.T @ Linv  # fl(Linv^T Linv), also the solve's X
    sandwich = certified.sandwich_from_solve(np.eye(T), X, K @ X, lam_hat, K_dense=K)
    linv_fro = frobenius(Linv)
    gap = frobenius(X - sandwich.low) * (1 + gamma(T * T + 2))
    rounding = gamma(T + 1) * linv_fro * linv_fro  # ||fl(Linv^T Linv) - Linv^T Linv||_2
    excess = frobenius(sandwich.excess) * (1 + gamma(T * T + 1))  # >= ||excess||_2
    delta = gap + rounding + sandwich.eta_low + excess + sandwich.eta_excess
    return delta * (1 + 8 * UNIT_ROUNDOFF)
