"""Spectral quantities of gossip matrices for large n.

For a row-stochastic W the top eigenvalue is ``lambda_1 = 1`` (eigenvector: the constant vector).
Mixing is governed by the other eigenvalues: with ``1 = lambda_1 >= lambda_2 >= ... >= lambda_n``
(symmetric W), ``rho = max(|lambda_2|, |lambda_n|)`` is the rate at which ``W^t x`` approaches
the average and ``gap = 1 - rho`` the spectral gap.

:func:`spectral_info` picks a method by size and symmetry:

* ``n <= DENSE_MAX_N``: dense ``numpy.linalg.eigvalsh`` (symmetric) / ``eigvals`` (otherwise);
* symmetric, large: ARPACK ``eigsh`` for the two largest and the smallest eigenvalue; when
  ARPACK does not converge within its iteration budget (small gap), LOBPCG on ``L = I - W`` with
  the constant vector deflated and a pyamg smoothed-aggregation preconditioner for lambda_2, and
  unpreconditioned LOBPCG for lambda_n;
* non-symmetric, large: ARPACK ``eigs`` for the three eigenvalues of largest modulus.

Start vectors come from a fixed seed and the AMG setup avoids numpy's global RNG, so results are
reproducible.

:func:`stationary_distribution` returns the left Perron vector ``pi`` (``pi W = pi``).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyamg
import scipy.sparse as sp
from scipy.sparse.linalg import ArpackNoConvergence, LinearOperator, eigs, eigsh, lobpcg

from sparsedp import resources
from sparsedp.errors import GossipMatrixError, ParameterError
from sparsedp.linalg.inertia import (
    MARGIN,
    automatic_plan,
    lowest_eigenvalue_bound,
    second_eigenvalue_bound,
)
from sparsedp.linalg.stochastic import (
    as_square_sparse,
    check_gossip_matrix,
    distance_to_doubly_stochastic,
    has_property,
)
from sparsedp.reprs import short_repr

__all__ = ["DENSE_MAX_N", "METHODS", "RhoBound", "SpectralInfo", "rho_bound", "spectral_info",
           "stationary_distribution"]

DENSE_MAX_N = 2000
METHODS = ("auto", "dense", "eigsh", "lobpcg", "eigs")
SYMMETRY_ATOL = 1e-10  # W counts as symmetric when max |W - W^T| <= SYMMETRY_ATOL
_MIN_SPARSE_N = 10  # the iterative solvers need a few more dimensions than eigenvectors sought
_ARPACK_MAXITER = 50  # implicit restarts before ARPACK gives up (auto: LOBPCG takes over)
_ARPACK_NCV = 32  # Lanczos / Arnoldi basis size
_LOBPCG_MAXITER = 500
_HUB_FACTOR = 20  # max degree > _HUB_FACTOR x mean degree: use plain aggregation in the AMG
_SEED = 0  # start vectors come from a fixed seed, so results are reproducible


@dataclass(frozen=True)
class SpectralInfo:
    """Extreme eigenvalues of a gossip matrix W and how accurately they are known.

    Symmetric W: ``lambda_2`` is the second largest eigenvalue, ``lambda_n`` the smallest,
    ``rho = max(|lambda_2|, |lambda_n|)``, ``gap = 1 - rho``.  ``tolerance`` bounds the error of
    each reported eigenvalue: for the iterative methods it is the largest residual norm
    ``||W v - theta v||`` (unit ``v``), and a symmetric W has an eigenvalue within that distance
    of each Ritz value ``theta`` (the residual cannot tell whether that eigenvalue is lambda_2
    itself or one the solver skipped, which random starts make unlikely); for the dense method
    it is the backward-error bound ``n eps max|lambda|``.

    Non-symmetric W (``symmetric=False``) or method ``"eigs"``: ``moduli`` are the (up to)
    three largest eigenvalue moduli in decreasing order, ``rho = moduli[1]`` (the second largest
    modulus, which governs convergence), ``lambda_2`` is the real part of the eigenvalue of
    second-largest modulus and ``lambda_n`` the smallest real part of all eigenvalues (NaN when
    computed with ``eigs``, which only finds the largest moduli).  ``tolerance`` is then a
    backward error (residual norm, or ``n eps ||W||_F`` for the dense method), not a bound on
    the eigenvalue error.

    Attributes
    ----------
    lambda_2 : float
        Second largest eigenvalue (real part of the one of second-largest modulus for a
        non-symmetric W).
    lambda_n : float
        Smallest eigenvalue (smallest real part; NaN with ``"eigs"``).
    rho : float
        ``max(|lambda_2|, |lambda_n|)`` (second largest modulus for a non-symmetric W).
    gap : float
        ``1 - rho``.
    method : str
        The method that computed the values (``"dense eigvalsh"``, ``"eigsh"``, ...).
    tolerance : float
        Error bound of each eigenvalue (symmetric W) or backward error (otherwise).
    symmetric : bool
        Whether W is symmetric (``max |W - W^T| <= 1e-10``).
    moduli : tuple of float or None
        The (up to) three largest eigenvalue moduli, for a non-symmetric W or ``"eigs"``.

    Examples
    --------
    >>> import networkx as nx, sparsedp
    >>> info = sparsedp.spectral_info(sparsedp.gossip_matrix(nx.cycle_graph(8)))
    >>> info.method, info.symmetric, info.moduli
    ('dense eigvalsh', True, None)
    >>> info.tolerance < 1e-12
    True
    """

    lambda_2: float
    lambda_n: float
    rho: float
    gap: float
    method: str
    tolerance: float
    symmetric: bool = True
    moduli: tuple[float, ...] | None = None

    __repr__ = short_repr


def _residual(W: sp.csr_matrix, theta: float, v: np.ndarray) -> float:
    """``||W v - theta v|| / ||v||``."""
    return float(np.linalg.norm(W @ v - theta * v) / np.linalg.norm(v))


def _start(n: int, k: int) -> np.ndarray:
    """``n x k`` standard normal start block from the fixed seed."""
    return np.random.default_rng(_SEED).standard_normal((n, k))


# --------------------------------------------------------------------------------------------
# Symmetric iterative solvers; each returns (eigenvalue, residual norm)
# --------------------------------------------------------------------------------------------

def _eigsh_extreme(W: sp.csr_matrix, tol: float, which: str) -> tuple[float, float]:
    """ARPACK: ``which="LA"`` -> lambda_2 (smaller of the two largest), ``"SA"`` -> lambda_n."""
    k = 2 if which == "LA" else 1
    vals, vecs = eigsh(W, k=k, which=which, tol=tol, v0=_start(W.shape[0], 1)[:, 0],
                       ncv=min(W.shape[0] - 1, _ARPACK_NCV), maxiter=_ARPACK_MAXITER)
    i = int(np.argmin(vals))
    return float(vals[i]), _residual(W, vals[i], vecs[:, i])


def _amg_preconditioner(L: sp.csr_matrix) -> LinearOperator:
    """pyamg smoothed-aggregation V-cycle for the Laplacian-like ``L = I - W``, acting on
    ``1^perp``: ``x -> P V(P x)`` with ``P = I - 1 1^T / n``.

    The projection matters: the coarsest level holds the (numerically ~0) constant mode, whose
    pseudo-inverse would otherwise blow up to ~1e16 and break LOBPCG.  Jacobi prolongation
    smoothing uses the deterministic local spectral-radius bound (``weighting="local"``; the
    default draws from numpy's global RNG).  On graphs with hubs (max degree > ``_HUB_FACTOR`` x
    mean degree) the smoothed prolongator fills the coarse levels (operator complexity ~30 on
    Barabasi-Albert graphs), so plain aggregation (``smooth=None``) is used there.
    """
    counts = np.diff(L.indptr)
    hubs = counts.max() > _HUB_FACTOR * counts.mean()
    smooth = None if hubs else ("jacobi", {"omega": 4.0 / 3.0, "weighting": "local"})
    cycle = pyamg.smoothed_aggregation_solver(L, smooth=smooth).aspreconditioner()

    def apply(x: np.ndarray) -> np.ndarray:
        y = cycle @ (x - x.mean(axis=0))
        return y - y.mean(axis=0)

    return LinearOperator(L.shape, matvec=apply, matmat=apply, dtype=np.float64)


def _lobpcg_smallest(A: sp.csr_matrix, tol: float, M: LinearOperator | None = None,
                     Y: np.ndarray | None = None) -> tuple[float, float]:
    """Smallest eigenvalue of symmetric A (in ``Y^perp``) by LOBPCG with preconditioner M, and
    the residual norm of its Ritz vector.  Stopping at ``_LOBPCG_MAXITER`` is not an error: the
    residual reports the accuracy reached."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Exited", category=UserWarning)
        vals, vecs = lobpcg(A, _start(A.shape[0], 1), M=M, Y=Y, tol=tol,
                            maxiter=_LOBPCG_MAXITER, largest=False)
    return float(vals[0]), _residual(A, vals[0], vecs[:, 0])


