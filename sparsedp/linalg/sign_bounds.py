"""Bounds on ``max_{c in {-1,1}^T} c^T M c`` from a certified sandwich of ``M``.

:func:`evaluate_bounds` turns a :class:`~sparsedp.linalg.certified.MatrixSandwich`
(``M = low + D + F + E``, see there) into lower, exact and certified upper bounds; the kinds
and formulas are listed in the docstring of :mod:`sparsedp.gossip.sensitivity` and argued in
``docs/bounds.md``.  Two ingredients live here:

* the diagonal shift (the dual of the SDP relaxation): for every vector ``d`` and sign
  vector ``c``, ``c^T M c = c^T (M - diag d) c + sum(d) <= T lambda_max(M - diag d) + sum(d)``.
  :func:`minimise_diagonal_shift` searches ``d`` (L-BFGS on a log-sum-exp smoothing of
  ``lambda_max`` with continuation in the smoothing width, a bounded number of partial
  eigen-decompositions, starting at ``d = 0``); any ``d`` it stops at is valid, and
  :func:`certified_shift_bound` certifies the value at that ``d`` on ``M_up``;
* multistart sign search: single-flip ascent on ``M_low`` from the signs of the top
  eigenvectors of ``M_up`` and of the shifted ``M_up - diag d``, and from Gaussian roundings
  of their top eigenspaces (Goemans-Williamson style, fixed seed, so results reproduce).

Measured on ER(100, 0.15) Metropolis instances with the target among the observers (2-core
machine, one BLAS thread): :func:`evaluate_bounds` takes 0.06 s at T = 50, 0.12 s at T = 100,
1.2 s at T = 500 and 1.8 s at T = 1000, almost all of it in the eigen-decompositions of the
diagonal-shift search (skipped, 0.01 s at T = 100, when the other bounds already meet).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np
import scipy.linalg
import scipy.linalg.lapack
import scipy.optimize

from sparsedp.linalg import certified, kernels
from sparsedp.linalg.certified import UNIT_ROUNDOFF, MatrixSandwich, frobenius, gamma
from sparsedp.linalg.threads import limit_blas_threads
from sparsedp.reprs import short_repr

TOP_EIGENPAIRS = 32  # eigenpairs per partial eigen-decomposition (LAPACK evr)
ONE_PAIR_FIRST_MAX_T = 100  # up to this T, the top eigenpair alone is computed first
LANCZOS_KRYLOV_DIM = 32  # past it, the top pair is tried first by restarted Lanczos ...
LANCZOS_RESTARTS = 3  # ... with this many restarts
LANCZOS_RTOL = 1e-8  # ... and accepted when ||M v - theta v|| <= this * |theta|
SMOOTHING = (1e-1, 1e-2, 1e-3, 1e-4)  # widths mu of the smoothing, relative to lambda_max
SHIFT_WORK = 3.5e10  # evaluations of the shift search: SHIFT_WORK / T^3, clipped below
SHIFT_MIN_EVALUATIONS = 8
SHIFT_MAX_EVALUATIONS = 120
EIGENVECTOR_STARTS = 8  # signs of this many top eigenvectors (of M_up and of M_up - diag d)
ROUNDINGS = 32  # Gaussian roundings of each top eigenspace
ROUNDING_DIM = 4  # dimension of the top eigenspace of M_up that is rounded
SEED = 20_240_404  # of the roundings: the bounds are reproducible
SHIFT_SKIP_GAP = 1e-6  # relative gap of the other bounds below which the shift search is skipped
SETTLED_GAP = 1e-12  # relative gap below which neither refinement (shift, multistart) runs


@dataclass(frozen=True)
class Bound:
    """One bound on the squared sensitivity, with its kind: lower, exact, certified upper.

    Attributes
    ----------
    name : str
        Which bound (``"ones"``, ``"local_search"``, ``"spectral"``, ``"entrywise"``, ...).
    value : float
        Its value.
    kind : str
        ``"lower"``, ``"exact"`` or ``"certified upper"``.
    description : str
        How it was obtained.

    Examples
    --------
    >>> import networkx as nx, sparsedp
    >>> W = sparsedp.gossip_matrix(nx.cycle_graph(8))
    >>> r = sparsedp.squared_sensitivity(W, target=0, observers=[4], T=50)
    >>> b = r.bounds[0]
    >>> b.name, b.kind, round(float(b.value), 6), b.description
    ('ones', 'lower', 4.108838, "c = 1 (the papers' choice)")
    """

    name: str
    value: float
    kind: str
    description: str

    __repr__ = short_repr


@dataclass(frozen=True)
class ShiftSearch:
    """Result of :func:`minimise_diagonal_shift` (nothing here is certified).

    ``d``: the best shift found (``0`` if nothing beat it); ``value``: ``T lambda_max(M -
    diag d) + sum(d)`` there, as computed; ``evaluations``: eigen-decompositions used;
    ``start``: top eigenpairs (ascending) of ``M`` itself; ``best``: top eigenpairs of
    ``M - diag d`` and the smoothing weights of those eigenvalues (for roundings).
    """

    d: np.ndarray
    value: float
    evaluations: int
    start: tuple[np.ndarray, np.ndarray]
    best: tuple[np.ndarray, np.ndarray, np.ndarray]


class _BudgetSpent(Exception):
    pass


def shift_evaluations(T: int) -> int:
    """Eigen-decompositions allowed to the shift search: ``SHIFT_WORK / T^3``, clipped to
    [8, 120] (about 0.05 s at T = 100 and 2 s at T = 1000 on one core)."""
    return int(np.clip(SHIFT_WORK / float(T) ** 3, SHIFT_MIN_EVALUATIONS, SHIFT_MAX_EVALUATIONS))


def top_pairs(A: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """The top ``k`` eigenpairs of a symmetric ``A`` (ascending), by LAPACK: the whole
    decomposition (``syevd``) when ``k`` is all of them, else ``syevr`` for the index range
    (called directly, as ``scipy.linalg.eigh(subset_by_index=..., driver="evr")`` does).

    ``syevr`` can return fewer pairs than asked with ``info = 0`` when the spectrum is (nearly)
    one point (``M_T`` about I: the target inside the view); the full decomposition, which
    cannot return nothing, is used then.  The eigenvalues only steer the bounds: every upper
    bound built on them is certified separately (:mod:`sparsedp.linalg.certified`)."""
    T = A.shape[0]
    if k < T:
        lam, V, found, _, info = scipy.linalg.lapack.dsyevr(A, range="I", il=T - k + 1, iu=T)
        if info == 0 and found == k:
            return lam[:k], V[:, :k]
    lam, V = np.linalg.eigh(A)
    return lam[T - k :], V[:, T - k :]


def _first_pairs(up: np.ndarray, k: int, backend: str) -> tuple[np.ndarray, np.ndarray]:
    """The top eigenpair of ``up`` alone, or its top ``k`` when they come at the same cost.

    Small T (``<= ONE_PAIR_FIRST_MAX_T``): the top pair by LAPACK.  Larger T, where LAPACK's
    tridiagonal reduction dominates and costs as much for one pair as for k: restarted
    Lanczos (:func:`kernels.top_eigenpair`, a few restarts), kept when its residual is below
    ``LANCZOS_RTOL`` of the Ritz value (about a fifth of the reduction's time at T = 1000),
    else the top k pairs by LAPACK (a tight top cluster, where Lanczos is slow).  Only a
    guess: the lambda_max bound built on it is certified separately."""
    T = up.shape[0]
    if T <= ONE_PAIR_FIRST_MAX_T:
        return top_pairs(up, 1)
    theta, v = kernels.top_eigenpair(up, tol=LANCZOS_RTOL, krylov_dim=LANCZOS_KRYLOV_DIM,
                                     max_restarts=LANCZOS_RESTARTS, backend=backend)
    if frobenius(up @ v - theta * v) <= LANCZOS_RTOL * abs(theta):
        return np.array([theta]), v[:, None]
    return top_pairs(up, k)


def _softmax_weights(lam: np.ndarray, mu: float) -> tuple[np.ndarray, float]:
    """Weights ``exp((lam - lam_max) / mu)`` normalised, and ``log`` of their sum."""
    z = np.exp((lam - lam[-1]) / mu)
    total = float(z.sum())
    return z / total, float(np.log(total))


def minimise_diagonal_shift(
    M: np.ndarray,
    evaluations: int | None = None,
    start: tuple[np.ndarray, np.ndarray] | None = None,
) -> ShiftSearch:
    """Search ``d`` minimising ``f(d) = T lambda_max(M - diag d) + sum(d)`` (convex).

    ``f`` is the dual of the SDP relaxation of ``max_c c^T M c`` and every ``d`` gives an
    upper bound; the search only has to find a good one.  It starts at ``d = 0`` (the spectral
    bound ``T lambda_max(M)``) and runs L-BFGS on the smoothing
    ``f_mu(d) = T (lambda_1 + mu log sum_i exp((lambda_i - lambda_1) / mu)) + sum(d)`` over
    the top ``TOP_EIGENPAIRS`` eigenvalues (``f <= f_mu``; gradient ``1 - T sum_i w_i
    v_i^2`` with the softmax weights ``w``), for each width in ``SMOOTHING`` (relative to
    ``lambda_max(M)``) in turn, warm-started at the best ``d`` so far.  Every evaluation is
    one partial eigen-decomposition; the best ``f`` seen is kept, and the search stops after
    ``evaluations`` of them (default :func:`shift_evaluations`).  ``start``: the top
    ``min(TOP_EIGENPAIRS, T)`` eigenpairs of ``M`` when the caller has them (the evaluation
    at ``d = 0``, counted but not repeated).  Deterministic.
    """
    M = np.asarray(M, dtype=np.float64)
    T = M.shape[0]
    budget = shift_evaluations(T) if evaluations is None else max(1, int(evaluations))
    k = min(TOP_EIGENPAIRS, T)
    zero = np.zeros(T)
    state: dict = {"count": 0, "value": np.inf, "d": zero}

    def evaluate(d: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        if state["count"] >= budget:
            raise _BudgetSpent
        state["count"] += 1
        if start is not None and not d.any():
            lam, V = start
        else:
            lam, V = top_pairs(M - np.diag(d), k)
        value = T * float(lam[-1]) + float(d.sum())
        if np.isfinite(value) and value < state["value"]:
            state.update(value=value, d=d.copy(), lam=lam, V=V)
        return lam, V

    lam0, V0 = evaluate(zero)
    state.setdefault("lam", lam0)
    state.setdefault("V", V0)
    scale = max(float(lam0[-1]), float(np.abs(lam0).max()), np.finfo(np.float64).tiny)
    mu = SMOOTHING[0] * scale
    if T > 1 and state["count"] < budget:
        try:
            for stage, factor in enumerate(SMOOTHING):
                mu = factor * scale

                def objective(d, mu=mu):
                    lam, V = evaluate(d)
                    w, log_sum = _softmax_weights(lam, mu)
                    value = T * (float(lam[-1]) + mu * log_sum) + float(d.sum())
                    return value, 1.0 - T * ((V * V) @ w)

                left = budget - state["count"]
                share = max(1, left // (len(SMOOTHING) - stage))
                scipy.optimize.minimize(
                    objective,
                    state["d"],
                    jac=True,
                    method="L-BFGS-B",
                    options={"maxfun": share, "maxcor": 20, "ftol": 1e-13, "gtol": 1e-12},
                )
        except _BudgetSpent:
            pass
        except (np.linalg.LinAlgError, ValueError, FloatingPointError):
            pass  # keep the best d found so far; any d is valid
    weights, _ = _softmax_weights(state["lam"], mu)
    return ShiftSearch(
        d=state["d"],
        value=state["value"],
        evaluations=state["count"],
        start=(lam0, V0),
        best=(state["lam"], state["V"], weights),
    )


def certified_shift_bound(
    sandwich: MatrixSandwich,
    d: np.ndarray,
    backend: str = "auto",
    vector=None,
    lambda_upper: float | None = None,
) -> float:
    """Certified upper bound on ``max_c c^T M c`` from the shift ``d``, for the true ``M``.

    For every sign vector ``c``: ``c^T M c <= c^T up c + a`` with ``a =
    sandwich.sign_vector_allowance`` (the rounding ``D``, the solver's ``eta_excess`` and the
    model error, the last charged ``sum |E_ij|``), so ``c^T M c <= c^T (up - diag d) c +
    sum(d) + a <= T lambda_max(up - diag d) + sum(d) + a``; the same holds for ``<M, X>``
    with X PSD of unit diagonal (:mod:`sparsedp.linalg.vector_bounds`).  The computed
    ``A = fl(up - diag d)`` differs from ``up - diag d`` on the diagonal only, by at most
    ``u |A_ii|`` (a diagonal perturbation, norm ``max_i``);
    :func:`certified.certified_lambda_max` bounds ``lambda_max(A)`` (charging the rounding
    of forming ``s I - A``), and ``2 u (|lambda| + 2 max_i |A_ii| + ||A||_F)`` is added for
    the diagonal perturbation with a wide margin.  ``fl(sum d)`` is off by at most
    ``gamma_T sum |d|``, and the final three operations by ``8 u`` of the magnitudes
    involved.  ``vector``: an approximate top eigenvector of ``A``
    (passed on to :func:`certified.certified_lambda_max`); ``lambda_upper``: a certified
    upper bound on ``lambda_max(A)`` already at hand (the spectral bound's, for ``d = 0``),
    used instead of a new certificate.
    """
    T = sandwich.T
    d = np.asarray(d, dtype=np.float64)
    A = sandwich.up - np.diag(d)
    if lambda_upper is None:
        _, lam = certified.certified_lambda_max(A, backend=backend, vector=vector)
    else:
        lam = lambda_upper
    diagonal = float(np.abs(np.diag(A)).max())
    lam += 2 * UNIT_ROUNDOFF * (abs(lam) + 2 * diagonal + frobenius(A))
    total_d = float(d.sum())
    d_error = gamma(T) * float(np.abs(d).sum())
    allowance = sandwich.sign_vector_allowance
    value = T * lam + allowance + total_d + d_error
    return value + 8 * UNIT_ROUNDOFF * (T * abs(lam) + allowance + abs(total_d) + d_error)


def _signs(V: np.ndarray) -> np.ndarray:
    """Sign vectors (+1 for 0) of the columns of ``V``, one per row."""
    return np.where(V.T >= 0, 1.0, -1.0)


def sign_candidates(search: ShiftSearch) -> np.ndarray:
    """Starting sign vectors for the multistart ascent, one per row (deterministic: fixed seed).

    The signs of the top ``EIGENVECTOR_STARTS`` eigenvectors of ``M_up`` and of
    ``M_up - diag d``; ``ROUNDINGS`` Gaussian roundings ``sign(V diag(sqrt(lambda_+)) z)`` of
    the top ``ROUNDING_DIM`` eigenvectors of ``M_up`` and ``ROUNDINGS`` of the top eigenspace
    of ``M_up - diag d`` weighted by the final smoothing weights (Goemans-Williamson with the
    dual's eigenspace standing in for the SDP solution).
    """
    lam0, V0 = search.start
    _, V1, w1 = search.best
    top = slice(None, -EIGENVECTOR_STARTS - 1, -1)  # the top eigenvectors, largest first
    directions = [V0[:, top]]
    if V1 is not V0:  # (the search kept d = 0: the same eigenvectors, the same starts)
        directions.append(V1[:, top])
    r = min(ROUNDING_DIM, V0.shape[1])
    basis = V0[:, -r:] * np.sqrt(np.clip(lam0[-r:], 0.0, None))
    first = bool(np.any(basis))
    draws = _gaussian_draws(r if first else 0, V1.shape[1])
    if first:
        directions.append(basis @ draws[0])
    directions.append((V1 * np.sqrt(w1)) @ draws[-1])
    return _signs(np.hstack(directions))


@functools.lru_cache(maxsize=16)
def _gaussian_draws(r: int, k: int) -> tuple[np.ndarray, ...]:
    """The standard normal draws of :func:`sign_candidates`: ``(r x ROUNDINGS,
    k x ROUNDINGS)`` in this order from ``SEED`` (only the second when ``r = 0``); drawn once
    per shape, read-only."""
    rng = np.random.default_rng(SEED)
    shapes = [(r, ROUNDINGS)] if r else []
    draws = tuple(rng.standard_normal(shape) for shape in [*shapes, (k, ROUNDINGS)])
    for draw in draws:
        draw.setflags(write=False)
    return draws


@limit_blas_threads
def evaluate_bounds(
    sandwich: MatrixSandwich, do_exact: bool, backend: str = "auto"
) -> tuple[list[Bound], np.ndarray]:
    """All lower / exact / upper bounds on ``max_c c^T M c`` from a certified sandwich.

    Returns the bounds and the best sign vector found.  Lower bounds are values of feasible
    sign vectors on ``low`` less ``sandwich.quadratic_slack()``; upper bounds are certified
    for the true ``M`` (see each bound's construction).  The diagonal-shift search is skipped
    (only ``d = 0`` is certified) when the cheaper bounds already agree to a relative
    ``SHIFT_SKIP_GAP``: no upper bound can then improve on them by more.  When they agree to
    ``SETTLED_GAP`` (rounding level) the two refinements, ``multistart`` and
    ``diagonal_shift``, are not computed at all and are absent from the list: neither could
    move the reported interval by more than that; nor after the exhaustive search
    (``do_exact``), which both refinements can at best repeat.
    """
    T = sandwich.T
    low, up, excess = sandwich.low, sandwich.up, sandwich.excess
    slack = sandwich.quadratic_slack()
    ones = np.ones(T)
    lower = [Bound("ones", float(ones @ low @ ones) - slack, "lower", "c = 1 (the papers' choice)")]
    # M_up's top eigenpairs: the top vector is a start and the lambda_max certificate's guess;
    # all TOP_EIGENPAIRS seed the refinements, which are often settled without them
    k = min(TOP_EIGENPAIRS, T)
    first = _first_pairs(up, k, backend)
    top = first[1][:, -1]
    # low >= 0 entrywise (the usual case): c = 1 maximises c^T low c over sign vectors
    # (|c^T low c| <= sum low), so every single-flip ascent ends at or below it; then the
    # closed case needs only the top pair (the search's d = 0 evaluation)
    nonnegative = bool((low >= 0).all())
    if nonnegative:
        value, signs = float(ones @ low @ ones), ones
    else:
        value, signs = kernels.local_sign_search(low, np.stack([ones, top]), backend=backend)
    lower.append(
        Bound(
            "local_search",
            value - slack,
            "lower",
            "single-flip ascent from c = 1 and from the signs of the top eigenvector of M_up",
        )
    )
    upper = []
    if do_exact and nonnegative and bool((up >= 0).all()):
        # c = 1 maximises c^T A c over sign vectors for A >= 0: the search's own result
        value_low, exact_signs = value, ones
        value_up = float(ones @ up @ ones)
    elif do_exact:
        value_low, exact_signs = kernels.max_sign_quadratic(low, backend=backend)
        if excess.any():
            value_up, _ = kernels.max_sign_quadratic(up, backend=backend)
        else:  # up is low (a sandwich without solver excess): the same search
            value_up = value_low
        value_up += kernels.max_sign_quadratic_drift(up)
    if do_exact:
        if value_low >= value:
            value, signs = value_low, exact_signs
        lower.append(
            Bound("exhaustive", value_low - slack, "exact", "lower end of the exhaustive search")
        )
        upper.append(
            Bound(
                "exhaustive_upper",
                value_up + slack,
                "certified upper",
                "exhaustive search over sign vectors on M_up",
            )
        )
    _, lam_up = certified.certified_lambda_max(up, backend=backend, vector=top)
    # c^T M c <= c^T up c + allowance <= T lambda_max(up) + allowance; and its two roundings
    allowance = sandwich.sign_vector_allowance
    spectral = T * lam_up + allowance + 4 * UNIT_ROUNDOFF * (T * abs(lam_up) + allowance)
    upper.append(
        Bound(
            "spectral",
            spectral,
            "certified upper",
            "T lambda_max(M_T) (v2 Sec. 3.4), Cholesky-certified",
        )
    )
    # |M_ij| <= |low_ij| + |D_ij| + sqrt(F_ii F_jj) + |E_ij|, F_ii <= excess_ii + eta_excess,
    # sum |D_ij| <= T ||D||_F <= T eta_low, sum |E_ij| <= model_sum
    abs_sum = float(np.abs(low).sum()) * (1 + gamma(T * T))
    root_diag = np.sqrt(np.clip(np.diag(excess), 0.0, None) + sandwich.eta_excess).sum()
    upper.append(
        Bound(
            "entrywise",
            abs_sum
            + T * sandwich.eta_low
            + root_diag**2 * (1 + gamma(T + 2))
            + sandwich.model_sum,
            "certified upper",
            "sum |M_T| (v2 Thm 12, the matrix-mechanism bound)",
        )
    )
    upper.append(Bound("local_dp", float(T), "certified upper", "T, since M_T <= I (local DP)"))

    best_lower = max(b.value for b in lower)
    best_upper = min(b.value for b in upper)
    if best_upper - best_lower <= SETTLED_GAP * abs(best_upper) or do_exact:
        # after the exhaustive search neither refinement can move the interval by more than
        # rounding: no multistart exceeds the maximum over every sign vector, and the shift
        # bound relaxes that same maximum on up (c^T (up - diag d) c + sum d = c^T up c)
        return lower + upper, signs
    closed = best_upper - best_lower <= SHIFT_SKIP_GAP * abs(best_upper)
    start = first if first[0].shape[0] == k or (closed and nonnegative) else top_pairs(up, k)
    search = minimise_diagonal_shift(up, evaluations=1 if closed else None, start=start)
    best_restart = ((value, signs) if nonnegative else
                    kernels.local_sign_search(low, sign_candidates(search), backend=backend))
    lower.append(
        Bound(
            "multistart",
            best_restart[0] - slack,
            "lower",
            "single-flip ascent from the signs of top eigenvectors and from Gaussian roundings "
            "of the top eigenspaces of M_up and of M_up - diag(d) (fixed seed)",
        )
    )
    if best_restart[0] > value:
        signs = best_restart[1]
    shift_vector = search.best[1][:, -1]
    shift = certified_shift_bound(  # d = 0: A = up, whose lambda_max is certified already
        sandwich, search.d, backend=backend, vector=shift_vector,
        lambda_upper=None if search.d.any() else lam_up,
    )
    upper.insert(
        -2,
        Bound(
            "diagonal_shift",
            shift,
            "certified upper",
            "T lambda_max(M_T - diag d) + sum(d) (SDP dual), d searched, Cholesky-certified"
            + (" (search skipped: d = 0, the other bounds already meet)" if closed else ""),
        ),
    )
    return lower + upper, signs
