"""The log-Green matrix ``L = -log(I - W + J/n)`` of a random walk, at scale, with error bounds.

For a symmetric, doubly stochastic, irreducible W with eigenpairs ``(lambda_i, phi_i)``
(``lambda_1 = 1``, ``phi_1 = 1/sqrt(n)``)::

    L = -log(I - W + J/n) = sum_{i >= 2} -log(1 - lambda_i) phi_i phi_i^T
      = sum_{t >= 1} (W^t - J/n) / t

It is defined as soon as every ``lambda_i < 1`` for ``i >= 2`` (W irreducible); a periodic W
(eigenvalue -1, bipartite graphs with ``W_ii = 0``) is fine: ``-log(1 - (-1)) = -log 2``.
``L 1 = 0``, so a column is ``L e_s = f(W) b`` with ``b = e_s - 1/n`` (``b`` orthogonal to 1)
and ``f(x) = -log(1 - x)`` on the spectrum of W restricted to ``1^perp``, which lies in an
interval ``[a, c]`` with ``c < 1`` (:class:`SpectralInterval`).

Columns (:func:`log_green_columns`), never forming an n x n matrix except for ``"dense"``:

* ``"chebyshev"`` (a polynomial Krylov method: the result lies in ``K_K(W, b)``).  With
  ``x = (2 lambda - a - c) / (c - a)`` and ``x* = (2 - a - c) / (c - a) > 1``,
  ``r = x* + sqrt(x*^2 - 1)``, the exact Chebyshev series is::

      -log(1 - lambda) = -log((c - a) r / 4) + sum_{k >= 1} (2 / (k r^k)) T_k(x)

  (from ``sum_k T_k(x) t^k / k = -log(1 - 2 x t + t^2) / 2`` at ``t = 1/r``).  The degree-K
  truncation is applied with the three-term recurrence ``T_{k+1} = 2 X T_k - T_{k-1}``
  (``X = (2 W - (a + c) I) / (c - a)``, the mean projected out at every step).  As
  ``||T_k(X)|| <= 1`` on ``1^perp``, the truncation error is at most
  ``||b|| sum_{k > K} 2 / (k r^k) <= ||b|| 2 r^-(K+1) / ((K + 1)(1 - 1/r))``.  An interval
  narrower than ``MIN_RELATIVE_WIDTH (1 - c)`` (a point spectrum: complete graphs, ``J/n``)
  is widened downwards first, and a termwise floating-point bound (each term's magnitude
  times a few eps, propagated through the recurrence) is added: details key
  ``rounding_bound`` (:mod:`sparsedp.randomwalk.krylov`).
* ``"lanczos"``: ``||b|| Q_k f(T_k) e_1`` from k Lanczos steps (full reorthogonalisation,
  the mean removed again after it).  Error bound: the smaller of the a-priori bound
  ``2 ||b|| E_{k-1}`` (for every polynomial p of degree < k, ``p(W) b = ||b|| Q_k p(T_k)
  e_1``, and the Ritz values lie in ``[a, c]``; ``E_{k-1}``, the best uniform approximation
  error of f on ``[a, c]`` by degree ``k - 1``, is bounded by the Chebyshev tail above) and
  the a-posteriori bound from the final residual ``beta_k |e_k^T ...|``, plus the measured
  loss of the Lanczos relation (orthogonality, rounding) times ``1 / (1 - c)``
  (:mod:`sparsedp.randomwalk.krylov`).  A breakdown (invariant Krylov space) stops the
  iteration: the a-posteriori term then certifies the exact result of the smaller
  tridiagonal matrix.
* ``"quadrature"``: ``-log(1 - x) = int_0^1 x / (1 - s x) ds`` gives, for ``b`` orthogonal
  to 1, ``L b = int_0^1 (I - s W)^{-1} W b ds``.  m-point Gauss-Legendre in s; each node is a
  CG solve of ``(I - s_j W) y = W b`` (pyamg-preconditioned when ``I - s_j W`` is
  ill-conditioned).  Error bound = quadrature error + solve error:

  - quadrature: for scalar ``x`` the error is ``e_m(x) = sum_{k > 2m} x^k (1/k - Q_m(s^(k-1)))``
    with nonnegative coefficients (Gauss-Legendre underestimates ``s^(k-1)`` for
    ``k - 1 >= 2m``), so on ``[0, c]`` it is at most ``e_m(c)``, computed directly; on
    ``[a, 0)`` the derivative form of the Gauss error gives
    ``|e_m(x)| <= |x|^(2m+1) / ((2m + 1) binom(2m, m)^2)``;
  - solves: with the true residual ``r_j`` (recomputed after CG), the error of ``y_j`` is at
    most ``||r_j|| / (1 - s_j max(c, 0))``, as ``I - s_j W >= 1 - s_j c`` on ``1^perp``.
    A CG breakdown (NaN, possible with the AMG preconditioner of the singular ``I - W``) is
    retried without the preconditioner, and failing that ``y_j = 0`` is charged in full.
* ``"dense"``: eigendecomposition (``n <= DENSE_MAX_N``), the reference.

The bounds assume the interval contains the spectrum on ``1^perp``: the lower end is the
rigorous Gershgorin bound ``min_i (2 W_ii - 1)`` (or the dense eigenvalue), the upper end the
dense ``lambda_2`` (+ ``4 n eps``) or, for ``n > DENSE_MAX_N``, a Lanczos estimate certified
by the inertia of ``mu I - W`` (a sparse ``LDL^T``, :mod:`sparsedp.linalg.inertia`) when the
factorisation is affordable, and otherwise the estimate itself, labelled so
(:attr:`SpectralInterval.estimate`, see :func:`spectral_interval`).

``ln det'(I - W)`` (product of the nonzero eigenvalues of ``I - W``, equal to ``-tr L``) gives
the mean of ``L_uv`` over ordered pairs ``u != v``: ``sum_{u != v} L_uv = -tr L`` because
``1^T L 1 = 0``.  See :func:`log_pseudo_determinant`.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import scipy.sparse as sp
from scipy.sparse.linalg import LinearOperator, cg, splu

from sparsedp import resources, validation
from sparsedp.errors import GossipMatrixError, ParameterError
from sparsedp.linalg.certified import gamma
from sparsedp.linalg.inertia import (
    MARGIN,
    automatic_plan,
    envelope_cost,
    factorisation_plan,
    second_eigenvalue_bound,
)
from sparsedp.linalg.spectral import _amg_preconditioner
from sparsedp.linalg.stochastic import (
    as_square_sparse,
    check_gossip_matrix,
    distance_to_doubly_stochastic,
    matrix_facts,
)
from sparsedp.randomwalk.krylov import (
    SpectralInterval,
    chebyshev_columns,
    chebyshev_tail_bound,
    lanczos,
    lanczos_columns,
    lanczos_quadratic_form,
    matvec_rounding_factor,
    remove_mean,
)
from sparsedp.reprs import short_repr

__all__ = [
    "COLUMN_METHODS",
    "DENSE_MAX_N",
    "LANCZOS_CONVERGED",
    "LOGDET_METHODS",
    "LogDetResult",
    "LogGreenColumns",
    "SpectralInterval",
    "chebyshev_tail_bound",
    "check_random_walk_matrix",
    "log_green_columns",
    "log_green_matrix",
    "log_pseudo_determinant",
    "spectral_interval",
]

DENSE_MAX_N = 4000
LANCZOS_CONVERGED = 0.1  # the upper end's Ritz residual is at most this fraction of 1 - theta
CERTIFY_MARGIN = MARGIN  # the certificate tests mu = estimate + CERTIFY_MARGIN (1 - estimate)
_CERTIFY_TRIES = 5  # values of mu tried (1 - mu halved each time) before refusing
COLUMN_METHODS = ("chebyshev", "lanczos", "quadrature", "dense")
LOGDET_METHODS = ("auto", "dense", "sparse-lu", "slq")
SPARSE_LU_MAX_N = 200_000
SPARSE_LU_MAX_FLOPS = 3e11  # "auto" takes the sparse LU when its envelope needs at most this
_EPS = float(np.finfo(float).eps)
_MAX_DEGREE = 5000  # Chebyshev degree / Lanczos steps refused beyond this (gap too small)
_MAX_NODES = 4096  # Gauss-Legendre nodes refused beyond this
_PRECONDITION_ABOVE = 30.0  # condition-number estimate of I - sW above which AMG is used


def check_random_walk_matrix(W: Any) -> sp.csr_matrix:
    """W as CSR after checking Assumption 2 of the random-walk paper: nonnegative, symmetric,
    doubly stochastic, and irreducible (so that every eigenvalue but the top one is < 1).

    Raises ``GossipMatrixError`` naming the failing property (and row).
    """
    M = as_square_sparse(W)
    if M.shape[0] < 2:
        raise GossipMatrixError("W is 1 x 1: a random walk needs at least 2 nodes")
    check_gossip_matrix(M, require=("nonnegative", "symmetric", "doubly_stochastic",
                                    "irreducible"))
    return M


def spectral_interval(W: Any, lanczos_steps: int = 60, certify: bool | str = "auto",
                      max_memory: Any = None) -> SpectralInterval:
    """An interval containing the eigenvalues of a symmetric doubly stochastic W on ``1^perp``.

    ``n <= DENSE_MAX_N``: both ends from ``numpy.linalg.eigvalsh``, widened by ``4 n eps``.
    Upper ends (dense and certified) are also widened by
    :func:`sparsedp.linalg.stochastic.distance_to_doubly_stochastic` (W is accepted symmetric
    and stochastic to a tolerance; the bounds hold for the exact matrix that far away).
    Larger: lower end ``max(-1, min_i (2 W_ii - 1))`` (Gershgorin, rigorous for a nonnegative
    stochastic W).  Upper end: first an estimate ``theta + ||W y - theta y|| + 16 eps`` from
    the top Ritz pair ``(theta, y)`` of Lanczos on ``1^perp``, tested after ``lanczos_steps``
    steps and then each time the run has grown by half, until the residual is at most
    ``LANCZOS_CONVERGED (1 - theta)`` (at most ``_MAX_DEGREE`` steps): graphs that mix fast
    stop at ``lanczos_steps``, slowly mixing ones (geometric, grids, paths, communities) get a
    converged estimate.  Some eigenvalue lies within the residual of theta, but that it is
    the top one is only the usual Lanczos assumption.  Then the certificate
    (:func:`sparsedp.linalg.inertia.second_eigenvalue_bound`): at
    ``mu = estimate + CERTIFY_MARGIN (1 - estimate)``, a sparse ``LDL^T`` of ``mu I - W`` with
    exactly one negative pivot (Sylvester's law of inertia), or where its factors would fill
    in a dense Cholesky of ``mu I - W + J/n`` that runs to completion, proves
    ``lambda_2 <= mu + error`` (the factorisation's backward error charged), which becomes
    the upper end; more negative pivots or a breakdown move ``mu`` towards 1
    (``_CERTIFY_TRIES`` times, then ``GossipMatrixError``: the estimate was wrong).

    ``certify``: ``"auto"`` runs the certificate when its plan needs at most
    ``inertia.AUTO_MAX_FLOPS`` (``inertia.SPARSE_AUTO_FACTOR`` times that for the sparse
    route's reverse Cuthill-McKee envelope) and fits the memory budget, up to
    ``inertia.AUTO_MAX_N`` nodes (:func:`sparsedp.linalg.inertia.auto_skip_reason`: about
    the Lanczos estimate's time again on geometric graphs, to 1.5 10^5 nodes; expanders and
    heavy-tailed graphs to about 5000 nodes,
    where the factors fill in; at 10^4 nodes they take about 13-18 s); ``True`` always
    (``ResourceLimitError`` when the envelope does not fit ``max_memory``); ``False`` never.
    Without a certificate the upper end is the estimate and the interval says so
    (``estimate=True``, ``how``): bounds built on it are estimates.  So is any interval of a W
    whose rows sum to more than 1 beyond rounding (the checks' tolerance admits it; the lower
    end -1 holds for stochastic W only).

    Raises ``GossipMatrixError`` when W is not a random-walk matrix (naming the property), and
    when the upper end is not below 1 (W mixes too slowly for the log-Green bounds at a
    reasonable cost).
    """
    if certify not in ("auto", True, False):
        raise ParameterError(f"certify must be 'auto', True or False, got {certify!r}")
    M = check_random_walk_matrix(W)
    interval = _interval_of(M, lanczos_steps, certify, max_memory)
    excess = _row_sum_excess(M)
    if excess is None:
        return interval
    return dataclasses.replace(interval, estimate=True, how=f"{interval.how}; {excess}")


def _row_sum_excess(M: sp.csr_matrix) -> str | None:
    """Why W is not a stochastic matrix beyond rounding (``None`` when it is): a row summing
    to more than ``1 + 2 (d + 1) eps`` (d: the most entries in a row), which the checks'
    tolerance admits.  The interval's lower end -1 and the series behind the log-Green
    bounds hold for stochastic W only (such a row can put an eigenvalue below -1)."""
    facts = matrix_facts(M)
    d = facts.longest_row
    excess = float(facts.line_sums[0].max(initial=1.0)) - 1.0
    if excess <= 2.0 * (d + 1) * _EPS:
        return None
    return (f"not certified: a row of W sums to 1 + {excess:.2g}, beyond rounding (W is not "
            "stochastic; the lower end -1 and the series assume it is)")


def _interval_of(M: sp.csr_matrix, lanczos_steps: int, certify: bool | str,
                 max_memory: Any) -> SpectralInterval:
    """:func:`spectral_interval` of the checked W, before the row-sum test."""
    n = M.shape[0]
    defect = distance_to_doubly_stochastic(M)
    if n <= DENSE_MAX_N:
        ev = np.linalg.eigvalsh(M.toarray())
        slack = 4 * n * _EPS + defect
        return _separated(SpectralInterval(max(-1.0, float(ev[0] - slack)),
                                           float(ev[-2] + slack),
                                           f"dense eigvalsh (+ 4 n eps + {defect:.1g}, the "
                                           "distance to an exactly doubly stochastic W)"))
    lower = max(-1.0, float(np.min(2.0 * M.diagonal() - 1.0)))
    theta, residual, steps = _top_ritz_value(M, lanczos_steps)
    estimate = float(theta + residual + 16 * _EPS)
    lanczos_how = (f"Lanczos estimate {estimate:.10g} (top Ritz value {theta:.10g} + residual "
                   f"{residual:.2g} after {steps} Lanczos steps)")
    _separated(SpectralInterval(lower, estimate, f"Gershgorin lower end; {lanczos_how}", True))
    certified = _certified_upper_end(M, estimate, certify, max_memory)
    if isinstance(certified, str):
        return SpectralInterval(lower, estimate, f"Gershgorin lower end; upper end: "
                                f"{lanczos_how}, not certified: {certified}", estimate=True)
    upper, how = certified
    return _separated(SpectralInterval(lower, upper + defect, f"Gershgorin lower end; upper "
                                       f"end: {how} + {defect:.1g} (the distance to an exactly "
                                       f"doubly stochastic W), above the {lanczos_how}"))


def _certified_upper_end(M: sp.csr_matrix, estimate: float, certify: bool | str,
                         max_memory: Any) -> tuple[float, str] | str:
    """``(upper, how)``: a certified upper bound on ``lambda_2(W)`` from the inertia of
    ``mu I - W`` (see :func:`spectral_interval`), or the reason why there is none."""
    if certify is False:
        return "certify=False"
    budget = resources.memory_budget(max_memory)
    if certify == "auto":
        plan = automatic_plan(M, budget, "certify=True runs it")
        if isinstance(plan, str):
            return plan
    else:
        plan = factorisation_plan(M, budget)
        resources.require_within(plan.bytes, budget,
                                 f"the certificate of lambda_2(W) ({plan.method})",
                                 "certify='auto' reports the upper end as an estimate instead")
    mu = estimate + CERTIFY_MARGIN * (1.0 - estimate)
    disproved = ""  # why the estimate is known to be too low, once a shift has shown it
    for attempt in range(_CERTIFY_TRIES):
        if attempt:
            mu = 1.0 - (1.0 - mu) / 2.0
        try:
            test = second_eigenvalue_bound(M, mu, plan.method)
        except ValueError as exc:
            if not disproved:
                return f"no certificate ({exc})"
            continue  # the estimate is disproved: never fall back to it
        if test.bound is not None and test.bound < 1.0:
            return test.bound, (f"lambda_2 <= {test.bound:.10g}, certified at mu = {mu:.10g} "
                                f"({test.method}, backward error {test.error:.2g})")
        if test.beyond is not None and test.beyond < 0:
            return f"no certificate (mu I - W has no negative pivot at mu = {mu:.10g})"
        disproved = ("a dense Cholesky of mu I - W + c J breaks down" if test.beyond is None
                     else f"mu I - W still has {test.beyond + 1} negative pivots")
    raise GossipMatrixError(
        f"the Lanczos estimate {estimate:.10g} of lambda_2(W) is too low or cannot be "
        f"certified below 1: {disproved or 'no shift was certified'} at mu = {mu:.10g}; the "
        "log-Green bounds are not available for this W")


def _top_ritz_value(M: sp.csr_matrix, steps: int) -> tuple[float, float, int]:
    """``(theta, residual, steps)``: the top Ritz value of W on ``1^perp`` and its residual
    ``beta_k |e_k^T s|``, from one plain Lanczos run (no n x k storage) started from a fixed
    random vector, checked after ``steps`` steps and then each time the step count has grown
    by half, until the residual is at most ``LANCZOS_CONVERGED (1 - theta)``, the Krylov space
    is invariant, or ``_MAX_DEGREE`` steps were run."""
    n = M.shape[0]
    checks = iter(_check_schedule(max(1, steps)))
    next_check = [next(checks)]

    def converged(alpha: np.ndarray, beta: np.ndarray) -> bool:
        if len(alpha) < next_check[0]:
            return False
        next_check[0] = next(checks)
        theta, residual = _top_ritz_pair(alpha, beta)
        return residual <= LANCZOS_CONVERGED * (1.0 - theta)

    start = np.random.default_rng(0).standard_normal(n)
    run = lanczos(M, start, min(_MAX_DEGREE, n - 1), keep=False, stop=converged)
    theta, residual = _top_ritz_pair(run.alpha, np.append(run.beta, run.beta_next))
    return theta, residual, run.steps


def _check_schedule(first: int) -> Iterator[int]:
    """Step counts at which the Lanczos upper end is tested: ``first``, then 1.5 times more
    each time (the tests' tridiagonal eigenproblems cost little next to the products)."""
    k = first
    while True:
        yield k
        k += max(1, k // 2)


def _top_ritz_pair(alpha: np.ndarray, beta: np.ndarray) -> tuple[float, float]:
    """Top eigenvalue of the tridiagonal ``(alpha, beta[:-1])`` and its residual
    ``beta[-1] |last component of its eigenvector|``."""
    k = len(alpha)
    if k == 1:
        return float(alpha[0]), float(beta[-1])
    from scipy.linalg import eigh_tridiagonal

    theta, S = eigh_tridiagonal(alpha, beta[:-1], select="i", select_range=(k - 1, k - 1))
    return float(theta[0]), float(beta[-1] * abs(S[-1, 0]))


def _separated(interval: SpectralInterval) -> SpectralInterval:
    """``interval`` if its upper end is below 1, else ``GossipMatrixError``."""
    if not interval.upper < 1.0:
        raise GossipMatrixError(
            f"the second eigenvalue of W is not separated from 1 (upper bound "
            f"{interval.upper!r}; {interval.how}): the log-Green matrix cannot be evaluated "
            "with an error bound")
    return interval


def _interval(W: sp.csr_matrix, interval: SpectralInterval | None) -> SpectralInterval:
    return spectral_interval(W) if interval is None else interval


@dataclass(frozen=True)
class LogGreenColumns:
    """Columns ``L[:, s]`` for the requested sources, with a bound on their error.

    ``columns`` is ``n x len(sources)``; ``error_bound[j]`` bounds the Euclidean norm of the
    error of column j (hence every entry's error).  ``kind`` is ``"exact"`` for the dense
    eigendecomposition (to rounding), ``"approximation"`` otherwise, and ``"estimate"`` when
    the spectral interval's upper end is not certified (the error bound rests on it:
    :attr:`SpectralInterval.estimate`).  ``details`` records
    the degree / number of quadrature nodes, CG iterations and the interval used.
    """

    sources: np.ndarray
    columns: np.ndarray
    error_bound: np.ndarray
    method: str
    kind: str
    interval: SpectralInterval | None
    details: dict = field(default_factory=dict)

    __repr__ = short_repr


def _sources(sources: Any, n: int) -> np.ndarray:
    return validation.node_set(sources, n, "source")


def _centered_unit_block(sources: np.ndarray, n: int) -> np.ndarray:
    """``B = E_S - 1/n``: the columns ``e_s`` with their mean removed (orthogonal to 1)."""
    B = np.full((n, len(sources)), -1.0 / n)
    B[sources, np.arange(len(sources))] += 1.0
    return B


def log_green_matrix(W: Any) -> np.ndarray:
    """Dense ``L = -log(I - W + J/n)`` by eigendecomposition (``n <= DENSE_MAX_N``).

    ``W - J/n = V diag(mu) V^T`` (its eigenvalues are those of W on ``1^perp`` and 0 on the
    constant vector), and ``L = V diag(-log(1 - mu)) V^T``.
    """
    M = check_random_walk_matrix(W)
    n = M.shape[0]
    if n > DENSE_MAX_N:
        raise ParameterError(f"log_green_matrix forms an n x n matrix; n = {n} exceeds "
                             f"DENSE_MAX_N = {DENSE_MAX_N}: use log_green_columns")
    ev, V = np.linalg.eigh(M.toarray() - 1.0 / n)  # W - J/n: the constant vector -> 0
    f = -np.log1p(-ev)
    return (V * f) @ V.T


def gauss_legendre_error_bound(m: int, interval: SpectralInterval) -> float:
    """Bound on ``|int_0^1 x/(1 - s x) ds - Q_m|`` over x in the interval (module docstring).

    Positive side: ``e_m(c)`` computed directly with the floating-point rule, plus twice a
    bound on how far that rule is from the exact one there (weights within ``4 m eps``
    relative, nodes within ``4 eps``: ``sum_j (4 m eps w_j g(s_j) + 4 eps w_j |g'(s_j)|)``,
    ``g(s) = c/(1 - s c)``, largest at ``x = c`` for every ``x`` in ``[0, c]``), plus a
    rounding allowance; negative side: ``|a|^(2m+1) / ((2m + 1) binom(2m, m)^2)`` plus the
    same perturbation (``|g|, |g'| <= 1`` there).
    """
    s, w = _gauss_legendre_01(m)
    c = max(interval.upper, 0.0)
    exact = -math.log1p(-c)
    denom = 1.0 - s * c
    approx = float(np.sum(w * c / denom))
    rule = float(np.sum(w * (4.0 * m * _EPS * c / denom + 4.0 * _EPS * c * c / denom**2)))
    positive = max(exact - approx, 0.0) + 2.0 * rule + 4.0 * m * _EPS * (1.0 + exact)
    a = abs(min(interval.lower, 0.0))
    log_neg = (2 * m + 1) * math.log(a) if a > 0 else -math.inf
    log_neg -= math.log(2 * m + 1) + 2.0 * (math.lgamma(2 * m + 1) - 2.0 * math.lgamma(m + 1))
    negative = math.exp(log_neg) + 8.0 * (m + 1) * _EPS
    return max(positive, negative)


@functools.lru_cache(maxsize=64)
def _gauss_legendre_01(m: int) -> tuple[np.ndarray, np.ndarray]:
    """m-point Gauss-Legendre rule on [0, 1]: numpy's nodes, weights from the Christoffel
    function ``w_j = 2 / sum_{k<m} (2k + 1) P_k(x_j)^2`` (a sum of positive terms).  numpy's
    own weights lose up to 1e-8 relative accuracy at the end nodes for m ~ 1000, which
    against the integrand ``c/(1 - s c) ~ 1/(1 - c)`` there moved the rule by 8e-10 (more
    than the quadrature bound); these agree with a 40-digit rule to about 1.5e-12 there."""
    x, _ = np.polynomial.legendre.leggauss(m)
    x = (x - x[::-1]) / 2.0  # exactly symmetric
    p_prev, p = np.ones_like(x), x.copy()
    total = 1.0 + 3.0 * x * x
    for k in range(1, m - 1):
        p_prev, p = p, ((2 * k + 1) * x * p - k * p_prev) / (k + 1)
        total += (2 * k + 3) * p * p
    s, w = (x + 1.0) / 2.0, 1.0 / total
    s.setflags(write=False)
    w.setflags(write=False)
    return s, w


def _solve(A: LinearOperator, rhs: np.ndarray, atol: float, precond: Any, maxiter: int,
           callback: Any) -> np.ndarray:
    """CG for ``A y = rhs`` (mean removed from y).  A breakdown of preconditioned CG (the AMG
    preconditioner is built on the singular ``I - W``) can give NaN: then CG is rerun without
    it (``A`` is positive definite on ``1^perp``), and if that too fails, ``y = 0`` (the bound
    charges the residual ``||rhs||``).  The caller's bound uses the true residual of y."""
    for pre in ((precond, None) if precond is not None else (None,)):
        with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
            y, _ = cg(A, rhs, rtol=0.0, atol=atol, M=pre, maxiter=maxiter, callback=callback)
        if np.all(np.isfinite(y)):
            return y - y.mean()
    return np.zeros_like(rhs)


def _quadrature(M: sp.csr_matrix, B: np.ndarray, interval: SpectralInterval, tol: float,
                max_nodes: int) -> tuple[np.ndarray, np.ndarray, dict]:
    n = M.shape[0]
    norms = np.linalg.norm(B, axis=0)
    m = 2
    while gauss_legendre_error_bound(m, interval) * norms.max() > tol / 2.0:
        m = int(math.ceil(m * 1.25)) + 1
        if m > max_nodes:
            raise ParameterError(f"quadrature: {max_nodes} Gauss nodes do not reach "
                                 f"tol = {tol:g} (spectral interval [{interval.lower:.6g}, "
                                 f"{interval.upper:.6g}])")
    s_nodes, weights = _gauss_legendre_01(m)
    c_pos, a_neg = max(interval.upper, 0.0), abs(min(interval.lower, 0.0))
    WB = remove_mean(M @ B)
    rhs_norms = np.linalg.norm(WB, axis=0)
    mv = matvec_rounding_factor(M)  # the computed residual is itself rounded
    amg = None
    out = np.zeros_like(B)
    solve_err = np.zeros(B.shape[1])
    iterations = []
    for s, w in zip(s_nodes, weights, strict=True):
        A = LinearOperator((n, n), matvec=lambda x, s=s: x - s * (M @ x), dtype=np.float64)
        margin = 1.0 - s * c_pos  # lambda_min(I - sW) on 1^perp
        kappa = (1.0 + s * a_neg) / margin
        precond = None
        if kappa > _PRECONDITION_ABOVE:
            if amg is None:
                amg = _amg_preconditioner((sp.identity(n, format="csr") - M).tocsr())
            precond = amg
        for j in range(B.shape[1]):
            atol = 0.25 * tol * margin
            count = [0]

            def counter(_x, count=count):
                count[0] += 1

            y = _solve(A, WB[:, j], atol, precond, 10 * n, counter)
            residual = float(np.linalg.norm(WB[:, j] - A @ y))
            residual += _EPS * ((mv + 4.0) * float(np.linalg.norm(y)) + 2.0 * rhs_norms[j])
            out[:, j] += w * y
            solve_err[j] += w * residual / margin
            iterations.append(count[0])
    quad = gauss_legendre_error_bound(m, interval) * norms
    rounding = 8.0 * m * _EPS * np.linalg.norm(out, axis=0)
    return remove_mean(out), quad + solve_err + rounding, {
        "nodes": m, "cg_iterations": iterations, "matvecs": int(sum(iterations)) + m,
        "preconditioned": amg is not None, "quadrature_bound": quad.tolist(),
        "solve_bound": solve_err.tolist()}


def log_green_columns(W: Any, sources: Any, method: str = "chebyshev", tol: float = 1e-10,
                      interval: SpectralInterval | None = None,
                      max_degree: int = _MAX_DEGREE,
                      progress: bool | str | None = None) -> LogGreenColumns:
    """Columns ``L[:, s]`` of ``L = -log(I - W + J/n)`` for the given sources, matrix-free.

    ``method`` in :data:`COLUMN_METHODS` (see the module docstring for each method's formula
    and error bound).  ``tol`` is the target bound on the Euclidean error of each column; the
    achieved bound is returned in ``error_bound``.  ``interval`` (an eigenvalue enclosure on
    ``1^perp``) is computed with :func:`spectral_interval` when not given.  ``sources`` are
    rows of W (``0..n-1``).  ``progress``: a bar over the Chebyshev terms
    (:mod:`sparsedp.progress`).

    Parameters
    ----------
    W : array_like or scipy.sparse matrix
        Symmetric, doubly stochastic random-walk matrix.
    sources : int or sequence of int
        The columns wanted (rows of W).
    method : {"chebyshev", "lanczos", "quadrature", "dense"}, default "chebyshev"
    tol : float, default 1e-10
        Target bound on the Euclidean error of each column (> 0).
    interval : SpectralInterval, optional
        Eigenvalue enclosure of W on ``1^perp`` (computed when not given).
    max_degree : int, optional
        Largest polynomial degree / Krylov dimension.
    progress : bool or str, optional
        Progress bar (:mod:`sparsedp.progress`).

    Returns
    -------
    LogGreenColumns
        ``columns`` (``n x len(sources)``) and ``error_bound`` per column.

    Raises
    ------
    GossipMatrixError
        If W is not a valid random-walk matrix.
    GraphError
        If a source is not a row of W.
    ParameterError
        For an unknown method, ``tol <= 0`` or an empty source list.

    Examples
    --------
    >>> import networkx as nx, sparsedp
    >>> W = sparsedp.gossip_matrix(nx.cycle_graph(8))
    >>> col = sparsedp.log_green_columns(W, [0])
    >>> col.columns[:, 0].round(4).tolist()
    [0.4414, 0.3476, -0.1373, -0.2757, -0.3106, -0.2757, -0.1373, 0.3476]
    >>> col.kind, bool(col.error_bound[0] < 1e-10)
    ('approximation', True)
    """
    if method not in COLUMN_METHODS:
        raise ParameterError(f"unknown log-Green method {method!r}; valid methods: "
                             + ", ".join(COLUMN_METHODS))
    tol = validation.real("tol", tol)
    if not tol > 0:
        raise ParameterError(f"tol must be > 0, got {tol!r}")
    M = check_random_walk_matrix(W)
    n = M.shape[0]
    src = _sources(sources, n)
    if method == "dense":
        L = log_green_matrix(M)
        cols = L[:, src]
        bound = np.full(len(src), 64.0 * n * _EPS * max(1.0, float(np.abs(L).max())))
        return LogGreenColumns(src, cols, bound, "dense eigendecomposition", "exact", None,
                               {"n": n})
    iv = _interval(M, interval)
    B = _centered_unit_block(src, n)
    if method == "chebyshev":
        cols, bound, details = chebyshev_columns(M, B, iv, tol, max_degree, progress)
    elif method == "lanczos":
        cols, bound, details = lanczos_columns(M, B, iv, tol, max_degree)
    else:
        cols, bound, details = _quadrature(M, B, iv, tol, _MAX_NODES)
    kind = "estimate" if iv.estimate else "approximation"
    return LogGreenColumns(src, cols, bound, method, kind, iv, details)


# --------------------------------------------------------------------------------------------
# ln det'(I - W)
# --------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class LogDetResult:
    """``ln det'(I - W)`` (sum of ``log(1 - lambda_i)`` over ``i >= 2``, i.e. ``-tr L``).

    ``kind`` is ``"exact"`` (dense eigenvalues or sparse LU, to rounding; ``error`` is a
    rounding allowance) or ``"estimate"`` (stochastic Lanczos quadrature: ``error`` is the
    half-width of a 95% normal confidence interval from the probe variance plus the
    deterministic Lanczos quadrature bound; a statistical, not a certified, statement).
    """

    value: float
    error: float
    kind: str
    method: str
    details: dict = field(default_factory=dict)

    __repr__ = short_repr


def _logdet_dense(M: sp.csr_matrix) -> LogDetResult:
    n = M.shape[0]
    ev = np.linalg.eigvalsh(M.toarray())[:-1]  # drop the top eigenvalue 1
    value = float(np.sum(np.log1p(-ev)))
    err = 4.0 * n * _EPS * float(np.sum(1.0 / (1.0 - ev)))
    return LogDetResult(value, err, "exact", "dense eigvalsh", {"n": n})


def _sparse_lu_affordable(M: sp.csr_matrix) -> bool:
    """Whether ``"auto"`` factors ``I - W``: its reverse Cuthill-McKee envelope (a bound on
    that ordering's fill) within ``SPARSE_LU_MAX_FLOPS`` and the memory budget."""
    cost = envelope_cost(M)
    return cost.flops <= SPARSE_LU_MAX_FLOPS and cost.bytes <= resources.memory_budget()


def _logdet_sparse_lu(M: sp.csr_matrix) -> LogDetResult:
    """Matrix-tree theorem: ``det'(I - W) = n det((I - W) with row and column 0 removed)``.

    ``I - W`` is a weighted graph Laplacian (zero row sums, nonpositive off-diagonal entries),
    so all its cofactors are equal and the product of its nonzero eigenvalues is n times one
    of them.  The reduced matrix is positive definite; SuperLU gives ``sum log |U_ii|``, with
    the error of :func:`_lu_log_det_error` (kind ``"estimate"`` when W's rows sum to more than
    1 beyond rounding: the cofactor is then not certainly an M-matrix)."""
    n = M.shape[0]
    R = (sp.identity(n, format="csc") - M.tocsc())[1:, 1:].tocsc()
    lu = splu(R, permc_spec="MMD_AT_PLUS_A")
    logs = np.log(np.abs(lu.U.diagonal()))
    value = math.log(n) + float(np.sum(logs))
    err = _lu_log_det_error(R, lu) + 4.0 * n * _EPS * (1.0 + float(np.abs(logs).sum()))
    kind = "exact" if math.isfinite(err) and _row_sum_excess(M) is None else "estimate"
    return LogDetResult(value, err, kind, "sparse LU (matrix-tree cofactor)",
                        {"n": n, "nnz_L": int(lu.L.nnz), "nnz_U": int(lu.U.nnz)})


def _lu_log_det_error(R: sp.csc_matrix, lu) -> float:
    """A bound on ``|log det R - sum log |U_ii||`` for the computed LU of the nonsingular
    M-matrix ``R`` (``inf`` when none follows).

    The factors are exact for ``R + E``: the LU's backward error ``|Delta| <= gamma_(n-1)
    |L| |U|`` (Higham Thm 9.3; ``||Delta||_2 <= sqrt(||.||_1 ||.||_inf)`` of that bound) and the
    rounding of the diagonal ``fl(1 - W_ii)`` (``u max_i R_ii``).  With ``eta = ||R^-1||_2
    ||E||_2 < 1`` every eigenvalue of ``R^-1 E`` is below ``eta`` in modulus, so
    ``|log |det(I + R^-1 E)|| <= -m log(1 - eta)`` (m = n - 1 eigenvalues).  ``R^-1 >= 0``
    (M-matrix), so ``||R^-1||_inf = ||R^-1 1||_inf <= ||y||_inf / (1 - ||r||_inf)`` for the
    solve ``y`` and its residual ``r = R y - 1`` (its computed value plus the rounding of
    computing it, ``gamma_(d+2) (|R| |y| + 1)``, d the most entries in a row); the same with
    ``R^T`` for the 1-norm, and ``||R^-1||_2 <= sqrt(||R^-1||_1 ||R^-1||_inf)``.
    """
    m = R.shape[0]
    ones = np.ones(m)
    absL, absU, absR = abs(lu.L), abs(lu.U), abs(R)
    growth_inf = float((absL @ (absU @ ones)).max(initial=0.0))
    growth_one = float((absU.T @ (absL.T @ ones)).max(initial=0.0))
    forming = 0.5 * _EPS * float(np.abs(R.diagonal()).max(initial=0.0))
    E = gamma(max(m, 1)) * math.sqrt(growth_inf * growth_one) + forming
    d = int(np.diff(R.tocsr().indptr).max(initial=0))
    norms = []
    for trans, A in (("N", R), ("T", R.T)):
        y = lu.solve(ones, trans=trans)
        r = float(np.abs(A @ y - ones).max(initial=0.0))
        r += gamma(d + 2) * float(((absR.T if trans == "T" else absR) @ np.abs(y) + 1.0).max())
        if not r < 1.0:
            return math.inf
        norms.append(float(np.abs(y).max(initial=0.0)) / (1.0 - r))
    eta = math.sqrt(norms[0] * norms[1]) * E * (1.0 + 1e-6)
    return -m * math.log1p(-eta) * (1.0 + 1e-6) if eta < 1.0 else math.inf


def _logdet_slq(M: sp.csr_matrix, probes: int, steps: int | None, seed: int,
                interval: SpectralInterval) -> LogDetResult:
    """Hutchinson with Rademacher probes z (projected on ``1^perp``):
    ``-tr L = E[z^T log(I - W) z]`` restricted to ``1^perp``, each quadratic form by k-point
    Lanczos (Gauss) quadrature ``||Pz||^2 sum_j tau_j^2 log(1 - theta_j)``
    (:func:`sparsedp.randomwalk.krylov.lanczos_quadratic_form`).

    Each form's error is at most the smaller of ``2 ||Pz||^2 E_{2k-1}`` (exact for degree
    ``2k - 1``; the Chebyshev tail bound) and the a-posteriori Lanczos bound, plus the loss of
    the Lanczos relation; the mean of these bounds bounds the error of the mean.  A breakdown
    (the Krylov space of z is invariant: small or symmetric graphs) stops the Lanczos run, and
    its smaller tridiagonal matrix gives the exact form; a probe with ``Pz = 0`` gives 0."""
    n = M.shape[0]
    if steps is None:
        steps = 2
        while 2.0 * chebyshev_tail_bound(2 * steps - 1, interval) * n > 1e-8:
            steps += 1
            if steps > _MAX_DEGREE:
                break
    steps = min(steps, n - 1)
    rng = np.random.default_rng(seed)
    samples, bounds = np.empty(probes), np.empty(probes)
    short_runs = 0
    for p in range(probes):
        z = rng.choice([-1.0, 1.0], size=n)
        samples[p], bounds[p], used = lanczos_quadratic_form(M, z, steps, interval)
        short_runs += used < steps
    value = float(samples.mean())
    quad_bound = float(bounds.mean())
    stderr = float(samples.std(ddof=1) / math.sqrt(probes)) if probes > 1 else math.inf
    return LogDetResult(value, 1.96 * stderr + quad_bound, "estimate",
                        "stochastic Lanczos quadrature",
                        {"probes": probes, "lanczos_steps": steps, "standard_error": stderr,
                         "quadrature_bound": quad_bound, "breakdowns": short_runs,
                         "seed": seed})


def log_pseudo_determinant(W: Any, method: str = "auto", probes: int = 64,
                           lanczos_steps: int | None = None, seed: int = 0,
                           interval: SpectralInterval | None = None) -> LogDetResult:
    """``ln det'(I - W) = sum_{i >= 2} log(1 - lambda_i) = -tr L`` of a random-walk matrix.

    ``method``: ``"dense"`` (eigenvalues, ``n <= DENSE_MAX_N``), ``"sparse-lu"`` (exact
    sparse factorisation of a cofactor of ``I - W``; moderate n, fill-in permitting),
    ``"slq"`` (stochastic Lanczos quadrature with ``probes`` Rademacher vectors; an estimate
    with a stated 95% error) or ``"auto"`` (dense, then sparse LU up to
    ``SPARSE_LU_MAX_N`` nodes where its reverse Cuthill-McKee envelope needs at most
    ``SPARSE_LU_MAX_FLOPS`` within the memory budget, then SLQ: an expander's factors fill
    in, about 10^10 entries at 10^5 nodes).

    Parameters
    ----------
    W : array_like or scipy.sparse matrix
        Symmetric, doubly stochastic random-walk matrix.
    method : {"auto", "dense", "sparse-lu", "slq"}, default "auto"
    probes : int, default 64
        Rademacher probes of ``"slq"`` (>= 2).
    lanczos_steps : int, optional
        Lanczos steps per probe (default: from the spectral interval).
    seed : int, default 0
        Seed of the probes.
    interval : SpectralInterval, optional
        Eigenvalue enclosure of W on ``1^perp`` (computed when not given).

    Returns
    -------
    LogDetResult
        ``value``, ``error``, ``kind`` (``"exact"`` or ``"estimate"``) and the method.

    Raises
    ------
    GossipMatrixError
        If W is not a valid random-walk matrix.
    ParameterError
        For an unknown method, ``"dense"`` with n too large, or ``probes < 2``.

    Examples
    --------
    >>> import networkx as nx, sparsedp
    >>> W = sparsedp.gossip_matrix(nx.cycle_graph(8))
    >>> ld = sparsedp.log_pseudo_determinant(W)
    >>> round(ld.value, 6), ld.kind, ld.method
    (-3.531403, 'exact', 'dense eigvalsh')
    >>> round(sparsedp.log_pseudo_determinant(W, method="sparse-lu").value, 6)
    -3.531403
    """
    if method not in LOGDET_METHODS:
        raise ParameterError(f"unknown log-determinant method {method!r}; valid methods: "
                             + ", ".join(LOGDET_METHODS))
    M = check_random_walk_matrix(W)
    n = M.shape[0]
    if method == "auto":
        method = "dense" if n <= DENSE_MAX_N else (
            "sparse-lu" if n <= SPARSE_LU_MAX_N and _sparse_lu_affordable(M) else "slq")
    if method == "dense":
        if n > DENSE_MAX_N:
            raise ParameterError(f"dense log-determinant needs n <= {DENSE_MAX_N}, got {n}")
        return _logdet_dense(M)
    if method == "sparse-lu":
        return _logdet_sparse_lu(M)
    if isinstance(probes, bool) or not isinstance(probes, int) or probes < 2:
        raise ParameterError(f"probes must be an integer >= 2, got {probes!r}")
    iv = _interval(M, interval)
    return _logdet_slq(M, probes, lanczos_steps, seed, iv)