def _lobpcg_lambda_2(W: sp.csr_matrix, tol: float) -> tuple[float, float]:
    """``lambda_2 = 1 - mu``, ``mu`` the smallest eigenvalue of ``L = I - W`` on ``1^perp``.

    For symmetric stochastic W, ``L 1 = 0`` and L is positive semidefinite; ``L v - mu v =
    -(W v - lambda_2 v)``, so the residual carries over.
    """
    L = (sp.identity(W.shape[0], format="csr") - W).tocsr()
    mu, residual = _lobpcg_smallest(L, tol, M=_amg_preconditioner(L),
                                    Y=np.ones((W.shape[0], 1)))
    return 1.0 - mu, residual


def _lobpcg_lambda_n(W: sp.csr_matrix, tol: float) -> tuple[float, float]:
    """Smallest eigenvalue of W by unpreconditioned LOBPCG."""
    return _lobpcg_smallest(W, tol)


def _arpack_or(W: sp.csr_matrix, tol: float, which: str, strict: bool,
               fallback: Callable[[sp.csr_matrix, float], tuple[float, float]],
               fallback_name: str) -> tuple[float, float, str]:
    """(eigenvalue, residual, how) by ARPACK; when it does not converge, re-raise if ``strict``
    else use ``fallback``."""
    try:
        return (*_eigsh_extreme(W, tol, which), "ARPACK eigsh")
    except ArpackNoConvergence:
        if strict:
            raise
    return (*fallback(W, tol), f"{fallback_name} (ARPACK did not converge)")


