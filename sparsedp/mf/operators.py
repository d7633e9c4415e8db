"""The attacker knowledge ``O = A G + B Z`` as matrix-free operators (never ``nT x nT``).

With ``R = K T`` gossip rounds, the observed rows ``S`` and the known noise ``R_k``
(:mod:`sparsedp.mf.trust`), the gossip engine's :class:`~sparsedp.linalg.operators.
GossipSystem` applies ``H_R`` (``H[r, r'] = S W^(r - r')``, known-noise columns deleted) by
sparse products with W.  Then (:mod:`sparsedp.mf.algorithms`)

    B Z   = H_R (I_T kron E_K) (L kron I_n) Z         ((T, n, r) -> (R, m, r))
    B^T Y = (L^T kron I_n) (I_T kron E_K^T) H_R^T Y
    A_u   = H_R (I_T kron E_K) (I_T kron e_u)          (the target's T columns, mR x T)

Lemma 11's reduction zeroes the attackers' own gradient columns of A; only the target's
columns enter its sensitivity, so only ``A_u`` is formed.  Each application costs
``O(R nnz(W))`` per column.
"""

from __future__ import annotations

import functools

import numpy as np
import scipy.linalg.blas
import scipy.sparse as sp
from scipy.sparse.linalg import LinearOperator

from sparsedp.linalg import gram
from sparsedp.linalg.certified import gamma
from sparsedp.linalg.operators import GossipSystem

_MIRROR_ROWS = 512  # rows of K mirrored at a time by _gram_rows


