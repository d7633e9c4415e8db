"""Polynomial Krylov evaluation of ``f(W) b``, ``f(x) = -log(1 - x)``, on ``1^perp``, with error
bounds: the ``chebyshev`` and ``lanczos`` columns of the log-Green matrix
(:mod:`sparsedp.randomwalk.log_green`) and the Lanczos (Gauss) quadrature of its stochastic
log-determinant.

W is symmetric and doubly stochastic (``||W||_2 = 1``), b is orthogonal to the constant
vector 1, and ``[a, c]`` (:class:`SpectralInterval`, ``c < 1``) contains the spectrum of W on
``1^perp``.

**Chebyshev series.**  :func:`chebyshev_parameters` works on ``[a', c]``, the interval widened
downwards to a width of at least ``MIN_RELATIVE_WIDTH (1 - c)`` (any interval containing the
spectrum gives a valid series; a point spectrum such as ``W = (J - I)/(n - 1)`` or
``W = J/n`` would otherwise make ``2 / (c - a)`` -- the scale of the recurrence and of its
rounding -- arbitrarily large; the widening costs at most a degree or two).  With
``x* = (2 - a' - c)/(c - a')`` and ``r = x* + sqrt(x*^2 - 1)``::

    -log(1 - lambda) = -log((c - a') r / 4) + sum_{k >= 1} (2 / (k r^k)) T_k(x),
    x = (2 lambda - a' - c) / (c - a'),

and the degree-K truncation errs by at most ``sum_{k > K} 2 / (k r^k) <= 2 r^-(K+1) /
((K+1)(1 - 1/r))`` on ``[a', c]`` (:func:`chebyshev_tail_bound`).

Floating point (:func:`chebyshev_columns`): the recurrence ``V_{k+1} = 2 X V_k - V_{k-1}``,
``X = P (s W - h I)`` (``s = 2/(c - a')``, ``h = (a' + c)/(c - a')``, P removes the mean)
commits a local error ``l_k`` (sparse product: ``eps m ||V_k||`` with ``m =
sqrt(max(W d) max(d))``, d the row counts; scaling, shift, projection, subtraction: a few eps
times the magnitudes, computed from the actual norms).  The errors propagate through the same
recurrence, ``delta_k = sum_{j<k} U_{k-1-j}(X) l_j`` with ``||U_m(X)|| <= m + 1`` on
``1^perp``, so ``||delta_k|| <= sum_{j<k} (k - j) ||l_j||``; the reported ``rounding_bound``
is ``sum_k |c_k| ||delta_k||`` plus the errors of the coefficients, of the accumulation
``sum_k c_k V_k`` and of the input, each term's magnitude times a few eps.

**Lanczos** (:func:`lanczos`, :func:`lanczos_log_action`): k steps from ``q_1 = b/||b||``
with full reorthogonalisation and the mean removed again after it (rounding in the
reorthogonalisation would otherwise reintroduce the eigenvalue-1 direction, which a nearly
exhausted Krylov space then amplifies).  The run records ``F = P W Q - P Q T - beta_k P q_{k+1}
e_k^T`` (the loss of the Lanczos relation: orthogonality, discarded coefficients, rounding;
computed column by column, plus the rounding of the sparse products) and ``||Q^T Q - I||_F``.
The approximation is ``||b|| P Q f(T~) e_1`` with ``T~ = S diag(theta~) S^T``, the Ritz values
clipped into ``[a, c]`` (``E = T~ - T``: clipping and eigensolver backward error).  From
``-log(1 - x) = int_1^inf (1/(t - x) - 1/t) dt`` and the perturbed relation::

    error = f(W) db - ||b|| int_1^inf (t - W)^{-1} [beta_k P q_{k+1} e_k^T y(t) + P F~ y(t)] dt,
    y(t) = (t - T~)^{-1} e_1,  F~ = F - Q E,

so ``||error|| <= ||b|| [beta_k int_1^inf |e_k^T y(t)| / (t - c) dt + (||F|| + ||Q|| ||E||)
/ (1 - c) + (rounding of the assembly)]``.  For the tridiagonal T, ``e_k^T (t - T)^{-1} e_1 =
prod_i beta_i / det(t - T) > 0`` above its spectrum, so the first integral is the signed sum
``sum_j S_kj S_1j g(theta_j)``, ``g(theta) = int_1^inf dt / ((t - theta)(t - c)) =
log((1 - theta)/(1 - c)) / (c - theta) <= 1/(1 - c)``, evaluated with an allowance for its
cancellation and for ``E`` (the a-posteriori bound: the final residual ``beta_k`` times the
last component, exact arithmetic not assumed).  The a-priori bound
``2 ||b|| E_{k-1}`` (exact arithmetic: ``p(W) b = ||b|| Q p(T) e_1`` for ``deg p < k``, Ritz
values in ``[a, c]``, ``E_{k-1} <=`` the Chebyshev tail) is used when smaller; the loss of the
relation is charged on top of either.  A breakdown (``beta_k ~ 0``: the Krylov space is
invariant, e.g. a cycle, a star, a complete graph) stops the iteration, and the a-posteriori
term then certifies the (exact) result of the smaller tridiagonal matrix.

For the quadratic form ``b^T f(W) b`` (Gauss quadrature ``||b||^2 e_1^T f(T~) e_1``, exact for
degree ``2k - 1``): a-priori ``2 ||b||^2 E_{2k-1}``; a-posteriori ``||b||`` times the vector
bound plus ``||b||^2 ||Q^T q_1 - e_1|| max|f|``.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
import scipy.sparse as sp

from sparsedp.errors import ParameterError
from sparsedp.progress import progress_bar

__all__ = [
    "MIN_RELATIVE_WIDTH",
    "ChebyshevParameters",
    "LanczosAction",
    "LanczosRun",
    "SpectralInterval",
    "chebyshev_columns",
    "chebyshev_parameters",
    "chebyshev_tail_bound",
    "lanczos",
    "lanczos_columns",
    "lanczos_log_action",
    "lanczos_quadratic_form",
    "matvec_rounding_factor",
    "remove_mean",
    "tridiagonal_eig",
]

MIN_RELATIVE_WIDTH = 1e-3  # the Chebyshev interval is at least this times (1 - c) wide
_EPS = float(np.finfo(float).eps)
_BREAKDOWN = 1e-14  # beta_k below this (||W|| = 1): the Krylov space is invariant


@dataclass(frozen=True)
class SpectralInterval:
    """``[lower, upper]`` contains the spectrum of W on ``1^perp`` (see
    :func:`sparsedp.randomwalk.log_green.spectral_interval`).

    ``lower`` >= -1; ``upper`` < 1.  ``how`` says where each end comes from.  ``estimate``:
    the upper end is an estimate, not certified (bounds built on it are estimates); an
    interval given by the caller is taken as asserted (``estimate=False``).
    """

    lower: float
    upper: float
    how: str
    estimate: bool = False

    @property
    def rho(self) -> float:
        """``max(|lower|, |upper|)``: bounds ``|lambda_i|`` for ``i >= 2``."""
        return max(abs(self.lower), abs(self.upper))


def remove_mean(X: np.ndarray) -> np.ndarray:
    """``P X``: every column's mean removed (the projection on ``1^perp``)."""
    return X - X.mean(axis=0)


