"""The linear system of T rounds of noisy gossip, applied matrix-free.

Model (Koskela & Kulkarni, v2 Lemma 10): ``theta_{t+1} = W (theta_t + x_t + u_t)``.  The
observers ``A = {i_1..i_m}`` (row selector ``S``, m x n) see ``y_t = S s_t`` with
``s_1 = z_1`` and ``s_t = W s_{t-1} + z_t``, so ``y = H_T z`` with the block lower-triangular
block-Toeplitz

    H_T[t, k] = S W^(t-k)   (k <= t),     shape (mT, nT).

Layouts: a vector in R^(nT) is stored as an array ``(T, n)`` (block t = round t), one in
R^(mT) as ``(T, m)``; several vectors are stacked in a trailing axis ``(T, n, r)``.  Flat
index ``t * n + i`` matches the Kronecker product ``c kron e_j``.

* ``H z``: forward recursion ``s_t = W s_{t-1} + z_t``, ``y_t = S s_t`` — T sparse products.
* ``H^T w``: backward recursion ``g_T = S^T w_T``, ``g_k = W^T g_{k+1} + S^T w_k``.
* ``K = H H^T`` (mT x mT, SPD): both recursions; the n x T x r intermediate is processed in
  column chunks under a memory budget.
* ``G`` (mT x T): ``G c = H (c kron e_j)``, block Toeplitz with blocks ``a_l = S W^l e_j``.

For symmetric W the structured form needs only the moments ``mu_l = S W^l S^T``
(l = 0..2T-2, :mod:`sparsedp.linalg.moments`): ``K[t, s] = sum_{k=1}^{min(t,s)} mu_(t+s-2k)``, i.e.
``K[t, t+d] = sum_{i=0}^{t-1} mu_(d+2i)`` (1-based t), assembled by :func:`k_from_moments`.
"""

from __future__ import annotations

import functools

import numpy as np
import scipy.sparse as sp
from scipy.sparse.linalg import LinearOperator

from sparsedp.linalg import exact_rank, kernels
from sparsedp.linalg.matrix_facts import query_memo

DEFAULT_MEMORY_BUDGET = 4 << 30  # bytes for the (T, n, r) intermediate of K
# Column chunks of one K application: at least MIN_CHUNK_COLUMNS, more while an n x c block
# holds at most CHUNK_BLOCK_ENTRIES entries (8 MiB: the sparse products' input and output
# blocks stay in the 32 MiB L3 cache), always within the memory budget.  Measured on ER
# graphs of average degree 20, Metropolis weights, 2 cores shared with other work (ms per
# column of apply_K): n = 10^5, T = 50: 1 column ~360-940, 2 ~260-300, 4-16 ~115-190, 26 or
# more ~1.4x the best; n = 10^4, T = 100: 100 columns 50 vs 8 columns 210 (under load: the
# parallel region of each small product costs more than it saves); n = 10^6, T = 10:
# 1 / 2 / 4 columns 7200 / 4600 / 2400.  With the former 1 GiB budget n = 10^5, T = 500
# got 2-column chunks; now 10 (3.2 GB).
MIN_CHUNK_COLUMNS = 8
CHUNK_BLOCK_ENTRIES = 1 << 20


