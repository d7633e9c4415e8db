"""Turning inexact computations into certified bounds.

The sandwich from an approximate solve
--------------------------------------
For SPD ``K``, any ``X`` (approximately ``K^{-1} G``) and the true residual ``R = G - K X``,
for every vector ``c`` (write ``b = G c``, ``x = X c``, ``r = R c``):

    b^T K^{-1} b - (2 b^T x - x^T K x) = r^T K^{-1} r  in  [0, ||r||^2 / lambda_min(K)].

Hence, in the Loewner order,

    M_low := 2 G^T X - X^T (K X)  <=  M := G^T K^{-1} G  <=  M_low + R^T R / lambda_min(K),

and every bound computed from ``M_low`` (lower) or ``M_up = M_low + R^T R / lambda_lb``
(upper) holds for ``M``.  After a direct solve (residual at rounding level) ``M_low`` is
stored in its linear form ``sym(G^T X)``, which differs from the above by ``sym(X^T R)``,
charged with the rounding (:func:`sandwich_from_solve`).  Only a lower bound
``lambda_lb <= lambda_min(K)`` is needed: for the gossip system
``K = S~ (A^T A)^{-1} S~^T`` with ``A = I - (shift kron W)`` and ``S~`` with orthonormal
rows, ``lambda_min(K) >= 1 / (1 + ||W||_2)^2`` and ``||W||_2 <= sqrt(||W||_1 ||W||_inf)``.

Floating-point rounding
-----------------------
The sandwich is rigorous for the solver error.  Rounding in forming ``M_low`` is covered by
an explicit allowance ``eta`` with ``||fl(M_low) - M_low||_2 <= eta`` (a standard
``gamma_k``-style bound on the matrix products: ``||fl(A^T B) - A^T B||_2 <= gamma_{k+1}
||A||_F ||B||_F`` for k rows), which is
subtracted from lower bounds and added to upper bounds.  When ``K X`` and ``G`` come from
matrix-free operators (sparse recursions with W) rather than from dense products, their
rounding is bounded by the caller (for ``W >= 0`` entrywise, ``gamma_N K |X|`` with N the
recursion's depth) and charged by :func:`charge_operator_rounding`.

Certified lambda_max
--------------------
``lambda_max(M) <= s`` is certified when a floating-point Cholesky factorisation of
``s I - M`` succeeds, up to the backward error of Cholesky (Higham, *Accuracy and Stability
of Numerical Algorithms*, Thm 10.3): success implies ``s I - M + Delta`` is positive definite
with ``||Delta||_2 <= gamma_{T+1} T ||s I - M||_2``; that amount is added to ``s``.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from dataclasses import dataclass

import numpy as np
import scipy.linalg
import scipy.linalg.blas
import scipy.linalg.lapack
import scipy.sparse as sp

from sparsedp.linalg import kernels
from sparsedp.linalg.stochastic import matrix_facts

UNIT_ROUNDOFF = np.finfo(np.float64).eps / 2


def gamma(k: int) -> float:
    """Higham's ``gamma_k = k u / (1 - k u)``: the relative error bound of a length-k sum."""
    ku = k * UNIT_ROUNDOFF
    if ku >= 0.5:
        raise ValueError(f"problem too large for the rounding model (k = {k})")
    return ku / (1.0 - ku)


def column_norms(A: np.ndarray) -> np.ndarray:
    """The 2-norms of the columns of ``A`` as ``np.linalg.norm(A, axis=0)`` computes them,
    ``sqrt(sum(A * A))``, without its per-call overhead."""
    return np.sqrt(np.add.reduce(A * A, axis=0))


def frobenius(A: np.ndarray) -> float:
    """``||A||_F`` (the 2-norm of a vector), ``sqrt(dot(a, a))`` over the array flattened in
    memory order (no copy for a C- or F-contiguous array), without ``np.linalg.norm``'s
    per-call overhead."""
    a = A.ravel(order="K")
    return math.sqrt(float(a @ a))


