"""Dense reference computations for tests (small n and T only).

Independent of the engine: it builds ``H_T`` explicitly (mT x nT), takes the projector
``P = H^+ H`` with a pseudo-inverse (SVD), slices ``M_T[k, l] = P[k n + j, l n + j]`` and
evaluates every bound by brute force over all sign vectors with plain numpy.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np

from .kernels import _local_sign_search_numpy


def dense_H(W, observers, T: int) -> np.ndarray:
    """Explicit ``H_T`` with block (t, k) = ``S W^(t-k)`` for k <= t."""
    W = np.asarray(W.toarray() if hasattr(W, "toarray") else W, dtype=float)
    n = W.shape[0]
    S = np.eye(n)[list(observers)]
    m = S.shape[0]
    powers = [np.eye(n)]
    for _ in range(T - 1):
        powers.append(powers[-1] @ W)
    H = np.zeros((T * m, T * n))
    for t in range(T):
        for k in range(t + 1):
            H[t * m : (t + 1) * m, k * n : (k + 1) * n] = S @ powers[t - k]
    return H


def dense_M(W, target: int, observers, T: int) -> np.ndarray:
    """``M_T`` as the (target, target) slice of the projector ``H^+ H``."""
    H = dense_H(W, observers, T)
    n = H.shape[1] // T
    P = np.linalg.pinv(H) @ H
    idx = np.arange(T) * n + target
    M = P[np.ix_(idx, idx)]
    return 0.5 * (M + M.T)


def brute_force_max(M: np.ndarray) -> float:
    """``max_c c^T M c`` over every sign vector (T <= 16)."""
    T = M.shape[0]
    C = np.array(list(itertools.product((1.0, -1.0), repeat=T)))
    return float(np.max(np.einsum("ij,jk,ik->i", C, M, C)))


@dataclass(frozen=True)
class DenseReference:
    M: np.ndarray
    ones: float
    local_search: float
    exact: float
    spectral: float
    entrywise: float

    @property
    def lower(self) -> float:
        return max(self.ones, self.local_search, self.exact)

    @property
    def upper(self) -> float:
        return min(self.spectral, self.entrywise, float(self.M.shape[0]), self.exact)


def dense_reference(W, target: int, observers, T: int) -> DenseReference:
    """Every quantity the engine reports, computed densely from ``H^+ H``."""
    M = dense_M(W, target, observers, T)
    ones = np.ones(T)
    ls_ones, _ = _local_sign_search_numpy(M, ones)
    top = np.linalg.eigh(M)[1][:, -1]
    top_signs = np.where(top >= 0, 1.0, -1.0)
    ls_top, _ = _local_sign_search_numpy(M, top_signs)
    return DenseReference(
        M=M,
        ones=float(ones @ M @ ones),
        local_search=max(ls_ones, ls_top),
        exact=brute_force_max(M),
        spectral=float(T * np.linalg.eigvalsh(M)[-1]),
        entrywise=float(np.abs(M).sum()),
    )
