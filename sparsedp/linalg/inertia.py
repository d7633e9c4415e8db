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

Cost.  The factors' fill decides it: small on geometric graphs, grids and paths (0.07 s at
n = 10^4, 2 s at 10^5 on the bench's geometric graphs), close to a dense factorisation on
expanders and heavy-tailed graphs (13 s at n = 10^4).  :func:`envelope_cost` estimates it
beforehand from the envelope of a reverse Cuthill-McKee ordering, which contains the fill of
that ordering and was above the minimum-degree fill on every bench graph (by 1.2-11x).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import reverse_cuthill_mckee
from scipy.sparse.linalg import splu

from sparsedp.linalg.certified import UNIT_ROUNDOFF, gamma
from sparsedp.reprs import short_repr

__all__ = [
    "AUTO_MAX_FLOPS",
    "AUTO_MAX_N",
    "MARGIN",
    "EnvelopeCost",
    "Inertia",
    "auto_skip_reason",
    "envelope_cost",
    "inertia",
    "lowest_eigenvalue_bound",
    "second_eigenvalue_bound",
]

AUTO_MAX_FLOPS = 5e10  # callers certify unasked when the envelope estimate is at most this
AUTO_MAX_N = 150_000  # ... and n at most this (a 2D geometric envelope's flops grow like n^2)
MARGIN = 0.05  # callers test a shift this fraction of the estimated gap beyond the estimate
ROUND_UP = 1e-6  # relative allowance for rounding in the bound's own nonnegative sums
BYTES_PER_FACTOR_ENTRY = 24  # a value and an index in L and in U, with SuperLU's workspace


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


def auto_skip_reason(A: sp.spmatrix, budget: float) -> str | None:
    """Why a certificate nobody asked for is not attempted on ``A`` (``None``: attempt it):
    more than ``AUTO_MAX_N`` rows (not even the envelope is computed), or an envelope above
    ``AUTO_MAX_FLOPS`` or the memory ``budget`` (bytes)."""
    n = A.shape[0]
    if n > AUTO_MAX_N:
        return (f"n = {n} is above the automatic certificate's {AUTO_MAX_N} nodes; "
                "certify=True runs it")
    cost = envelope_cost(A)
    if cost.flops > AUTO_MAX_FLOPS or cost.bytes > budget:
        return (f"the certificate's factorisation was skipped (reverse Cuthill-McKee envelope: "
                f"{cost.flops:.1e} flops, {cost.bytes / 2**30:.2g} GiB; the automatic limit is "
                f"{AUTO_MAX_FLOPS:.0e} flops within the memory budget; certify=True runs it)")
    return None


def inertia(A: sp.spmatrix) -> Inertia:
    """The certified inertia of the symmetric sparse ``A`` (see the module docstring).

    Raises ``ValueError`` when ``A`` is not exactly symmetric or when the factorisation needed
    an off-diagonal pivot (a zero on the diagonal of a Schur complement): no certificate.
    """
    C = sp.csc_matrix(A, dtype=float)
    n = C.shape[0]
    if (C != C.T).nnz:
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
    return Inertia(int(np.sum(d < 0)), int(np.sum(d == 0)), error, int(L.nnz + U.nnz))


def _shifted_inertia(A: sp.csc_matrix) -> tuple[Inertia, float]:
    """:func:`inertia` of the shifted matrix ``A`` and the 2-norm of its diagonal's rounding
    (``u max_i |A_ii|``: each ``fl(mu - W_ii)`` or ``fl(W_ii - nu)`` is within ``u`` relative
    of the exact value)."""
    try:
        counts = inertia(A)
    except RuntimeError as exc:  # SuperLU: "Factor is exactly singular"
        raise ValueError(f"the factorisation failed ({exc})") from exc
    return counts, UNIT_ROUNDOFF * float(np.abs(A.diagonal()).max(initial=0.0))


def second_eigenvalue_bound(W: sp.spmatrix, mu: float) -> tuple[float | None, Inertia]:
    """``(bound, inertia)`` for the exactly symmetric ``W``: ``bound = mu + error`` with
    ``lambda_2(W) <= bound`` certified (``lambda_2``: the second largest eigenvalue) when
    ``mu I - W`` has exactly one negative pivot and no zero one, else ``None`` (more negative
    pivots: ``W`` has ``inertia.negative - 1`` eigenvalues besides the top one above about
    ``mu``).  ``ValueError`` as :func:`inertia`, and when SuperLU finds the matrix
    singular."""
    n = W.shape[0]
    counts, rounding = _shifted_inertia(
        (mu * sp.identity(n, format="csc") - sp.csc_matrix(W)).tocsc())
    if counts.negative != 1 or counts.zero:
        return None, counts
    return math.nextafter(mu + counts.error + rounding, math.inf), counts


def lowest_eigenvalue_bound(W: sp.spmatrix, nu: float) -> tuple[float | None, Inertia]:
    """``(bound, inertia)`` for the exactly symmetric ``W``: ``bound = nu - error`` with
    ``lambda_min(W) >= bound`` certified when ``W - nu I`` has no negative and no zero pivot,
    else ``None``.  ``ValueError`` as :func:`second_eigenvalue_bound`."""
    n = W.shape[0]
    counts, rounding = _shifted_inertia(
        (sp.csc_matrix(W) - nu * sp.identity(n, format="csc")).tocsc())
    if counts.negative or counts.zero:
        return None, counts
    return math.nextafter(nu - counts.error - rounding, -math.inf), counts
