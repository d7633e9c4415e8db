"""Squared sensitivity ``Delta_T(j -> A)^2`` of gossip averaging, with certified bounds.

For target j, observers A and T rounds (Koskela & Kulkarni v2, Thm 12 and Sec. 3.4):

    Delta^2 = max_{c in {-1,1}^T} c^T M_T c,     M_T = G_T^T K_T^{-1} G_T   (T x T),

and ``0 <= M_T <= I`` (M_T is a slice of the projector ``H^+ H``).  The solve produces a
certified sandwich ``M_low <= M_T <= M_up`` (:mod:`sparsedp.certified`); from it:

lower bounds (kind "lower")
    ``ones``: c = 1 (the papers' choice);  ``local_search``: single-flip ascent from c = 1
    and from the signs of the top eigenvector;  ``multistart``: the same ascent from the signs
    of the top eigenvectors of ``M_up`` and of ``M_up - diag(d)`` (d from ``diagonal_shift``)
    and from Gaussian roundings of their top eigenspaces (fixed seed) — each the value of a
    feasible c on ``M_low``, less the sandwich's quadratic slack.
exact (kind "exact", when ``T`` is small enough: ``T <= 24`` by default)
    exhaustive search over the 2^(T-1) classes {c, -c} (exact integer Gray code), on
    ``M_low`` (a lower bound) and on ``M_up`` (an upper bound, plus the grid error); the
    difference is reported as ``exact_error``.
upper bounds (kind "certified upper")
    ``spectral``: ``T lambda_max(M_up)`` with a Cholesky-certified lambda_max;
    ``diagonal_shift``: ``T lambda_max(M_up - diag d) + sum(d)`` (the SDP dual; valid for
    every d, which is searched from d = 0), Cholesky-certified;
    ``entrywise``: ``sum |M_T|`` (v2 Thm 12; the matrix-mechanism bound), bounded through
    ``|M - M_low|_ij <= sqrt(E_ii E_jj)`` for ``E = M_up - M_low``;
    ``local_dp``: ``T`` (since ``M_T <= I``).
The bounds are computed by :func:`sparsedp.sign_bounds.evaluate_bounds`; ``docs/bounds.md``
gives the formulas and soundness arguments.
The reported ``lower`` is the best lower bound, ``upper`` the best certified upper bound,
``gap`` their difference.
"""

from __future__ import annotations

import dataclasses
from dataclasses import asdict, dataclass, field

import numpy as np
import scipy.sparse as sp

from . import certified, validation
from .certified import UNIT_ROUNDOFF, MatrixSandwich, gamma
from .errors import ParameterError
from .gossip import as_square_sparse, check_gossip_matrix, has_property, symmetry_defect
from .moments import LagPropagator, LagSequence
from .operators import GossipSystem, k_from_moments, toeplitz_blocks
from .sign_bounds import Bound, evaluate_bounds
from .solvers import StationaryPreconditioner, block_pcg, cholesky_solve
from .spectral import stationary_distribution
from .threads import limit_blas_threads

METHODS = ("auto", "structured", "matrix-free")
EXHAUSTIVE_AUTO_MAX_T = 24  # 2^23 classes: 0.03 s per search (integer Gray code, numba)
EXHAUSTIVE_MAX_T = 30  # 2^29 classes: a few seconds per search
STRUCTURED_MAX_DIM = 8000  # largest mT for which the structured path factorises K_T densely
FIRST_MIXING_LEVEL = 1e-6  # n eps^2 at which the truncated propagation first stops
LAST_MIXING_LEVEL = 1e-40  # below this, propagate through every lag instead


@dataclass(frozen=True)
class SensitivityResult:
    """Bounds on ``Delta_T(target -> observers)^2`` and how they were obtained.

    ``lower <= Delta^2 <= upper`` always; ``exact`` is ``None`` unless the exhaustive search
    ran, and then ``exact <= Delta^2 <= exact + exact_error``.
    """

    target: int
    observers: tuple[int, ...]
    T: int
    lower: float
    upper: float
    exact: float | None
    exact_error: float | None
    method: str
    signs: tuple[int, ...]
    bounds: tuple[Bound, ...]
    solver: dict = field(default_factory=dict)
    notes: tuple[str, ...] = ()

    @property
    def gap(self) -> float:
        """``upper - lower`` (never negative)."""
        return max(self.upper - self.lower, 0.0)

    @property
    def relative_gap(self) -> float:
        """``(upper - lower) / upper`` (0 when both are 0)."""
        return 0.0 if self.upper == 0 else (self.upper - self.lower) / self.upper

    def to_dict(self) -> dict:
        """Plain data (JSON-ready)."""
        out = asdict(self)
        out["observers"] = list(self.observers)
        out["signs"] = list(self.signs)
        out["bounds"] = [asdict(b) for b in self.bounds]
        out["gap"] = self.gap
        out["relative_gap"] = self.relative_gap
        return out


