"""The lag sequence of a symmetric gossip chain, extended one sparse product at a time.

For symmetric W, observed rows S (m of them) and target j, the structured form of the gossip
view needs ``mu_l = S W^l S^T`` and ``a_l = S W^l e_j`` (``docs/bounds.md``; the engine's
:mod:`sparsedp.linalg.moments` computes them for a fixed T).  With ``V_l = W^l S^T``
(n x m), one product ``V_(l+1) = W V_l`` gives two lags, ``mu_(2l+1) = V_l^T V_(l+1)`` and
``mu_(2l+2) = V_(l+1)^T V_(l+1)``, and ``a_(l+1) = V_(l+1)[j]`` (W symmetric), so round T + 1
costs one product more than round T, whatever T: the accountant never propagates again from
the start.  No truncation: every lag is computed, as on the engine's untruncated structured
path, whose working-precision model (computed lags exact up to their rounding, the sums that
form K charged ``gamma_(T+1)`` relative) the accountant's bounds share.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from sparsedp.linalg import kernels


class LagStream:
    """``mu_0 .. mu_(2P)`` and ``a_0 .. a_P`` after P products, extended on demand.

    Parameters
    ----------
    W : scipy.sparse.csr_matrix
        A checked, exactly symmetric gossip matrix (float64).
    observed : numpy.ndarray
        The observed rows S (m distinct indices).
    target : int
        The target j.
    backend : str
        Kernel backend of the sparse products (``"auto" | "numba" | "numpy"``).
    """

    def __init__(self, W: sp.csr_matrix, observed: np.ndarray, target: int,
                 backend: str = "auto"):
        self.W, self.target, self.backend = W, int(target), backend
        n, m = W.shape[0], observed.size
        self.V = np.zeros((n, m))
        self.V[observed, np.arange(m)] = 1.0
        self.mu = [self.V.T @ self.V]
        self.a = [self.V[self.target].copy()]

    @property
    def products(self) -> int:
        """Sparse products done so far (P)."""
        return len(self.a) - 1

    def extend_to(self, products: int) -> None:
        """Propagate until ``products`` products are done (nothing when already there)."""
        shift = 1.0 / self.W.shape[0]
        while self.products < products:
            self.V, cross, gram, _ = kernels.spmm_fused(self.W, self.V, shift,
                                                        backend=self.backend)
            self.mu.append(0.5 * (cross + cross.T))
            self.mu.append(gram)
            self.a.append(self.V[self.target].copy())

    def state(self) -> dict:
        """The stream as plain arrays (:func:`sparsedp.accountant.checkpoint.save`)."""
        return {"lags_V": self.V, "lags_mu": np.stack(self.mu), "lags_a": np.stack(self.a)}

    def restore(self, state: dict) -> None:
        """Continue from :meth:`state`'s arrays (bit for bit)."""
        self.V = np.array(state["lags_V"], dtype=np.float64)
        self.mu = list(np.array(state["lags_mu"], dtype=np.float64))
        self.a = list(np.array(state["lags_a"], dtype=np.float64))