def gossip_lambda_min_lower_bound(W: sp.spmatrix) -> float:
    """Certified lower bound on lambda_min(K_T) for any T and any set of distinct observers.

    ``lambda_min(K_T) >= 1 / (1 + ||W||_2)^2`` with ``||W||_2 <= sqrt(||W||_1 ||W||_inf)``
    (1/4 for a doubly stochastic non-negative W).  The norms are inflated by a relative
    ``gamma_n`` to cover rounding in the row and column sums.
    """
    n = W.shape[0]
    row_sums, column_sums = matrix_facts(W).absolute_line_sums
    inflate = 1.0 + gamma(n + 1)
    norm_1 = float(column_sums.max()) * inflate
    norm_inf = float(row_sums.max()) * inflate
    norm_2 = np.sqrt(norm_1 * norm_inf) * inflate
    return (1.0 / (1.0 + norm_2) ** 2) / inflate


def row_sum_deviation(W: sp.spmatrix) -> float:
    """``rho >= max_i |sum_j W_ij - 1|`` for the exact row sums of W
    (:attr:`sparsedp.linalg.matrix_facts.MatrixFacts.row_sum_deviation`, memoised)."""
    return matrix_facts(W).row_sum_deviation


def stochastic_drift(rho: float, power: int, n: int, eps: float) -> float:
    """The additive error of taking a lag ``e_a^T W^k e_b`` (k <= ``power``) of a symmetric
    non-negative W with row sums within ``rho`` of 1 as ``1/n + <R^i e_a, R^i' e_b>``-type
    truncations, beyond the product of mixing distances: with ``u = W^P e = 1/n + d``,
    ``||d|| <= eps``, ``g = (1 + rho)^power - 1 >= |(W^j 1)_i - 1|`` and ``||W^j||_2 <= 1 + g``,

        |<W^j u_a, u_b> - 1/n - <W^j d_a, d_b>|  <=  g (3 + 2 sqrt(n) eps) / n,
        |<W^j d_a, d_b>| <= (1 + g) eps_a eps_b,

    so ``g (3 + 2 sqrt(n) eps) / n + g eps^2`` covers what the mixing bound ``eps_a eps_b``
    misses (0 for an exactly doubly stochastic W)."""
    if rho == 0.0:
        return 0.0
    g = stochastic_growth(rho, power)
    return (g * (3.0 + 2.0 * math.sqrt(n) * eps) / n + g * eps * eps) * (1 + 8 * UNIT_ROUNDOFF)


def stochastic_growth(rho: float, power: int) -> float:
    """``g >= (1 + rho)^power - 1``: bounds ``|(W^j 1)_i - 1|`` and ``||W^j||_2 - 1`` for
    ``j <= power`` when W's row sums are within ``rho`` of 1 (0 when ``rho = 0``)."""
    if rho == 0.0:
        return 0.0
    return math.expm1(power * math.log1p(rho)) * (1 + 8 * UNIT_ROUNDOFF)