class GossipSystem:
    """Matrix-free ``H_T``, ``H_T^T``, ``K_T`` and ``G_T`` for gossip matrices and an observer set.

    Parameters
    ----------
    W : square sparse matrix, or a sequence of T of them ``W_0 .. W_(T-1)`` (time-varying
        gossip; converted to CSR, float64).
    observers : distinct node indices (the rows of S, in this order).
    T : number of rounds, >= 1.
    power_offset : 0 for ``H[t, k] = S W_(t-1) ... W_k``, 1 for the v1 form
        ``S W_t ... W_k`` (:mod:`sparsedp.gossip.views`).
    known_noise : nodes whose noise the attacker knows (its own nodes, a subset of the
        observers): their noise columns are deleted from every block (``H S_2``).
    memory_budget : bytes allowed for the intermediate of one ``K`` application.
    transposes : the ``W_t^T`` in CSR when already formed (formed on first use otherwise).
    """

    def __init__(
        self,
        W,
        observers,
        T: int,
        *,
        power_offset: int = 0,
        known_noise=(),
        memory_budget: int = DEFAULT_MEMORY_BUDGET,
        transposes=None,
    ):
        self.T = int(T)
        sequence = list(W) if isinstance(W, (list, tuple)) else [W]
        self.Ws = [
            w if isinstance(w, sp.csr_matrix) and w.dtype == np.float64
            else sp.csr_matrix(w, dtype=np.float64)
            for w in sequence
        ]
        self.time_varying = len(self.Ws) > 1
        self.W = self.Ws[0]
        self.observers = np.asarray(observers, dtype=np.int64)
        self.n = self.W.shape[0]
        self.m = self.observers.size
        self.power_offset = int(power_offset)
        self.known_noise = np.unique(np.asarray(known_noise, dtype=np.int64))
        self.noise_removed = self.known_noise.size > 0
        self.memory_budget = memory_budget
        self.products = 0  # sparse (block) products with W or W^T done so far
        self.exact_rank_skipped = False  # set by redundant_rows
        if transposes is not None:
            self._WTs = list(transposes)  # the cached property's value, given

    # -- the recursions --------------------------------------------------------------------

    def _W(self, x: np.ndarray, t: int) -> np.ndarray:
        """``W_t x``."""
        return self._product(self.Ws[t if self.time_varying else 0], x)

    @functools.cached_property
    def _WTs(self) -> list[sp.csr_matrix]:
        """``W_t^T`` in CSR (formed on first use: the backward recursion needs them)."""
        return [w.T.tocsr() for w in self.Ws]

    def _WT(self, x: np.ndarray, t: int) -> np.ndarray:
        """``W_t^T x``."""
        return self._product(self._WTs[t if self.time_varying else 0], x)

    def _product(self, A: sp.csr_matrix, x: np.ndarray) -> np.ndarray:
        """``A x`` for a vector or a block, by the parallel CSR kernel when it pays off."""
        self.products += 1
        block = np.ascontiguousarray(x.reshape(x.shape[0], -1))
        return kernels.spmm(A, block).reshape(x.shape)

    def _without_known_noise(self, z: np.ndarray) -> np.ndarray:
        """``S_2 S_2^T z``: the rows of the known noise zeroed."""
        if self.noise_removed:
            z = z.copy()
            z[self.known_noise] = 0.0
        return z

    def apply_H(self, Z: np.ndarray) -> np.ndarray:
        """``(T, n, r) -> (T, m, r)``: ``s_t = W_(t-1) s_(t-1) + z_t``, ``y_t = S W_t^p s_t``."""
        Y = np.empty((self.T, self.m) + Z.shape[2:])
        s = None
        for t in range(self.T):
            z = self._without_known_noise(Z[t])
            s = z if s is None else self._W(s, t - 1) + z
            shown = self._W(s, t) if self.power_offset else s
            Y[t] = shown[self.observers]
        return Y

    def apply_HT(self, Y: np.ndarray) -> np.ndarray:
        """``(T, m, r) -> (T, n, r)``, the adjoint recursion.

        p = 0: ``g_(T-1) = S^T w_(T-1)``, ``g_k = S^T w_k + W_k^T g_(k+1)``;
        p = 1: ``g_k = W_k^T (S^T w_k + g_(k+1))``.
        """
        out = np.empty((self.T, self.n) + Y.shape[2:])
        g = None
        for k in range(self.T - 1, -1, -1):
            if g is not None and not self.power_offset:
                g = self._WT(g, k)
            if g is None:
                g = np.zeros((self.n,) + Y.shape[2:])
            g[self.observers] += Y[k]
            if self.power_offset:
                g = self._WT(g, k)
            out[k] = g
        if self.noise_removed:
            out[:, self.known_noise] = 0.0
        return out

    def apply_K(self, Y: np.ndarray) -> np.ndarray:
        """``(T, m, r) -> (T, m, r)``: ``K y = H (H^T y)``, in column chunks
        (:meth:`chunk_columns`)."""
        if Y.ndim == 2:
            return self.apply_K(Y[:, :, None])[:, :, 0]
        r = Y.shape[2]
        chunk = self.chunk_columns(r)
        out = np.empty_like(Y)
        for start in range(0, r, chunk):
            block = Y[:, :, start : start + chunk]
            out[:, :, start : start + chunk] = self.apply_H(self.apply_HT(block))
        return out

    def chunk_columns(self, r: int) -> int:
        """Columns per chunk of :meth:`apply_K` for r columns: ``max(MIN_CHUNK_COLUMNS,
        CHUNK_BLOCK_ENTRIES // n)``, at most r and within the memory budget (at least 1)."""
        width = max(MIN_CHUNK_COLUMNS, CHUNK_BLOCK_ENTRIES // self.n)
        return max(1, min(r, width, self.memory_budget // (8 * self.T * self.n)))

    def redundant_rows(self) -> np.ndarray:
        """Boolean ``(T, m)``: observations that are exact linear functions of the others.

        The attacker learns nothing from them, so dropping their rows of ``H`` and ``G``
        leaves ``M_T`` unchanged, while keeping them makes ``K_T`` singular.  With ``S`` the
        observed nodes, ``R`` the known noise and ``O`` the unobserved nodes, the rows of
        round t modulo the rows of earlier rounds are (a row is ``e_a^T`` of the message):

        p = 0, ``s_t = W_(t-1) s_(t-1) + z_t``: row (t, a) is ``sum_(b in S) W_ab`` row
        (t-1, b) plus the innovation ``W_(t-1)[a, O] s_(t-1)[O] + [a not in R] z_t[a]``.  The
        columns ``z_t[S - R]`` and ``z_(t-1)[O]`` are zero in every earlier observed row, so
        a combination of round-t rows is a combination of earlier rows exactly when it
        vanishes on them: the rows of ``S - R`` are always kept, and a row a of ``R`` is
        redundant exactly when ``W_(t-1)[a, O]`` is a combination of the kept rows'
        (all of R at t = 0, where its rows are zero).
        p = 1 (``y_t = S W_t s_t``): the innovation is ``W_t[a, O] theta_t[O] +
        W_t[a, R'] z_t[R']`` with ``R'`` the nodes outside R, and the pivot columns are
        ``z_t[R']``: rows are redundant exactly where the rows of ``W_t[S, R']`` depend.

        The same relations hold on the target's columns (``G``; the target is outside R),
        so the sensitivity is unchanged.  The independent rows are chosen by exact rational
        arithmetic (:func:`sparsedp.linalg.exact_rank.independent_rows`); where that would be too
        much work, only rows that vanish on the pivot columns by the sparsity pattern are
        dropped (and :attr:`exact_rank_skipped` says so).  Time-varying W: the matrices of
        each round.  The decision does not depend on the target: inside a
        :func:`~sparsedp.linalg.matrix_facts.reuse_scope` it is made once per (W, observers,
        known noise, T, p) and shared by every target's system (read-only).
        """
        if self.time_varying:
            return self._redundant_rows()
        key = (self.observers.tobytes(), self.known_noise.tobytes(), self.T,
               self.power_offset)
        redundant, self.exact_rank_skipped = query_memo(
            "gossip redundant rows", self.W, key,
            lambda: (self._redundant_rows(), self.exact_rank_skipped))
        return redundant

    def _redundant_rows(self) -> np.ndarray:
        """:meth:`redundant_rows`, computed (sets :attr:`exact_rank_skipped`)."""
        T, p = self.T, self.power_offset
        redundant = np.zeros((T, self.m), dtype=bool)
        self.exact_rank_skipped = False
        if p == 0 and not self.noise_removed:
            return redundant  # every row has its own noise column: independent
        in_R = np.isin(self.observers, self.known_noise)
        unobserved = np.ones(self.n, dtype=bool)
        unobserved[self.observers] = False
        if p == 0:
            redundant[0] = in_R
            rows, columns = np.flatnonzero(in_R), unobserved
        else:
            outside_R = np.ones(self.n, dtype=bool)
            outside_R[self.known_noise] = False
            rows, columns = np.arange(self.m), outside_R
        decided: dict[int, np.ndarray] = {}
        for t in range(1 - p, T):
            index = (t - 1 + p) if self.time_varying else 0
            if index not in decided:
                sub = self.Ws[index][self.observers[rows]]
                support = np.unique(sub.indices)
                decided[index] = self._dependent(sub[:, support[columns[support]]].toarray())
            redundant[t, rows] = decided[index]
        return redundant

    def _dependent(self, block: np.ndarray) -> np.ndarray:
        """Rows of ``block`` that exact row reduction drops (only its zero rows when that
        would be too much work)."""
        keep = exact_rank.independent_rows(block)
        if keep is None:
            self.exact_rank_skipped = True
            keep = np.abs(block).sum(axis=1) > 0
        return ~keep

    @functools.cached_property
    def rounding_depth(self) -> int:
        """``N`` with ``|fl(K Y) - K Y| <= gamma_N K |Y|`` and ``|fl(G) - G| <= gamma_N G``
        entrywise for ``W_t >= 0``: ``(T + p) (d_row + d_col + 2) + 2``, with ``d_row``,
        ``d_col`` the longest row and column of any ``W_t``.

        Every output of :meth:`apply_K` (and of :meth:`G_matrix`) is a sum of non-negative
        weight products times the input, each carrying at most one rounding per step of
        the recursions: a step of :meth:`apply_H` sums at most ``d_row`` products and adds
        ``z_t``, at most ``T + p`` steps; a step of :meth:`apply_HT` multiplies by ``W_t^T``,
        whose rows are W's columns (at most ``d_col`` products), and adds one term, at most
        T steps; masks, selections and the zeroed known noise are exact; 2 to spare (the
        symmetrisation of a dense K).  Composing Higham's Lemma 3.5 over the steps gives
        ``gamma_N`` times the exact operator applied to ``|Y|``."""
        d_row = max(int(np.diff(w.indptr).max(initial=0)) for w in self.Ws)
        d_col = max(int(np.bincount(w.indices, minlength=1).max()) for w in self.Ws)
        return (self.T + self.power_offset) * (d_row + d_col + 2) + 2

    # -- the target's impulse response -----------------------------------------------------

    def impulse_response(self, target: int) -> np.ndarray:
        """``a_l = S W^(l+p) e_j`` for l = 0..T-1, shape ``(T, m)`` (one W, T-1+p products)."""
        if self.time_varying:
            raise ValueError("time-varying W has no single impulse response; use G_matrix")
        a = np.empty((self.T + self.power_offset, self.m))
        v = np.zeros(self.n)
        v[target] = 1.0
        a[0] = v[self.observers]
        for lag in range(1, a.shape[0]):
            v = self._W(v, 0)
            a[lag] = v[self.observers]
        return a[self.power_offset :]

    def G(self, target: int) -> LinearOperator:
        """``G_T`` (mT x T) as a LinearOperator.

        ``G c = H (c kron e_j)`` and ``G^T y = (H^T y)[:, j]`` (the target's rows of ``H^T y``).
        """
        T, n, m = self.T, self.n, self.m

        def matmat(C):
            Z = np.zeros((T, n, C.shape[1]))
            Z[:, target, :] = C
            return self.apply_H(Z)

        return _operator(
            (T * m, T), matmat, lambda Y: self.apply_HT(Y.reshape(T, m, -1))[:, target, :]
        )

    def G_matrix(self, target: int) -> np.ndarray:
        """Dense ``G_T`` (mT x T), the target's columns of ``H``.

        One W: block Toeplitz, block (t, k) = ``a_(t-k)`` for k <= t (T-1+p products of a
        vector).  Time-varying W: ``H`` applied to the T unit impulses at once.
        """
        if not self.time_varying:
            return toeplitz_blocks(self.impulse_response(target))
        Z = np.zeros((self.T, self.n, self.T))
        Z[np.arange(self.T), target, np.arange(self.T)] = 1.0
        return self.apply_H(Z).reshape(self.T * self.m, self.T)

    # -- LinearOperator views --------------------------------------------------------------

    @property
    def H(self) -> LinearOperator:
        """``H_T`` as a LinearOperator of shape (mT, nT); its adjoint is ``H_T^T``."""
        T, n, m = self.T, self.n, self.m
        return _operator(
            (T * m, T * n),
            lambda Z: self.apply_H(Z.reshape(T, n, -1)),
            lambda Y: self.apply_HT(Y.reshape(T, m, -1)),
        )

    @property
    def K(self) -> LinearOperator:
        """``K_T = H_T H_T^T`` as a symmetric LinearOperator of shape (mT, mT)."""
        T, m = self.T, self.m

        def apply(Y):
            return self.apply_K(Y.reshape(T, m, -1))

        return _operator((T * m, T * m), apply, apply)


def _operator(shape, matmat, rmatmat) -> LinearOperator:
    """LinearOperator from block functions on ``(rows, r)`` arrays (reshaped as needed)."""

    def forward(X):
        X = np.asarray(X, dtype=np.float64)
        return matmat(X.reshape(shape[1], -1)).reshape(shape[0], -1)

    def adjoint(Y):
        Y = np.asarray(Y, dtype=np.float64)
        return rmatmat(Y.reshape(shape[0], -1)).reshape(shape[1], -1)

    return LinearOperator(
        shape,
        matvec=lambda x: forward(x)[:, 0],
        rmatvec=lambda y: adjoint(y)[:, 0],
        matmat=forward,
        rmatmat=adjoint,
        dtype=np.float64,
    )


def toeplitz_blocks(a: np.ndarray, backend: str = "auto") -> np.ndarray:
    """Block lower-triangular Toeplitz with block (t, k) = ``a[t-k]`` for k <= t, else 0.

    ``a`` of shape ``(T, m)`` gives ``(T*m, T)`` (m-vector blocks); ``(T, m, r)`` gives
    ``(T*m, T*r)``.  A fresh array (:func:`sparsedp.linalg.kernels.toeplitz_blocks`).
    """
    return kernels.toeplitz_blocks(a, backend=backend)


def k_from_moments(mu: np.ndarray, T: int, backend: str = "auto") -> np.ndarray:
    """``K[t, t+d] = sum_{i=0}^{t} mu_(d+2i)`` (0-based t), ``K[t+d, t] = K[t, t+d]^T``.

    Equivalently the Toeplitz-plus-Hankel recurrence ``K[t, s] = K[t-1, s-1] + mu_(t+s)``;
    each block is summed in increasing lag order by either backend
    (:func:`sparsedp.linalg.kernels.k_from_moments`).
    """
    return kernels.k_from_moments(mu, T, backend=backend)
