"""Long horizons in O(T w^2): the banded form of ``K_T`` once the chain has mixed.

One observer a, target j, the secure-summation view, W symmetric and doubly stochastic (to
rounding), lags truncated where the chain has mixed (:class:`sparsedp.linalg.moments.
LagPropagator`): every moment ``mu_l`` with ``l > w`` and every target lag ``a_l`` with
``l > w_a`` is the constant ``c = fl(1/n)``.  Write ``mu_l = c + eps_l``, ``a_l = c + alpha_l``
and let C be the T x T lower-triangular ones, ``D = C^{-1}`` (1 on the diagonal, -1 below).
Then, exactly,

    K = c C C^T + E,      E[t, t'] = sum_{i <= min(t, t')} eps_(|t - t'| + 2i)  (|t - t'| <= w)
    K = C F C^T,          F = c I + D E D^T          (banded, half-bandwidth w + 1)
    G = c C + A  ->  B := D G = c I + D A            (lower banded, bandwidth w_a)
    M_T = G^T K^{-1} G = B^T F^{-1} B.

So everything that the dense path does with T x T matrices reduces to banded ones:

* the c = 1 value: ``G 1 = C r`` (r the target's lags), so ``1^T M 1 = r^T F^{-1} r``; for
  any x, ``r^T F^{-1} r >= 2 x^T r - x^T F x`` (F positive definite), a certified lower
  bound from x = the banded Cholesky solve, less the rounding and truncation allowances;
* ``lambda_max(M) <= s``  iff  ``F - B B^T / s`` is positive semidefinite (Schur complement of
  ``[[s I, B^T], [B, F]]``): one banded Cholesky of ``F - B B^T / s - delta I`` certifies
  it, delta covering the rounding of forming that matrix, the truncation (``||F_true - F|| <=
  ||D||^2 ||K_true - K_hat|| <= 4 dK``; ``||B_true - B|| <= 2 ||G_true - G||``) and the
  Cholesky backward error ``gamma_(p+2) (p+1)^2 max_i q_ii`` (p the half-bandwidth); then
  ``Delta^2 <= T lambda_max(M) <= T s`` (v2 Sec. 3.4's spectral bound).

Work O(T w^2) and memory O(T w) instead of O(T^3) and O(T^2): T = 10^4 or 2 x 10^4 in
seconds.  The truncation allowance ``4 dK`` with ``dK <= T (T + 1) / 2`` times the largest
lag error grows like T^2 (T^3 in the lower bound's ``dF ||x||^2``): at T = 20000 on small
graphs it costs a few percent of the lower bound; a structured bound on ``D dK D^T`` would be
far tighter.  The lags' own working-precision rounding is the engine's documented model
(docs/index.md), as on the dense path.  The upper bound is the spectral one (about 20%
above the c = 1 value on ER graphs at T = 1000); the dense path's tighter bounds
(entrywise, diagonal shift, SDP) need the T x T matrix M.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import scipy.linalg
import scipy.sparse as sp
import scipy.sparse.linalg

from sparsedp import resources, validation
from sparsedp.errors import ParameterError
from sparsedp.gossip.certified_solve import doubly_stochastic_to_rounding
from sparsedp.linalg.certified import UNIT_ROUNDOFF, gamma
from sparsedp.linalg.moments import LagPropagator
from sparsedp.linalg.stochastic import matrix_facts

MIXING_LEVEL = 1e-20  # n eps^2 at which the lags are truncated
BAND_ARRAYS = 12  # band-sized arrays held at once (F, its factor, B B^T's band, Q, bounds)
LANCZOS_STEPS = 60


@dataclass(frozen=True)
class BandedInterval:
    """``lower <= Delta_T(target -> observer)^2 <= upper`` (lower: the certified c = 1 value;
    upper: ``T s`` with ``lambda_max(M_T) <= s`` certified), the half-bandwidth ``w`` of the
    mixed moments, the sparse ``products`` and ``lambda_max`` (the certified s)."""

    lower: float
    upper: float
    lambda_max: float
    bandwidth: int
    products: int


def banded_interval(W, target: int, observer: int, T: int, *, progress=None,
                    max_memory=None) -> BandedInterval:
    """Certified ``[lower, upper]`` on ``Delta_T(target -> observer)^2`` from the banded form
    (module docstring).  ``W``: a checked gossip matrix, symmetric and doubly stochastic.
    ParameterError when W is not, or when the lags are not constant beyond lag T / 4 (the
    band would not be narrow: use :func:`sparsedp.squared_sensitivity`)."""
    T = validation.rounds(T)
    n = W.shape[0]
    target = validation.node_index(target, n, "target")
    observer = validation.node_index(observer, n, "observer")
    facts = matrix_facts(W)
    if not (facts.symmetric and doubly_stochastic_to_rounding(W)):
        raise ParameterError("the banded form needs a symmetric doubly stochastic W")
    propagator = LagPropagator(W, [observer], target, T, progress=progress)
    try:
        lags = propagator.advance(MIXING_LEVEL).result()
    finally:
        propagator.close()
    w = lags.exact_lags - 1  # moments above w are c
    if not lags.truncated or w > T // 2:
        raise ParameterError(f"the lags of observer {observer} are not constant beyond lag "
                             f"{T // 4} (the chain mixes later, or T = {T} is too short for "
                             "the band to be narrow); use squared_sensitivity")
    resources.require_within(band_memory(T, w), resources.memory_budget(max_memory),
                             f"the banded form at T = {T} (band {w})", "raise max_memory")
    c = float(lags.mu[-1, 0, 0])  # fl(1/n): every truncated moment
    eps = lags.mu[: w + 1, 0, 0] - c
    a = lags.a[:, 0]
    wa = min(int(np.flatnonzero(a != c).max()) if np.any(a != c) else 0, T - 1)
    alpha = a[: wa + 1] - c
    F, F_err = _f_band(eps, c, T)
    B = _b_matrix(alpha, c, T)
    # B's own rounding: alpha = fl(a - c), its differences and + c, each entry within 3u of
    # |a_k| + |a_(k-1)| + c; ||.||_2 <= its largest row sum (wa + 1 entries)
    dB_round = 3 * gamma(1) * (wa + 1) * (2 * float(np.abs(a[: wa + 1]).max()) + c) * 1.01
    p = F.shape[0] - 1
    depth = gamma(w + 8)
    dK, dG = _truncation_norms(lags, T)
    dF = F_err + 4.0 * dK  # ||F_true - F_hat||_2 (rounding of the band, truncation)
    r_true_err = float(np.max(lags.a_error))  # |r_true - r| entrywise on truncated lags
    lower = _ones_lower(F, p, a, dF, r_true_err, depth)
    lam = _certified_lambda_max(F, B, p, dF, 2.0 * dG + dB_round)
    return BandedInterval(lower=lower, upper=min(T * lam, float(T)), lambda_max=lam,
                          bandwidth=w, products=lags.products)


def _truncation_norms(lags, T: int) -> tuple[float, float]:
    """``||K_true - K_hat||_2`` and ``||G_true - G_hat||_2`` bounds (largest row sums; no
    T x T pattern at large T), with the truncated lags' errors ``w_l eps^2 + drift``
    (``w = lags.mu_weights``, the decayed tail) and ``v_l eps eps_target + drift``
    (``v = lags.a_weights``).

    Row t of K sums ``mu_(|t - s| + 2i)`` over ``s`` and ``i <= min(t, s)``: lag l occurs at
    most ``l + 2`` times in a row (``i = 0 .. l/2``, ``s = t +- (l - 2i)``) and a row has at
    most ``T (T + 1) / 2`` terms, so the row sum is at most ``min(sum_l (l + 2) w_l,
    T (T + 1) / 2) eps^2 + T (T + 1) / 2 drift``.  G is lower-triangular Toeplitz in the
    ``a_l``: a row sum is at most ``sum_l v_l eps eps_target + T drift``."""
    eps, eps_t, drift = float(lags.eps[0]), lags.eps_target, lags.drift
    lag = np.arange(lags.mu.shape[0], dtype=np.float64) + 2 * lags.offset
    pairs = T * (T + 1) / 2
    weighted = min(float((lag + 2) @ lags.mu_weights) * (1 + gamma(lag.size + 2)), pairs)
    dK = (weighted * eps * eps + pairs * drift) * (1 + gamma(3))
    dG = ((float(lags.a_weights.sum()) * eps * eps_t + T * drift) * (1 + gamma(lag.size + 3))
          if lags.truncated else 0.0)
    return dK, dG


def band_memory(T: int, w: int) -> int:
    """Bytes of the band work: :data:`BAND_ARRAYS` arrays of ``T (w + 3)`` floats and the
    sparse ``B`` and ``B B^T`` (about ``3 T (2 w + 3)`` entries, 12 bytes each)."""
    return 8 * BAND_ARRAYS * T * (w + 3) + 36 * T * (2 * w + 3)


def _f_band(eps: np.ndarray, c: float, T: int) -> tuple[np.ndarray, float]:
    """``F = c I + D E D^T`` in LAPACK's upper band storage (``ab[p + i - j, j] = F[i, j]``,
    ``p = min(w + 1, T - 1)``) and a bound on the 2-norm of its rounding (largest row sum of an
    entrywise bound: sums of at most w / 2 + 4 terms of ``|eps|``, plus c)."""
    w = eps.size - 1
    p = min(w + 1, T - 1)
    # S[d, t + 1] = sum_{i <= t} eps_(d + 2i) (S[d, 0] = 0), d = 0 .. p + 1
    padded = np.zeros(p + 2 + 2 * T)
    padded[: eps.size] = eps
    absolute = np.abs(padded)
    idx = np.arange(p + 2)[:, None] + 2 * np.arange(T)[None, :]
    S = np.zeros((p + 2, T + 1))
    SA = np.zeros((p + 2, T + 1))
    S[:, 1:] = np.cumsum(padded[idx], axis=1)
    SA[:, 1:] = np.cumsum(absolute[idx], axis=1)
    ab = np.zeros((p + 1, T))
    bound = np.zeros((p + 1, T))
    t = np.arange(T)
    for d in range(p + 1):
        cols = t[: T - d]  # F[t, t + d]
        e_tt = S[d, cols + 1]  # E[t, t + d]
        e_up = S[d, cols]  # E[t - 1, t + d - 1]
        e_left = S[d + 1, cols]  # E[t - 1, t + d]
        e_right = S[d - 1, cols + 1] if d >= 1 else S[1, cols]  # E[t, t + d - 1]
        value = e_tt - e_left - e_right + e_up
        size = (SA[d, cols + 1] + SA[d + 1, cols]
                + (SA[d - 1, cols + 1] if d >= 1 else SA[1, cols]) + SA[d, cols])
        if d == 0:
            value = value + c
            size = size + c
        ab[p - d, d:] = value
        bound[p - d, d:] = size
    # |fl - exact| <= gamma_(w+8) * size per entry; ||.||_2 <= largest row sum of the band
    row = bound[p].copy()
    for d in range(1, p + 1):
        row[: T - d] += bound[p - d, d:]
        row[d:] += bound[p - d, d:]
    return ab, gamma(w + 8) * float(row.max()) * (1 + 8 * UNIT_ROUNDOFF)


def _b_matrix(alpha: np.ndarray, c: float, T: int) -> sp.csr_matrix:
    """``B = c I + D A`` (lower banded Toeplitz: ``B[t, t - k] = c [k = 0] + alpha_k -
    alpha_(k-1)``)."""
    beta = np.diff(np.concatenate([[0.0], alpha, [0.0]]))[: alpha.size + 1]
    beta[0] += c
    k = np.arange(beta.size)
    keep = k < T
    return sp.diags([np.full(T - kk, b) for kk, b in zip(k[keep], beta[keep], strict=True)],
                    -k[keep], shape=(T, T), format="csr")


def _band_matvec(ab: np.ndarray, x: np.ndarray) -> np.ndarray:
    p = ab.shape[0] - 1
    y = ab[p] * x
    for d in range(1, p + 1):
        y[: -d] += ab[p - d, d:] * x[d:]
        y[d:] += ab[p - d, d:] * x[: -d]
    return y


def _ones_lower(F: np.ndarray, p: int, r: np.ndarray, dF: float, r_err: float,
                depth: float) -> float:
    """Certified ``r_true^T F_true^{-1} r_true >= 2 x^T r_true - x^T F_true x`` at x = the
    computed solve, with ``|r_true - r| <= r_err`` entrywise and ``||F_true - F|| <= dF``."""
    x = scipy.linalg.cho_solve_banded((scipy.linalg.cholesky_banded(F), False), r)
    T = r.size
    xr = float(x @ r)
    xFx = float(x @ _band_matvec(F, x))
    ax, ar = np.abs(x), np.abs(r)
    # rounding: the dot products (T terms) and the banded product (2p + 1 terms per entry)
    rounding = (gamma(T + 1) * float(ax @ ar) * 2
                + (gamma(T + 1) + gamma(2 * p + 2)) * float(ax @ _band_matvec(np.abs(F), ax)))
    x2 = float(x @ x)
    value = 2 * xr - xFx - rounding - 2 * r_err * float(ax.sum()) - dF * x2 * (1 + gamma(T))
    return max(value * (1 - 8 * UNIT_ROUNDOFF), 0.0)


def _certified_lambda_max(F: np.ndarray, B: sp.csr_matrix, p: int, dF: float,
                          dB: float) -> float:
    """The smallest s found with ``F - B B^T / s - delta I`` Cholesky-factorable, delta
    covering every allowance (module docstring); starts from a Lanczos estimate of
    ``lambda_max(B^T F^{-1} B)`` and widens by factors of 1.001, 1.01, ... 2."""
    factor = (scipy.linalg.cholesky_banded(F), False)
    T = F.shape[1]

    def apply(v):
        return B.T @ scipy.linalg.cho_solve_banded(factor, B @ v)

    op = scipy.sparse.linalg.LinearOperator((T, T), matvec=apply, dtype=np.float64)
    theta = float(scipy.sparse.linalg.eigsh(op, k=1, which="LA", ncv=min(T, 20),
                                            maxiter=LANCZOS_STEPS * 10, tol=1e-8,
                                            return_eigenvectors=False)[0])
    BBt = (B @ B.T).tocsr()
    rows, cols = BBt.nonzero()
    q = max(p, int(np.abs(rows - cols).max()) if BBt.nnz else 0)
    bbt_band = [BBt.diagonal(d) for d in range(q + 1)]  # B B^T's upper band, once
    absB = abs(B)
    # rounding of B B^T (q + 1 terms per entry): largest row sum of |B| |B|^T
    abs_row_sum = float(np.asarray((absB @ absB.T).sum(axis=1)).max())
    b_norm = math.sqrt(float(absB.sum(axis=1).max()) * float(absB.sum(axis=0).max()))
    for margin in (1e-3, 1e-2, 1e-1, 1.0):
        s = max(theta, 0.0) * (1 + margin) + 1e-300
        Q = np.zeros((q + 1, T))
        Q[q - p:] = F
        for d, diag in enumerate(bbt_band):
            Q[q - d, d:] -= diag / s
        # rounding of B B^T, of / s and of the subtraction, entrywise
        forming = (gamma(q + 4) / s) * abs_row_sum + gamma(2) * float(
            np.abs(Q).max()) * (2 * q + 1)
        truncation = dF + (2 * b_norm * dB + dB * dB) / s
        cholesky = gamma(q + 2) * (q + 1) ** 2 * float(np.abs(Q[q]).max()) * 1.01
        delta = (forming + truncation + cholesky) * (1 + 16 * UNIT_ROUNDOFF)
        Q[q] -= delta
        try:
            scipy.linalg.cholesky_banded(Q)
        except np.linalg.LinAlgError:
            continue
        return s * (1 + 4 * UNIT_ROUNDOFF)
    raise ParameterError("could not certify lambda_max(M_T) on the banded form (the "
                         "allowances exceed the spectral gap); use squared_sensitivity")