@dataclass(frozen=True)
class MatrixSandwich:
    """``M = low + D + F + E`` with ``||D||_F <= eta_low``, ``0 <= F <= excess + eta_excess I``
    and ``|E| <= model`` entrywise.

    ``low`` is ``2 G^T X - X^T K X`` (or its linear form ``sym(G^T X)``, the difference
    ``sym(X^T R)`` then part of ``D``) as computed and ``D`` its rounding error;
    ``excess = R^T R / lambda_lb`` (PSD) bounds the solver error ``F`` in the Loewner order, and
    ``eta_excess`` the rounding in forming ``R`` and ``excess``; ``E`` is the effect of using an
    approximate ``(K, G)`` (truncated lags, :func:`model_perturbation`), bounded entrywise by
    the non-negative matrix ``model`` (``None``: no model error), or, when ``model`` is one
    column of T entries, bounded through its row sums: ``sum_j |E_ij| <= model_i``.  Hence
    ``low - eta I <= M <= up + eta I`` with ``eta = eta_low + eta_excess + eta_model``, where
    ``eta_model`` (the largest row sum of ``model``) bounds ``||E||_2``.  The derived
    quantities are computed once per sandwich (the arrays are not to be modified).
    """

    low: np.ndarray
    excess: np.ndarray
    eta_low: float
    eta_excess: float
    model: np.ndarray | None = None

    @functools.cached_property
    def eta_model(self) -> float:
        """``||E||_2 <= max_i sum_j model_ij`` (``|E| <= model`` entrywise, E symmetric; a
        one-column ``model`` holds these row sums)."""
        if self.model is None:
            return 0.0
        return float(self.model.sum(axis=1).max()) * (1 + gamma(self.T))

    @functools.cached_property
    def model_sum(self) -> float:
        """``sum_ij |E_ij| <= sum_ij model_ij``, which also bounds ``|c^T E c|`` for signs c."""
        if self.model is None:
            return 0.0
        return float(self.model.sum()) * (1 + gamma(self.T * self.T))

    @functools.cached_property
    def eta(self) -> float:
        return self.eta_low + self.eta_excess + self.eta_model

    @functools.cached_property
    def sign_vector_allowance(self) -> float:
        """How far ``c^T M c`` can exceed ``c^T up c`` for a sign vector c (``||c||^2 = T``),
        and ``<M, X>`` exceed ``<up, X>`` for a PSD X with unit diagonal (``|X_ij| <= 1``,
        ``tr X = T``):

            T (eta_low + eta_excess) + model_sum,

        since ``|c^T D c| <= T ||D||_2``, ``c^T F c <= c^T excess c + T eta_excess`` and
        ``|c^T E c| <= sum |E_ij| <= model_sum`` (never more than ``T eta_model``, T times
        the largest row sum, which the spectral bounds charged before 2026-11-26: more than
        the total when the rows differ).  Inflated for its own rounding."""
        return ((self.T * (self.eta_low + self.eta_excess) + self.model_sum)
                * (1 + gamma(5)))

    @functools.cached_property
    def up(self) -> np.ndarray:
        return self.low + self.excess

    @property
    def T(self) -> int:
        return self.low.shape[0]

    def quadratic_slack(self) -> float:
        """Allowance to subtract from ``fl(c^T low c)`` (add to ``fl(c^T up c)``), ``c`` signs.

        ``T (eta_low + eta_excess)`` for the rounding and solver perturbations, ``sum |E|``
        for the model error, plus ``gamma_{T+1} T ||up||_F`` for rounding in evaluating the
        quadratic form itself.
        """
        T = self.T
        rounding = gamma(T + 1) * frobenius(self.up)
        return T * (self.eta_low + self.eta_excess + rounding) + self.model_sum


def sandwich_from_solve(
    G: np.ndarray,
    X: np.ndarray,
    KX: np.ndarray,
    lambda_lb: float,
    K_dense: np.ndarray | None = None,
    K_frobenius: float | None = None,
    G_lower_triangular: bool = False,
) -> MatrixSandwich:
    """Build the certified sandwich of ``M = G^T K^{-1} G`` from ``X ~ K^{-1} G`` and ``K X``.

    ``M_low = 2 G^T X - X^T (K X)`` (symmetrised), ``R = G - K X``,
    ``excess = R^T R / lambda_lb``.  When ``K X`` was formed as a dense product with
    ``K_dense``, its rounding ``E`` (``||E||_F <= gamma_k ||K||_F ||X||_F``) is charged too:
    ``||X^T E||_F`` to ``eta_low`` and ``(2 ||R||_F ||E||_F + ||E||_F^2) / lambda_lb`` to
    ``eta_excess`` (``K_frobenius``: ``||K_dense||_F`` when already known).

    A direct solve leaves a residual at the rounding level of the product that formed it
    (``||R||_F <= gamma_k (||G||_F + ||K X||_F)``); then ``M_low`` is taken in its linear
    form, one product fewer: with ``X^T K X = X^T G - X^T R`` exactly,

        2 G^T X - X^T K X = sym(G^T X) + sym(X^T R),  ||sym(X^T R)||_F <= ||X||_F ||R_true||_F,

    and ``||R_true||_F <= ||R||_F / (1 - u) + ||E||_F`` (the subtraction forming R and the
    product's rounding) is charged to ``eta_low``.  An iterative solve keeps the quadratic
    form, whose error is second order in the residual.  ``G_lower_triangular``: ``G^T X``
    as a triangular product (BLAS ``trmm``, half the work; the same sums less their zero
    terms, so the same rounding bound).
    """
    GX = _transposed_product(G, X, G_lower_triangular)
    R = G - KX
    x_norm, r_norm = frobenius(X), frobenius(R)
    g_norm, kx_norm = frobenius(G), frobenius(KX)
    gamma_k = gamma(G.shape[0] + 1)
    e_norm = 0.0
    if K_dense is not None:
        k_norm = frobenius(K_dense) if K_frobenius is None else K_frobenius
        e_norm = gamma(K_dense.shape[0] + 1) * k_norm * x_norm
    # rounding of ``low``: the products (``gamma_{k+1} ||A||_F ||B||_F`` for ``A^T B`` with k
    # rows, k = the rows of G, X, K X and R) and the additions
    if r_norm <= gamma_k * (g_norm + kx_norm):
        low = 0.5 * (GX + GX.T)
        eta_low = gamma_k * x_norm * g_norm + gamma(2) * frobenius(GX)
        eta_low += x_norm * (r_norm / (1 - UNIT_ROUNDOFF) + e_norm)
    else:
        XKX = X.T @ KX
        low = GX + GX.T - 0.5 * (XKX + XKX.T)
        eta_low = gamma_k * x_norm * (2 * g_norm + kx_norm)
        eta_low += gamma(4) * (2 * frobenius(GX) + frobenius(XKX)) + x_norm * e_norm
    excess = (R.T @ R) / lambda_lb
    excess = 0.5 * (excess + excess.T)
    # rounding of ``excess``: the product R^T R and the subtraction forming R
    # (fl(a - b) = (a - b)(1 + d), |d| <= u, so ||R_true c||^2 exceeds ||R c||^2 by at most
    # 5 u ||c||^2 ||R||_F^2)
    eta_excess = (gamma_k + 8 * UNIT_ROUNDOFF) * r_norm**2 / lambda_lb
    # rounding of ``up = low + excess`` itself
    eta_excess += UNIT_ROUNDOFF * (frobenius(low) + frobenius(excess))
    eta_excess += (2 * r_norm * e_norm + e_norm**2) / lambda_lb
    return MatrixSandwich(low=low, excess=excess, eta_low=eta_low, eta_excess=eta_excess)