def is_exactly_symmetric(W: sp.csr_matrix) -> bool:
    """Whether ``W == W^T`` entry for entry (the structured path needs exact symmetry)."""
    return symmetry_defect(W)[0] == 0.0


@limit_blas_threads
def squared_sensitivity(
    W,
    target: int,
    observers,
    T: int,
    *,
    method: str = "auto",
    exact="auto",
    rtol: float = 1e-10,
    maxiter: int = 5000,
    progress: bool | None = None,
    backend: str = "auto",
    truncation_rtol: float = 1e-9,
) -> SensitivityResult:
    """Certified bounds on the squared sensitivity ``Delta_T(target -> observers)^2``.

    Parameters
    ----------
    W : square scipy sparse matrix (any format) or dense array; the gossip matrix, which must
        be non-negative and row-stochastic (GossipMatrixError names the failing row): the
        rounding model behind the certified bounds relies on ``||W||_inf = 1``.
    target : node index j whose data is protected.
    observers : node index or iterable of indices (the attacker's view ``S``).
    T : number of gossip rounds (>= 1).
    method : ``"structured"`` (W exactly symmetric: K_T from the moments ``S W^l S^T``,
        dense Cholesky), ``"matrix-free"`` (preconditioned block CG on the matrix-free K_T;
        any W), or ``"auto"`` (structured when W is symmetric and ``m T <= 8000``).
    exact : ``"auto"`` (exhaustive search when ``T <= 24``), ``True`` (force; refused for
        ``T > 30``) or ``False``.
    rtol : relative residual tolerance of the CG solve (its error is carried into the bounds
        either way).
    progress : show progress bars (sparse products of the structured path, CG iterations).
    backend : kernel backend, ``"auto" | "numba" | "numpy"``.
    truncation_rtol : structured path, W doubly stochastic: stop propagating once the chain
        has mixed enough that the certified truncation error widens the bounds by at most
        this fraction of the lower bound (the widening is included in the bounds either way).
    """
    W = as_square_sparse(W)
    check_gossip_matrix(W, require=("nonnegative", "row_stochastic"))
    n = W.shape[0]
    T = validation.rounds(T)
    target = validation.node_index(target, n, "target")
    observers = validation.node_set(observers, n, "observers")
    do_exact = _resolve_exact(exact, T)
    if not validation.nonnegative("truncation_rtol", truncation_rtol) > 0:
        raise ParameterError(f"truncation_rtol must be > 0, got {truncation_rtol!r}")
    if method not in METHODS:
        raise ParameterError(f"unknown method {method!r}; choose one of {METHODS}")

    notes: list[str] = []
    system = GossipSystem(W, observers, T)
    symmetric = is_exactly_symmetric(W)
    if method == "structured" and not symmetric:
        raise ParameterError(
            "method='structured' needs an exactly symmetric W (K_T from the moments "
            "S W^l S^T); use method='matrix-free' for this W"
        )
    if method == "auto":
        method = "structured" if symmetric and system.m * T <= STRUCTURED_MAX_DIM else "matrix-free"
        if not symmetric:
            notes.append("W is not symmetric: using the matrix-free PCG path")
        elif method == "matrix-free":
            notes.append(
                f"m T = {system.m * T} exceeds {STRUCTURED_MAX_DIM}: using the matrix-free PCG path"
            )
    sandwich, solver_info = _solve(system, target, method, rtol, maxiter, progress, truncation_rtol)
    bounds, signs = evaluate_bounds(sandwich, do_exact, backend)
    return _assemble(target, observers, T, method, sandwich, bounds, signs, solver_info, notes)


def _resolve_exact(exact, T: int) -> bool:
    if exact == "auto":
        return T <= EXHAUSTIVE_AUTO_MAX_T
    if exact is True:
        if T > EXHAUSTIVE_MAX_T:
            raise ParameterError(
                f"exact=True enumerates 2^(T-1) sign vectors and is limited to "
                f"T <= {EXHAUSTIVE_MAX_T} (got T = {T}); use exact=False and the certified "
                "upper bound instead"
            )
        return True
    if exact is False:
        return False
    raise ParameterError(f"exact must be 'auto', True or False, got {exact!r}")


