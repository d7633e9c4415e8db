"""Batched accounting of the secure-summation single-observer view: one observer against every
target with one propagation and one factorisation.

For observer a, target j, T rounds, view ``"secure-summation"`` (v2 Lemma 10 with
``S = e_a^T``), all noise unknown to the attacker, one constant non-negative row-stochastic W:

    r_l = e_a^T W^l                    (l = 0..T-1: T - 1 sparse products, every target)
    K[t, t'] = sum_{k <= min(t, t')} r_(t-k) . r_(t'-k)     (T x T; independent of j)
    G_j[t, tau] = r_(t-tau)[j]   (t >= tau, else 0)           (lower-triangular Toeplitz)
    M_j = G_j^T K^{-1} G_j,      Delta^2(j -> a) = max_{c in {-1,1}^T} c^T M_j c.

``K`` is the Gram assembly of :mod:`sparsedp.linalg.gram` (lags of ``W^T`` applied to
``e_a``), or for exactly symmetric W the same recursion on the 2T - 1 moments
``(W^l)_aa`` (:func:`observer_batch`); a batch of observers is propagated as one
sparse-times-block product per round.

The c = 1 value for every target at once
----------------------------------------
``c = 1`` gives ``b_j = G_j 1 = C r_j`` (``C`` the T x T lower-triangular ones: ``b_j[t] =
sum_{l <= t} r_l[j]``); with ``K = L L^T`` and ``P = L^{-1} C`` (T x T, once per observer)

    1^T M_j 1 = b_j^T K^{-1} b_j = ||P r_j||^2,        Z = P R  (one T x T by T x n product)

a lower bound on ``Delta^2`` (kind "lower": one feasible sign vector).

Certification of the c = 1 value (:func:`ones_interval`).  Exact ``K`` and lags ``r``;
computed ``K_hat`` with ``||K_hat - K||_2 <= dK`` (:func:`sparsedp.linalg.gram.
rounding_norm_bound`), ``|fl(r) - r| <= e r`` entrywise (``e = gamma((T-1)(d+1))``),
``lambda_min(K) >= lam`` (:func:`sparsedp.linalg.certified.gossip_lambda_min_lower_bound`),
so ``lambda_min(K_hat) >= lam_hat = lam - dK``.

1. ``S = C^T K_hat^{-1} C`` is sandwiched from the residual of ``X = L^{-T} P``
   (:func:`sparsedp.linalg.certified.sandwich_from_solve`, T x T), and
   ``P^T P - delta I <= S <= P^T P + delta_up I`` follows from the computed
   ``||fl(P^T P) - low||_F``, the rounding of ``P^T P`` (``gamma_T ||P||_F^2``) and the
   sandwich's allowances; so ``r^T S r`` is within ``delta ||r||^2`` (``delta_up``) of
   ``||P r||^2``.
2. ``|fl(P r) - P r| <= gamma_T |P| r`` (r >= 0), so ``||P r||`` is within ``gamma_T
   ||P||_F ||r||`` of the computed ``||Z[:, j]||`` (itself from ``fl(sum z^2)``, within
   ``gamma_T`` relative).
3. K_hat to K: with ``v_K = b^T K^{-1} b`` and ``v_S = b^T K_hat^{-1} b``,
   ``|v_K - v_S| <= dK ||K^{-1} b|| ||K_hat^{-1} b|| <= dK sqrt(v_K / lam) sqrt(v_S /
   lam_hat)``, hence with ``c = dK / sqrt(lam lam_hat)``

       sqrt(v_S) (sqrt(c^2 + 4) - c) / 2  <=  sqrt(v_K)  <=  sqrt(v_S) (sqrt(c^2 + 4) + c) / 2.

4. Computed to exact lags: ``sqrt(v)`` is the norm ``||K^{-1/2} C r||``, which moves by at
   most ``||C||_2 e' ||fl(r)|| / sqrt(lam)`` (``e' = e / (1 - e)``, ``||C||_2 <= T``).

The last scalar operations are covered by factors ``1 -+ 4u`` to ``1 -+ 16u``.

Certified upper bounds per pair (:func:`pair_bounds`): ``X = K_hat^{-1} [G_j ...]`` for a
block of targets by one Cholesky solve, then per pair the same sandwich as the single-pair
Gram path (``certified.sandwich_from_solve`` and ``certified.model_perturbation`` with the
analytic ``lambda_min`` bound, :func:`sparsedp.gossip.certified_solve._gram_sandwich`) and
the same bounds (:func:`sparsedp.linalg.sign_bounds.evaluate_bounds`).
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

import numpy as np
import scipy.linalg
import scipy.sparse as sp

from sparsedp.errors import ParameterError
from sparsedp.linalg import certified, gram, kernels
from sparsedp.linalg.certified import UNIT_ROUNDOFF, MatrixSandwich, frobenius, gamma
from sparsedp.linalg.sign_bounds import (
    TOP_EIGENPAIRS,
    Bound,
    certified_shift_bound,
    evaluate_bounds,
    minimise_diagonal_shift,
    sign_candidates,
    top_pairs,
)
from sparsedp.linalg.stochastic import matrix_facts


@dataclass(frozen=True)
class ObserverBatch:
    """A batch of b observers of one W: lags, noise covariances and their factors.

    ``lags`` (b, T, n): ``lags[i, l] = e_(a_i)^T W^l``; ``K`` (b, T, T) as computed, ``L``
    (b, T, T) its Cholesky factors; ``dK`` (b,): ``||K_hat - K||_2`` bounds; ``lam``: the
    analytic ``lambda_min(K)`` lower bound; ``lag_depth``: ``(T-1)(d+1)``, ``d`` the longest
    row of ``W^T`` (``|fl(r_l) - r_l| <= gamma(lag_depth) r_l`` entrywise); ``products``:
    sparse products with ``W^T`` (on n x b blocks).
    """

    observers: np.ndarray
    lags: np.ndarray
    K: np.ndarray
    L: np.ndarray
    dK: np.ndarray
    lam: float
    lag_depth: int
    products: int

    @property
    def T(self) -> int:
        return self.lags.shape[1]

    @property
    def lag_error(self) -> float:
        """``gamma((T-1)(d+1))``: ``|fl(r_l) - r_l| <= lag_error r_l`` entrywise."""
        return gamma(max(self.lag_depth, 1))


def lambda_min_lower_bound(W: sp.csr_matrix) -> float:
    """``lambda_min(K_T) >= 1 / (1 + ||W||_2)^2`` for one observer, any T
    (:func:`sparsedp.linalg.certified.gossip_lambda_min_lower_bound`)."""
    return certified.gossip_lambda_min_lower_bound(W)


def observer_batch(
    W: sp.csr_matrix, observers, T: int, lam: float, backend: str = "auto",
    symmetric: bool | None = None, out: np.ndarray | None = None,
) -> ObserverBatch:
    """Propagate the rows ``e_a^T W^l`` of a batch of observers (one sparse product with
    ``W^T`` on an n x b block per round) and form and factor each observer's ``K``.

    ``K`` from the Gram of the lags, ``Gamma(t, t') = r_t . r_t'`` and ``K[t, t'] =
    Gamma(t, t') + K[t-1, t'-1]`` (:mod:`sparsedp.linalg.gram`); for exactly symmetric W
    (``symmetric``: checked when None) ``Gamma(t, t') = (W^(t+t'))_aa = mu_(t+t')`` needs only
    the 2T - 1 moments ``mu_(2i) = r_i . r_i``, ``mu_(2i+1) = r_i . r_(i+1)`` (2 T n work per
    observer instead of T^2 n).  Either way every entry of K is a sum of non-negative
    products of lags with at most ``2 (T-1)`` sparse products in their depth, so the Gram
    path's rounding model ``|fl(K) - K| <= gamma(2 (T-1)(d+1) + n + T) K`` holds.

    ``W`` must be non-negative (the rounding model); ``lam``: :func:`lambda_min_lower_bound`;
    ``backend`` of the sparse products (:func:`sparsedp.linalg.kernels.spmm`); ``out``: a
    buffer of at least ``b T n`` floats for the lags, reused from batch to batch (a fresh
    array costs a page fault per 4 KiB on first write, more than the copy itself).
    ``ParameterError`` when the rounding of some K is not small against ``lam`` (then the
    analytic bound cannot carry it; seen only for long chains far from mixing, such as every
    node sending half its weight to one hub at T = 800).
    """
    observers = np.asarray(observers, dtype=np.int64)
    n, b = W.shape[0], observers.size
    if symmetric is None:
        symmetric = matrix_facts(W).symmetric
    WT = W if symmetric else W.T.tocsr()
    size = b * T * n
    lags = (np.empty(size) if out is None or out.size < size else out.ravel()[:size]
            ).reshape(b, T, n)
    current = np.zeros((n, b))
    current[observers, np.arange(b)] = 1.0
    lags[:, 0, :] = current.T
    for lag in range(1, T):
        current = kernels.spmm(WT, current, backend=backend)
        lags[:, lag, :] = current.T
    if symmetric:
        mu = np.empty((b, 2 * T - 1))
        mu[:, 0::2] = np.einsum("btn,btn->bt", lags, lags)
        mu[:, 1::2] = np.einsum("btn,btn->bt", lags[:, :-1], lags[:, 1:])
        K = mu[:, np.add.outer(np.arange(T), np.arange(T))]  # Gamma(t, t') = mu_(t+t')
    else:
        K = np.matmul(lags, lags.transpose(0, 2, 1))  # (b, T, T): Gamma(t, t')
    for t in range(1, T):  # K[t, t'] = Gamma(t, t') + K[t-1, t'-1]
        K[:, t, 1:] += K[:, t - 1, :-1]
    d = int(np.bincount(W.indices, minlength=n).max())  # longest row of W^T
    depth = 2 * (T - 1) * (d + 1) + n + T
    dK = np.array([gram.rounding_norm_bound(k, depth) for k in K])
    if np.any(dK >= 0.25 * lam):
        raise ParameterError("the rounding of K_T is too large for the analytic lambda_min "
                             "bound (a long chain far from mixing): query these pairs one by "
                             "one with squared_sensitivity, which certifies lambda_min itself")
    L = np.linalg.cholesky(K)
    return ObserverBatch(
        observers=observers, lags=lags, K=K, L=L, dK=dK, lam=float(lam),
        lag_depth=(T - 1) * (d + 1), products=T - 1,
    )


def ones_values(batch: ObserverBatch, targets=None) -> np.ndarray:
    """The c = 1 values ``b_j^T K^{-1} b_j`` as computed (b, targets): one matrix product
    ``Z = P R`` per observer, ``P = L^{-1} C`` (C the T x T lower-triangular ones, so
    ``P r_j = L^{-1} b_j``); not certified (see :func:`ones_interval`)."""
    return np.stack([_ones_row(batch, i, targets)[0] for i in range(batch.K.shape[0])])


def _ones_row(batch: ObserverBatch, i: int, targets, out: np.ndarray | None = None
              ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``fl(||P r_j||^2)``, ``fl(||r_j||^2)`` for every target, and ``P``; ``out``: a
    (T, targets) buffer for ``Z`` (saves the page faults of a fresh array per observer)."""
    T = batch.T
    C = np.tril(np.ones((T, T)))
    P = scipy.linalg.solve_triangular(batch.L[i], C, lower=True, check_finite=False)
    R = batch.lags[i] if targets is None else batch.lags[i][:, targets]
    Z = np.matmul(P, R, out=out)
    return np.einsum("tj,tj->j", Z, Z), np.einsum("tj,tj->j", R, R), P


def ones_interval(batch: ObserverBatch, targets=None) -> tuple[np.ndarray, np.ndarray]:
    """Certified ``(low, high)`` with ``low <= 1^T M_j 1 <= high`` for every observer of the
    batch and every target (``None``: all; arrays b x targets); ``low`` is a certified lower
    bound on ``Delta^2`` (module docstring for the argument)."""
    lows, highs = [], []
    width = batch.lags.shape[2] if targets is None else len(targets)
    buffer = np.empty((batch.T, width))
    for i in range(batch.K.shape[0]):
        low, high = ones_certified(batch, i, targets, buffer)
        lows.append(low)
        highs.append(high)
    return np.stack(lows), np.stack(highs)


def ones_certified(batch: ObserverBatch, i: int, targets=None, buffer=None
                   ) -> tuple[np.ndarray, np.ndarray]:
    """Certified ``(low, high)`` around ``1^T M_j 1`` for observer ``i`` of the batch and each
    target (``None``: all rows): :func:`ones_interval` for one observer, whose targets may
    differ from the other observers'; ``buffer``: an optional (T, targets) work array."""
    z2, r2, P = _ones_row(batch, i, targets, buffer)
    return certify_ones(batch.K[i], batch.L[i], float(batch.dK[i]), batch.lam, P, z2, r2,
                        gamma(batch.lag_depth))


def certify_ones(K: np.ndarray, L: np.ndarray, dK: float, lam: float, P: np.ndarray,
                 z2: np.ndarray, r2: np.ndarray, lag_error: float, lag_shift=0.0,
                 factor: np.ndarray | None = None, terms: int | None = None
                 ) -> tuple[np.ndarray, np.ndarray]:
    """Certified ``(low, high)`` around ``1^T M_j 1`` for every target from the computed
    ``K`` (its Cholesky factor ``L``, ``||K_hat - K||_2 <= dK``, ``lambda_min(K) >= lam``),
    ``P = L^{-1} C``, ``z2 = fl(||P r_j||^2)`` and ``r2 = fl(||r_j||^2)`` (module docstring,
    steps 1-4; ``|fl(r) - r| <= lag_error r`` entrywise).  ``lag_shift``: a further bound on
    ``||K^{-1/2} C (r_j - r_hat_j)||`` (per target or one number), for lags that are not the
    computed ones (a truncation).  ``factor``: the T x T matrix F in which ``z2 = fl(||F
    r_j||^2)`` was computed instead (any F with ``F^T F`` close to ``P^T P``, e.g. the R of
    ``P = Q R``: step 1 measures ``||F^T F - C^T K^{-1} C||`` itself).  ``terms``: the
    number of products summed into one entry of ``fl(F r_j)`` (default T; more when a lag
    was split into two terms), with ``r2`` bounding ``||(|r_j1| + |r_j2|)||^2`` then."""
    T, u = P.shape[0], UNIT_ROUNDOFF
    F = P if factor is None else factor
    terms = T if terms is None else terms
    C = np.tril(np.ones((T, T)))
    # delta >= ||P^T P - C^T K_hat^{-1} C||_2 (T x T work, docstring step 1)
    lam_hat = lam - dK  # <= lambda_min(K_hat)
    X = scipy.linalg.solve_triangular(L, P, lower=True, trans="T", check_finite=False)
    sandwich = certified.sandwich_from_solve(C, X, K @ X, lam_hat, K_dense=K)
    PtP = F.T @ F
    p_fro = frobenius(F)
    ptp_rounding = gamma(T + 1) * p_fro * p_fro
    gap = frobenius(PtP - sandwich.low) * (1 + gamma(T * T + 2))
    delta = gap + ptp_rounding + sandwich.eta_low
    excess = frobenius(sandwich.excess) * (1 + gamma(T * T + 1))  # >= ||excess||_2
    delta_up = delta + excess + sandwich.eta_excess
    delta, delta_up = delta * (1 + 8 * u), delta_up * (1 + 8 * u)
    # per target: sqrt(r^T S r) within ||z|| -+ (gamma_T ||P||_F ||r|| and delta ||r||^2)
    r2 = r2 * (1 + gamma(T + 1))  # >= ||r_j||^2
    z_low = np.sqrt(z2 / (1 + gamma(T + 1))) * (1 - 4 * u)
    z_high = np.sqrt(z2 / (1 - gamma(T + 1))) * (1 + 4 * u)
    product = gamma(terms + 1) * p_fro * np.sqrt(r2) * (1 + 8 * u)
    s_low = np.clip(z_low - product, 0.0, None) * (1 - 4 * u)
    s_low = np.sqrt(np.clip(s_low * s_low * (1 - 4 * u) - delta * r2, 0.0, None)) * (1 - 4 * u)
    s_high = (z_high + product) * (1 + 4 * u)
    s_high = np.sqrt((s_high * s_high + delta_up * r2) * (1 + 8 * u)) * (1 + 4 * u)
    # lags r_hat -> r: |w(r) - w(r_hat)| <= ||C||_2 e' ||r_hat|| / sqrt(lam), ||C||_2 <= T
    e = lag_error
    shift = e / (1 - e) * T * np.sqrt(r2) / math.sqrt(lam) * (1 + 8 * u) + lag_shift
    return perturbed_roots_to_values(s_low, s_high, dK, lam, shift)


def perturbed_roots_to_values(s_low: np.ndarray, s_high: np.ndarray, dK: float, lam: float,
                              shift) -> tuple[np.ndarray, np.ndarray]:
    """Certified ``(low, high)`` around ``v = b^T K^{-1} b`` for each target from
    ``s_low <= sqrt(b_hat^T K_hat^{-1} b_hat) <= s_high``, where ``||K_hat - K||_2 <= dK``,
    ``lambda_min(K) >= lam > dK`` and ``||K^{-1/2} (b - b_hat)|| <= shift`` (per target or
    one number): step 3 of the module docstring (``sqrt(v_K)`` within ``sqrt(v_S)
    [(sqrt(c^2 + 4) -+ c) / 2]``, ``c = dK / sqrt(lam (lam - dK))``), then the shift."""
    u = UNIT_ROUNDOFF
    c = dK / math.sqrt(lam * (lam - dK)) * (1 + 8 * u)
    root = math.sqrt(c * c + 4)
    f_low = (root * (1 - 4 * u) - c) / 2 * (1 - 4 * u)
    f_high = (root + c) / 2 * (1 + 8 * u)
    low_root = np.clip(s_low * f_low * (1 - 4 * u) - shift, 0.0, None) * (1 - 4 * u)
    high_root = (s_high * f_high + shift) * (1 + 4 * u)
    return low_root * low_root * (1 - 4 * u), high_root * high_root * (1 + 4 * u)


def toeplitz_G(lags_j: np.ndarray) -> np.ndarray:
    """``G_j`` (T x T) from the impulse ``r_l[j]``, l = 0..T-1 (lower-triangular Toeplitz)."""
    T = lags_j.shape[0]
    G = np.zeros((T, T))
    for tau in range(T):
        G[tau:, tau] = lags_j[: T - tau]
    return G


def pair_sandwiches(batch: ObserverBatch, i: int, targets: np.ndarray):
    """Certified sandwiches of ``M_j`` for observer ``batch.observers[i]`` and each target
    (a generator of :class:`MatrixSandwich`), from one Cholesky solve with every target's
    ``G_j`` as right-hand sides.

    As on the single-pair Gram path with the analytic bound: ``lambda_min(K_hat) >= lam -
    dK``; the solve's error via :func:`certified.sandwich_from_solve` (the product ``K_hat X``
    charged, ``K_dense``); the rounding of ``K`` (norm ``dK``) and of ``G`` (entrywise
    ``lag_error G``) via :func:`certified.model_perturbation`.
    """
    T = batch.T
    K, dK, lam = batch.K[i], float(batch.dK[i]), batch.lam
    Gs = np.stack([toeplitz_G(batch.lags[i, :, j]) for j in targets], axis=1)  # (T, nt, T)
    rhs = Gs.reshape(T, -1)
    factor = (batch.L[i], True)
    X_all = scipy.linalg.cho_solve(factor, rhs, check_finite=False)
    KX_all = K @ X_all
    K_fro = frobenius(K)
    X3 = X_all.reshape(T, len(targets), T)
    KX3 = KX_all.reshape(T, len(targets), T)
    for k in range(len(targets)):
        G = Gs[:, k, :]
        X = np.ascontiguousarray(X3[:, k, :])
        KX = np.ascontiguousarray(KX3[:, k, :])
        sandwich = certified.sandwich_from_solve(G, X, KX, lam - dK, K_dense=K)
        model, _ = certified.model_perturbation(
            X, G - KX, K_fro, lam, dK, dK, np.zeros_like, batch.lag_error * G
        )
        yield dataclasses.replace(sandwich, model=model)


def pair_bounds(
    sandwich: MatrixSandwich, exact: bool, backend: str = "auto"
) -> tuple[float, float, bool, list[Bound]]:
    """``(lower, upper, is_exact, bounds)`` of ``max_c c^T M c`` from a certified sandwich, as
    :func:`sparsedp.gossip.sensitivity.squared_sensitivity` reports them (best lower, best
    certified upper; ``is_exact`` when the exhaustive search ran)."""
    bounds, _ = evaluate_bounds(sandwich, exact, backend)
    lower = max(0.0, max(b.value for b in bounds if b.kind in ("lower", "exact")))
    upper = min(b.value for b in bounds if b.kind == "certified upper")
    return float(lower), float(upper), any(b.kind == "exact" for b in bounds), bounds


def refined_bounds(sandwich: MatrixSandwich, evaluations: int, backend: str = "auto"
                   ) -> tuple[float, float]:
    """``(lower, upper)`` of ``max_c c^T M c`` from a certified sandwich, on a budget of
    ``evaluations`` eigen-decompositions (``O(T^3)`` each): the pieces of
    :func:`sparsedp.linalg.sign_bounds.evaluate_bounds` that matter when ``M`` has negative
    entries, without the exhaustive search, the spectral and entrywise bounds.

    ``lower``: single-flip ascents on ``low`` from c = 1, from the signs of the top
    eigenvectors and from the roundings of :func:`~sparsedp.linalg.sign_bounds.
    sign_candidates`, less ``sandwich.quadratic_slack()``; ``upper``: the certified diagonal
    shift ``T lambda_max(M - diag d) + sum d`` (:func:`~sparsedp.linalg.sign_bounds.
    certified_shift_bound`) at the best ``d`` of :func:`~sparsedp.linalg.sign_bounds.
    minimise_diagonal_shift` within the budget, capped at T (``M <= I``)."""
    T = sandwich.T
    start = top_pairs(sandwich.up, min(TOP_EIGENPAIRS, T))
    search = minimise_diagonal_shift(sandwich.up, evaluations=evaluations, start=start)
    starts = np.vstack([np.ones((1, T)), sign_candidates(search)])
    value, _ = kernels.local_sign_search(sandwich.low, starts, backend=backend)
    upper = certified_shift_bound(sandwich, search.d, backend=backend,
                                  vector=search.best[1][:, -1])
    return max(0.0, float(value - sandwich.quadratic_slack())), min(float(upper), float(T))