class MFSystem:
    """Matrix-free ``B``, ``B^T``, ``B B^T`` and the dense ``A_u`` of one attacker knowledge."""

    def __init__(self, W: sp.csr_matrix, observed, known_noise, T: int, K: int,
                 L: np.ndarray):
        self.T, self.K, self.R = int(T), int(K), int(K) * int(T)
        self.L = np.asarray(L, dtype=np.float64)
        self.gossip = GossipSystem(W, observed, self.R, known_noise=known_noise)
        self.n, self.m = self.gossip.n, self.gossip.m

    def apply_B(self, Z: np.ndarray) -> np.ndarray:
        """``(T, n, r) -> (R, m, r)``."""
        mixed = np.einsum(self._mixing, self.L, Z)
        rounds = np.zeros((self.R,) + Z.shape[1:])
        rounds[:: self.K] = mixed
        return self.gossip.apply_H(rounds)

    def apply_BT(self, Y: np.ndarray) -> np.ndarray:
        """``(R, m, r) -> (T, n, r)``."""
        back = self.gossip.apply_HT(Y)[:: self.K]
        return np.einsum(self._mixing_T, self.L, back)

    @property
    def _mixing(self) -> str:
        """``L Z`` per node: one L for all (T x T) or one per node (n x T x T)."""
        return "ts,snr->tnr" if self.L.ndim == 2 else "nts,snr->tnr"

    @property
    def _mixing_T(self) -> str:
        return "ts,tnr->snr" if self.L.ndim == 2 else "nts,tnr->snr"

    @property
    def B(self) -> LinearOperator:
        """``B`` (mR x nT) as a LinearOperator."""
        T, n, m, R = self.T, self.n, self.m, self.R
        return LinearOperator(
            (R * m, T * n), dtype=np.float64,
            matvec=lambda z: self.apply_B(z.reshape(T, n, 1)).ravel(),
            rmatvec=lambda y: self.apply_BT(y.reshape(R, m, 1)).ravel(),
            matmat=lambda Z: self.apply_B(Z.reshape(T, n, -1)).reshape(R * m, -1),
            rmatmat=lambda Y: self.apply_BT(Y.reshape(R, m, -1)).reshape(T * n, -1),
        )

    def A_target(self, target: int, lags: np.ndarray | None = None) -> np.ndarray:
        """``A_u`` (mR x T, non-negative): the target's gradient columns; from the observer
        lags of :meth:`assemble_K` when given (no sparse product), else by R products."""
        if lags is None:
            G = self.gossip.G_matrix(target)  # (R m) x R, every round's impulse
            return np.ascontiguousarray(G[:, :: self.K])
        return np.ascontiguousarray(self.stacked_A_T([target], lags).T)

    def stacked_A_T(self, targets, lags: np.ndarray, rows: np.ndarray | None = None
                    ) -> np.ndarray:
        """``A_u[rows]^T`` of every target in ``targets``, stacked (``(len(targets) T) x
        rows.size``, target-major; ``rows``: indices into the ``R m`` rows in increasing
        order, default all), read off the observer lags of :meth:`assemble_K` at once:
        column s of ``A_u`` is ``S W^(r - K s) e_u`` at round ``r >= K s`` (block ``(r, r')``
        of the impulse response ``S W^(r - r') e_u``; the target's column is never zeroed),
        the target's lags delayed by ``K s`` rounds."""
        full = self.R * self.m
        rows = np.arange(full) if rows is None else np.asarray(rows)
        profiles = np.ascontiguousarray(lags[:, :, list(targets)].reshape(full, -1).T)
        out = np.zeros((profiles.shape[0], self.T, rows.size))
        for s in range(self.T):
            delay = self.K * s * self.m
            first = int(np.searchsorted(rows, delay))
            out[:, s, first:] = profiles[:, rows[first:] - delay]
        return out.reshape(-1, rows.size)

    def toeplitz_noise(self) -> np.ndarray | None:
        """``l`` with ``L[t, s] = l[t - s]`` when L is lower-triangular Toeplitz (independent
        noise, AntiPGD, SR, BSR), else ``None`` (also for one L per node)."""
        if self.L.ndim != 2:
            return None
        column = self.L[:, 0]
        if np.any(np.triu(self.L, 1)) or any(
                np.any(np.diagonal(self.L, -j) != column[j]) for j in range(self.T)):
            return None
        return column.copy()

    def assemble_K(self) -> tuple[np.ndarray, int, np.ndarray | None]:
        """``B B^T`` on every row (``R m``, round-major), dense, with a depth N such that
        ``|fl(K) - K| <= gamma_N K_abs`` entrywise (``K_abs``: the same product with
        ``|L|``), and the observer lags ``V[l] = S W^l`` (``(R, m, n)``, known-noise columns
        zeroed) when they were formed.

        Toeplitz L (:meth:`toeplitz_noise`): row ``(r, a)`` of B has block ``d_(r - s K)[a]``
        at noise step s, with the noise lags ``d_j = sum_i l_i V_(j - i K)``, so
        ``K[r, r'] = d_r d_r'^T + K[r - K, r' - K]``: one BLAS Gram of the stacked lags and a
        block recursion along the diagonals (as :mod:`sparsedp.linalg.gram` for K = 1,
        L = I).  V's entries are sums of non-negative products ``(R - 1)(d + 1)`` deep, the
        lags add at most 2 T operations (a product and a sum per term), the Gram's inner
        products n and the recursion T, so ``N = 2 ((R - 1)(d + 1) + 2 T) + n + T``.  Any
        other L: the operator applied to unit vectors (:meth:`_operator_K`),
        ``N = 2 R (d + 2) + 2 T + 4``.  d: W's longest row or column.
        """
        R, m, d = self.R, self.m, self._longest_line
        ell = self.toeplitz_noise()
        if ell is None:
            return self._operator_K(), 2 * R * (d + 2) + 2 * self.T + 4, None
        V, _ = gram.observer_lags(self.gossip.W, self.gossip.observers, R)
        V[:, :, self.gossip.known_noise] = 0.0
        V.flags.writeable = False
        lags = V
        steps = [i for i in range(1, self.T) if ell[i] != 0]
        if ell[0] != 1 or steps:
            lags = ell[0] * V
            for i in steps:
                lags[i * self.K:] += ell[i] * V[: R - i * self.K]
        K = _gram_rows(lags.reshape(R * m, -1))
        del lags
        blocks = K.reshape(R, m, R, m)
        for r in range(self.K, R):  # K[r, r'] = d_r d_r'^T + K[r - K, r' - K]
            blocks[r, :, self.K:, :] += blocks[r - self.K, :, : R - self.K, :]
        depth = 2 * ((R - 1) * (d + 1) + 2 * self.T) + self.n + self.T
        return K, depth, V

    def assemble_K_abs(self) -> np.ndarray:
        """``fl(K_abs) = fl(B_abs B_abs^T)`` on every row (:meth:`assemble_K` with ``|L|``):
        ``|fl(K) - K| <= gamma_N K_abs <= gamma_N fl(K_abs) (1 + 2 gamma_N)`` entrywise."""
        saved, self.L = self.L, np.abs(self.L)
        try:
            return self.assemble_K()[0]
        finally:
            self.L = saved

    def abs_row_sums(self) -> np.ndarray:
        """Upper bounds on the row sums of ``K_abs = B_abs B_abs^T`` (``B_abs``: B with
        ``|L|``), from two operator applications to the all-ones vector: sums of non-negative
        products ``N' = 2 R (d + 2) + 2 T + 4 + R m`` deep, divided by ``1 - gamma_N'``."""
        ones = np.ones((self.R, self.m, 1))
        saved, self.L = self.L, np.abs(self.L)
        try:
            sums = self.apply_B(self.apply_BT(ones)).ravel()
        finally:
            self.L = saved
        depth = 2 * self.R * (self._longest_line + 2) + 2 * self.T + 4 + self.R * self.m
        return sums / (1.0 - gamma(depth))

    @functools.cached_property
    def _longest_line(self) -> int:
        W = self.gossip.W
        return int(max(np.diff(W.indptr).max(), np.bincount(W.indices, minlength=self.n).max()))

    def _operator_K(self) -> np.ndarray:
        """``B B^T`` on every row, dense, by the operator applied to unit vectors."""
        size = self.R * self.m
        K = self.apply_B(self.apply_BT(np.eye(size).reshape(self.R, self.m, size)))
        K = K.reshape(size, size)
        return 0.5 * (K + K.T)

    def G_rounding(self) -> float:
        """Relative rounding of every entry of ``A_u`` (sums of non-negative products, depth
        at most ``2 R (d + 2) + 2``; d: W's longest row or column, as the impulse is formed
        with W and the lags of :meth:`assemble_K` with ``W^T``)."""
        return gamma(2 * self.R * (self._longest_line + 2) + 2)


def _gram_rows(flat: np.ndarray) -> np.ndarray:
    """``flat flat^T`` (C-contiguous rows) by BLAS ``syrk``: the upper triangle's inner
    products, half a general product's work, copied to the lower triangle (the same sums,
    hence the same rounding)."""
    K = scipy.linalg.blas.dsyrk(1.0, flat.T, trans=1, lower=0)  # (flat.T)^T flat.T, upper
    N = K.shape[0]
    for top in range(0, N, _MIRROR_ROWS):  # lower triangle <- upper, a panel at a time
        bottom = min(top + _MIRROR_ROWS, N)
        panel = K[top:bottom, top:]
        mirror = K[top:, top:bottom]
        mirror[:] = np.where(np.tri(N - top, bottom - top, -1, dtype=bool),
                             panel.T, mirror)
    return K.T  # symmetric: the C-contiguous view, which the caller reshapes in place