def _f_max(interval: SpectralInterval) -> float:
    """``max |-log(1 - x)|`` over the interval (f is increasing)."""
    return max(abs(math.log1p(-interval.upper)), abs(math.log1p(-interval.lower)))


class ChebyshevParameters(NamedTuple):
    """The (possibly widened) interval ``[lower, upper]``, ``x*``, ``r`` and the constant
    term ``c_0 = -log((upper - lower) r / 4)`` of the Chebyshev series."""

    lower: float
    upper: float
    x_star: float
    r: float
    c0: float
    widened: bool


def chebyshev_parameters(interval: SpectralInterval) -> ChebyshevParameters:
    """The Chebyshev series of ``-log(1 - lambda)`` on the interval, widened downwards to a
    width of at least ``MIN_RELATIVE_WIDTH (1 - upper)`` (module docstring)."""
    a, c = interval.lower, interval.upper
    width = MIN_RELATIVE_WIDTH * (1.0 - c)
    widened = c - a < width
    if widened:
        a = c - width
    xs = (2.0 - a - c) / (c - a)
    r = xs + math.sqrt((xs - 1.0) * (xs + 1.0))
    c0 = -math.log((c - a) * r / 4.0)
    return ChebyshevParameters(a, c, xs, r, c0, widened)


def chebyshev_tail_bound(degree: int, interval: SpectralInterval) -> float:
    """``sum_{k > degree} 2 / (k r^k) <= 2 r^-(K+1) / ((K+1)(1 - 1/r))``: the uniform error of
    the degree-``degree`` Chebyshev truncation of ``-log(1 - x)`` on the (widened) interval,
    and a bound on the best polynomial approximation error of that degree there."""
    r = chebyshev_parameters(interval).r
    k = degree + 1
    return 2.0 * math.exp(-k * math.log(r)) / (k * (1.0 - 1.0 / r))