def _sparse_symmetric(W: sp.csr_matrix, tol: float, method: str) -> SpectralInfo:
    """``method``: "eigsh" (ARPACK only), "lobpcg" (LOBPCG + AMG for lambda_2) or "auto"."""
    strict = method == "eigsh"
    if method == "lobpcg":
        lam2, res2, how2 = (*_lobpcg_lambda_2(W, tol), "LOBPCG + pyamg")
    else:
        lam2, res2, how2 = _arpack_or(W, tol, "LA", strict, _lobpcg_lambda_2, "LOBPCG + pyamg")
    lamn, resn, hown = _arpack_or(W, tol, "SA", strict, _lobpcg_lambda_n, "LOBPCG")
    how = how2 if how2 == hown else f"{how2} for lambda_2, {hown} for lambda_n"
    rho = max(abs(lam2), abs(lamn))
    return SpectralInfo(lam2, lamn, rho, 1.0 - rho, how, max(res2, resn))


def _sparse_nonsymmetric(W: sp.csr_matrix, tol: float, symmetric: bool) -> SpectralInfo:
    vals, vecs = eigs(W, k=3, which="LM", tol=tol, v0=_start(W.shape[0], 1)[:, 0],
                      ncv=min(W.shape[0] - 1, _ARPACK_NCV), maxiter=_ARPACK_MAXITER)
    order = np.argsort(-np.abs(vals), kind="stable")
    vals, vecs = vals[order], vecs[:, order]
    residual = max(_residual(W, vals[i], vecs[:, i]) for i in range(len(vals)))
    moduli = tuple(float(m) for m in np.abs(vals))
    return SpectralInfo(float(vals[1].real), float("nan"), moduli[1], 1.0 - moduli[1],
                        "ARPACK eigs", residual, symmetric, moduli)


