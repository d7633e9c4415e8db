"""The lag sequence of a symmetric gossip chain, extended one sparse product at a time.

For symmetric W, observed rows S (m of them) and target j, the structured form of the gossip
view needs ``mu_l = S W^l S^T`` and ``a_l = S W^l e_j`` (``docs/bounds.md``; the engine's
:mod:`sparsedp.linalg.moments` computes them for a fixed T).  With ``V_l = W^l S^T``
(n x m), one product ``V_(l+1) = W V_l`` gives two lags, ``mu_(2l+1) = V_l^T V_(l+1)`` and
``mu_(2l+2) = V_(l+1)^T V_(l+1)``, and ``a_(l+1) = V_(l+1)[j]`` (W symmetric), so round T + 1
costs one product more than round T, whatever T: the accountant never propagates again from
the start.  Every lag is computed as on the engine's untruncated structured path, whose
working-precision model (computed lags exact up to their rounding, the sums that form K
charged ``gamma_(T+1)`` relative) the accountant's bounds share.

Mixing truncation (``truncate=True``, W doubly stochastic to rounding): the engine's
:class:`sparsedp.linalg.moments.LagPropagator` (with a column for the target, so ``a_l`` is
known up to lag ``2P``) propagates until the chain has mixed to ``n max_a eps_a^2 <=
MIXING_LEVEL`` and the chain is long enough for the one-shot query to truncate too
(``nnz(W) (m + 1) (P + 1) > SMALL_PROPAGATION_WORK``, so that on small graphs both compute
every lag); from then on no round costs a sparse product: every later lag is ``fl(1/n)``,
within ``eps_a eps_b + drift`` of the exact one (:mod:`sparsedp.linalg.moments`), an error
that :meth:`LagStream.truncation_error` bounds in the norms the running bound charges
(:meth:`sparsedp.accountant.bordered.BorderedFactor.append`) and that :meth:`LagStream.
sequence` hands to the engine's certified sandwich with the lags (the interval).
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import scipy.sparse as sp

from sparsedp.gossip.certified_solve import SMALL_PROPAGATION_WORK
from sparsedp.linalg import kernels
from sparsedp.linalg.certified import UNIT_ROUNDOFF
from sparsedp.linalg.moments import LagPropagator, LagSequence

MIXING_LEVEL = 1e-9  # n max_a eps_a^2 at which the truncating stream stops propagating
FIRST_CAPACITY = 64  # rounds of lags the truncating stream's propagator first makes room for


def computed_sequence(mu: np.ndarray, a: np.ndarray, rounds: int) -> LagSequence:
    """The engine's :class:`~sparsedp.linalg.moments.LagSequence` of ``rounds`` rounds from
    computed (untruncated) lags: ``mu_0 .. mu_(2 rounds - 2)`` and ``a_0 .. a_(rounds - 1)``."""
    return LagSequence(mu=mu[:2 * rounds - 1].copy(), a=a[:rounds].copy(),
                       eps=np.zeros(mu.shape[1]), eps_target=0.0, exact_lags=2 * rounds - 1,
                       products=rounds - 1, frontier_products=0)


def worth_truncating(W: sp.csr_matrix, m: int) -> bool:
    """Whether a truncating stream can pay on this chain: it is not small even at
    ``FIRST_CAPACITY`` rounds (``nnz(W) (m + 1) FIRST_CAPACITY > SMALL_PROPAGATION_WORK``).
    Below, the untruncated stream is used: its kernel is the one-shot query's on small
    chains, so its lags, and the interval's sign searches, are that query's bit for bit
    (the truncating stream reads the target's lags from a column of its own, which differs
    in the last bits and can move a local sign search to another maximum)."""
    return W.nnz * (m + 1) * FIRST_CAPACITY > SMALL_PROPAGATION_WORK


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
    truncate : bool
        Stop propagating once the chain has mixed (module docstring; W must be doubly
        stochastic to rounding).
    """

    def __init__(self, W: sp.csr_matrix, observed: np.ndarray, target: int,
                 backend: str = "auto", truncate: bool = False):
        self.W, self.target, self.backend = W, int(target), backend
        self.m = observed.size
        self.products = 0  # P
        if truncate:
            self.propagator: LagPropagator | None = LagPropagator(
                W, observed, self.target, FIRST_CAPACITY, backend=backend)
            return
        self.propagator = None
        listed = observed.tolist()
        self.target_column = listed.index(self.target) if self.target in listed else None
        n, m = W.shape[0], observed.size
        self.V = np.zeros((n, m))
        self.V[observed, np.arange(m)] = 1.0
        self._mu = np.zeros((1, m, m))
        self._a = np.zeros((1, m))
        self._mu[0] = self.V.T @ self.V
        self._a[0] = self.V[self.target]

    def _may_truncate(self, products: int) -> bool:
        """Whether lags for ``products`` products may be truncated (module docstring)."""
        return self.W.nnz * (self.m + 1) * (products + 1) > SMALL_PROPAGATION_WORK

    @property
    def mixed(self) -> bool:
        """Whether the truncating stream has stopped propagating (every later lag ``1/n``)."""
        return (self.propagator is not None and self._may_truncate(self.products)
                and self.propagator.mixing_level <= MIXING_LEVEL)

    @property
    def mu(self) -> np.ndarray:
        """``mu_0 .. mu_(2P)``, shape (2P + 1, m, m)."""
        if self.propagator is not None:
            return self._truncated_lags()[0]
        return self._mu[:2 * self.products + 1]

    @property
    def a(self) -> np.ndarray:
        """``a_0 .. a_P``, shape (P + 1, m): the target's row of ``V_l``, or, when the target
        is an observed row (the neighbourhood view of one of its neighbours), the column of
        ``mu_l`` it owns, as the engine reads it (the same numbers to rounding, and then the
        same bits as the one-shot query's).  Truncating: the target's column of the
        propagated block, as the engine's truncated path reads it."""
        if self.propagator is not None:
            return self._truncated_lags()[1]
        if self.target_column is not None:
            return self._mu[:self.products + 1, :, self.target_column]
        return self._a[:self.products + 1]

    def _truncated_lags(self) -> tuple[np.ndarray, np.ndarray]:
        """``mu``, ``a`` of the truncating stream: the computed lags, then ``fl(1/n)``."""
        propagator, P, m = self.propagator, self.products, self.m
        lags = 2 * P + 1
        mu = np.full((lags, m, m), 1.0 / self.W.shape[0])
        a = np.full((P + 1, m), 1.0 / self.W.shape[0])
        known = min(lags, propagator.exact)
        mu[:known] = propagator.C[:known, :m, :m]
        a[:min(P + 1, known)] = propagator.C[:min(P + 1, known), :m, propagator.tcol]
        return mu, a

    def extend_to(self, products: int) -> None:
        """Lags for ``products`` products (nothing when already there); a truncating stream
        that has mixed only extends its lags by ``1/n``."""
        if products <= self.products:
            return
        if self.propagator is not None:
            if not self.mixed:
                if products + 1 > self.propagator.T:  # capacity doubles
                    self.propagator.resize(max(products + 1, 2 * self.propagator.T))
                level = MIXING_LEVEL if self._may_truncate(products) else None
                self.propagator.advance(level, max_products=products)
            self.products = products
            return
        if products + 1 > self._a.shape[0]:
            size = max(products + 1, 2 * self._a.shape[0])  # capacity doubles
            self._mu = np.concatenate([self._mu, np.zeros((2 * size - 1 - self._mu.shape[0],)
                                                          + self._mu.shape[1:])])
            self._a = np.concatenate([self._a, np.zeros((size - self._a.shape[0],)
                                                        + self._a.shape[1:])])
        steps = products - self.products
        # the engine's own kernel (small chains: one serial numba call), so that the lags,
        # and with them the interval's sign searches, are the one-shot query's bit for bit
        self.V, cross, gram, _, rows = kernels.propagate_fused(
            self.W, self.V, 1.0 / self.W.shape[0], steps, self.target, backend=self.backend)
        P = self.products
        self._mu[2 * P + 1:2 * products + 1:2] = 0.5 * (cross + cross.transpose(0, 2, 1))
        self._mu[2 * P + 2:2 * products + 2:2] = gram
        self._a[P + 1:products + 1] = rows
        self.products = products

    def truncation_error(self, T: int, offset: int) -> tuple[float, float]:
        """``(e_K, e_G)`` for the view's ``K_T``, ``G_T`` (lags shifted by ``offset``) formed
        from :attr:`mu`, :attr:`a`: ``||K_T - K_hat||_2 <= e_K`` and ``|| |G_T - G_hat| 1 ||_2
        <= e_G`` for the exact K_T, G_T (``(0, 0)`` when no lag used is truncated).

        Block (t, s) of K sums at most ``min(t, s) + 1 <= T`` lags, each within ``eps_a eps_b
        + drift`` (``eps`` the observers' mixing distances), so every row of ``|K - K_hat|``
        sums to at most ``T (T + 1) / 2 (max_a eps_a sum_b eps_b + m drift)``; row t of G's
        block row sums at most ``t + 1`` lags ``a_l``, each within ``eps_a eps_target +
        drift``, so ``|| |G - G_hat| 1 ||_2^2 <= sum_t (t + 1)^2 sum_a (eps_a eps_target +
        drift)^2``."""
        lags = 2 * (T + offset) - 1
        propagator = self.propagator
        if propagator is None or lags <= propagator.exact:
            return 0.0, 0.0
        m, eps = self.m, propagator.eps
        drift = propagator.truncation_drift(lags)
        observers, target = eps[:m], float(eps[propagator.tcol])
        K_row = float(observers.max()) * float(observers.sum()) + m * drift
        squares = T * (T + 1) * (2 * T + 1) / 6.0  # sum_t (t + 1)^2
        G_entry2 = float(((observers * target + drift) ** 2).sum())
        margin = 1 + 16 * UNIT_ROUNDOFF
        return (0.5 * T * (T + 1) * K_row * margin,
                math.sqrt(squares * G_entry2 * margin) * margin)

    def sequence(self, T: int, offset: int) -> LagSequence:
        """The engine's :class:`~sparsedp.linalg.moments.LagSequence` for T rounds of the view
        (unshifted, ``T + offset`` rounds), with the truncation's error bounds when truncated
        (:meth:`sparsedp.linalg.moments.LagPropagator.result`, the decayed tail included)."""
        rounds = T + offset
        if self.propagator is None:
            return computed_sequence(self.mu, self.a, rounds)
        self.propagator.resize(rounds)
        lags = self.propagator.result()
        mu_slice = slice(0, 2 * rounds - 1)
        return dataclasses.replace(
            lags, mu=lags.mu[mu_slice], a=lags.a[:rounds],
            mu_decay=None if lags.mu_decay is None else lags.mu_decay[mu_slice],
            a_decay=None if lags.a_decay is None else lags.a_decay[:rounds])

    PROPAGATOR_ARRAYS = ("V", "target_rows")
    PROPAGATOR_NUMBERS = ("T", "products", "exact", "frontier_products", "rounding_drift")

    def state(self) -> dict:
        """The stream as plain arrays (:func:`sparsedp.accountant.checkpoint.save`)."""
        if self.propagator is None:
            return {"lags_V": self.V, "lags_mu": self.mu, "lags_a": self.a}
        propagator = self.propagator
        state = {f"propagator_{name}": getattr(propagator, name)
                 for name in self.PROPAGATOR_ARRAYS + self.PROPAGATOR_NUMBERS}
        state["propagator_C"] = propagator.C[:propagator.exact]
        state["propagator_distances"] = np.array(propagator.distances)
        state["propagator_support"] = (np.zeros(0, dtype=np.int64)
                                       if propagator.support is None else propagator.support)
        state["propagator_frontier"] = propagator.support is not None
        state["lags_products"] = self.products
        return state

    def restore(self, state: dict) -> None:
        """Continue from :meth:`state`'s arrays (bit for bit)."""
        if self.propagator is None:
            self.V = np.array(state["lags_V"], dtype=np.float64)
            self._mu = np.array(state["lags_mu"], dtype=np.float64)
            self._a = np.array(state["lags_a"], dtype=np.float64)
            self.products = self._a.shape[0] - 1
            return
        propagator = self.propagator
        propagator.resize(int(state["propagator_T"]))
        for name in self.PROPAGATOR_ARRAYS:
            setattr(propagator, name, np.array(state[f"propagator_{name}"], dtype=np.float64))
        for name in self.PROPAGATOR_NUMBERS[1:]:
            value = state[f"propagator_{name}"]
            setattr(propagator, name, float(value) if name == "rounding_drift" else int(value))
        propagator.C[:propagator.exact] = np.asarray(state["propagator_C"])
        propagator.distances = [(np.array(lower), np.array(upper))
                                for lower, upper in np.asarray(state["propagator_distances"])]
        propagator.support = (np.array(state["propagator_support"], dtype=np.int64)
                              if bool(state["propagator_frontier"]) else None)
        self.products = int(state["lags_products"])