def matvec_rounding_factor(M: sp.csr_matrix) -> float:
    """``m`` with ``||fl(W v) - W v|| <= eps m ||v||`` (to first order) for a nonnegative W
    with unit row sums: ``|fl(Wv) - Wv| <= eps diag(d) W |v|`` (d: stored entries per row,
    plus one) and ``||diag(d) W||_2 <= sqrt(||.||_1 ||.||_inf) = sqrt(max(W^T d) max(d))``."""
    d = np.diff(M.indptr).astype(np.float64) + 1.0
    return math.sqrt(float(np.max(M.T @ d)) * float(np.max(d)))


def chebyshev_columns(M: sp.csr_matrix, B: np.ndarray, interval: SpectralInterval, tol: float,
                      max_degree: int, progress=None) -> tuple[np.ndarray, np.ndarray, dict]:
    """``f(W) B`` by the truncated Chebyshev series; the error bound per column is the
    truncation bound plus the termwise rounding bound (module docstring)."""
    p = chebyshev_parameters(interval)
    a, c = p.lower, p.upper
    norms = np.linalg.norm(B, axis=0)
    degree = 1
    while chebyshev_tail_bound(degree, interval) * norms.max() > tol:
        degree += 1
        if degree > max_degree:
            raise ParameterError(
                f"chebyshev: degree {max_degree} does not reach tol = {tol:g} (spectral "
                f"interval [{interval.lower:.6g}, {interval.upper:.6g}]); raise max_degree or "
                "use 'quadrature'")
    scale, shift = 2.0 / (c - a), (a + c) / (c - a)
    magnitude = abs(scale) + abs(shift)
    mv = matvec_rounding_factor(M)
    log_r = math.log(p.r)
    coefs = np.array([p.c0] + [2.0 * math.exp(-k * log_r) / k for k in range(1, degree + 1)])

    def X(V: np.ndarray) -> np.ndarray:
        return remove_mean(scale * (M @ V) - shift * V)

    cur_norms = np.empty((degree + 1, B.shape[1]))
    local = np.zeros((degree + 1, B.shape[1]))  # local[j]: error committed forming V_{j+1}
    out_norm_sum = np.zeros(B.shape[1])
    prev, cur = B, X(B)
    cur_norms[0], cur_norms[1] = norms, np.linalg.norm(cur, axis=0)
    local[0] = _EPS * (mv + 8.0) * magnitude * norms
    out = coefs[0] * B
    out_norm_sum += np.linalg.norm(out, axis=0)
    out += coefs[1] * cur
    out_norm_sum += np.linalg.norm(out, axis=0)
    bar = progress_bar(progress, total=degree - 1, desc="Chebyshev terms", unit="term")
    for k in range(2, degree + 1):
        prev_norm = cur_norms[k - 2]
        prev, cur = cur, 2.0 * X(cur) - prev
        local[k - 1] = _EPS * ((2.0 * mv + 12.0) * magnitude * cur_norms[k - 1] + 2.0 * prev_norm)
        cur_norms[k] = np.linalg.norm(cur, axis=0)
        out += coefs[k] * cur
        out_norm_sum += np.linalg.norm(out, axis=0)
        if bar is not None:
            bar.update()
    if bar is not None:
        bar.close()
    # ||delta_k|| <= sum_{j<k} (k - j) ||l_j|| = k S1_k - S2_k (S1, S2: exclusive prefix sums)
    ks = np.arange(degree + 1, dtype=np.float64)[:, None]
    s1 = np.vstack([np.zeros((1, B.shape[1])), np.cumsum(local, axis=0)[:-1]])
    s2 = np.vstack([np.zeros((1, B.shape[1])), np.cumsum(ks * local, axis=0)[:-1]])
    propagated = ks * s1 - s2
    abs_c = np.abs(coefs)[:, None]
    coef_err = abs_c * _EPS * (10.0 * ks + ks * abs(log_r) + 4.0)
    coef_err[0] = _EPS * (12.0 + abs(p.c0))
    rounding = (np.sum(abs_c * propagated, axis=0)
                + np.sum(coef_err * cur_norms, axis=0)
                + 2.0 * _EPS * (np.sum(abs_c * cur_norms, axis=0) + out_norm_sum)
                + 4.0 * _EPS * (_f_max(interval) + 1.0) * norms)
    truncation = chebyshev_tail_bound(degree, interval) * norms
    return remove_mean(out), truncation + rounding, {
        "degree": degree, "matvecs": degree, "chebyshev_r": p.r, "x_star": p.x_star,
        "chebyshev_interval": [a, c], "interval_widened": p.widened,
        "truncation_bound": truncation.tolist(), "rounding_bound": rounding.tolist()}