def _dense(W: sp.csr_matrix, symmetric: bool) -> SpectralInfo:
    A = W.toarray()
    n = A.shape[0]
    eps = np.finfo(np.float64).eps
    if symmetric:
        ev = np.linalg.eigvalsh(A)  # ascending
        rho = max(abs(ev[-2]), abs(ev[0]))
        return SpectralInfo(float(ev[-2]), float(ev[0]), float(rho), float(1.0 - rho),
                            "dense eigvalsh", float(n * eps * np.abs(ev).max()))
    ev = np.linalg.eigvals(A)
    top = ev[np.argsort(-np.abs(ev), kind="stable")[:3]]
    moduli = tuple(float(m) for m in np.abs(top))
    return SpectralInfo(float(top[1].real), float(ev.real.min()), moduli[1], 1.0 - moduli[1],
                        "dense eigvals", float(n * eps * np.linalg.norm(A)), False, moduli)


def spectral_info(W: Any, method: str = "auto", tol: float = 1e-8) -> SpectralInfo:
    """Second largest / smallest eigenvalue, ``rho`` and spectral gap of a row-stochastic W.

    ``method`` is one of :data:`METHODS`: ``"auto"`` (dense for ``n <= DENSE_MAX_N``, else
    ``eigsh`` with LOBPCG fallback for symmetric W and ``eigs`` otherwise), ``"dense"``,
    ``"eigsh"`` (ARPACK only; raises ``ArpackNoConvergence`` when it does not converge),
    ``"lobpcg"`` (LOBPCG + AMG for lambda_2, symmetric W) or ``"eigs"``.  lambda_n always comes
    from ARPACK, with LOBPCG as fallback except under ``"eigsh"``.

    ``tol`` is the requested residual tolerance of the iterative solvers;
    :attr:`SpectralInfo.tolerance` reports what was achieved, and a ``RuntimeWarning`` is issued
    when it exceeds ``10 tol`` (a solver stopped at its iteration limit).  W must be
    row-stochastic (``GossipMatrixError`` otherwise).

    Parameters
    ----------
    W : array_like or scipy.sparse matrix
        Row-stochastic gossip matrix, n >= 2.
    method : {"auto", "dense", "eigsh", "lobpcg", "eigs"}, default "auto"
        The eigensolver (see above).
    tol : float, default 1e-8
        Requested residual tolerance of the iterative solvers.

    Returns
    -------
    SpectralInfo
        lambda_2, lambda_n, rho, gap, the method used and the achieved tolerance.

    Raises
    ------
    GossipMatrixError
        If W is not row-stochastic (or not a square numeric matrix) or is 1 x 1.
    ParameterError
        For an unknown method, ``"eigsh"``/``"lobpcg"`` with a non-symmetric W, or an
        iterative method with n < 10.
    scipy.sparse.linalg.ArpackNoConvergence
        With ``method="eigsh"`` when ARPACK does not converge.

    Warns
    -----
    RuntimeWarning
        When the achieved tolerance exceeds ``10 tol``.

    Examples
    --------
    >>> import networkx as nx, sparsedp
    >>> W = sparsedp.gossip_matrix(nx.cycle_graph(8), scheme="metropolis")
    >>> info = sparsedp.spectral_info(W)
    >>> round(info.lambda_2, 6), round(info.lambda_n, 6), round(info.gap, 6)
    (0.804738, -0.333333, 0.195262)
    >>> P = sparsedp.gossip_matrix(nx.path_graph(3), scheme="row-normalised")
    >>> info = sparsedp.spectral_info(P)  # periodic: rho = 1, no gap
    >>> info.symmetric, round(info.rho, 6), round(info.gap, 6)
    (False, 1.0, 0.0)
    """
    if method not in METHODS:
        raise ParameterError(f"unknown spectral method {method!r}; valid methods: "
                             + ", ".join(METHODS))
    M = as_square_sparse(W)
    check_gossip_matrix(M, require=("row_stochastic",))
    n = M.shape[0]
    if n < 2:
        raise GossipMatrixError("W is 1 x 1: lambda_2 is undefined")
    symmetric = has_property(M, "symmetric", atol=SYMMETRY_ATOL)
    if method == "auto" and n <= DENSE_MAX_N:
        method = "dense"
    elif method == "auto" and not symmetric:
        method = "eigs"
    if method in ("eigsh", "lobpcg") and not symmetric:
        raise ParameterError(f"method {method!r} needs a symmetric W; use 'eigs' or 'auto'")
    if method != "dense" and n < _MIN_SPARSE_N:
        raise ParameterError(f"method {method!r} needs n >= {_MIN_SPARSE_N}; use 'dense'")
    if method == "dense":
        return _dense(M, symmetric)
    if method == "eigs":
        info = _sparse_nonsymmetric(M, tol, symmetric)
    else:
        info = _sparse_symmetric(M, tol, method)  # "eigsh", "lobpcg" or "auto"
    if info.tolerance > 10 * tol:
        warnings.warn(f"spectral_info: achieved tolerance {info.tolerance:.3g} is above the "
                      f"requested {tol:g} ({info.method})", RuntimeWarning, stacklevel=2)
    return info


