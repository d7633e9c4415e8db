"""Exact integer linear algebra for PPAC's rank questions (which observations are new, which
private values an attacker can solve for).

Float rank tests on the rows ``e_l^T W^t C`` are fragile: the rows converge to the constant
row as ``t`` grows, so late rows are nearly dependent whether or not they are exactly
dependent.  Here the gossip matrix is taken as an exact rational matrix ``W = W_int / D``
(``W_int`` integer), the rows are scaled by ``D^t`` (which changes no span) and every test runs
on Python integers, with fraction-free elimination and gcd normalisation.
"""

from __future__ import annotations

import math
from fractions import Fraction
from functools import reduce
from typing import Any

import numpy as np

from ..errors import ParameterError
from ..gossip import as_square_sparse
from .protocol import PPACLayout

__all__ = ["IntegerEchelon", "exact_observation_rows", "rational_matrix"]

MAX_DENOMINATOR = 10**6


def rational_matrix(W: Any, max_denominator: int = MAX_DENOMINATOR) -> tuple[np.ndarray, int]:
    """``(W_int, D)`` with ``W = W_int / D`` exactly, ``W_int`` a dense object array of ints.

    Each float entry ``x`` is read as the fraction ``p / q`` (``q <= max_denominator``) nearest
    to it (``Fraction.limit_denominator``); that fraction must reproduce ``x`` to within
    ``1e-13 max(1, |x|)``, which holds when ``x`` is such a fraction up to a few roundings
    (the usual gossip weights ``1 / (1 + max(d_i, d_j))``, ``1 / d_max`` and the diagonals
    ``1 - sum``).  Two fractions with denominators ``<= 10^6`` are at least ``10^-12`` apart,
    so the fraction is unambiguous.  Otherwise
    ``ParameterError``: exact arithmetic is unavailable for this W.
    """
    M = as_square_sparse(W).tocoo()
    fracs = []
    for x in M.data.tolist():
        f = Fraction(x).limit_denominator(max_denominator)
        if abs(float(f) - x) > 1e-13 * max(1.0, abs(x)):
            raise ParameterError(f"W has the entry {x!r}, not a fraction with denominator <= "
                                 f"{max_denominator}: exact arithmetic is unavailable")
        fracs.append(f)
    D = reduce(math.lcm, (f.denominator for f in fracs), 1)
    n = M.shape[0]
    W_int = np.zeros((n, n), dtype=object)
    W_int[:] = 0
    for r, c, f in zip(M.row.tolist(), M.col.tolist(), fracs, strict=True):
        W_int[r, c] = f.numerator * (D // f.denominator)
    return W_int, D


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


def exact_observation_rows(layout: PPACLayout, W_int: np.ndarray, attacker: int,
                           horizon: int):
    """Yield ``(label, row)`` for the attacker's observations, rows as integer object arrays
    over the 2m sources, in the paper's basis-pursuit order (eq. 17):

    * ``("own", k)``: ``u_i`` and ``Gamma_il`` (``l != m_i``), unit rows (``Delta_i``);
    * ``("received", l)``: ``Gamma_li``; when ``m_l = i`` it is ``u_l - sum_{s != i} Gamma_ls``
      (``Lambda_i``);
    * ``("message", l, tau)``: ``D^tau p_l(tau)`` with ``p_l(tau)^T = e_l^T W^tau C`` (eq. 13),
      for ``tau = 0..horizon`` and ``l`` in ``N_i`` (increasing), time-major.
    """
    n, width = layout.n, layout.num_sources
    A = layout.graph.adjacency
    i = attacker
    nbrs = A.indices[A.indptr[i]:A.indptr[i + 1]].astype(np.int64)
    src_of = layout.edge_source

    def unit(c: int) -> np.ndarray:
        row = np.zeros(width, dtype=object)
        row[:] = 0
        row[c] = 1
        return row

    yield ("own", i), unit(i)
    for e in range(A.indptr[i], A.indptr[i + 1]):
        if src_of[e] >= 0:
            yield ("own", int(layout.dst[e])), unit(int(src_of[e]))
    for nb in nbrs:
        e = A.indptr[nb] + np.searchsorted(A.indices[A.indptr[nb]:A.indptr[nb + 1]], i)
        if src_of[e] >= 0:
            yield ("received", int(nb)), unit(int(src_of[e]))
        else:  # m_nb = i
            row = unit(int(nb))
            for f in range(A.indptr[nb], A.indptr[nb + 1]):
                if src_of[f] >= 0:
                    row[src_of[f]] = -1
            yield ("received", int(nb)), row
    k, dst = layout.src[layout.noise_edges], layout.dst[layout.noise_edges]
    m = layout.designated
    X = np.zeros((len(nbrs), n), dtype=object)
    X[:] = 0
    X[np.arange(len(nbrs)), nbrs] = 1
    for tau in range(horizon + 1):
        if tau > 0:
            X = X.dot(W_int)
        for a, nb in enumerate(nbrs):
            x = X[a]
            yield ("message", int(nb), tau), np.concatenate([x[m], x[dst] - x[m[k]]])
