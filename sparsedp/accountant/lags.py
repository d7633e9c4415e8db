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
        listed = observed.tolist()
        self.target_column = listed.index(self.target) if self.target in listed else None
        n, m = W.shape[0], observed.size
        self.V = np.zeros((n, m))
        self.V[observed, np.arange(m)] = 1.0
        self._mu = np.zeros((1, m, m))
        self._a = np.zeros((1, m))
        self._mu[0] = self.V.T @ self.V
        self._a[0] = self.V[self.target]
        self.products = 0  # P

    @property
    def mu(self) -> np.ndarray:
        """``mu_0 .. mu_(2P)``, shape (2P + 1, m, m)."""
        return self._mu[:2 * self.products + 1]

    @property
    def a(self) -> np.ndarray:
        """``a_0 .. a_P``, shape (P + 1, m): the target's row of ``V_l``, or, when the target
        is an observed row (the neighbourhood view of one of its neighbours), the column of
        ``mu_l`` it owns, as the engine reads it (the same numbers to rounding, and then the
        same bits as the one-shot query's)."""
        if self.target_column is not None:
            return self._mu[:self.products + 1, :, self.target_column]
        return self._a[:self.products + 1]

    def extend_to(self, products: int) -> None:
        """Propagate until ``products`` products are done (nothing when already there)."""
        if products > self.products and products + 1 > self._a.shape[0]:
            size = max(products + 1, 2 * self._a.shape[0])  # capacity doubles
            self._mu = np.concatenate([self._mu, np.zeros((2 * size - 1 - self._mu.shape[0],)
                                                          + self._mu.shape[1:])])
            self._a = np.concatenate([self._a, np.zeros((size - self._a.shape[0],)
                                                        + self._a.shape[1:])])
        steps = products - self.products
        if steps <= 0:
            return
        # the engine's own kernel (small chains: one serial numba call), so that the lags,
        # and with them the interval's sign searches, are the one-shot query's bit for bit
        self.V, cross, gram, _, rows = kernels.propagate_fused(
            self.W, self.V, 1.0 / self.W.shape[0], steps, self.target, backend=self.backend)
        P = self.products
        self._mu[2 * P + 1:2 * products + 1:2] = 0.5 * (cross + cross.transpose(0, 2, 1))
        self._mu[2 * P + 2:2 * products + 2:2] = gram
        self._a[P + 1:products + 1] = rows
        self.products = products

    def state(self) -> dict:
        """The stream as plain arrays (:func:`sparsedp.accountant.checkpoint.save`)."""
        return {"lags_V": self.V, "lags_mu": self.mu, "lags_a": self.a}

    def restore(self, state: dict) -> None:
        """Continue from :meth:`state`'s arrays (bit for bit)."""
        self.V = np.array(state["lags_V"], dtype=np.float64)
        self._mu = np.array(state["lags_mu"], dtype=np.float64)
        self._a = np.array(state["lags_a"], dtype=np.float64)
        self.products = self._a.shape[0] - 1