@dataclass(frozen=True)
class RhoBound:
    """An upper bound ``value`` on ``rho = max(|lambda_2|, |lambda_n|)`` of a symmetric W,
    ``note`` (how it was obtained) and whether it is ``certified`` (see :func:`rho_bound`)."""

    value: float
    note: str
    certified: bool


def rho_bound(W: Any, info: SpectralInfo | None = None) -> RhoBound:
    """``rho + tolerance`` of :func:`spectral_info` (``info``, computed when not given),
    certified for the iterative methods by Sylvester's law of inertia, plus twice
    :func:`sparsedp.linalg.stochastic.distance_to_doubly_stochastic` (the checks accept W
    symmetric and stochastic to a tolerance: ``||W - J/n||_2 <= rho(W') + ||W - W'||`` and
    the eigenvalues of W' are within ``||W - W'||`` of those computed).

    Dense method (``n <= DENSE_MAX_N``): ``rho + tolerance``, an upper bound up to LAPACK's
    backward-error model.  Iterative methods: the residual shows only that SOME eigenvalue
    lies within ``tolerance`` of each estimate, so sparse ``LDL^T`` factorisations of
    ``mu I - W`` (one negative pivot) and ``W - nu I`` (none), with ``mu`` and ``nu``
    ``inertia.MARGIN`` of the estimated gap beyond the estimates, prove
    ``nu' <= lambda_n <= lambda_2 <= mu'`` (:mod:`sparsedp.linalg.inertia`; ``mu'``, ``nu'``
    the shifts moved by the factorisations' backward error) and the value is
    ``max(|mu'|, |nu'|)``.  When the factorisation is not attempted
    (:func:`sparsedp.linalg.inertia.auto_skip_reason`: expanders beyond about 5000 nodes, any
    graph beyond ``inertia.AUTO_MAX_N``), fails, or a count contradicts the estimates, the
    value is the estimate and ``certified`` is False.
    ``GossipMatrixError`` for a non-symmetric W.
    """
    info = spectral_info(W) if info is None else info
    if not info.symmetric:
        raise GossipMatrixError("W is not symmetric: rho_bound needs a symmetric W")
    defect = 2.0 * distance_to_doubly_stochastic(W)
    upper = float(info.rho + info.tolerance + defect)
    if info.method.startswith("dense"):
        return RhoBound(upper, f"rho <= {upper:.12g}: dense eigenvalues {info.rho:.12g} + "
                               f"backward-error bound {info.tolerance:.3g} + {defect:.1g} (twice "
                               "the distance to an exactly doubly stochastic W)", True)
    estimate = (f"rho <= {upper:.12g}: {info.method} estimate {info.rho:.12g} + residual "
                f"{info.tolerance:.3g}, not certified")
    if not upper < 1.0:
        return RhoBound(upper, f"{estimate} (no gap to certify)", False)
    M = as_square_sparse(W)
    plan = automatic_plan(M, resources.memory_budget(), "raise inertia.AUTO_MAX_FLOPS to run it")
    if isinstance(plan, str):
        return RhoBound(upper, f"{estimate} ({plan})", False)
    margin = MARGIN * (1.0 - upper)
    try:
        top = second_eigenvalue_bound(M, info.lambda_2 + info.tolerance + margin, plan.method)
        if top.bound is None:
            return RhoBound(upper, f"{estimate} (the shifted factorisation ({top.method}) "
                                   "contradicts the eigensolver's lambda_2)", False)
        bottom = lowest_eigenvalue_bound(M, info.lambda_n - info.tolerance - margin,
                                         plan.method)
    except ValueError as exc:
        return RhoBound(upper, f"{estimate} (no certificate: {exc})", False)
    if bottom.bound is None:
        return RhoBound(upper, f"{estimate} (the shifted factorisation ({bottom.method}) "
                               "contradicts the eigensolver's lambda_n)", False)
    value = float(max(abs(top.bound), abs(bottom.bound)) + defect)
    return RhoBound(value, f"rho <= {value:.12g}, certified: {bottom.bound:.12g} <= lambda_n <= "
                           f"lambda_2 <= {top.bound:.12g} by shifted factorisations "
                           f"({top.method}), + {defect:.1g} (twice the distance to an exactly "
                           f"doubly stochastic W), above the {info.method} estimate "
                           f"{info.rho:.12g} + residual {info.tolerance:.3g}", True)