def charge_operator_rounding(
    sandwich: MatrixSandwich,
    X: np.ndarray,
    R: np.ndarray,
    e_norm: float,
    f_norm: float,
    lambda_lb: float,
) -> MatrixSandwich:
    """Add to a sandwich from :func:`sandwich_from_solve` the rounding of a matrix-free
    operator product and of a matrix-free ``G``.

    Parameters
    ----------
    sandwich : MatrixSandwich
        From ``sandwich_from_solve(fl(G), X, fl(K X), lambda_lb)``.
    X : ndarray
        The approximate solution.
    R : ndarray
        The computed residual ``fl(G) - fl(K X)``.
    e_norm : float
        ``||fl(K X) - K X||_F <= e_norm``.
    f_norm : float
        ``||fl(G) - G||_F <= f_norm``.
    lambda_lb : float
        ``lambda_min(K) >= lambda_lb`` (``np.inf``: no upper side is certified).

    Returns
    -------
    MatrixSandwich
        ``sandwich`` with ``eta_low`` and ``eta_excess`` raised.

    Notes
    -----
    With the exact ``G``, ``K X`` and ``R_true = G - K X = R + D``, ``||D||_F <= delta =
    e_norm + f_norm``: the lower side ``2 G^T X - X^T K X`` (or its linear form plus
    ``sym(X^T R_true)``) moves by at most ``||X||_F (e_norm + 2 f_norm)``, and ``R_true^T
    R_true <= R^T R + (2 delta ||R||_F + delta^2) I``, divided by ``lambda_lb`` in the
    excess (as the dense product's rounding is charged in :func:`sandwich_from_solve`).
    The charges are inflated by ``1 + gamma_(2 L + 16)`` (L the entries of the larger of X
    and R) for the rounding of the Frobenius norms (those taken here, and those of arrays of
    at most L entries from which the caller computed ``e_norm`` and ``f_norm``) and of the
    charges themselves.

    Examples
    --------
    >>> import numpy as np
    >>> K, G = np.diag([2.0, 4.0]), np.eye(2)
    >>> X = np.linalg.solve(K, G)
    >>> base = sandwich_from_solve(G, X, K @ X, 2.0)
    >>> charged = charge_operator_rounding(base, X, G - K @ X, 1e-12, 1e-12, 2.0)
    >>> bool(charged.eta_low > base.eta_low and charged.eta_excess > base.eta_excess)
    True
    """
    delta = e_norm + f_norm
    inflate = 1.0 + gamma(2 * max(X.size, R.size) + 16)
    eta_low = frobenius(X) * (e_norm + 2.0 * f_norm) * inflate
    eta_excess = (2.0 * delta * frobenius(R) + delta * delta) * inflate / lambda_lb
    return dataclasses.replace(sandwich, eta_low=sandwich.eta_low + eta_low,
                               eta_excess=sandwich.eta_excess + eta_excess)


