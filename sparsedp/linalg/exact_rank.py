"""Exact linear algebra over the rationals: integer echelon forms, and which rows of a small
float matrix are linearly independent.

Every float is a rational ``m 2^e``, so a float matrix has an exact rank.  Rows are scaled to
integers (which changes no span) and reduced by fraction-free elimination with gcd
normalisation (:class:`IntegerEchelon`), on Python integers.  :func:`independent_rows` keeps a
row exactly when a non-zero remainder is left after reducing it against the rows kept before
it: the kept rows are linearly independent and every dropped row is a linear combination of
kept rows, both exactly.

Used to drop observations that are exact linear functions of other observations
(:meth:`sparsedp.linalg.operators.GossipSystem.redundant_rows`): dropping such a row leaves the
sensitivity unchanged, while keeping it makes ``K_T`` singular.  A float decision (an SVD
cut-off) could drop a row that is independent, which lowers the sensitivity: unsound.  PPAC's
rank questions use the same echelon (:mod:`sparsedp.ppac.exact`).
"""

from __future__ import annotations

import math
from fractions import Fraction
from functools import reduce

import numpy as np

from sparsedp.linalg.certified import UNIT_ROUNDOFF

EXACT_WORK_LIMIT = 4_000_000  # integer row operations (rows x kept rows x columns) allowed


def _normalise(v: np.ndarray) -> np.ndarray:
    nz = [int(x) for x in v if x != 0]
    if not nz:
        return v
    g = reduce(math.gcd, nz)
    if nz[0] < 0:
        g = -g
    return v // g if g != 1 else v


class IntegerEchelon:
    """Rows of integers in echelon form, grown one row at a time (basis pursuit).

    Invariant: row ``k`` is zero at the pivot columns of rows ``0..k-1``, so reducing a vector
    by the rows in insertion order clears every pivot column.
    """

    def __init__(self, width: int) -> None:
        self.width = width
        self.rows: list[np.ndarray] = []
        self.pivots: list[int] = []

    @property
    def rank(self) -> int:
        return len(self.rows)

    def reduce(self, v: np.ndarray) -> np.ndarray:
        """``v`` minus a combination of the rows, zero at every pivot column (scaled, exact)."""
        v = v.copy()
        for row, p in zip(self.rows, self.pivots, strict=True):
            if v[p] != 0:
                v = _normalise(v * row[p] - row * v[p])
        return v

    def add(self, v: np.ndarray) -> bool:
        """Add ``v`` if it is not in the span of the rows; return whether it was added."""
        r = self.reduce(np.asarray(v, dtype=object))
        nz = np.flatnonzero(r != 0)
        if nz.size == 0:
            return False
        self.rows.append(_normalise(r))
        self.pivots.append(int(nz[0]))
        return True

    def unit_vectors_in_span(self) -> np.ndarray:
        """Bool (width,): whether ``e_c`` lies in the row span, for every column ``c``.

        In reduced row echelon form ``e_c`` is in the span exactly when ``c`` is a pivot column
        whose row has no other nonzero entry; the rows are reduced here on a copy.
        """
        rows = [r.copy() for r in self.rows]
        order = np.argsort(self.pivots)
        rows = [rows[k] for k in order]
        pivots = [self.pivots[k] for k in order]
        for k in range(len(rows) - 1, -1, -1):
            p = pivots[k]
            for q in range(k):
                if rows[q][p] != 0:
                    rows[q] = _normalise(rows[q] * rows[k][p] - rows[k] * rows[q][p])
        out = np.zeros(self.width, dtype=bool)
        for row, p in zip(rows, pivots, strict=True):
            if np.count_nonzero(row != 0) == 1:
                out[p] = True
        return out


def _integer_row(row: np.ndarray) -> np.ndarray:
    """The row times a power of two that makes every entry an integer (exact), as an object
    array of Python ints."""
    fractions = [Fraction(float(x)) for x in row]
    scale = math.lcm(*(f.denominator for f in fractions))
    out = np.empty(len(fractions), dtype=object)
    out[:] = [int(f * scale) for f in fractions]
    return out


def independent_rows(A: np.ndarray) -> np.ndarray | None:
    """Boolean mask of the rows of ``A`` kept by exact row reduction in order (module
    docstring), or ``None`` when the work would exceed :data:`EXACT_WORK_LIMIT`.

    Zero rows are dropped without arithmetic.  When a float SVD shows ``A``'s non-zero rows
    to be of full row rank by a margin far above its backward error (``sigma_min >
    100 max(r, c) u sigma_max``, Weyl's inequality), every non-zero row is kept without the
    exact reduction: no exact dependency can hide behind such a margin.
    """
    A = np.asarray(A, dtype=np.float64)
    keep = np.abs(A).sum(axis=1) > 0
    rows = A[keep][:, np.abs(A).sum(axis=0) > 0]
    if rows.shape[0] == 0:
        return keep
    r, c = rows.shape
    if r <= c:
        singular = np.linalg.svd(rows, compute_uv=False)
        if singular[-1] > 100 * max(r, c) * UNIT_ROUNDOFF * singular[0]:
            return keep
    if r * min(r, c) * c > EXACT_WORK_LIMIT:
        return None
    echelon = IntegerEchelon(c)
    keep[np.flatnonzero(keep)] = [echelon.add(_integer_row(row)) for row in rows]
    return keep
