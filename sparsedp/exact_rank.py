"""Exact row selection over the rationals: which rows of a small float matrix are independent.

Every float is a rational ``m 2^e``, so a float matrix has an exact rank.  Row by row,
:func:`independent_rows` reduces each row against an echelon basis of the rows kept so far,
in exact integer arithmetic (each row scaled by a power of two to integers, fraction-free
elimination ``r <- b_p r - r_p b`` and division by the gcd), and keeps the row exactly when a
non-zero remainder is left.  So the kept rows are linearly independent and every dropped row
is a linear combination of the kept rows before it, both exactly.

Used to drop observations that are exact linear functions of other observations
(:meth:`sparsedp.operators.GossipSystem.redundant_rows`): dropping such a row leaves the
sensitivity unchanged, while keeping it makes ``K_T`` singular.  A float decision (an SVD
cut-off) could drop a row that is independent, which lowers the sensitivity: unsound.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

from .certified import UNIT_ROUNDOFF

EXACT_WORK_LIMIT = 4_000_000  # integer row operations (rows x kept rows x columns) allowed


def _integer_row(row: np.ndarray) -> list[int]:
    """The row times a power of two that makes every entry an integer (exact)."""
    fractions = [Fraction(float(x)) for x in row]
    scale = math.lcm(*(f.denominator for f in fractions))
    return [int(f * scale) for f in fractions]


def _reduce(row: list[int], basis: list[tuple[int, list[int]]]) -> list[int]:
    """``row`` reduced against the echelon ``basis`` (pivot column, integer row), divided by
    the gcd of its entries."""
    for pivot, b in basis:
        if row[pivot]:
            factor, scale = row[pivot], b[pivot]
            row = [scale * x - factor * y for x, y in zip(row, b, strict=True)]
            g = math.gcd(*row)
            if g > 1:
                row = [x // g for x in row]
    return row


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
    basis: list[tuple[int, list[int]]] = []
    independent = np.zeros(r, dtype=bool)
    for index, row in enumerate(rows):
        remainder = _reduce(_integer_row(row), basis)
        pivot = next((k for k, x in enumerate(remainder) if x), None)
        if pivot is not None:
            basis.append((pivot, remainder))
            independent[index] = True
    keep[np.flatnonzero(keep)] = independent
    return keep
