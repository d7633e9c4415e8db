"""Which observations of a K > 1 algorithm (Muffliato-SGD(K), MF-D-SGD) are exact linear
functions of the others.

Rounds without a gradient step inject no noise, so their observed rows can depend on earlier
ones in ways the sparsity pattern does not decide.  Here ``B`` with ``L = I`` is formed in
exact rational arithmetic from W's entries (every float is a rational; an invertible noise
correlation L multiplies B on the right by ``L kron I`` on the unknown noise, which is
invertible, so the row dependencies are the same): row
``(r, a)`` has, for every injection step ``t`` with ``t K <= r``, the block
``(W^(r - t K))[a, :]`` with the known-noise columns deleted.  Rows are kept by exact
fraction-free elimination (:class:`sparsedp.linalg.exact_rank.IntegerEchelon`), so the kept
rows are independent and every dropped row is a combination of kept rows, both exactly;
dropping them leaves ``M`` unchanged (the same combination holds on ``A_u``, whose columns are
columns of B: the target's noise is unknown).

The rational elimination is the second stage: :func:`structural_observations` first drops the
rows whose dependence the recursion itself proves, and the kept rows are independent when the
``B B^T`` they span is certified positive definite (:mod:`sparsedp.mf.blocks`).
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import scipy.sparse as sp

from sparsedp.linalg import exact_rank
from sparsedp.linalg.exact_rank import IntegerEchelon

EXACT_WORK_LIMIT = 3_000_000  # rows x columns x (observed rows) rational operations


def exact_work(n: int, m: int, T: int, K: int) -> int:
    return (K * T * m) * (n * T) * max(m, 1)


def structural_observations(W: sp.csr_matrix, observed: np.ndarray, known: np.ndarray,
                            T: int, K: int) -> np.ndarray:
    """Bool ``(K T m,)`` in the operator's row order: the rows left after dropping those
    that are proven exact linear combinations of the rows kept before them.

    A row ``(r, a)`` that gets no fresh noise at round r (r not an injection round ``t K``,
    or a's noise known) is ``sum_b W[a, b]`` row ``(r - 1, b)`` of the full B.  Hence for
    such rows, any c with ``sum_a c_a W[a, O] = 0`` (O the unobserved nodes) makes
    ``sum_a c_a`` row ``(r, a)`` a combination of the observed rows of round r - 1: the rows
    dropped by exact elimination of ``W[rows, O]`` (:func:`sparsedp.linalg.exact_rank.
    independent_rows`, in row order; only its zero rows when that is too much work) are
    combinations of the kept rows of round r and of earlier rows, exactly.  Rows with fresh
    noise are never dropped and cannot enter such a combination (their noise column is zero
    in every other row).  At round 0 the rows of known noise are zero.  For K = 1 this is
    the complete decision of :meth:`sparsedp.linalg.operators.GossipSystem.redundant_rows`;
    for K > 1 it is sufficient only, and the kept rows' independence is certified after
    (module docstring)."""
    W = sp.csr_matrix(W)
    n, m, R = W.shape[0], observed.size, K * T
    unobserved = np.ones(n, dtype=bool)
    unobserved[observed] = False
    in_known = np.isin(observed, known)
    block = W[observed][:, np.flatnonzero(unobserved)]
    quiet = _kept(block.toarray())  # every row of a round without injection
    noisy = np.ones(m, dtype=bool)  # injection rounds: only rows of known noise compete
    noisy[in_known] = _kept(block[np.flatnonzero(in_known)].toarray())
    keep = np.empty((R, m), dtype=bool)
    for r in range(R):
        keep[r] = quiet if r % K else noisy
    keep[0, in_known] = False  # zero rows: only known noise so far
    return keep.ravel()


def _kept(block: np.ndarray) -> np.ndarray:
    keep = exact_rank.independent_rows(block)
    return np.abs(block).sum(axis=1) > 0 if keep is None else keep


def independent_observations(W: sp.csr_matrix, observed: np.ndarray, known: np.ndarray,
                             T: int, K: int) -> np.ndarray | None:
    """Bool ``(K T m,)`` in the operator's row order (round-major): the rows kept; ``None``
    when the exact work would exceed :data:`EXACT_WORK_LIMIT`."""
    n, m, R = W.shape[0], observed.size, K * T
    if exact_work(n, m, T, K) > EXACT_WORK_LIMIT:
        return None
    W = W.tocsr()
    entries = [
        {int(j): Fraction(float(v)) for j, v in zip(W.indices[W.indptr[i]:W.indptr[i + 1]],
                                                     W.data[W.indptr[i]:W.indptr[i + 1]],
                                                     strict=True) if v != 0}
        for i in range(n)
    ]
    unknown = np.setdiff1d(np.arange(n), known)
    # powers[l][k] = row observed[k] of W^l, as a dense list of Fractions
    powers = []
    current = [[Fraction(int(j == a)) for j in range(n)] for a in observed.tolist()]
    for _ in range(R):
        powers.append(current)
        current = [_row_times(row, entries, n) for row in current]
    echelon = IntegerEchelon(T * unknown.size)
    keep = np.zeros(R * m, dtype=bool)
    width = unknown.size
    for r in range(R):
        for k in range(m):
            row = [Fraction(0)] * (T * width)
            for t in range(r // K + 1):
                block = powers[r - t * K][k]
                for c, j in enumerate(unknown.tolist()):
                    row[t * width + c] = block[j]
            keep[r * m + k] = echelon.add(_integers(row))
    return keep


def _row_times(row: list, entries: list, n: int) -> list:
    """``row @ W`` exactly (W given by its rows' non-zero entries)."""
    out = [Fraction(0)] * n
    for i, x in enumerate(row):
        if x:
            for j, w in entries[i].items():
                out[j] += x * w
    return out


def _integers(row: list) -> np.ndarray:
    scale = math.lcm(*(f.denominator for f in row)) if row else 1
    out = np.empty(len(row), dtype=object)
    out[:] = [int(f * scale) for f in row]
    return out