@dataclass(frozen=True)
class LanczosRun:
    """k Lanczos steps on ``1^perp``: ``T_k`` (diagonal ``alpha``, off-diagonal ``beta``),
    ``beta_next`` (norm of the next vector: ``W Q = Q T + beta_next q_{k+1} e_k^T + F``), the
    basis Q (``None`` without reorthogonalisation), ``relation_residual`` (a bound on
    ``||F||_F``; NaN without Q), ``orthogonality`` (``||Q^T Q - I||_F``; NaN without Q) and
    ``breakdown`` (stopped because ``beta_next`` vanished; also when b has no component
    orthogonal to 1, then k = 0)."""

    alpha: np.ndarray
    beta: np.ndarray
    beta_next: float
    Q: np.ndarray | None
    relation_residual: float
    orthogonality: float
    breakdown: bool

    @property
    def steps(self) -> int:
        return len(self.alpha)


def lanczos(M: sp.csr_matrix, b: np.ndarray, steps: int, keep: bool = True,
            matvec_factor: float | None = None,
            stop: Callable[[np.ndarray, np.ndarray], bool] | None = None) -> LanczosRun:
    """k-step Lanczos on ``1^perp`` from ``b`` (mean removed), stopping early on breakdown,
    or when ``stop(alpha, beta)`` (called after every step with the coefficients so far,
    ``beta[-1]`` the next vector's norm) returns True.

    With ``keep``: full reorthogonalisation against the stored basis (twice), the mean removed
    again afterwards, and the residual of the Lanczos relation recorded.  Without: the plain
    three-term recurrence (no n x k storage; the Ritz values stay accurate, copies of converged
    ones may appear)."""
    n = b.shape[0]
    q = b - b.mean()
    nb = float(np.linalg.norm(q))
    if steps < 1 or nb == 0.0:
        return LanczosRun(np.zeros(0), np.zeros(0), 0.0, np.zeros((n, 0)) if keep else None,
                          0.0, 0.0, True)
    q /= nb
    Q = np.empty((n, steps)) if keep else None
    alpha, beta = np.zeros(steps), np.zeros(steps)
    q_prev = np.zeros(n)
    beta_prev = 0.0
    residual2 = 0.0
    used, breakdown = steps, False
    for k in range(steps):
        w0 = M @ q
        w0 -= w0.mean()
        alpha[k] = q @ w0
        w = w0 - alpha[k] * q - beta_prev * q_prev
        if keep:
            Q[:, k] = q
            basis = Q[:, :k + 1]
            w -= basis @ (basis.T @ w)  # full reorthogonalisation, twice is enough
            w -= basis @ (basis.T @ w)
        w -= w.mean()  # rounding in the reorthogonalisation must not bring back 1
        beta[k] = np.linalg.norm(w)
        if keep:
            f = w0 - alpha[k] * q - beta_prev * q_prev - w  # column k of F (discarded part)
            residual2 += float(f @ f)
        if beta[k] <= _BREAKDOWN:
            used, breakdown = k + 1, True
            break
        if stop is not None and stop(alpha[:k + 1], beta[:k + 1]):
            used = k + 1
            break
        q_prev, q = q, w / beta[k]
        beta_prev = beta[k]
    if not keep:
        return LanczosRun(alpha[:used], beta[:used - 1], float(beta[used - 1]), None,
                          math.nan, math.nan, breakdown)
    Q = Q[:, :used]
    mv = matvec_rounding_factor(M) if matvec_factor is None else matvec_factor
    residual = math.sqrt(residual2) + math.sqrt(used) * _EPS * (mv + 8.0)
    orth = float(np.linalg.norm(Q.T @ Q - np.eye(used)))
    return LanczosRun(alpha[:used], beta[:used - 1], float(beta[used - 1]), Q, residual, orth,
                      breakdown)


