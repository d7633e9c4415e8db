"""The block rows of ``K_T`` and ``G_T`` for gossip matrices without the lag structure
(time-varying, or one constant W that is not symmetric), one round at a time, from the
engine's matrix-free operator (:class:`sparsedp.linalg.operators.GossipSystem`).

Round t (0-based) adds the block row ``K[t, 0..t]`` and the row ``G[t, 0..t]``.  ``H^T``
applied to the m unit vectors of block t (the backward recursion, ``t - 1 + p`` products of
an n x m block) gives ``R_k = H[t, k]^T`` for k = 0..t, whose target rows are ``G[t, k]``;
``H`` applied to them (the forward recursion, as many products) gives ``H H^T E_t``, the
blocks ``K[s, t]`` for s = 0..t, whose transposes are the block row (K symmetric).  This is
the engine's ``method="dense"`` assembly (:func:`sparsedp.gossip.certified_solve.solve`)
restricted to the new columns: ``O(nnz(W) m t)`` work for round t, ``O(nnz(W) m T^2)`` for T
rounds, about one application of K to T columns in the one-shot matrix-free query; no state
but the matrices (and their transposes, formed once per distinct matrix).

Every entry is a sum of non-negative products (``W_t >= 0``) formed by at most N roundings,
N = :attr:`~sparsedp.linalg.operators.GossipSystem.rounding_depth` of the rounds so far, so it
is within ``gamma_N`` relative of the exact one, which the running bound charges
(:meth:`sparsedp.accountant.bordered.BorderedFactor.extend_rows`).
"""

from __future__ import annotations

import math

import numpy as np
import scipy.sparse as sp

from sparsedp.linalg.certified import gamma
from sparsedp.linalg.operators import GossipSystem


class OperatorRows:
    """The recorded gossip matrices of one (target, observed rows) pair and the block rows of
    its ``K_T``, ``G_T`` (module docstring).

    Parameters
    ----------
    observed : numpy.ndarray
        The observed rows S (m distinct indices).
    target : int
        The target j.
    power_offset : int
        The view's p (``H[t, k] = S W_(t-1+p) ... W_k``).
    constant : scipy.sparse.csr_matrix or None
        One W for every round (a non-symmetric constant W), or ``None`` for time-varying
        gossip, whose matrices are recorded with :meth:`record`.
    """

    def __init__(self, observed: np.ndarray, target: int, power_offset: int,
                 constant: sp.csr_matrix | None = None):
        self.observed, self.target, self.power_offset = observed, int(target), power_offset
        self.constant = constant
        self.matrices: list[sp.csr_matrix] = []
        self._transposes: list[sp.csr_matrix] = []
        if constant is not None:
            self._constant_transpose = constant.T.tocsr()

    def record(self, W: sp.csr_matrix) -> None:
        """Append the matrix of the next round (time-varying gossip; a checked, float64 CSR
        gossip matrix of the common size)."""
        self.matrices.append(W)
        self._transposes.append(W.T.tocsr())

    def forget(self, count: int) -> None:
        """Keep the first ``count`` matrices only (matrices recorded ahead by
        :meth:`sparsedp.Accountant.rounds_within`)."""
        del self.matrices[count:], self._transposes[count:]

    def available(self) -> float:
        """How many rounds have their matrices (infinite for a constant W)."""
        return math.inf if self.constant is not None else len(self.matrices)

    def sequence(self, T: int):
        """The gossip input of T rounds as :func:`sparsedp.squared_sensitivity` takes it: the
        constant W, or the list ``W_0 .. W_(T-1)``."""
        return self.constant if self.constant is not None else self.matrices[:T]

    def rows(self, t: int) -> tuple[np.ndarray, np.ndarray, float]:
        """Round t's block row ``K[t, 0..t]`` (m x m (t + 1)), row ``G[t, 0..t]`` (m x
        (t + 1)) and the relative rounding ``gamma_N`` of their entries."""
        T, m = t + 1, self.observed.size
        if self.constant is not None:
            Ws, WTs = [self.constant] * T, [self._constant_transpose] * T
        else:
            Ws, WTs = self.matrices[:T], self._transposes[:T]
        system = GossipSystem(Ws, self.observed, T, power_offset=self.power_offset,
                              transposes=WTs)
        unit = np.zeros((T, m, m))
        unit[t] = np.eye(m)
        R = system.apply_HT(unit)  # R[k] = H[t, k]^T, (T, n, m)
        G_row = R[:, self.target, :].T.copy()
        columns = system.apply_H(R)  # columns[s] = K[s, t]
        K_row = np.ascontiguousarray(columns.transpose(0, 2, 1).transpose(1, 0, 2)
                                     .reshape(m, T * m))
        own = K_row[:, t * m:]
        own[:] = 0.5 * (own + own.T)
        return K_row, G_row, gamma(system.rounding_depth)