def _solve(
    system: GossipSystem,
    target: int,
    method: str,
    rtol: float,
    maxiter: int,
    progress,
    truncation_rtol: float,
) -> tuple[MatrixSandwich, dict]:
    """Approximate ``X = K^{-1} G`` by the chosen method and certify it."""
    T, m = system.T, system.m
    lambda_lb = certified.gossip_lambda_min_lower_bound(system.W)
    info: dict = {"lambda_min_lower_bound": lambda_lb}
    if method == "structured":
        sandwich, lags, tol = _structured_sandwich(
            system, target, lambda_lb, truncation_rtol, progress
        )
        info.update(
            solver="dense Cholesky of K_T assembled from the lags S W^l S^T",
            sparse_products=lags.products,
            frontier_products=lags.frontier_products,
            exact_lags=lags.exact_lags,
            truncated=lags.truncated,
            truncation_mixing_level=tol,
            truncation_error=sandwich.model_sum,
        )
    else:
        G = system.G_matrix(target)
        precondition = StationaryPreconditioner(T, m, _stationary_weight(system.W))
        X3, KX3, solve = block_pcg(
            system.apply_K,
            G.reshape(T, m, T),
            precondition,
            rtol=rtol,
            maxiter=maxiter,
            progress=progress,
        )
        X, KX = X3.reshape(T * m, T), KX3.reshape(T * m, T)
        info.update(
            solver="preconditioned block CG on the matrix-free K_T",
            iterations=solve.iterations,
            restarts=solve.restarts,
            max_relative_residual=solve.max_relative_residual,
            converged=solve.converged,
            sparse_products=system.products,
        )
        sandwich = certified.sandwich_from_solve(G, X, KX, lambda_lb)
    info["residual_correction"] = float(np.trace(sandwich.excess))
    return sandwich, info


def _structured_sandwich(
    system: GossipSystem, target: int, lambda_lb: float, truncation_rtol: float, progress
) -> tuple[MatrixSandwich, LagSequence, float | None]:
    """Certified sandwich from the lags, truncating the propagation as early as the bounds allow.

    The propagation first stops at the mixing level ``n eps^2 <= FIRST_MIXING_LEVEL``; if the
    certified widening caused by the truncation (``sum |E|`` of the model error) exceeds
    ``truncation_rtol`` times the c = 1 lower bound, it resumes (never restarts) down to the
    level predicted to suffice — the widening is proportional to ``eps_a eps_b`` — with a
    factor 2 of margin, until it passes or every lag is computed.
    """
    T = system.T
    propagator = LagPropagator(system.W, system.observers, target, T, progress=progress)
    level = FIRST_MIXING_LEVEL if _doubly_stochastic_to_rounding(system.W) else None
    try:
        while True:
            lags = propagator.advance(level).result()
            tightening = _truncation_too_coarse(lags, T, lambda_lb)
            if tightening is None:
                sandwich, widening = _lag_sandwich(lags, T, lambda_lb)
                if not lags.truncated:
                    return sandwich, lags, None
                lower = float(sandwich.low.sum()) - sandwich.quadratic_slack()
                if widening <= truncation_rtol * max(lower, 0.0):
                    return sandwich, lags, level
                tightening = 0.5 * truncation_rtol * max(lower, 0.0) / widening
            level = propagator.mixing_level * min(max(tightening, 1e-8), 0.5)
            if level < LAST_MIXING_LEVEL:
                level = None
    finally:
        propagator.close()


def _truncation_too_coarse(lags: LagSequence, T: int, lambda_lb: float) -> float | None:
    """``None`` when ``||K - K_hat||`` leaves ``lambda_min(K_hat) >= lambda_lb / 2``, else the
    factor by which the mixing level must shrink for it to."""
    norm = truncation_norm_bound(lags, T)
    return None if norm <= 0.5 * lambda_lb else 0.25 * lambda_lb / norm


def truncation_pattern(lags: LagSequence, T: int) -> tuple[np.ndarray, np.ndarray]:
    """``N`` (T x T) and the lag mask with ``|K - K_hat| <= N kron eps eps^T`` entrywise.

    ``K[t, t+d] = sum_{i<=t} mu_(d+2i)`` (:func:`k_from_moments`) and each truncated lag is
    off by at most ``eps eps^T``, so ``N = k_from_moments(1[l >= exact_lags])`` counts the
    truncated lags summed into each block.
    """
    truncated = (np.arange(2 * T - 1) >= lags.exact_lags).astype(np.float64)
    return k_from_moments(truncated.reshape(-1, 1, 1), T), truncated