def tridiagonal_eig(alpha: np.ndarray, beta: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Eigenvalues (ascending) and eigenvectors of the symmetric tridiagonal matrix."""
    if len(alpha) == 1:
        return alpha.astype(np.float64).copy(), np.ones((1, 1))
    from scipy.linalg import eigh_tridiagonal

    return eigh_tridiagonal(alpha, beta)


def _g(theta: np.ndarray, c: float) -> np.ndarray:
    """``int_1^inf dt / ((t - theta)(t - c)) = log1p(u) / (u (1 - c))``, ``u = (c - theta) /
    (1 - c) > -1`` (``1 / (1 - c)`` at ``u = 0``), for ``theta < 1``, ``c < 1``."""
    u = (c - theta) / (1.0 - c)
    small = np.abs(u) < 1e-8
    ratio = np.where(small, 1.0 - u / 2.0, np.log1p(u) / np.where(small, 1.0, u))
    return ratio / (1.0 - c)


def _eigensolver_errors(alpha: np.ndarray, beta: np.ndarray, theta: np.ndarray,
                        S: np.ndarray) -> tuple[float, float, float]:
    """``(||T S - S diag(theta)||_F, ||S^T S - I||_F, ||T||)`` for the computed eigenpairs of
    the tridiagonal T (``||T||`` by Gershgorin)."""
    TS = alpha[:, None] * S
    TS[:-1] += beta[:, None] * S[1:]
    TS[1:] += beta[:, None] * S[:-1]
    residual = float(np.linalg.norm(TS - S * theta[None, :]))
    eta = float(np.linalg.norm(S.T @ S - np.eye(len(alpha))))
    off = np.abs(np.concatenate([[0.0], beta])) + np.abs(np.concatenate([beta, [0.0]]))
    return residual, eta, float(np.max(np.abs(alpha) + off))


@dataclass(frozen=True)
class LanczosAction:
    """``f(T~) e_1`` (``coefficients``; ``Q`` times them is ``f(W) b / ||b||``), its first
    entry (the Gauss quadrature of ``q_1^T f(W) q_1``) and the bound terms per unit ``||b||``:
    ``a_priori`` (``2 E_{k-1}``, exact arithmetic), ``a_posteriori`` (``beta_k sum_j |S_kj
    S_1j| g(theta_j)``) and ``perturbation`` (loss of the Lanczos relation, clipping and
    eigensolver error, rounding of the assembly), see the module docstring."""

    coefficients: np.ndarray
    first: float
    a_priori: float
    a_posteriori: float
    perturbation: float
    steps: int

    @property
    def bound(self) -> float:
        """The bound on ``||f(W) q_1 - P Q f(T~) e_1||`` (per unit ``||b||``)."""
        return min(self.a_priori, self.a_posteriori) + self.perturbation


def lanczos_log_action(run: LanczosRun, interval: SpectralInterval) -> LanczosAction:
    """``f(T~) e_1`` of a Lanczos run with reorthogonalisation, and its error bound terms.

    a-posteriori: ``beta_k int_1^inf |e_k^T (t - T)^{-1} e_1| / (t - c) dt``; for the
    tridiagonal T with positive off-diagonal entries ``e_k^T (t - T)^{-1} e_1 = prod beta_i /
    det(t - T) > 0`` above the spectrum, so the integral is the signed sum ``sum_j S_kj S_1j
    g(theta_j)`` (evaluated with an allowance for its cancellation, the eigensolver's residual
    and orthogonality, and ``E = T~ - T``).  ``E`` (clipping of the Ritz values into the
    interval, eigensolver residual and loss of orthogonality of S) and the residual F of the
    Lanczos relation enter the perturbation term with the factor ``1 / (1 - c)`` (the
    sensitivity of f at c)."""
    k = run.steps
    if k == 0:
        return LanczosAction(np.zeros(0), 0.0, 0.0, 0.0, 0.0, 0)
    lo, hi = interval.lower, interval.upper
    theta, S = tridiagonal_eig(run.alpha, run.beta)
    r_eig, eta, t_norm = _eigensolver_errors(run.alpha, run.beta, theta, S)
    clipped = np.clip(theta, lo, hi)
    fvals = -np.log1p(-clipped)
    coefficients = S @ (fvals * S[0, :])
    first = float(np.sum(S[0, :] ** 2 * fvals))
    a_priori = 2.0 * chebyshev_tail_bound(k - 1, interval)
    E = (float(np.max(np.abs(theta - clipped))) + r_eig + 2.0 * eta * t_norm
         + 4.0 * math.sqrt(k) * _EPS * t_norm)
    g_hi = 1.0 / (1.0 - hi)
    theta_max = float(np.max(theta))
    if theta_max < 1.0:
        g = _g(theta, hi)
        weights = S[-1, :] * S[0, :]
        signed = abs(float(np.sum(weights * g)))
        allowance = ((k * _EPS + eta) * float(np.sum(np.abs(weights) * g))
                     + E * g_hi / (1.0 - theta_max))
        a_posteriori = run.beta_next * (signed + allowance)
    else:
        a_posteriori = math.inf
    q_norm = math.sqrt(1.0 + run.orthogonality)
    f_max = _f_max(interval)
    perturbation = ((run.relation_residual + q_norm * E) * g_hi
                    + ((k ** 1.5 + 8.0) * _EPS + 2.0 * eta) * f_max * q_norm)
    return LanczosAction(coefficients, first, a_priori, a_posteriori, perturbation, k)


def lanczos_quadratic_form(M: sp.csr_matrix, z: np.ndarray, steps: int,
                           interval: SpectralInterval) -> tuple[float, float, int]:
    """``(value, bound, steps)``: ``value`` the Gauss (Lanczos) quadrature of ``z^T log(I - W)
    z`` on ``1^perp`` (``z`` projected), ``bound`` on its error (module docstring)."""
    zp = z - z.mean()
    nz2 = float(zp @ zp)
    run = lanczos(M, zp, steps)
    if run.steps == 0:  # z constant: the projected form is exactly 0
        return 0.0, 0.0, 0
    act = lanczos_log_action(run, interval)
    a_priori = 2.0 * chebyshev_tail_bound(2 * act.steps - 1, interval)
    bound = nz2 * (min(a_priori, act.a_posteriori) + act.perturbation
                   + run.orthogonality * _f_max(interval))
    return -nz2 * act.first, bound, act.steps


def lanczos_columns(M: sp.csr_matrix, B: np.ndarray, interval: SpectralInterval, tol: float,
                    max_degree: int) -> tuple[np.ndarray, np.ndarray, dict]:
    """``f(W) B`` column by column: ``||b|| P Q f(T~) e_1`` with the number of steps k from the
    a-priori bound (``2 ||b|| E_{k-1} <= tol``, at most ``n - 1``); the error bound per column
    is ``||b||`` times :attr:`LanczosAction.bound` plus the rounding of the final projection."""
    n = M.shape[0]
    norms = np.linalg.norm(B, axis=0)
    steps = 1
    while 2.0 * chebyshev_tail_bound(steps - 1, interval) * norms.max() > tol:
        steps += 1
        if steps > max_degree:
            raise ParameterError(f"lanczos: {max_degree} steps do not reach tol = {tol:g}")
    steps = min(steps, n - 1)
    mv = matvec_rounding_factor(M)
    out = np.empty_like(B)
    bound = np.empty(B.shape[1])
    used, prior, post, pert, breakdowns = [], [], [], [], 0
    for j in range(B.shape[1]):
        run = lanczos(M, B[:, j], steps, matvec_factor=mv)
        act = lanczos_log_action(run, interval)
        out[:, j] = norms[j] * (run.Q @ act.coefficients)
        bound[j] = norms[j] * act.bound + 4.0 * _EPS * np.linalg.norm(out[:, j])
        used.append(act.steps)
        prior.append(norms[j] * act.a_priori)
        post.append(norms[j] * act.a_posteriori)
        pert.append(norms[j] * act.perturbation)
        breakdowns += run.breakdown
    return remove_mean(out), bound, {
        "steps": used, "matvecs": sum(used), "breakdowns": breakdowns,
        "a_priori_bound": prior, "a_posteriori_bound": post, "perturbation_bound": pert}