def _transposed_product(G: np.ndarray, X: np.ndarray, lower_triangular: bool) -> np.ndarray:
    """``G^T X``; for a square lower-triangular ``G`` by BLAS ``trmm`` as ``(X^T G)^T``
    (``G^T`` and ``X^T`` are Fortran-ordered views of the C-ordered arrays, so nothing is
    transposed in memory but the result)."""
    if not lower_triangular:
        return G.T @ X
    product = scipy.linalg.blas.dtrmm(1.0, G.T, X.T, side=1, lower=0, trans_a=1)
    return np.ascontiguousarray(product.T)


def model_perturbation(
    X: np.ndarray,
    R: np.ndarray,
    K_frobenius: float,
    lambda_lb: float,
    E_norm: float,
    E_norm_part: float,
    apply_E_abs,
    F_abs: np.ndarray | None,
    E_abs_norm: float | None = None,
) -> tuple[np.ndarray, float]:
    """Entrywise bound ``B >= |M - M_hat|`` for ``(K_hat, G_hat)`` in place of ``(K, G)``.

    ``M = G^T K^{-1} G``, ``M_hat = G_hat^T K_hat^{-1} G_hat``; ``X ~ K_hat^{-1} G_hat`` with
    computed residual ``R = fl(G_hat - K_hat X)``.  The model error ``E = K - K_hat`` splits
    into a part bounded entrywise, ``|E_1| V <= apply_E_abs(V)`` for non-negative V, and a part
    bounded in norm, ``||E_2||_2 <= E_norm_part``; ``||E||_2 <= E_norm``;
    ``|G - G_hat| <= F_abs`` entrywise; ``lambda_min(K) >= lambda_lb``.  ``apply_E_abs=None``
    (then ``F_abs`` is ignored): ``E_1 = 0`` and ``G = G_hat``.

    With ``Y = K_hat^{-1} G_hat`` (exact), ``F = G - G_hat`` and ``Z = E Y - F`` the identity

        M - M_hat = -Y^T E Y + Y^T F + F^T Y + Z^T K^{-1} Z

    holds exactly (expand ``G = K Y - Z``).  Entrywise, with ``Ybar >= |Y|``, ``y_i = ||Ybar
    e_i||`` and ``z_i = ||apply_E_abs(Ybar) e_i|| + E_norm_part y_i + ||F_abs e_i|| >= ||Z
    e_i||``:

        |M - M_hat| <= Ybar^T apply_E_abs(Ybar) + E_norm_part y y^T + Ybar^T F_abs
                       + F_abs^T Ybar + z z^T / lambda_lb.

    ``Ybar = |X| + 1 d^T`` with ``d_i = r_i / (lambda_lb - E_norm)``, ``r_i`` bounding the
    exact residual column ``||(G_hat - K_hat X) e_i||`` (the computed one, its subtraction and
    the ``gamma_k ||K_hat||_F ||X e_i||`` rounding of the product ``K_hat X``), since
    ``Y - X = K_hat^{-1} (G_hat - K_hat X)``.  Returns ``B`` (inflated to cover its own
    rounding) and the share of ``sum B`` due to ``E_norm_part`` alone.

    ``E_abs_norm`` given (a bound on the 2-norm of the non-negative matrix that
    ``apply_E_abs`` applies): only B's row sums are returned, as one column, with no k x k
    product (the sandwich's ``eta_model`` and ``model_sum`` need no more):

        |M - M_hat| 1 <= Ybar^T apply_E_abs(Ybar 1) + Ybar^T (F_abs 1) + F_abs^T (Ybar 1)
                         + E_norm_part y (1^T y) + z (1^T z) / lambda_lb,

    with ``z_i = (E_abs_norm + E_norm_part) y_i + ||F_abs e_i||`` (``||apply_E_abs(Ybar)
    e_i|| <= E_abs_norm y_i``), which only loosens the second-order term.
    """
    if E_norm >= lambda_lb:
        raise ValueError("model perturbation too large for the lambda_min(K) bound")
    k = X.shape[0]
    residuals = column_norms(R) * (1 + UNIT_ROUNDOFF)
    residuals += gamma(k + 1) * K_frobenius * column_norms(X)
    Y = np.abs(X) + (residuals / (lambda_lb - E_norm))[None, :]
    y = column_norms(Y)
    inflate = 1 + gamma(3 * k + 8)
    if apply_E_abs is None:  # no entrywise part: E bounded in norm only, G exact
        z = E_norm_part * y  # B = E y y^T + z z^T / lambda, symmetric as computed
        B = E_norm_part * np.outer(y, y) + np.outer(z, z) / lambda_lb
        return B * inflate, E_norm_part * float(y.sum()) ** 2 * inflate
    if E_abs_norm is not None:
        ones_y = Y.sum(axis=1)
        z = (E_abs_norm + E_norm_part) * y + column_norms(F_abs)
        rows = (Y.T @ apply_E_abs(ones_y[:, None])[:, 0] + Y.T @ F_abs.sum(axis=1)
                + F_abs.T @ ones_y + E_norm_part * y * float(y.sum())
                + z * (float(z.sum()) / lambda_lb))
        return rows[:, None] * inflate, E_norm_part * float(y.sum()) ** 2 * inflate
    EY = apply_E_abs(Y)
    YF = Y.T @ F_abs
    z = column_norms(EY) + E_norm_part * y + column_norms(F_abs)
    B = Y.T @ EY + YF + YF.T + E_norm_part * np.outer(y, y) + np.outer(z, z) / lambda_lb
    return 0.5 * (B + B.T) * inflate, E_norm_part * float(y.sum()) ** 2 * inflate


