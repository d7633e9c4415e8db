"""The certified solve of the gossip view: ``X = K_T^{-1} G_T`` by one of four methods, and
the sandwich ``M_low <= M_T <= M_up`` (:class:`sparsedp.linalg.certified.MatrixSandwich`) that
carries every error of the solve and of the assembly into the bounds.

Methods (chosen by :func:`sparsedp.gossip.sensitivity.squared_sensitivity`):

``structured``
    W exactly symmetric: ``K_T`` from the lags ``mu_l = S W^l S^T`` (Toeplitz-plus-Hankel,
    :func:`sparsedp.linalg.operators.k_from_moments`), dense Cholesky; with the analytic
    ``lambda_min`` bound the propagation stops once the chain has mixed, and the truncation
    error is charged entrywise (:func:`truncation_pattern`).
``gram``
    one constant W >= 0: ``K_T`` and ``G_T`` from the Gram of the lags ``(W^T)^l S^T``
    (:mod:`sparsedp.linalg.gram`).
``dense``
    ``K_T`` assembled by applying the matrix-free operator to unit vectors (any W, also
    time-varying).
``matrix-free``
    preconditioned block CG on the matrix-free ``K_T`` (:mod:`sparsedp.linalg.solvers`); the
    certificate comes from the true residual.

Without an analytic lower bound on ``lambda_min(K_T)`` (noise removed, v1 forms of a W that
is not diagonally dominant) ``lambda_min`` is certified numerically on the dense reduced K
(:func:`_certified_dense_sandwich`); the rows that are exact functions of others are dropped
first (:meth:`sparsedp.linalg.operators.GossipSystem.redundant_rows`).  ``docs/bounds.md`` and
``docs/index.md`` give the soundness argument of each step.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable

import numpy as np
import scipy.linalg
import scipy.sparse as sp

from sparsedp.errors import GossipMatrixError, ParameterError
from sparsedp.linalg import certified, gram
from sparsedp.linalg.certified import UNIT_ROUNDOFF, MatrixSandwich, frobenius, gamma
from sparsedp.linalg.matrix_facts import query_memo
from sparsedp.linalg.moments import LagPropagator, LagSequence
from sparsedp.linalg.operators import GossipSystem, k_from_moments, toeplitz_blocks
from sparsedp.linalg.solvers import (
    InnovationPreconditioner,
    StationaryPreconditioner,
    block_cg,
    cholesky_factor,
    cholesky_solve,
)
from sparsedp.linalg.spectral import stationary_distribution
from sparsedp.linalg.stochastic import has_property, matrix_facts

OPERATOR_ASSEMBLY_MAX_DIM = 1500  # largest mT assembled densely when no lambda bound (no CG)
FIRST_MIXING_LEVEL = 1e-4  # n eps^2 at which the truncated propagation stops at the latest first
SMALL_PROPAGATION_WORK = 2e7  # nnz(W) (m + 1) T up to which every lag is computed (no truncation)
LAST_MIXING_LEVEL = 1e-40  # below this, propagate through every lag instead
TYPICAL_WIDENING = 1e-5  # widening / lower bound at FIRST_MIXING_LEVEL (_first_level)
FIRST_PRODUCT_BUDGET = 64  # products before the first prediction at the latest (_first_budget)


def analytic_lambda_min_lower_bound(system: GossipSystem) -> float | None:
    """Certified ``lambda_min(K_T)`` lower bound from the gossip matrices alone, or ``None``.

    p = 0, all noise: ``1 / (1 + max_t ||W_t||_2)^2`` (:func:`certified.
    gossip_lambda_min_lower_bound`; the block bidiagonal ``A = I - (shift kron W_t)`` has
    ``||A|| <= 1 + max_t ||W_t||``).  p = 1: ``K_1 = H_0 diag(W_t W_t^T) H_0^T`` adds the
    factor ``min_t sigma_min(W_t)^2`` (diagonal dominance, :func:`certified.
    sigma_min_lower_bound`; ``None`` when it gives nothing).  Noise removed: ``None`` (K is
    singular; the dense paths certify the reduced K numerically instead).
    """
    if system.noise_removed:
        return None
    bound = min(certified.gossip_lambda_min_lower_bound(w) for w in system.Ws)
    if system.power_offset:
        sigma = min(certified.sigma_min_lower_bound(w) for w in system.Ws)
        bound = bound * sigma**2 if sigma > 0 else None
    return bound


def solve(
    system: GossipSystem,
    target: int,
    keep: np.ndarray,
    method: str,
    rtol: float,
    maxiter: int,
    progress,
    truncation_rtol: float,
    preconditioner: str = "auto",
) -> tuple[MatrixSandwich, dict]:
    """Approximate ``X = K^{-1} G`` by the chosen method and certify it, on the rows of
    ``K`` and ``G`` that ``keep`` marks (the others are redundant:
    :meth:`GossipSystem.redundant_rows`).

    The solver info says whether the sandwich's upper side is certified (``upper_certified``:
    a lower bound on ``lambda_min`` of the reduced K was found).  Without an analytic
    ``lambda_min`` bound and with ``m T <= OPERATOR_ASSEMBLY_MAX_DIM``, the matrix-free method
    assembles K densely too (the Gram assembly for one constant W, the operator applied to
    unit vectors for time-varying W or lags too large for memory) so that ``lambda_min``
    can be certified numerically.
    """
    T, m = system.T, system.m
    lambda_lb = analytic_lambda_min_lower_bound(system)
    info: dict = {"lambda_min_lower_bound": lambda_lb}
    if not keep.all():
        info["redundant_rows_dropped"] = int((~keep).sum())
    if system.exact_rank_skipped:
        info["exact_rank_skipped"] = True
    if method == "structured":
        if lambda_lb is not None:
            sandwich, lags, tol = _structured_sandwich(
                system, target, lambda_lb, truncation_rtol, progress
            )
        else:
            lags = _full_lags(system, target, progress)
            K, G, dK_rounding = _moment_system(system, lags)
            sandwich, lambda_lb = _certified_dense_sandwich(K[keep][:, keep], G[keep], dK_rounding)
            tol = None
            info["lambda_min_lower_bound"] = lambda_lb
        info.update(
            solver="dense Cholesky of K_T assembled from the lags S W^l S^T",
            sparse_products=lags.products,
            frontier_products=lags.frontier_products,
            exact_lags=lags.exact_lags,
            truncated=lags.truncated,
            truncation_mixing_level=tol,
            truncation_error=sandwich.model_sum,
        )
    elif method == "gram" or (
        method == "matrix-free"
        and lambda_lb is None
        and m * T <= OPERATOR_ASSEMBLY_MAX_DIM
        and not system.time_varying
        and gram.gram_fits(system.n, m, T)
    ):
        sandwich, lambda_lb, assembly, dK_rounding = _gram_sandwich(
            system, target, keep, lambda_lb, progress)
        info.update(
            solver="dense Cholesky of K_T assembled from the Gram of the lags (W^T)^l S^T",
            lambda_min_lower_bound=lambda_lb,
            sparse_products=assembly.products,
            K_rounding=dK_rounding,
        )
    elif method == "dense" or (lambda_lb is None and m * T <= OPERATOR_ASSEMBLY_MAX_DIM):
        # forced, or no lambda bound with time-varying W or lags too big for the Gram assembly
        K, dK_rounding = _operator_system(system, keep)
        G = system.G_matrix(target)[keep]
        G_error = _operator_rounding(system) * G  # G >= 0, entrywise
        if lambda_lb is not None and lambda_lb > 2 * dK_rounding:
            sandwich, _ = _dense_sandwich(
                K, G, lambda_lb, lambda_lb - dK_rounding, dK_rounding, dK_rounding,
                np.zeros_like, G_error,
            )
        else:
            sandwich, lambda_lb = _certified_dense_sandwich(K, G, dK_rounding, G_error)
        info.update(
            solver="dense Cholesky of K_T assembled from the matrix-free operator",
            lambda_min_lower_bound=lambda_lb,
            sparse_products=system.products,
        )
    else:
        G = system.G_matrix(target) * keep[:, None]
        mask = keep.reshape(T, m, 1)
        precondition, preconditioner_info = _preconditioner(system, target, keep, preconditioner)

        def apply_K(Y):
            return system.apply_K(Y * mask) * mask

        X3, KX3, solve = block_cg(
            apply_K,
            G.reshape(T, m, T),
            precondition,
            rtol=rtol,
            maxiter=maxiter,
            progress=progress,
        )
        X, KX = X3.reshape(T * m, T), KX3.reshape(T * m, T)
        sandwich = _matrix_free_sandwich(system, G, X, KX, apply_K(np.abs(X3)), lambda_lb)
        info.update(
            solver="preconditioned block CG on the matrix-free K_T",
            iterations=solve.iterations,
            restarts=solve.restarts,
            max_relative_residual=solve.max_relative_residual,
            converged=solve.converged,
            operator_products=system.products,
            sparse_products=system.products + preconditioner_info["preconditioner_products"],
            **preconditioner_info,
        )
    info["upper_certified"] = bool(lambda_lb)
    info["residual_correction"] = float(np.trace(sandwich.excess))
    return sandwich, info


def _structured_sandwich(
    system: GossipSystem, target: int, lambda_lb: float, truncation_rtol: float, progress
) -> tuple[MatrixSandwich, LagSequence, float | None]:
    """Certified sandwich from the lags, truncating the propagation as early as the bounds allow.

    Small chains (``nnz(W) (m + 1) T <= SMALL_PROPAGATION_WORK``, where the bookkeeping of a
    truncation or of a frontier costs more than the products it saves) are propagated
    through every lag, whole columns from the start, without a column for the target.
    Otherwise the propagation first stops at the mixing level :func:`_first_level` (at most
    ``n eps^2 = FIRST_MIXING_LEVEL``) or at the product budget (below), whichever comes
    first; if the certified widening caused by the truncation (``sum |E|`` of the model
    error) exceeds ``truncation_rtol`` times the c = 1 lower bound, it resumes (never
    restarts) down to the level predicted to suffice (the widening taken as proportional to
    the level), with a factor 2 of margin, until it passes, every lag is computed, or a
    level stop lowers the widening by less than half (a floor: the drift of a W doubly
    stochastic only to rounding, which more lags do not lower).  At every stop the widening
    is first predicted (:func:`_predicted_widening`: one Cholesky solve, which the certified
    sandwich then reuses), so that a stop predicted to be too coarse costs no certified
    sandwich. With the decayed tail the widening falls more slowly than the level (as its
    square root to its first power on ER at n = 10^6), so a resume can stop short, which
    then costs one more prediction; only the levels depend on the predictions, and every
    returned sandwich is certified.

    A slowly mixing chain (Chung-Lu graphs: a low-degree node whose neighbours are hubs of
    degree d relaxes at rate 1 / (d + 1) under Metropolis weights) can need hundreds of
    products to reach a level that the bounds would not have needed, so the propagation
    also stops for a prediction once its products reach a budget
    (:func:`_first_budget`), at least doubled at every stop (twice the products done, never
    below the first budget): with the first budget worth eight predictions, the
    predictions cost at most about a quarter of the products, and the products overshoot
    the first passing budget stop by at most a factor 2.  A budget stop that does not
    pass changes only the budget (the level is tightened, and the floor tested, only at
    stops that reached their level).
    """
    T, p = system.T, system.power_offset
    small = system.W.nnz * (system.m + 1) * (T + p) <= SMALL_PROPAGATION_WORK
    propagator = LagPropagator(
        system.W, system.observers, target, T + p, progress=progress, frontier=not small,
        target_column=not small,
    )
    truncate = not small and doubly_stochastic_to_rounding(system.W)
    level = _first_level(truncation_rtol) if truncate else None
    budget = _first_budget(system) if truncate else None
    previous = None  # (mixing level, widening) at the previous stop that reached its level
    try:
        while True:
            lags = _shifted(propagator.advance(level, budget).result(), p, T)
            if not lags.truncated:
                return _lag_sandwich(lags, T, lambda_lb, progress=progress)[0], lags, None
            at_level = level is not None and propagator.mixing_level <= level
            model = _truncation_model(lags, T)
            tightening = _truncation_too_coarse(model, lambda_lb)
            if tightening is None:
                solved: _LagSolve | None = None  # one solve alive at a time: drop the stale one
                widening, lower, solved = _predicted_widening(lags, T, model, progress)
                floor = at_level and previous is not None and widening > 0.5 * previous[1]
                if widening <= truncation_rtol * lower or floor:
                    sandwich, widening = _lag_sandwich(lags, T, lambda_lb, solved)
                    lower = max(float(sandwich.low.sum()) - sandwich.quadratic_slack(), 0.0)
                    if widening <= truncation_rtol * lower or floor:
                        # met, or a floor that more lags do not lower (the drift of a W
                        # doubly stochastic only to rounding): certified either way
                        return sandwich, lags, propagator.mixing_level
                tightening = 0.5 * truncation_rtol * lower / widening
                if at_level:
                    previous = (propagator.mixing_level, widening)
            if at_level:  # a budget stop changes only the budget
                level = propagator.mixing_level * min(max(tightening, 1e-8), 0.5)
                if level < LAST_MIXING_LEVEL:
                    level = None
            budget = max(budget, 2 * propagator.products)
    finally:
        propagator.close()


def _predicted_widening(lags: LagSequence, T: int, model: _TruncationModel | None = None,
                        progress=None) -> tuple[float, float, _LagSolve]:
    """The first-order part of the truncation's widening and the c = 1 value, uncertified,
    and the solve they come from.

    With ``X = K_hat^{-1} G_hat`` and ``y = |X| 1``, the certified widening ``sum B``
    (:func:`certified.model_perturbation`) is ``y^T |E| y + 2 y^T |G - G_hat| 1`` plus
    second-order terms, and the c = 1 value is ``1^T G_hat^T X 1``: one Cholesky
    factorisation and solve and two matrix-vector products instead of a certified sandwich
    (which also forms ``K X``, ``G^T X``, ``R^T R`` and the model bound).  Only chooses where
    the propagation stops (:func:`_structured_sandwich`); when it stops here, the certified
    sandwich reuses the solve (:func:`_lag_sandwich`).  ``model``: the lags'
    :func:`_truncation_model` when already formed."""
    solved = _lag_solve(lags, T, model, progress)
    X, model = solved.X, solved.model
    y = np.abs(X).sum(axis=1)
    first = (float(y @ model.apply_abs(y[:, None])[:, 0])
             + 2.0 * float(y @ model.G_abs.sum(axis=1)))
    return first, float(solved.G.sum(axis=1) @ X.sum(axis=1)), solved


def _first_level(truncation_rtol: float) -> float:
    """The mixing level at which the propagation first stops: the level predicted for
    ``truncation_rtol`` from ``TYPICAL_WIDENING``, the widening relative to the lower bound
    at ``FIRST_MIXING_LEVEL`` (with the decayed tail 2e-6 to 6e-5 on ER graphs, n = 10^4
    to 10^6, T = 300 to 2000, three pairs each; the widening is about proportional to the
    level), and never above ``FIRST_MIXING_LEVEL``.  A start somewhat too deep costs a
    product or two; one too coarse costs a prediction (a Cholesky solve of the T x T
    system) and a resume.  Only a starting point: the widening is predicted and certified
    at every stop, and the propagation resumes when it is too wide.
    """
    return FIRST_MIXING_LEVEL * min(1.0, 0.5 * truncation_rtol / TYPICAL_WIDENING)


def _first_budget(system: GossipSystem) -> int:
    """The products after which the truncated propagation first stops for a prediction even
    if the chain has not reached its mixing level: eight times the work of one prediction,
    at least ``FIRST_PRODUCT_BUDGET``.  A prediction (a Cholesky factorisation and solve of
    the (T m) x (T m) system, the truncation model, the tail decay) is taken as
    ``(T m)^3 / (8 nnz(W) (m + 1))`` products: an empirical constant, timed at about 3
    products for T = 1000, m = 1 on ER(10^6, 20) and 135 scipy ``W @ x`` against 149
    predicted at n = 2 x 10^4 (for m > 1 the solve grows more slowly than ``(T m)^3``, so
    the model errs on the side of fewer stops)."""
    T, m = system.T, system.m
    prediction = (T * m) ** 3 / (8.0 * system.W.nnz * (m + 1))
    return max(FIRST_PRODUCT_BUDGET, math.ceil(8 * prediction))


def _shifted(lags: LagSequence, offset: int, T: int) -> LagSequence:
    return lags.shifted(offset, T) if offset else lags


def _full_lags(system: GossipSystem, target: int, progress) -> LagSequence:
    """Every lag ``mu_l``, ``a_l`` for ``l <= 2(T + p) - 2`` (no truncation)."""
    propagator = LagPropagator(
        system.W, system.observers, target, system.T + system.power_offset, progress=progress
    )
    try:
        return propagator.advance(None).result()
    finally:
        propagator.close()


def _moment_system(system: GossipSystem, lags: LagSequence) -> tuple[np.ndarray, np.ndarray, float]:
    """Dense ``K``, ``G`` of the view from untruncated, unshifted lags, and ``||fl(K) - K||``.

    ``K[t, s] = sum_k mu_(t+s-2k+2p)`` (:func:`k_from_moments` of the shifted lags); with the
    attacker's own noise removed, ``K - N N^T`` where ``N`` is block Toeplitz in the
    known-noise columns of ``mu_(l+p)`` (the columns ``S W^(t-k+p) S_R^T`` of H, ``R`` the
    nodes whose noise is known, a subset of the observers).  Rounding: the non-negative sums
    forming ``K`` and ``N N^T`` are each within ``gamma_k`` relative, and the subtraction
    within u, entrywise; so ``||.||_2`` within ``gamma ||.||_inf`` of each.
    """
    T, p, m = system.T, system.power_offset, system.m
    shifted = _shifted(lags, p, T)
    K = k_from_moments(shifted.mu, T)
    dK = gamma(T + 1) * float(K.sum(axis=1).max())
    if system.noise_removed:
        known = np.flatnonzero(np.isin(system.observers, system.known_noise))
        NNt = _toeplitz_gram(lags.mu[p : p + T][:, :, known])
        K -= NNt
        dK += gamma(T * m + 1) * float(NNt.sum(axis=1).max())
        dK += UNIT_ROUNDOFF * float(np.abs(K).sum(axis=1).max())
    return K, toeplitz_blocks(shifted.a), dK


def _toeplitz_gram(c: np.ndarray) -> np.ndarray:
    """``N N^T`` for the block lower-triangular Toeplitz ``N`` with blocks ``c[t - k]``
    (``c``: T x m x q; :func:`toeplitz_blocks`), by the diagonal recursion
    ``(N N^T)[t, s] = c_t c_s^T + (N N^T)[t-1, s-1]``: ``O((T m)^2 q)`` instead of the
    ``O((T m)^2 T q)`` product.  Every entry is a sum of at most ``T q`` products of
    non-negative lags, each added once (within ``gamma_(T q + 1)`` relative, as the product's
    entries)."""
    T, m, q = c.shape
    flat = np.ascontiguousarray(c, dtype=np.float64).reshape(T * m, q)
    P = flat @ flat.T
    blocks = P.reshape(T, m, T, m)
    for t in range(1, T):
        blocks[t, :, 1:, :] += blocks[t - 1, :, :-1, :]
    return P


def _gram_sandwich(
    system: GossipSystem, target: int, keep: np.ndarray, lambda_lb: float | None,
    progress=None
) -> tuple[MatrixSandwich, float, gram.GramSystem, float]:
    """Certified sandwich from the Gram-assembled reduced ``K``, ``G`` (kept rows; one W).

    With the analytic ``lambda_min(K) >= lambda_lb`` (when it exceeds twice the rounding
    ``dK = ||fl(K) - K||``) the computed K has ``lambda_min >= lambda_lb - dK`` and the
    rounding is charged as a model error, as on the structured path; otherwise
    ``lambda_min`` is certified numerically (:func:`_certified_dense_sandwich`).  The
    entrywise rounding of G (:mod:`sparsedp.linalg.gram`) is charged either way.  Returns the
    sandwich, the lambda bound used (0.0: none), the assembly and ``dK``.
    """
    assembly = gram.assemble(
        system.W,
        system.observers,
        target,
        system.T,
        power_offset=system.power_offset,
        known_noise=system.known_noise,
    )
    # what depends on K only is shared by the targets of a reuse scope
    key = gram.observer_key(system.observers, system.T, system.power_offset,
                            system.known_noise) + (keep.tobytes(),)
    K, G = assembly.K, assembly.G
    if not keep.all():
        K = query_memo("gram K kept", system.W, key, lambda: K[keep][:, keep])
        G = G[keep]
    dK = query_memo("gram K rounding", system.W, key, lambda: assembly.K_rounding(K))
    K_norm = query_memo("gram K frobenius", system.W, key, lambda: frobenius(K))
    G_error = assembly.G_relative_error * G  # G >= 0
    if lambda_lb is not None and lambda_lb > 2 * dK:
        factor = query_memo("gram cholesky", system.W, key,
                            lambda: cholesky_factor(K, progress))
        sandwich, _ = _dense_sandwich(
            K, G, lambda_lb, lambda_lb - dK, dK, dK, np.zeros_like, G_error, factor, K_norm
        )
    else:
        tau, factor = query_memo("gram lambda_min", system.W, key,
                                 lambda: certified.certified_lambda_min_and_factor(K))
        sandwich, lambda_lb = _certified_dense_sandwich(K, G, dK, G_error, tau, factor,
                                                        K_norm)
    return sandwich, lambda_lb, assembly, dK


def _preconditioner(system: GossipSystem, target: int, keep: np.ndarray, choice: str):
    """The PCG preconditioner on ``(T, m, r)`` blocks (respecting the kept rows) and its info.

    ``"gram"``: the Cholesky factor of the Gram-assembled reduced K (:mod:`sparsedp.linalg.gram`),
    i.e. the exact inverse up to rounding; a reduced K that is singular to working precision
    falls back to :func:`iterative_preconditioner` (said in the info).  ``"innovation"``
    (:func:`innovation_preconditioner`; v2 forms only), ``"stationary"``
    (:class:`sparsedp.linalg.solvers.StationaryPreconditioner`).  ``"auto"``: gram for one
    constant W when :func:`sparsedp.linalg.gram.gram_fits`, else
    :func:`iterative_preconditioner`.
    """
    T, m = system.T, system.m
    mask = keep.reshape(T, m, 1)
    info: dict = {"preconditioner_products": 0}
    if choice == "auto":
        fits = not system.time_varying and gram.gram_fits(system.n, m, T)
        choice = "gram" if fits else iterative_preconditioner(system)
    if choice == "gram":
        assembly = gram.assemble(
            system.W,
            system.observers,
            target,
            T,
            power_offset=system.power_offset,
            known_noise=system.known_noise,
        )
        info["preconditioner_products"] = assembly.products
        try:
            factor = scipy.linalg.cho_factor(
                assembly.K[keep][:, keep], lower=True, check_finite=False
            )
        except np.linalg.LinAlgError:
            choice = iterative_preconditioner(system)
            info["preconditioner_note"] = (
                f"the Gram-assembled reduced K is singular to working precision: {choice} "
                "preconditioner instead"
            )
        else:

            def apply_gram(R: np.ndarray) -> np.ndarray:
                flat = R.reshape(T * m, -1)
                out = np.zeros_like(flat)
                out[keep] = scipy.linalg.cho_solve(factor, flat[keep], check_finite=False)
                return out.reshape(R.shape)

            info["preconditioner"] = "gram"
            return apply_gram, info
    if choice == "innovation":
        if system.power_offset:
            raise ParameterError(INNOVATION_NEEDS_V2_FORMS)
        innovation = innovation_preconditioner(system)
        info["preconditioner"] = "innovation"
        return (lambda R: innovation(R * mask) * mask), info
    stationary = StationaryPreconditioner(T, m, _stationary_weight(system.W))
    info["preconditioner"] = "stationary"
    return (lambda R: stationary(R * mask) * mask), info


INNOVATION_NEEDS_V2_FORMS = (
    "preconditioner='innovation' models the messages s_t that the v2 forms observe; the v1 "
    "forms (secure-summation-v1, adaptive-v1) need 'stationary' or 'gram'"
)


def iterative_preconditioner(system: GossipSystem) -> str:
    """The preconditioner of ``"auto"`` when the Gram assembly does not fit: innovation for
    the v2 forms (power offset 0), stationary for the v1 forms."""
    return "stationary" if system.power_offset else "innovation"


def innovation_preconditioner(system: GossipSystem) -> InnovationPreconditioner:
    """:class:`sparsedp.linalg.solvers.InnovationPreconditioner` of a view (power offset 0):
    the blocks ``W_t[S, S]`` of its rounds, the inflow ``W[S, O] 1`` and the mean's weight
    ``||pi||^2`` (of the first W for time-varying gossip: only a preconditioner)."""
    S = system.observers
    outside = np.ones(system.n, dtype=bool)
    outside[S] = False
    rows = system.W[S]
    inflow = np.asarray(rows[:, outside].sum(axis=1)).ravel()
    blocks = [w[S][:, S] for w in system.Ws]
    return InnovationPreconditioner(blocks, inflow, _stationary_weight(system.W))


def _matrix_free_sandwich(
    system: GossipSystem, G: np.ndarray, X: np.ndarray, KX: np.ndarray, K_abs_X: np.ndarray,
    lambda_lb: float | None,
) -> MatrixSandwich:
    """The sandwich of an iterative solve (``method="matrix-free"``) with the rounding of
    the operator's ``fl(K X)`` and of ``fl(G)`` charged
    (:func:`certified.charge_operator_rounding`).

    ``W >= 0`` (every gossip matrix is checked non-negative), so with N =
    :attr:`GossipSystem.rounding_depth`, ``|fl(K X) - K X| <= gamma_N K |X|`` entrywise and
    ``fl(K |X|) >= (1 - gamma_N) K |X|`` (``K_abs_X``: ``fl(K |X|)``, the same mask as the
    solve's K), so ``||fl(K X) - K X||_F <= gamma_N ||fl(K |X|)||_F / (1 - gamma_N)``; and
    ``G >= 0`` with ``|fl(G) - G| <= gamma_N G``, so ``||fl(G) - G||_F <= gamma_N
    ||fl(G)||_F / (1 - gamma_N)``.  ``lambda_lb``: ``None`` when the upper side is not
    certified."""
    relative = _operator_rounding(system)
    e_norm = relative * frobenius(K_abs_X) / (1.0 - relative)
    f_norm = relative * frobenius(G) / (1.0 - relative)
    lambda_lb = lambda_lb or np.inf
    sandwich = certified.sandwich_from_solve(G, X, KX, lambda_lb)
    return certified.charge_operator_rounding(sandwich, X, G - KX, e_norm, f_norm, lambda_lb)


def _operator_system(system: GossipSystem, keep: np.ndarray) -> tuple[np.ndarray, float]:
    """Dense reduced ``K`` (kept rows) by applying the operator to unit vectors, and
    ``||fl(K) - K||_2`` (``method="dense"``, and time-varying W without a lambda bound).

    Every intermediate of ``H (H^T e_r)`` is a sum of non-negative products (W >= 0), at most
    :attr:`GossipSystem.rounding_depth` deep, so each entry is within
    :func:`_operator_rounding` relative, and ``||.||_2 <= gamma ||K||_inf``.
    """
    T, m = system.T, system.m
    columns = np.flatnonzero(keep)
    Y = np.zeros((T * m, columns.size))
    Y[columns, np.arange(columns.size)] = 1.0
    K = system.apply_K(Y.reshape(T, m, -1)).reshape(T * m, -1)[keep]
    K = 0.5 * (K + K.T)
    return K, _operator_rounding(system) * float(np.abs(K).sum(axis=1).max())


def _operator_rounding(system: GossipSystem) -> float:
    """``gamma_N``, N = :attr:`GossipSystem.rounding_depth`: the relative rounding of every
    entry of ``K`` and ``G`` formed by the operator's recursions (sums of non-negative
    products at most N deep; the adjoint's depth counts W's longest column)."""
    return gamma(system.rounding_depth)


def _certified_dense_sandwich(
    K: np.ndarray, G: np.ndarray, dK_rounding: float, G_error: np.ndarray | None = None,
    tau: float | None = None, factor: np.ndarray | None = None,
    K_norm: float | None = None, K_error_abs: np.ndarray | None = None,
) -> tuple[MatrixSandwich, float]:
    """Sandwich of ``M = G^T K^+ G`` from a dense K with no analytic ``lambda_min`` bound.

    ``lambda_min(fl(K)) >= tau`` is certified numerically (:func:`certified.
    certified_lambda_min`), so ``lambda_min(K) >= tau - ||fl(K) - K||``.  When that is not
    positive (K singular beyond its redundant rows), ``X`` is the least-squares solution: every
    ``2 b^T x - x^T K x`` is still a lower bound for b in the range of K, with the rounding
    of K charged as ``||fl(K) - K|| ||X||_F^2``; the returned lambda is 0 and the caller keeps
    only the lower bounds.  ``G_error`` (optional): ``|G_true - G| <= G_error`` entrywise,
    charged as a model error (:func:`_dense_sandwich`), or as ``2 ||G_error||_F ||X||_F`` on
    the least-squares lower bound (``2 b^T x`` is linear in b).  ``tau``, ``factor``,
    ``K_norm``: the certified ``lambda_min(fl(K))``, K's Cholesky factor and ``||K||_F`` when
    already known (the same K for another target).  ``K_error_abs`` (optional):
    ``|fl(K) - K| <= K_error_abs`` entrywise (``dK_rounding`` then bounds its 2-norm), charged
    entrywise (:func:`certified.model_perturbation`'s ``|Y|^T |E| |Y|``) rather than through
    the norm alone.
    """
    if tau is None:
        tau, factor = certified.certified_lambda_min_and_factor(K)
    lambda_lb = tau - dK_rounding
    if lambda_lb > 0 and K_error_abs is not None:
        sandwich, _ = _dense_sandwich(K, G, lambda_lb, tau, dK_rounding, 0.0,
                                      lambda V: K_error_abs @ V,
                                      np.zeros_like(G) if G_error is None else G_error,
                                      factor, K_norm)
        return sandwich, lambda_lb
    if lambda_lb > 0:
        sandwich, _ = _dense_sandwich(K, G, lambda_lb, tau, dK_rounding, dK_rounding,
                                      None if G_error is None else np.zeros_like, G_error,
                                      factor, K_norm)
        return sandwich, lambda_lb
    X = np.linalg.lstsq(K, G, rcond=None)[0]
    sandwich = certified.sandwich_from_solve(G, X, K @ X, np.inf, K_dense=K)
    charge = dK_rounding * frobenius(X) ** 2
    if G_error is not None:
        charge += 2 * frobenius(G_error) * frobenius(X)
    return dataclasses.replace(sandwich, eta_low=sandwich.eta_low + charge), 0.0


def _truncation_too_coarse(model: _TruncationModel, lambda_lb: float) -> float | None:
    """``None`` when ``||K - K_hat||`` (the truncation's ``model.norm``) leaves
    ``lambda_min(K_hat) >= lambda_lb / 2``, else the factor by which the mixing level must
    shrink for it to."""
    return None if model.norm <= 0.5 * lambda_lb else 0.25 * lambda_lb / model.norm


def truncation_pattern(lags: LagSequence, T: int, weights: np.ndarray | None = None
                       ) -> np.ndarray:
    """``N`` (T x T): ``k_from_moments`` of per-lag weights, by default the truncated lags'
    indicator.

    ``K[t, t+d] = sum_{i<=t} mu_(d+2i)`` (:func:`k_from_moments`), so with each truncated
    lag off by at most ``w_l eps eps^T + drift`` (``w = lags.mu_weights``, the indicator
    shrunk by the tail's decay), ``|K - K_hat| <= N_w kron eps eps^T + N kron drift 1 1^T``
    with ``N_w = truncation_pattern(lags, T, lags.mu_weights)`` and ``N`` the count of
    truncated lags summed into each block.
    """
    weights = lags.mu_truncated.astype(np.float64) if weights is None else weights
    return k_from_moments(weights.reshape(-1, 1, 1), T)


def truncation_norm_bound(lags: LagSequence, T: int) -> float:
    """``||K - K_hat||_2 <= max_t (N_w 1)_t max_a sum_b eps_a eps_b + max_t (N 1)_t m drift``
    (largest row sums, :func:`truncation_pattern`)."""
    if not lags.truncated:
        return 0.0
    return _truncation_model(lags, T).norm


@dataclasses.dataclass(frozen=True)
class _TruncationModel:
    """What truncated lags cost (:func:`_truncation_model`): ``|K - K_hat| V <= apply_abs(V)``
    for non-negative V, ``||K - K_hat||_2 <= norm``, ``|G - G_hat| <= G_abs`` entrywise."""

    apply_abs: Callable[[np.ndarray], np.ndarray]
    norm: float
    G_abs: np.ndarray


def _truncation_model(lags: LagSequence, T: int) -> _TruncationModel:
    """The truncation's model error (``lags.truncated``): ``|K - K_hat| <= N_w kron eps eps^T
    + N kron drift 1 1^T`` (:func:`truncation_pattern`), applied to a (T m, k) block without
    forming the Kronecker products, and ``|G - G_hat| <= w_a eps eps_target + drift`` on G's
    truncated lags (``w_a = lags.a_weights``)."""
    m = lags.mu.shape[1]
    N_mix = truncation_pattern(lags, T, lags.mu_weights)
    N = truncation_pattern(lags, T) if lags.drift else None
    eps = lags.eps

    def apply_abs(V: np.ndarray) -> np.ndarray:
        """``(N_w kron eps eps^T + N kron drift 1 1^T) V`` for ``V`` of shape (T m, k)."""
        blocks = V.reshape(T, m, -1)
        weighted = np.einsum("tbk,b->tk", blocks, eps)
        out = (N_mix @ weighted)[:, None, :] * eps[None, :, None]
        if N is not None:
            out = out + lags.drift * (N @ blocks.sum(axis=1))[:, None, :]
        return out.reshape(T * m, -1)

    norm = float(N_mix.sum(axis=1).max()) * float(np.outer(eps, eps).sum(axis=1).max())
    if N is not None:
        norm += float(N.sum(axis=1).max()) * m * lags.drift
    norm *= 1 + gamma(2)
    G_error = (np.outer(lags.a_weights, eps * lags.eps_target)
               + np.outer(lags.a_truncated, np.full(m, lags.drift)))
    return _TruncationModel(apply_abs=apply_abs, norm=norm, G_abs=toeplitz_blocks(G_error))


@dataclasses.dataclass(frozen=True)
class _LagSolve:
    """``K_hat``, ``G_hat`` from the lags, ``K_hat``'s Cholesky factor, ``X = K_hat^{-1}
    G_hat`` as computed, and the truncation's model error (``None``: not truncated)."""

    K: np.ndarray
    G: np.ndarray
    factor: np.ndarray
    X: np.ndarray
    model: _TruncationModel | None


def _lag_solve(lags: LagSequence, T: int, model: _TruncationModel | None = None,
               progress=None) -> _LagSolve:
    """:class:`_LagSolve` of the lags: ``K_hat = k_from_moments(mu)``, ``G_hat =
    toeplitz_blocks(a)``, one Cholesky factorisation (with ``progress`` when it is long) and
    solve (``model``: the lags' :func:`_truncation_model` when already formed)."""
    K, G = k_from_moments(lags.mu, T), toeplitz_blocks(lags.a)
    factor = cholesky_factor(K, progress)
    if model is None and lags.truncated:
        model = _truncation_model(lags, T)
    return _LagSolve(K=K, G=G, factor=factor, X=cholesky_solve(K, G, factor), model=model)


def _lag_sandwich(lags: LagSequence, T: int, lambda_lb: float,
                  solved: _LagSolve | None = None, progress=None
                  ) -> tuple[MatrixSandwich, float]:
    """The certified sandwich of ``M_T`` from (possibly truncated) lags, and the widening
    ``sum B`` that the truncation adds to the bounds (the model bound's total, less its share
    due to the rounding of K alone, which the untruncated lags pay too; every reported bound
    pays the model at most ``sum B``: :meth:`MatrixSandwich.quadratic_slack`,
    :attr:`MatrixSandwich.sign_vector_allowance`).

    ``K_hat``, ``G_hat`` from the lags; ``E = K - K_hat`` is the truncation (entrywise
    ``N kron eps eps^T``, :func:`truncation_pattern`) plus the rounding of the sums forming K
    (at most T non-negative lags: ``|fl(K) - K| <= gamma_{T+1} K`` entrywise, so
    ``||.||_2 <= gamma_{T+1} ||K||_inf``); ``|G - G_hat| <= eps eps_target`` on the
    truncated lags of G.  ``solved``: :func:`_lag_solve` of the same lags when already done
    (by :func:`_predicted_widening`).  One observer: ``G_hat`` is lower triangular.
    """
    m = lags.mu.shape[1]
    solved = _lag_solve(lags, T, progress=progress) if solved is None else solved
    K, G = solved.K, solved.G
    dK_rounding = gamma(T + 1) * float(K.sum(axis=1).max())
    dK, apply_abs, G_abs, E_abs_norm = dK_rounding, None, None, None
    if solved.model is not None:
        model = solved.model
        dK += model.norm
        apply_abs, G_abs, E_abs_norm = model.apply_abs, model.G_abs, model.norm * (1 + gamma(m + 2))
    sandwich, rounding_share = _dense_sandwich(
        K, G, lambda_lb, lambda_lb - dK, dK, dK_rounding, apply_abs, G_abs, solved.factor,
        E_abs_norm=E_abs_norm, X=solved.X, G_lower_triangular=m == 1,
    )
    return sandwich, max(sandwich.model_sum - rounding_share, 0.0)


def _dense_sandwich(
    K: np.ndarray,
    G: np.ndarray,
    lambda_lb: float,
    lambda_hat_lb: float,
    dK: float,
    dK_rounding: float,
    apply_E_abs=None,
    F_abs: np.ndarray | None = None,
    factor: np.ndarray | None = None,
    K_norm: float | None = None,
    E_abs_norm: float | None = None,
    X: np.ndarray | None = None,
    G_lower_triangular: bool = False,
) -> tuple[MatrixSandwich, float]:
    """Certified sandwich of ``M = G^T K^{-1} G`` from the computed ``K_hat``, ``G_hat``.

    ``lambda_min(K) >= lambda_lb`` and ``lambda_min(K_hat) >= lambda_hat_lb``;
    ``||K - K_hat|| <= dK``, of which ``dK_rounding`` is bounded in norm only and the rest
    entrywise through ``apply_E_abs``; ``|G - G_hat| <= F_abs`` (both ``None``: no such
    part; ``factor``, ``K_norm``: K_hat's Cholesky factor and ``||K_hat||_F`` when already
    known; ``X``: the solve ``K_hat^{-1} G_hat`` when already done, any X is sound).  The
    solve's error goes into the sandwich (:func:`certified.sandwich_from_solve`, told
    whether ``G_hat`` is lower triangular) and the model's into its ``model``
    (:func:`certified.model_perturbation`; as row sums when ``E_abs_norm`` bounds the norm of
    ``apply_E_abs``'s matrix).  Returns the sandwich and the share of ``model_sum`` due to
    ``dK_rounding``.
    """
    X = cholesky_solve(K, G, factor) if X is None else X
    KX = K @ X
    K_norm = frobenius(K) if K_norm is None else K_norm
    sandwich = certified.sandwich_from_solve(G, X, KX, lambda_hat_lb, K_dense=K,
                                             K_frobenius=K_norm,
                                             G_lower_triangular=G_lower_triangular)
    if apply_E_abs is None and F_abs is not None:  # G inexact only
        apply_E_abs = np.zeros_like
    model, rounding_share = certified.model_perturbation(
        X, G - KX, K_norm, lambda_lb, dK, dK_rounding, apply_E_abs, F_abs, E_abs_norm
    )
    return dataclasses.replace(sandwich, model=model), rounding_share


def doubly_stochastic_to_rounding(W: sp.csr_matrix) -> bool:
    """Doubly stochastic up to the rounding of its own construction, ``8 u (d_max + 1)``.

    The mixing truncation compares lags with ``1/n``, which needs ``W 1 = 1``; a larger
    deviation makes the lags drift by about ``l |W 1 - 1|`` and the chain is then propagated
    through every lag instead.  Deviations at this rounding level are of the size of the
    rounding in the products themselves, covered by the engine's working-precision model.
    """
    d_max = matrix_facts(W).longest_row
    return has_property(W, "doubly_stochastic", atol=8 * UNIT_ROUNDOFF * (d_max + 1))


def _stationary_weight(W: sp.csr_matrix) -> float:
    """``p = ||pi||^2`` for the preconditioner (``1/n`` when W is doubly stochastic, or
    reducible without one stationary distribution: a round of time-varying gossip, a directed
    W).  Only a preconditioner: any ``p`` keeps the solve and its certificate sound."""
    if has_property(W, "doubly_stochastic"):
        return 1.0 / W.shape[0]
    try:
        pi = stationary_distribution(W)
    except GossipMatrixError:
        return 1.0 / W.shape[0]
    return float(pi @ pi)
