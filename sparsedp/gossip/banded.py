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
  Cholesky backward error (below); then
  ``Delta^2 <= T lambda_max(M) <= T s`` (v2 Sec. 3.4's spectral bound);
* more generally ``M <= diag(d)`` iff ``F - B diag(d)^-1 B^T`` is positive semidefinite, the
  same banded test, and then ``Delta^2 <= sum(d)`` (the dense path's diagonal shift).  With
  ``d = (M 1)_+ + alpha theta`` (``M 1 = B^T F^-1 B 1``, one banded solve; theta the Lanczos
  estimate of ``lambda_max(M)``) this is the c = 1 value plus ``alpha theta T`` whenever
  ``M >= 0`` entrywise, which makes ``diag(M 1) - M`` a weighted Laplacian: the usual case
  for the gossip chains, where it closes most of the spectral bound's gap.

Work O(T w^2) and memory O(T w) instead of O(T^3) and O(T^2): T = 10^4 or 2 x 10^4 in
seconds.  The truncation allowance ``4 dK`` with ``dK <= T (T + 1) / 2`` times the largest
lag error grows like T^2 (T^3 in the lower bound's ``dF ||x||^2``): at T = 20000 on small
graphs it costs a few percent of the lower bound; a structured bound on ``D dK D^T`` would be
far tighter.  The lags' own working-precision rounding is the engine's documented model
(docs/index.md), as on the dense path.  The upper bound is the least of the spectral one
(about 20% above the c = 1 value on ER graphs at T = 1000) and the diagonal shift; the
dense path's entrywise bound and its searched shift need the T x T matrix M.
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
from sparsedp.reprs import short_repr

MIXING_LEVEL = 1e-20  # n eps^2 at which the lags are truncated
BAND_ARRAYS = 12  # band-sized arrays held at once (F, its factor, B B^T's band, Q, bounds)
LANCZOS_STEPS = 60
SHIFT_MARGINS = (1e-7, 1e-6, 1e-5, 1e-4, 1e-3, 1e-2, 1e-1)  # alpha of the diagonal shift


@dataclass(frozen=True)
class BandedInterval:
    """``lower <= Delta_T(target -> observer)^2 <= upper`` (lower: the certified c = 1 value;
    upper: the least of ``T s`` with ``lambda_max(M_T) <= s`` certified, the certified
    ``diagonal_shift`` ``sum(d)`` with ``M_T <= diag(d)`` (``inf`` when none was) and T),
    the half-bandwidth ``w`` of the mixed moments, the sparse ``products`` and
    ``lambda_max`` (the certified s; ``None`` when only the shift was certified)."""

    lower: float
    upper: float
    lambda_max: float | None
    diagonal_shift: float
    bandwidth: int
    products: int

    __repr__ = short_repr


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
    beta = _b_coefficients(alpha, c, T)
    B = _b_matrix(beta, T)
    # B's own rounding: alpha = fl(a - c), its differences and + c, each entry within 3u of
    # |a_k| + |a_(k-1)| + c; ||.||_2 <= its largest row sum (wa + 1 entries)
    dB_round = 3 * gamma(1) * (wa + 1) * (2 * float(np.abs(a[: wa + 1]).max()) + c) * 1.01
    p = F.shape[0] - 1
    depth = gamma(w + 8)
    dK, dG = _truncation_norms(lags, T)
    dF = F_err + 4.0 * dK  # ||F_true - F_hat||_2 (rounding of the band, truncation)
    r_true_err = float(np.max(lags.a_error))  # |r_true - r| entrywise on truncated lags
    dB = 2.0 * dG + dB_round  # ||B_true - B_hat||_2
    factor = (scipy.linalg.cholesky_banded(F), False)
    lower = _ones_lower(F, factor, p, a, dF, r_true_err, depth)
    row_sums = B.T @ scipy.linalg.cho_solve_banded(factor, B @ np.ones(T))  # M_T 1
    theta = _lambda_max_estimate(factor, B, fallback=float(np.abs(row_sums).max()))
    lam = _certified_lambda_max(F, beta, p, dF, dB, theta)
    spectral = T * lam if lam is not None else math.inf
    shift = _certified_diagonal_shift(F, beta, p, dF, dB, np.maximum(row_sums, 0.0), theta,
                                      ceiling=min(spectral, float(T)))
    if lam is None and not math.isfinite(shift):
        raise ParameterError("could not certify an upper bound on the banded form (the "
                             "allowances exceed the spectral gap); use squared_sensitivity")
    return BandedInterval(lower=lower, upper=min(spectral, shift, float(T)), lambda_max=lam,
                          diagonal_shift=shift, bandwidth=w, products=lags.products)


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


def _b_coefficients(alpha: np.ndarray, c: float, T: int) -> np.ndarray:
    """``beta_k = c [k = 0] + alpha_k - alpha_(k-1)`` for ``k < min(len(alpha) + 1, T)``:
    ``B = c I + D A`` is the lower banded Toeplitz matrix ``B[t, t - k] = beta_k``."""
    beta = np.diff(np.concatenate([[0.0], alpha, [0.0]]))[: alpha.size + 1]
    beta[0] += c
    return beta[:T]


def _b_matrix(beta: np.ndarray, T: int) -> sp.csr_matrix:
    """The T x T lower banded Toeplitz ``B[t, t - k] = beta_k``."""
    return sp.diags([np.full(T - k, b) for k, b in enumerate(beta)], -np.arange(beta.size),
                    shape=(T, T), format="csr")


def _gram_band(beta: np.ndarray, inverse: np.ndarray) -> np.ndarray:
    """``band[delta, j] = (B diag(inverse) B^T)[j + delta, j]`` (garbage where ``j + delta
    >= T``) for the Toeplitz B of :func:`_b_matrix`: with ``k = j - c`` the column,

        band[delta, j] = sum_(k <= L - delta) beta_(k + delta) beta_k inverse_(j - k)

    (``inverse_i = 0`` for ``i < 0``; L + 1 = len(beta)), one matrix product ``H V`` with
    ``H[delta, k] = beta_(k + delta) beta_k`` and ``V[k, j] = inverse_(j - k)``: each entry a
    sum of at most L + 1 rounded products, like the sparse product it replaces."""
    L, T = beta.size - 1, inverse.size
    H = np.zeros((L + 1, L + 1))
    for delta in range(L + 1):
        H[delta, : L + 1 - delta] = beta[delta:] * beta[: L + 1 - delta]
    padded = np.concatenate([np.zeros(L), inverse])
    V = np.lib.stride_tricks.sliding_window_view(padded, T)[::-1]  # V[k, j] = inverse_(j - k)
    return H @ V


def _abs_gram_row_sums(beta: np.ndarray, inverse: np.ndarray) -> np.ndarray:
    """Row sums of ``|B| diag(inverse) |B|^T`` (``inverse >= 0``): ``r_i = sum_m |beta_m|
    w_(i - m)`` with ``w_k = inverse_k sum_t |B[t, k]|``, in float64 (the caller charges
    their rounding)."""
    T, absolute = inverse.size, np.abs(beta)
    column_sums = np.cumsum(absolute)[np.minimum(beta.size - 1, T - 1 - np.arange(T))]
    return np.convolve(inverse * column_sums, absolute)[:T]


def _band_matvec(ab: np.ndarray, x: np.ndarray) -> np.ndarray:
    p = ab.shape[0] - 1
    y = ab[p] * x
    for d in range(1, p + 1):
        y[: -d] += ab[p - d, d:] * x[d:]
        y[d:] += ab[p - d, d:] * x[: -d]
    return y


def _ones_lower(F: np.ndarray, factor, p: int, r: np.ndarray, dF: float, r_err: float,
                depth: float) -> float:
    """Certified ``r_true^T F_true^{-1} r_true >= 2 x^T r_true - x^T F_true x`` at x = the
    computed solve (``factor``: F's banded Cholesky factor), with ``|r_true - r| <= r_err``
    entrywise and ``||F_true - F|| <= dF``."""
    x = scipy.linalg.cho_solve_banded(factor, r)
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


def _lambda_max_estimate(factor, B: sp.csr_matrix, fallback: float) -> float:
    """A Lanczos estimate of ``lambda_max(M_T) = lambda_max(B^T F^-1 B)`` (``factor``: F's
    banded Cholesky factor); only a starting point for the certificates, so when Lanczos
    does not converge the ``fallback`` (the largest ``|M_T 1|``, which is ``lambda_max`` for
    ``M_T >= 0``) stands in."""
    T = B.shape[0]

    def apply(v):
        return B.T @ scipy.linalg.cho_solve_banded(factor, B @ v)

    op = scipy.sparse.linalg.LinearOperator((T, T), matvec=apply, dtype=np.float64)
    try:
        return float(scipy.sparse.linalg.eigsh(op, k=1, which="LA", ncv=min(T, 20),
                                               maxiter=LANCZOS_STEPS * 10, tol=1e-8,
                                               return_eigenvectors=False)[0])
    except scipy.sparse.linalg.ArpackNoConvergence:
        return fallback


def _certified_lambda_max(F: np.ndarray, beta: np.ndarray, p: int, dF: float,
                          dB: float, theta: float) -> float | None:
    """The smallest s found with ``M_T <= s I`` certified (:func:`_dominates`), starting
    from the Lanczos estimate ``theta`` of ``lambda_max(M_T)`` and widening by factors of
    1.001, 1.01, ... 2; ``None`` when none is (the allowances exceed the spectral gap)."""
    T = F.shape[1]
    for margin in (1e-3, 1e-2, 1e-1, 1.0):
        s = max(theta, 0.0) * (1 + margin) + 1e-300
        if _dominates(F, beta, p, dF, dB, np.full(T, s)):
            return s * (1 + 4 * UNIT_ROUNDOFF)
    return None


def _certified_diagonal_shift(F: np.ndarray, beta: np.ndarray, p: int, dF: float, dB: float,
                              row_sums: np.ndarray, theta: float, ceiling: float) -> float:
    """``sum(d)`` for the least ``alpha`` in ``SHIFT_MARGINS`` for which ``d = (M_T 1)_+ +
    alpha theta`` (``row_sums``: ``(M_T 1)_+``) has ``M_T <= diag(d)`` certified
    (:func:`_dominates`) and ``sum(d)`` below ``ceiling``; ``inf`` when none has.  Found by
    bisection (three Cholesky tries): a larger alpha only adds to D and shrinks the
    allowances, so passing is monotone in it.  Then
    ``c^T M_T c <= c^T diag(d) c <= sum(d)`` for every ``|c_i| <= 1`` (the dense path's
    diagonal shift with its ``lambda_max`` term zero).
    When ``M_T >= 0`` entrywise, ``diag(M_T 1) - M_T`` is a weighted Laplacian (positive
    semidefinite), so ``sum(d)`` is ``1^T M_T 1 + alpha theta T``, the c = 1 value plus the
    margin; ``M_T 1 = B^T F^-1 (B 1)`` is one banded solve (any d is sound, only the
    certificate matters)."""
    T = F.shape[1]

    def certified_total(alpha: float) -> float:
        d = row_sums + alpha * max(theta, 0.0) + 1e-300
        total = float(d.sum()) * (1 + gamma(T))
        return total if total < ceiling and _dominates(F, beta, p, dF, dB, d) else math.inf

    best, low, high = math.inf, 0, len(SHIFT_MARGINS)  # bisection: the least passing alpha
    while low < high:
        middle = (low + high) // 2
        total = certified_total(SHIFT_MARGINS[middle])
        if math.isfinite(total):
            best, high = total, middle
        else:
            low = middle + 1
    return best


def _dominates(F: np.ndarray, beta: np.ndarray, p: int, dF: float, dB: float,
               d: np.ndarray) -> bool:
    """Whether ``M_T <= diag(d)`` (``d > 0``) is certified for ``M_T = B^T F^-1 B``, B the
    Toeplitz matrix of ``beta`` (:func:`_b_matrix`): ``M_T <= D`` iff ``F - B D^-1 B^T`` is
    positive semidefinite (Schur complement of ``[[D, B^T], [B, F]]``), which one banded
    Cholesky of ``F - B D^-1 B^T - delta I`` certifies, delta covering the rounding of
    forming that matrix (``gamma_(q+4) |B| D^-1 |B|^T``, largest row sum, and of the
    subtraction), the truncation (``||F_true - F|| <= dF``, ``||B_true - B|| <= dB``:
    ``(2 ||B|| dB + dB^2) ||D^-1||``, ``||B|| <= sum |beta|``) and the Cholesky backward error.

    Cholesky backward error: a factorisation that completes gives ``R^T R = A + dA`` with
    ``|dA| <= gamma_k |R^T| |R|`` (Higham, *Accuracy and Stability*, Thm 10.3; inner
    products of at most q + 1 terms, charged as ``k = 2q + 2``).  ``|R^T| |R|`` has half-
    bandwidth q and entries ``sum_k |r_ki| |r_kj| <= sqrt(c_i c_j)`` with ``c_i = ||R e_i||^2
    = a_ii + dA_ii <= a_ii / (1 - gamma_k)`` (Cauchy-Schwarz over the columns), so
    ``||dA||_2 <= gamma_k (2q + 1) max_i a_ii / (1 - gamma_k)`` (its largest row sum)."""
    T = F.shape[1]
    inverse = 1.0 / d
    band = _gram_band(beta, inverse)
    q = max(p, beta.size - 1)
    Q = np.zeros((q + 1, T))
    Q[q - p:] = F
    for delta in range(min(beta.size, T)):  # entry (j, j + delta) at Q[q - delta, j + delta]
        Q[q - delta, delta:] -= band[delta, : T - delta]
    abs_row_sum = float(_abs_gram_row_sums(beta, inverse).max())
    b_norm = float(np.abs(beta).sum()) * (1 + gamma(beta.size))
    forming = (gamma(q + 4) * abs_row_sum * (1 + gamma(T + q))
               + gamma(2) * float(np.abs(Q).max()) * (2 * q + 1))
    truncation = dF + (2 * b_norm * dB + dB * dB) * float(inverse.max()) * (1 + gamma(2))
    k = gamma(2 * q + 2)
    cholesky = k * (2 * q + 1) * float(np.abs(Q[q]).max()) / (1 - k) * (1 + gamma(2))
    Q[q] -= (forming + truncation + cholesky) * (1 + 16 * UNIT_ROUNDOFF)
    try:
        scipy.linalg.cholesky_banded(Q)
    except np.linalg.LinAlgError:
        return False
    return True