def cholesky_succeeds(A: np.ndarray) -> bool:
    """Whether LAPACK's Cholesky factorisation (``potrf``) of the symmetric ``A`` runs to
    completion."""
    return scipy.linalg.lapack.dpotrf(A, lower=1, clean=0)[1] == 0


def certified_lambda_max(
    M: np.ndarray, backend: str = "auto", vector: np.ndarray | None = None
) -> tuple[float, float]:
    """Certified interval ``(lower, upper)`` for lambda_max of a symmetric ``M`` (PSD or not).

    ``lower``: the Rayleigh quotient of the Lanczos Ritz vector (numba kernel), or of
    ``vector`` when an approximate top eigenvector is given (the Lanczos run is then skipped:
    useful when the top eigenvalue is a tight cluster, where restarted Lanczos is slow), less a
    rounding allowance.  ``upper``: the first shift ``s = theta + tau_0 8^k`` for which
    Cholesky of ``s I - M`` succeeds, plus the Cholesky backward-error allowance
    ``gamma_{T+1} T (|s| + ||M||_F)`` and ``4 u (|s| + ||M||_F)`` for the rounding of forming
    ``s I - M`` (its diagonal, ``u |s - M_ii|``) and of the final sum.  ``tau_0`` is at
    rounding level (the Rayleigh quotient of a converged power iteration is accurate to the
    square of its residual), so one factorisation usually suffices.
    """
    M = np.asarray(M, dtype=np.float64)
    T = M.shape[0]
    scale = frobenius(M)
    if scale == 0.0:
        return 0.0, 0.0
    if vector is None:
        theta, v = kernels.top_eigenpair(M, backend=backend)
    else:
        v = np.asarray(vector, dtype=np.float64)
        v = v / frobenius(v)
        theta = float(v @ (M @ v))
    tau = 64 * UNIT_ROUNDOFF * T * scale
    identity = np.eye(T)
    while not cholesky_succeeds((theta + tau) * identity - M):
        tau *= 8.0
    s = theta + tau
    upper = s + (gamma(T + 1) * T + 4 * UNIT_ROUNDOFF) * (abs(s) + scale)
    lower = theta - gamma(T + 1) * T * scale
    return lower, upper


def certified_lambda_min(K: np.ndarray, iterations: int = 30) -> float:
    """Certified lower bound on ``lambda_min`` of a symmetric dense ``K`` (0.0 if none found):
    :func:`certified_lambda_min_and_factor` without the factor."""
    return certified_lambda_min_and_factor(K, iterations)[0]


