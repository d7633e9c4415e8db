"""Certified eigenvalue counts of a large sparse symmetric matrix (Sylvester's law of inertia).

For a symmetric ``A`` and a factorisation ``A = L D L^T`` with ``L`` unit lower triangular and
``D`` diagonal, ``A`` has as many negative eigenvalues as ``D`` has negative entries
(congruence preserves inertia).  In floating point the factors are those of a nearby matrix,
and the distance is bounded here, so that the count becomes a certified statement about ``A``
itself.

The factorisation.  SuperLU (``scipy.sparse.linalg.splu``) with a minimum-degree ordering of
``A + A^T`` and diagonal pivots only (``SymmetricMode``, ``diag_pivot_thresh = 0``; that the
row and column permutations agree, ``P_r = P^T``, ``P_c = P``, is checked, not assumed), no
equilibration.  Gaussian elimination in any order of its inner products gives computed
factors with (Higham, *Accuracy and Stability of Numerical Algorithms*, Thm 9.3)

    P^T A P + Delta = L U,        |Delta| <= gamma_n |L| |U|   (entrywise).

With ``D = diag(U)`` and ``S = L D L^T`` (exactly congruent to ``D``)

    P^T A P - S = L (U - D L^T) - Delta,

a symmetric matrix (both ``A`` and ``S`` are), so its 2-norm is at most its infinity norm:

    ||A - P S P^T||_2 <= error := || |L| (|U - D L^T| 1) + gamma_n |L| (|U| 1) ||_inf.

``U - D L^T`` is zero in exact arithmetic (symmetric elimination); its computed entries are
charged with their own rounding (``(1 + 2u) |fl(E)| + u |D| |L^T|``), and the nonnegative
sums of the bound are rounded up by a factor ``1 + ROUND_UP``.  Weyl's inequality then
gives, when ``D`` has ``negative`` negative and no zero entries,

    lambda_negative(A) < error   and   lambda_(negative + 1)(A) > -error

(eigenvalues in increasing order).  :func:`second_eigenvalue_bound` applies this to
``A = mu I - W``: one negative pivot certifies ``lambda_2(W) < mu + error``;
:func:`lowest_eigenvalue_bound` to ``A = W - nu I``: no negative pivot certifies
``lambda_min(W) > nu - error``.

The dense alternative.  Where the sparse factors fill in (expanders, heavy-tailed graphs),
LAPACK's Cholesky of the dense ``B`` is faster: ``B = mu I - W + c 1 1^T`` (any ``c >= 0``:
``x^T B x = x^T (mu I - W) x`` for ``x`` orthogonal to 1; ``c = fl((2 - min(mu, 0)) / n)``
lifts the direction of 1), or ``B = W - nu I``.  If
it runs to completion, ``R^T R = B + Delta`` with ``|Delta| <= gamma_(n+1) |R^T| |R|``
(Higham, Thm 10.3, any symmetric B), and ``|| |R^T| |R| ||_2 <= ||R||_F^2 = tr(B + Delta)``
gives

    lambda_min(B) >= -gamma_(n+1) tr(B) / (1 - gamma_(n+1)),

to which the rounding of forming ``B`` (at most two per entry: ``gamma_2 (1 + ||W||_F +
|shift| sqrt(n))`` in 2-norm) is added.  Then ``x^T W x <= mu + error`` for unit ``x``
orthogonal to 1, so ``lambda_2(W) <= mu + error`` by Courant-Fischer; or ``lambda_min(W) >=
nu - error``.  A Cholesky that breaks down certifies nothing and counts nothing.

Cost.  The sparse factors' fill decides it: small on geometric graphs, grids and paths (0.07 s
at n = 10^4, 2 s at 10^5 on the bench's geometric graphs), close to dense on expanders and
heavy-tailed graphs (2-5e7 entries at n = 10^4: 18-47 s, against about 10 s for the dense
Cholesky on one thread).  :func:`factorisation_plan` decides from the envelope of a reverse
Cuthill-McKee ordering (:func:`envelope_cost`), which contains the fill of that ordering and
was above the minimum-degree fill on every bench graph (by 1.2-11x): dense when the envelope
needs more than ``DENSE_SHARE`` of the dense flops and ``n <= DENSE_MAX_N``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import scipy.linalg.lapack
import scipy.sparse as sp
from scipy.sparse.csgraph import reverse_cuthill_mckee
from scipy.sparse.linalg import splu

from sparsedp.linalg.certified import UNIT_ROUNDOFF, gamma
from sparsedp.linalg.kernels import is_symmetric
from sparsedp.reprs import short_repr

__all__ = [
    "AUTO_MAX_FLOPS",
    "SPARSE_AUTO_FACTOR",
    "AUTO_MAX_N",
    "MARGIN",
    "EnvelopeCost",
    "Inertia",
    "Plan",
    "ShiftTest",
    "auto_skip_reason",
    "automatic_plan",
    "envelope_cost",
    "factorisation_plan",
    "inertia",
    "lowest_eigenvalue_bound",
    "second_eigenvalue_bound",
]

AUTO_MAX_FLOPS = 5e10  # callers certify unasked when the plan's flops are at most this
# ... times this for a sparse plan, whose flops are the RCM envelope's, an upper bound on its
# fill: a 10^5-node geometric graph's envelope counted 6.6e7 entries (5.1e10 flops) where
# SuperLU's factors held 1.8e7, and the certificate cost about the Lanczos estimate again
# (6.4 s over 6.1 s; at 1.5 10^5 nodes, 1.1e11 envelope flops, 13 s over 17.7 s); the limit
# then covers 2D geometric graphs up to AUTO_MAX_N
SPARSE_AUTO_FACTOR = 3.0
AUTO_MAX_N = 150_000  # ... and n at most this (a 2D geometric envelope's flops grow like n^2)
MARGIN = 0.05  # callers test a shift this fraction of the estimated gap beyond the estimate
ROUND_UP = 1e-6  # relative allowance for rounding in the bound's own nonnegative sums
BYTES_PER_FACTOR_ENTRY = 24  # a value and an index in L and in U, with SuperLU's workspace
DENSE_MAX_N = 20_000  # the dense Cholesky is considered up to this many rows (3.2 GB)
DENSE_SHARE = 0.1  # ... when the sparse envelope needs more than this share of its flops


@dataclass(frozen=True)
class Inertia:
    """Certified inertia of a symmetric matrix ``A``: ``A`` is within ``error`` (2-norm) of a
    symmetric matrix with exactly ``negative`` negative eigenvalues, ``zero`` zero ones and
    the rest positive.  Hence, with ``k = negative`` and eigenvalues in increasing order,
    ``lambda_k(A) < error`` and (when ``zero == 0``) ``lambda_(k+1)(A) > -error``.
    ``fill``: stored entries of ``L`` and ``U``."""

    negative: int
    zero: int
    error: float
    fill: int

    __repr__ = short_repr


@dataclass(frozen=True)
class EnvelopeCost:
    """A priori size of the factorisation: ``entries`` of the reverse Cuthill-McKee envelope
    of the lower triangle (a bound on that ordering's fill), ``flops`` to factor within it
    (``sum_i w_i^2``, ``w_i`` the envelope width of row i) and ``bytes`` for both factors."""

    entries: float
    flops: float

    @property
    def bytes(self) -> float:
        """Memory for ``L`` and ``U`` within the envelope."""
        return 2.0 * BYTES_PER_FACTOR_ENTRY * self.entries


def envelope_cost(A: sp.spmatrix) -> EnvelopeCost:
    """Size of an ``LDL^T`` of the symmetric pattern of ``A`` within the envelope of its
    reverse Cuthill-McKee ordering (O(nnz) to compute)."""
    C = sp.csr_matrix(A, copy=False)
    C = (abs(C) + abs(C.T)).tocsr()
    n = C.shape[0]
    order = reverse_cuthill_mckee(C, symmetric_mode=True)
    P = C[order][:, order].tocsr()
    rows = np.arange(n)
    nonempty = np.diff(P.indptr) > 0
    first = rows.copy()
    first[nonempty] = np.minimum.reduceat(P.indices, P.indptr[:-1][nonempty])
    width = (rows - np.minimum(first, rows)).astype(float)
    return EnvelopeCost(float(width.sum() + n), float(np.sum(width * width)))


@dataclass(frozen=True)
class Plan:
    """How a shift is tested: ``method`` ``"sparse"`` (SuperLU ``LDL^T``, :func:`inertia`) or
    ``"dense"`` (LAPACK Cholesky), with its estimated ``flops`` and ``bytes``."""

    method: str
    flops: float
    bytes: float


def factorisation_plan(A: sp.spmatrix, budget: float) -> Plan:
    """The cheaper of the sparse ``LDL^T`` (cost from :func:`envelope_cost`) and the dense
    Cholesky (``n^3 / 3`` flops, ``8.8 n^2`` bytes): dense when ``n <= DENSE_MAX_N``, its
    matrix fits ``budget`` (bytes) and the envelope needs more than ``DENSE_SHARE`` of its
    flops."""
    n = A.shape[0]
    cost = envelope_cost(A)
    dense_flops, dense_bytes = n**3 / 3.0, 8.8 * float(n) ** 2
    if n <= DENSE_MAX_N and dense_bytes <= budget and cost.flops > DENSE_SHARE * dense_flops:
        return Plan("dense", dense_flops, dense_bytes)
    return Plan("sparse", cost.flops, cost.bytes)


def automatic_plan(A: sp.spmatrix, budget: float, hint: str = "") -> Plan | str:
    """The :func:`factorisation_plan` of a certificate nobody asked for, or why it is not
    attempted: more than ``AUTO_MAX_N`` rows (not even the envelope is computed), or a plan
    above ``AUTO_MAX_FLOPS`` (``SPARSE_AUTO_FACTOR`` times that for a sparse plan, whose
    envelope count overstates the work) or the memory ``budget`` (bytes).  ``hint``: how the
    caller's user can ask for it anyway (appended to the reason)."""
    n = A.shape[0]
    tail = f"; {hint}" if hint else ""
    if n > AUTO_MAX_N:
        return f"n = {n} is above the automatic certificate's {AUTO_MAX_N} nodes{tail}"
    plan = factorisation_plan(A, budget)
    limit = AUTO_MAX_FLOPS * (SPARSE_AUTO_FACTOR if plan.method == "sparse" else 1.0)
    if plan.flops > limit or plan.bytes > budget:
        return (f"the certificate's factorisation was skipped ({plan.method}: about "
                f"{plan.flops:.1e} flops, {plan.bytes / 2**30:.2g} GiB; the automatic limit is "
                f"{limit:.1e} flops within the memory budget{tail})")
    return plan


def auto_skip_reason(A: sp.spmatrix, budget: float, hint: str = "") -> str | None:
    """The reason of :func:`automatic_plan`, ``None`` when it would attempt the certificate."""
    plan = automatic_plan(A, budget, hint)
    return plan if isinstance(plan, str) else None


def inertia(A: sp.spmatrix) -> Inertia:
    """The certified inertia of the symmetric sparse ``A`` (see the module docstring).

    Raises ``ValueError`` when ``A`` is not exactly symmetric or when the factorisation needed
    an off-diagonal pivot (a zero on the diagonal of a Schur complement): no certificate.
    """
    C = sp.csc_matrix(A, dtype=np.float64)
    n = C.shape[0]
    if not np.all(np.isfinite(C.data)):
        raise ValueError("the matrix has entries that are not finite")
    if not is_symmetric(C.tocsr()):
        raise ValueError("the matrix is not exactly symmetric")
    lu = splu(C, permc_spec="MMD_AT_PLUS_A", diag_pivot_thresh=0.0,
              options={"SymmetricMode": True, "Equil": False})
    if not np.array_equal(lu.perm_r, lu.perm_c):
        raise ValueError("the factorisation pivoted off the diagonal")
    L, U = lu.L.tocsr(), lu.U.tocsr()
    d = U.diagonal()
    absL = abs(L)
    DLt = (sp.diags(d) @ L.T).tocsr()
    E = (U - DLt).tocsr()
    charged = (1.0 + 2.0 * UNIT_ROUNDOFF) * abs(E) + UNIT_ROUNDOFF * abs(DLt)
    ones = np.ones(n)
    rows = absL @ (charged @ ones) + gamma(n) * (absL @ (abs(U) @ ones))
    error = float(rows.max(initial=0.0)) * (1.0 + ROUND_UP)
    if not (np.all(np.isfinite(d)) and math.isfinite(error)):
        raise ValueError("the factorisation overflowed")
    return Inertia(int(np.sum(d < 0)), int(np.sum(d == 0)), error, int(L.nnz + U.nnz))


@dataclass(frozen=True)
class ShiftTest:
    """The outcome of testing one shift of W: ``bound`` (certified; ``None`` when this test
    certifies nothing), the ``method`` used, the ``error`` allowance added to the shift, and
    ``beyond``: the eigenvalues of W found beyond the shift besides those expected (sparse
    ``LDL^T``: from the pivots' signs; ``None`` for a dense Cholesky, which only succeeds or
    breaks down)."""

    bound: float | None
    method: str
    error: float
    beyond: int | None

    __repr__ = short_repr


def _sparse_test(A: sp.csc_matrix, expected_negative: int) -> tuple[float | None, str, int]:
    """``(error, method, beyond)`` from :func:`inertia` of the shifted ``A``: ``error`` (with
    the rounding of the diagonal ``fl(mu - W_ii)``, at most ``u max_i |A_ii|``) when ``A`` has
    exactly ``expected_negative`` negative pivots and no zero one, else ``None``."""
    try:
        counts = inertia(A)
    except RuntimeError as exc:  # SuperLU: "Factor is exactly singular"
        raise ValueError(f"the factorisation failed ({exc})") from exc
    method = f"sparse LDL^T, {counts.fill} factor entries"
    beyond = counts.negative - expected_negative
    if beyond or counts.zero:
        return None, method, beyond
    rounding = UNIT_ROUNDOFF * float(np.abs(A.diagonal()).max(initial=0.0))
    return counts.error + rounding, method, 0


def _dense_test(W: sp.spmatrix, shift: float, sign: float, rank_one: float) -> float | None:
    """``error`` with ``lambda_min(B) >= -error`` for ``B = sign W - shift I + rank_one 1 1^T``
    formed densely (see the module docstring), or ``None`` when Cholesky breaks down."""
    n = W.shape[0]
    W = sp.csr_matrix(W, dtype=np.float64)  # formed and factored in float64, as charged
    if not np.all(np.isfinite(W.data)):
        raise ValueError("the matrix has entries that are not finite")
    if not is_symmetric(W):
        raise ValueError("the matrix is not exactly symmetric")
    B = W.toarray()
    norm_w = float(np.linalg.norm(B))
    if sign < 0:
        np.negative(B, out=B)
    if rank_one:
        B += rank_one
    B[np.diag_indices(n)] -= shift
    trace = float(np.abs(np.diagonal(B)).sum())
    factor, info = scipy.linalg.lapack.dpotrf(B.T, lower=1, clean=0, overwrite_a=1)
    if info != 0 or not np.all(np.isfinite(np.diagonal(factor))):
        return None
    g = gamma(n + 1)
    forming = gamma(2) * (n * rank_one + norm_w + abs(shift) * math.sqrt(n))
    return (g * trace / (1.0 - g) + forming) * (1.0 + ROUND_UP)


def _plan(W: sp.spmatrix, method: str, budget: float) -> str:
    if method == "auto":
        return factorisation_plan(W, budget).method
    if method not in ("sparse", "dense"):
        raise ValueError(f"unknown method {method!r}")
    return method


def _shift_test(error: float | None, shift: float, side: float, method: str,
                beyond: int | None) -> ShiftTest:
    """The :class:`ShiftTest` of a shift: the bound ``shift + side error`` rounded away from
    the shift (``side`` = +1 for an upper bound, -1 for a lower one), ``None`` without an
    ``error``."""
    if error is None:
        return ShiftTest(None, method, math.nan, beyond)
    return ShiftTest(math.nextafter(shift + side * error, side * math.inf), method, error,
                     beyond)


def second_eigenvalue_bound(W: sp.spmatrix, mu: float, method: str = "auto",
                            budget: float = math.inf) -> ShiftTest:
    """Test ``lambda_2(W) <= mu + error`` for the exactly symmetric ``W`` (``lambda_2``: the
    second largest eigenvalue): sparse, ``mu I - W`` with exactly one negative pivot (more:
    ``beyond`` eigenvalues besides the top one above about ``mu``); dense, a Cholesky of
    ``mu I - W + c 1 1^T`` (``c = fl((2 - min(mu, 0)) / n)``) that runs to completion, which
    bounds ``max x^T W x`` over unit ``x`` orthogonal to 1, at least ``lambda_2`` (it
    certifies only when 1 is about W's top eigenvector).  ``method``: ``"auto"``
    (:func:`factorisation_plan` within ``budget`` bytes), ``"sparse"`` or ``"dense"``.
    ``ValueError`` when W is not exactly symmetric or the sparse factorisation fails."""
    n = W.shape[0]
    if _plan(W, method, budget) == "dense":  # c 1 1^T lifts the direction of 1 above 0
        error = _dense_test(W, -mu, -1.0, (2.0 - min(mu, 0.0)) / n)
        return _shift_test(error, mu, 1.0, "dense Cholesky", None)
    A = (mu * sp.identity(n, format="csc") - sp.csc_matrix(W)).tocsc()
    error, how, beyond = _sparse_test(A, 1)
    return _shift_test(error, mu, 1.0, how, beyond)


def lowest_eigenvalue_bound(W: sp.spmatrix, nu: float, method: str = "auto",
                            budget: float = math.inf) -> ShiftTest:
    """Test ``lambda_min(W) >= nu - error`` for the exactly symmetric ``W``: ``W - nu I`` with
    no negative and no zero pivot (sparse), or a Cholesky of it that runs to completion
    (dense).  Arguments and errors as :func:`second_eigenvalue_bound`."""
    n = W.shape[0]
    if _plan(W, method, budget) == "dense":
        return _shift_test(_dense_test(W, nu, 1.0, 0.0), nu, -1.0, "dense Cholesky", None)
    A = (sp.csc_matrix(W) - nu * sp.identity(n, format="csc")).tocsc()
    error, how, beyond = _sparse_test(A, 0)
    return _shift_test(error, nu, -1.0, how, beyond)