def stationary_distribution(W: Any, tol: float = 1e-12, maxiter: int = 100_000) -> np.ndarray:
    """Left Perron vector ``pi`` of an irreducible row-stochastic W: ``pi W = pi``, ``sum pi = 1``.

    * doubly stochastic W: exactly ``pi = 1/n``;
    * random-walk form (every row has equal off-diagonal entries, as for the row-normalised
      schemes, lazy or not): the candidate ``pi_i = c / W_ij`` (any ``j != i`` with
      ``W_ij > 0``, c normalising) is tried first;
    * otherwise power iteration on the lazy chain ``x <- (x + W^T x) / 2``.

    A candidate or iterate is accepted when ``||pi W - pi||_1 <= tol``; after ``maxiter``
    iterations a ``RuntimeWarning`` reports the residual reached.
    """
    M = as_square_sparse(W)
    check_gossip_matrix(M, require=("nonnegative", "row_stochastic", "irreducible"))
    n = M.shape[0]
    if has_property(M, "column_stochastic"):
        return np.full(n, 1.0 / n)
    MT = M.T.tocsr()

    def step(x: np.ndarray) -> tuple[np.ndarray, float]:
        """``x W`` and the residual ``||x W - x||_1``."""
        y = MT @ x
        return y, float(np.abs(y - x).sum())

    off = M - sp.diags(M.diagonal())
    off.eliminate_zeros()
    row_max = np.maximum.reduceat(off.data, off.indptr[:-1])  # irreducible: no empty row
    x = (1.0 / row_max) / np.sum(1.0 / row_max)
    _, residual = step(x)
    if residual <= tol:
        return x
    x = np.full(n, 1.0 / n)
    for _ in range(maxiter):
        y, residual = step(x)
        if residual <= tol:
            return x / x.sum()
        x = 0.5 * (x + y)
    warnings.warn(f"stationary_distribution: power iteration stopped after {maxiter} "
                  f"iterations with ||pi W - pi||_1 = {residual:.3g} > tol = {tol:g}",
                  RuntimeWarning, stacklevel=2)
    return x / x.sum()