def certified_lambda_min_and_factor(K: np.ndarray, iterations: int = 30
                                    ) -> tuple[float, np.ndarray | None]:
    """Certified lower bound on ``lambda_min`` of a symmetric dense ``K`` (0.0 if none found),
    and the lower Cholesky factor of K it computed (LAPACK ``potrf``, upper triangle not
    cleared; ``None`` when K is not positive definite to working precision), which a solve
    with K can reuse.

    Inverse iteration with the Cholesky factor of ``K`` estimates ``lambda_min`` from above
    (``1 / ||K^{-1} v||`` for a unit v, and Rayleigh-Ritz for ``K^{-1}`` on the span of the
    iterates, much closer when the lowest eigenvalues cluster); the shift ``tau`` = half the
    estimate is certified when
    Cholesky of ``K - tau I`` succeeds (quartered until it does, five tries), less the
    Cholesky backward-error allowance ``gamma_{N+1} N (||K||_F + tau)`` as in
    :func:`certified_lambda_max`.  A K that is singular to working precision gets 0.0.
    """
    K = np.asarray(K, dtype=np.float64)
    N = K.shape[0]
    try:
        factor = scipy.linalg.cho_factor(K, lower=True, check_finite=False)
    except np.linalg.LinAlgError:
        return 0.0, None
    v = kernels._start_vector(N)
    estimate = np.inf
    inputs, images = np.empty((N, iterations)), np.empty((N, iterations))
    for k in range(iterations):
        w = scipy.linalg.cho_solve(factor, v, check_finite=False)
        inputs[:, k], images[:, k] = v, w
        norm = frobenius(w)
        estimate, v = 1.0 / norm, w / norm
    # Rayleigh-Ritz for K^{-1} on the iterates' span: B = Q^T K^{-1} Q with Q R = inputs and
    # K^{-1} Q = images R^{-1}; 1 / lambda_max(B) >= lambda_min(K), close when the power
    # iterates alone converge slowly (clustered low eigenvalues)
    Q, R = np.linalg.qr(inputs)
    if N > iterations and np.all(np.abs(np.diag(R)) > 1e-12 * np.abs(R).max()):
        B = Q.T @ scipy.linalg.solve_triangular(R.T, images.T, lower=True).T
        theta = float(np.linalg.eigvalsh(0.5 * (B + B.T))[-1])
        if theta > 0:
            estimate = min(estimate, 1.0 / theta)
    scale = frobenius(K)
    tau = 0.5 * estimate
    diagonal = np.diag_indices(N)
    for _ in range(5):
        shifted = K.copy(order="K")  # K - tau I, the diagonal shifted in place
        shifted[diagonal] -= tau
        if cholesky_succeeds(shifted):
            return max(tau - gamma(N + 1) * N * (scale + tau), 0.0), factor[0]
        del shifted
        tau *= 0.25
    return 0.0, factor[0]


def sigma_min_lower_bound(W: sp.spmatrix) -> float:
    """Lower bound on the smallest singular value of W from diagonal dominance (0.0 if none).

    Varah (1975): ``||W^{-1}||_inf <= 1 / alpha`` with ``alpha = min_i (|W_ii| - sum_{k != i}
    |W_ik|)`` when positive, and ``||W^{-1}||_1 <= 1 / beta`` for the columns; hence
    ``sigma_min(W) = 1 / ||W^{-1}||_2 >= sqrt(alpha beta)``.  Lazy chains (``W_ii > 1/2``)
    qualify; others get 0.0.  Sums are deflated by ``gamma_n`` for their rounding.
    """
    W = sp.csr_matrix(W)
    n = W.shape[0]
    diagonal = np.abs(W.diagonal())
    absW = abs(W)
    off_rows = np.asarray(absW.sum(axis=1)).ravel() - diagonal
    off_cols = np.asarray(absW.sum(axis=0)).ravel() - diagonal
    inflate = 1.0 + gamma(n + 2)
    alpha = float((diagonal / inflate - off_rows * inflate).min())
    beta = float((diagonal / inflate - off_cols * inflate).min())
    return float(np.sqrt(alpha * beta)) if alpha > 0 and beta > 0 else 0.0
