"""Exact integer linear algebra for PPAC's rank questions (which observations are new, which
private values an attacker can solve for).

Float rank tests on the rows ``e_l^T W^t C`` are fragile: the rows converge to the constant
row as ``t`` grows, so late rows are nearly dependent whether or not they are exactly
dependent.  Here the gossip matrix is taken as an exact rational matrix ``W = W_int / D``
(``W_int`` integer), the rows are scaled by ``D^t`` (which changes no span) and every test runs
on Python integers, with fraction-free elimination and gcd normalisation
(:class:`sparsedp.linalg.exact_rank.IntegerEchelon`).
"""

from __future__ import annotations

import math
from fractions import Fraction
from functools import reduce
from typing import Any

import numpy as np

from sparsedp.errors import ParameterError
from sparsedp.linalg.stochastic import as_square_sparse
from sparsedp.ppac.protocol import PPACLayout

__all__ = ["exact_observation_rows", "rational_matrix"]

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
    m = layout.designated_index
    X = np.zeros((len(nbrs), n), dtype=object)
    X[:] = 0
    X[np.arange(len(nbrs)), nbrs] = 1
    for tau in range(horizon + 1):
        if tau > 0:
            X = X.dot(W_int)
        for a, nb in enumerate(nbrs):
            x = X[a]
            yield ("message", int(nb), tau), np.concatenate([x[m], x[dst] - x[m[k]]])