def truncation_norm_bound(lags: LagSequence, T: int) -> float:
    """``||K - K_hat||_2 <= max_t (N 1)_t max_a eps_a sum_b eps_b`` (largest row sum)."""
    if not lags.truncated:
        return 0.0
    N, _ = truncation_pattern(lags, T)
    return float(N.sum(axis=1).max()) * float(lags.eps.max()) * float(lags.eps.sum())


def _lag_sandwich(lags: LagSequence, T: int, lambda_lb: float) -> tuple[MatrixSandwich, float]:
    """The certified sandwich of ``M_T`` from (possibly truncated) lags, and the widening
    ``sum |E|`` that the truncation and the rounding of ``K`` add to the bounds.

    ``K_hat``, ``G_hat`` from the lags; ``E = K - K_hat`` is the truncation (entrywise
    ``N kron eps eps^T``, :func:`truncation_pattern`) plus the rounding of the sums forming K
    (at most T non-negative lags: ``|fl(K) - K| <= gamma_{T+1} K`` entrywise, so
    ``||.||_2 <= gamma_{T+1} ||K||_inf``); ``|G - G_hat| <= eps eps_target`` on the
    truncated lags of G.
    """
    m = lags.mu.shape[1]
    K, G = k_from_moments(lags.mu, T), toeplitz_blocks(lags.a)
    dK_rounding = gamma(T + 1) * float(K.sum(axis=1).max())
    dK = dK_rounding + truncation_norm_bound(lags, T)
    X = cholesky_solve(K, G)
    KX = K @ X
    sandwich = certified.sandwich_from_solve(G, X, KX, lambda_lb - dK, K_dense=K)
    N, truncated = truncation_pattern(lags, T)
    eps = lags.eps

    def apply_truncation_abs(V: np.ndarray) -> np.ndarray:
        """``(N kron eps eps^T) V`` for ``V`` of shape (T m, k)."""
        weighted = np.einsum("tbk,b->tk", V.reshape(T, m, -1), eps)
        return ((N @ weighted)[:, None, :] * eps[None, :, None]).reshape(T * m, -1)

    F_abs = toeplitz_blocks(np.outer(truncated[:T], lags.a_error))
    model, rounding_share = certified.model_perturbation(
        X,
        G - KX,
        float(np.linalg.norm(K)),
        lambda_lb,
        dK,
        dK_rounding,
        apply_truncation_abs,
        F_abs,
    )
    sandwich = dataclasses.replace(sandwich, model=model)
    return sandwich, max(sandwich.model_sum - rounding_share, 0.0)


def _doubly_stochastic_to_rounding(W: sp.csr_matrix) -> bool:
    """Doubly stochastic up to the rounding of its own construction, ``8 u (d_max + 1)``.

    The mixing truncation compares lags with ``1/n``, which needs ``W 1 = 1``; a larger
    deviation makes the lags drift by about ``l |W 1 - 1|`` and the chain is then propagated
    through every lag instead.  Deviations at this rounding level are of the size of the
    rounding in the products themselves, covered by the engine's working-precision model.
    """
    d_max = int(np.diff(W.indptr).max())
    return has_property(W, "doubly_stochastic", atol=8 * UNIT_ROUNDOFF * (d_max + 1))


def _stationary_weight(W: sp.csr_matrix) -> float:
    """``p = ||pi||^2`` for the preconditioner (``1/n`` when W is doubly stochastic)."""
    if has_property(W, "doubly_stochastic"):  # only a preconditioner: any p is sound
        return 1.0 / W.shape[0]
    pi = stationary_distribution(W)
    return float(pi @ pi)


def _assemble(target, observers, T, method, sandwich, bounds, signs, solver_info, notes):
    lower = max(b.value for b in bounds if b.kind in ("lower", "exact"))
    upper = min(b.value for b in bounds if b.kind == "certified upper")
    lower = float(max(lower, 0.0))
    exact = next((b.value for b in bounds if b.kind == "exact"), None)
    exact_error = None
    if exact is not None:  # the exhaustive maximum dominates every other feasible c
        exact = lower
        exact_error = float(upper - exact)
    return SensitivityResult(
        target=int(target),
        observers=tuple(int(i) for i in observers),
        T=T,
        lower=lower,
        upper=float(upper),
        exact=exact,
        exact_error=exact_error,
        method=method,
        signs=tuple(int(s) for s in signs),
        bounds=tuple(bounds),
        solver=solver_info,
        notes=tuple(notes),
    )
