"""DP-D-SGD under PNDP in innovation form: ``K = I + F F^T``, solved by block CG and certified
with ``lambda_min(K) >= 1`` (no dense ``(m T) x (m T)`` matrix).

The attacker set sees the messages ``s_r(v)``, ``v`` in the observed set ``O``, of the
recursion ``s_r = W s_(r-1) + e_r`` (``e_r`` the gradients and noise of round r; the gossip
engine's round convention, :mod:`sparsedp.gossip.views`).  Split the nodes into ``O`` and the
hidden rest ``U``.  Subtracting from each observation what earlier observations already
determine is a block unit lower-triangular, hence invertible, map of the observations (the
same information, the same ``M = G^T K^+ G``):

    y_r(v) = s_r(v) - W_vO s_(r-1)(O) - W_vU k_(r-1)     (v in O),
    k_r = W_UU k_(r-1) + W_UO s_(r-1)(O)                  (known: earlier observations),

and with ``h_r = s_r(U) - k_r`` (``h_(-1) = 0``)

    y_r(v) = (W_OU h_(r-1))_v + e_r(v),      h_r = W_UU h_(r-1) + e_r(U).

The hidden state is driven by the hidden nodes' noise only, independent of ``e(O)``.  A node
``v`` whose noise the attackers know (PNDP's own noise: the attackers, whose closed
neighbourhood is observed; ``"pndp-eq12"`` knows none) has ``W_vU = 0``,
so ``y_r(v)`` is its own noise and gradient, both known: its rows carry no
information and are dropped.  On the other observed rows ``O'`` the noise covariance is

    K = I + F F^T,    F: hidden noise -> (W_OU h_(r-1))_r   ((T m') x (T |U|)),

so ``lambda_min(K) >= 1`` exactly, and the target's columns are ``G = F E_u`` (u hidden) or
the unit rows of ``e_r(u)`` (u observed: its data reaches U only through the known input).
``X ~ K^{-1} G`` by block CG with one Krylov space for the T columns
(:func:`sparsedp.linalg.solvers.block_cg`, no preconditioner: ``K >= I`` is well
conditioned, and the columns of a hidden target are time shifts of one impulse response, so
the directions found for one serve all; 6 block applications at T = 20 with the hub of a
10^4-node power-law graph as attacker, where one CG per column took 10) and the certified
sandwich of :func:`sparsedp.linalg.certified.sandwich_from_solve` with
``lambda_lb = 1`` (:func:`sparsedp.linalg.certified.charge_operator_rounding` adds the
operator's and G's rounding).

This is the gossip engine's ``neighbourhood`` view with ``noise_removed=True`` (``"pndp"``)
and its ``secure-summation`` view of the received rows (``"pndp-eq12"``): the same M, reached
without the Gram ``(m T)^2 n`` flops and ``8 (m T)^2`` bytes that the engine needs once its
numerical ``lambda_min`` certificate cannot be replaced by an analytic one (noise removed).

The operator works on the hidden nodes only: one sparse product per round with
``[W_UU; W_O'U]`` gives the next hidden state and the observed rows (the last round needs
only ``W_O'U``), and its transpose gives ``F^T``.  Its cost, ``2 (T - 1)`` products of
``nnz(W)`` x (columns) per application, does not grow with the attacker's degree: the
observed rows only add ``T m'`` unknowns.

Rounding: with ``W >= 0`` every operator output is a sum of non-negative weights times the
input along paths of at most ``N = T (d_row + d_col + 2) + 2`` roundings (``d_row``,
``d_col``: the longest row and column of W; a step of the forward recursion sums at most
``d_row`` products and adds ``e_r``, a step of the adjoint at most ``d_col`` products and adds
one term; the restriction to the hidden nodes and the row selections are exact), so
``|fl(K X) - K X| <= gamma_N K |X|`` entrywise (Higham, Lemma 3.5 for each product,
composed), and ``|fl(G) - G| <= gamma_(T (d_row + 1)) G``.  Both are charged as perturbations
of the residual.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import scipy.sparse as sp

from sparsedp import resources
from sparsedp.linalg import kernels
from sparsedp.linalg.certified import (
    MatrixSandwich,
    charge_operator_rounding,
    frobenius,
    gamma,
    sandwich_from_solve,
)
from sparsedp.linalg.solvers import block_cg
from sparsedp.mf.trust import Observation

EXPECTED_ITERATIONS = 8  # applications of K the cost model assumes: 6 block CG, the final K X
# and K |X| (measured at T = 20 on issue 35's 10^4-node Chung-Lu, Holme-Kim and edge-list
# graphs with their hub as attacker)
GRAM_FLOPS_PER_CG_FLOP = 8.0  # the engine's dense work is BLAS-3: this much faster per flop
RTOL = 1e-7  # block CG tolerance: the residual enters the bounds squared; on a 10^4-node
# power-law graph (T = 20, hub attacker) 1e-10 and 1e-6 both left a relative gap of 3.5e-10,
# the rounding allowance's (measured with one CG per column)


def preferred(n: int, nnz: int, m: int, T: int, queries: int = 1) -> bool:
    """Whether the innovation form is expected to be cheaper than the gossip engine's dense
    paths: their ``(m T)^2 n`` Gram flops, shared by the ``queries`` of one reuse scope
    (every target of a summary), plus the per-target dense solve and residual, ``6 (m T)^2
    T`` (BLAS-3 all, ``GRAM_FLOPS_PER_CG_FLOP`` times faster per flop) against
    ``EXPECTED_ITERATIONS`` applications of K of ``4 T^2 nnz`` flops per target.  Only a
    speed choice: both are certified and agree (``tests/test_mf.py``).  Measured on the
    hub (degree 187) of ``powerlaw_cluster_graph(10^4, 10, 0.1)``, T = 20: 1.07 s per
    target by the innovation form (one CG per column; about 0.6 s by block CG), 0.093 s by
    the shared Gram after 9.3 s of setup.  For a single query on issue 35's Holme-Kim graph
    (n = 10^4, T = 20, one thread) the two cross at about m = 55 (attacker degree 40: Gram
    0.38 s, innovations 0.59 s; degree 75: 1.01 s and 0.63 s); the model crosses at 73."""
    gram_flops = float(m * T) ** 2 * (n / max(1, queries) + 6 * T) / GRAM_FLOPS_PER_CG_FLOP
    return gram_flops > EXPECTED_ITERATIONS * 4.0 * T * T * nnz


def innovation_memory(n: int, nnz: int, m: int, T: int) -> int:
    """Bytes the innovation solve holds at its peak (an upper estimate, checked against the
    measured peak in ``tests/test_mf_innovations.py``): ``[W_UU; W_O'U]`` and its transpose
    in CSR (at most W's nonzeros each), the adjoint's blocks and the forward's input
    (``T x n x T`` each), the recursions' ``n x T`` states, and block CG's about 16 blocks
    of ``T m x T``."""
    csr = 2 * (12 * nnz + 8 * (n + 1))
    return int(csr + 8 * (2 * T * n * T + 8 * n * T + 16 * T * m * T))


@dataclasses.dataclass(frozen=True)
class InnovationOperator:
    """``F``, ``F^T`` and ``K = I + F F^T`` on blocks ``(T, m', c)`` (module docstring),
    working on the hidden nodes only: ``stacked = [W_UU; W_O'U]`` (one sparse product per
    round gives the next hidden state and the observed rows), ``observe = W_O'U`` (the last
    round needs only the observed rows), their transposes for ``F^T``; hidden noise is
    ``(T, |U|, c)``.  ``rows``: the observed rows kept (``O'``), ``hidden_nodes``: U;
    ``longest_row`` / ``longest_column``: of W (the rounding depth)."""

    stacked: sp.csr_matrix
    stacked_T: sp.csr_matrix
    observe: sp.csr_matrix
    observe_T: sp.csr_matrix
    rows: np.ndarray
    hidden_nodes: np.ndarray
    T: int
    longest_row: int
    longest_column: int

    @classmethod
    def build(cls, W, observed: np.ndarray, known_noise: np.ndarray, T: int):
        W = sp.csr_matrix(W, dtype=np.float64)
        hidden_nodes = np.setdiff1d(np.arange(W.shape[0]), observed).astype(np.int64)
        rows = np.setdiff1d(observed, known_noise).astype(np.int64)
        to_hidden = W[:, hidden_nodes]  # CSR column slicing keeps each row's order
        observe = to_hidden[rows].tocsr()
        stacked = sp.vstack([to_hidden[hidden_nodes], observe], format="csr")
        return cls(stacked=stacked, stacked_T=stacked.T.tocsr(), observe=observe,
                   observe_T=observe.T.tocsr(), rows=rows, hidden_nodes=hidden_nodes,
                   T=int(T), longest_row=int(np.diff(W.indptr).max()),
                   longest_column=int(np.bincount(W.indices, minlength=W.shape[0]).max()))

    @property
    def m(self) -> int:
        return self.rows.size

    def forward(self, Z: np.ndarray) -> np.ndarray:
        """``F Z``: hidden noise ``Z`` (T, |U|, c) -> (T, m', c)."""
        T, hidden, c = Z.shape
        out = np.zeros((T, self.m, c))
        h = Z[0]
        for r in range(1, T):
            if r == T - 1:  # only the observed rows of the last round are needed
                out[r] = kernels.spmm(self.observe, h)
                break
            Wh = kernels.spmm(self.stacked, h)
            out[r] = Wh[hidden:]
            h = Wh[:hidden]
            h += Z[r]
        return out

    def adjoint(self, Y: np.ndarray) -> np.ndarray:
        """``F^T Y``: (T, m', c) -> hidden noise (T, |U|, c), a view into the blocks
        ``[Z_r; Y_r]``, each the input of the product that forms ``Z_(r-1)`` (no copies)."""
        T, m, c = Y.shape
        hidden = self.hidden_nodes.size
        blocks = np.empty((T, hidden + m, c))
        blocks[:, hidden:] = Y
        blocks[T - 1, :hidden] = 0.0
        if T >= 2:
            kernels.spmm(self.observe_T, blocks[T - 1, hidden:], out=blocks[T - 2, :hidden])
        for r in range(T - 3, -1, -1):  # Z_r = W_UU^T Z_(r+1) + W_O'U^T Y_(r+1)
            kernels.spmm(self.stacked_T, blocks[r + 1], out=blocks[r, :hidden])
        return blocks[:, :hidden]

    def apply_K(self, Y: np.ndarray) -> np.ndarray:
        return Y + self.forward(self.adjoint(Y))

    def target_columns(self, target: int) -> tuple[np.ndarray, float]:
        """``G`` (T, m', T) of the target and its relative entrywise rounding.  A hidden
        target's column ``tau`` is its impulse response delayed by ``tau`` rounds (W does
        not change with time): one forward recursion on a single column."""
        T = self.T
        G = np.zeros((T, self.m, T))
        position = np.searchsorted(self.rows, target)
        if position < self.m and self.rows[position] == target:  # observed: unit rows
            G[np.arange(T), position, np.arange(T)] = 1.0
            return G, 0.0
        impulse = np.zeros((T, self.hidden_nodes.size, 1))
        impulse[0, np.searchsorted(self.hidden_nodes, target), 0] = 1.0
        response = self.forward(impulse)[:, :, 0]
        for tau in range(T):
            G[tau:, :, tau] = response[: T - tau]
        return G, gamma(T * (self.longest_row + 1))

    @property
    def rounding_depth(self) -> int:
        """``N`` of the module docstring: ``|fl(K X) - K X| <= gamma_N K |X|``."""
        return self.T * (self.longest_row + self.longest_column + 2) + 2


def innovation_sandwich(W, target: int, obs: Observation, T: int, *, rtol: float = RTOL,
                        maxiter: int = 5000, max_memory=None, progress=None
                        ) -> tuple[MatrixSandwich, dict]:
    """The certified sandwich of ``M`` (``lambda_min(K) >= 1``: its upper side is certified)
    for DP-D-SGD under ``"pndp"`` / ``"pndp-eq12"`` by the innovation form (module
    docstring), and the solver info; ``ResourceLimitError`` beyond ``max_memory``."""
    W = sp.csr_matrix(W, dtype=np.float64)
    n = W.shape[0]
    operator = InnovationOperator.build(W, obs.observed, obs.known_noise, T)
    resources.require_within(
        innovation_memory(n, W.nnz, operator.m, T), resources.memory_budget(max_memory),
        f"DP-D-SGD under {obs.trust!r} (innovation form, {operator.m} observed rows, T = {T})")
    G3, G_relative_error = operator.target_columns(target)
    g_products = T - 1 if G_relative_error else 0  # one column
    # a hidden target's last columns are zero when its impulse cannot reach an observed row
    # in the rounds left: their solution is zero, exactly, and K is applied to the others only
    live = np.flatnonzero(np.any(G3 != 0.0, axis=(0, 1)))
    X3, KX3, K_abs_X3 = np.zeros_like(G3), np.zeros_like(G3), np.zeros_like(G3)
    X3[..., live], KX3[..., live], solve = block_cg(
        operator.apply_K, G3[..., live], rtol=rtol, maxiter=maxiter, progress=progress)
    K_abs_X3[..., live] = operator.apply_K(np.abs(X3[..., live]))  # >= (1 - gamma_N) K |X|
    size = (T * operator.m, T)
    G, X, KX, K_abs_X = (A.reshape(size) for A in (G3, X3, KX3, K_abs_X3))
    depth = operator.rounding_depth
    e_norm = gamma(depth) * frobenius(K_abs_X) / (1.0 - gamma(depth))
    f_norm = G_relative_error * frobenius(G) / (1.0 - G_relative_error)  # G >= 0
    sandwich = charge_operator_rounding(sandwich_from_solve(G, X, KX, 1.0), X, G - KX,
                                        e_norm, f_norm, 1.0)
    info = {"solver": "block CG on K = I + F F^T (innovation form)",
            "iterations": solve.iterations, "restarts": solve.restarts,
            "max_relative_residual": solve.max_relative_residual,
            "converged": solve.converged, "observed_rows": int(T * operator.m),
            "sparse_products": 2 * (T - 1) * (solve.iterations + bool(live.size))
            + g_products,  # K |X| once more (no product when G = 0)
            "lambda_min_lower_bound": 1.0, "upper_certified": True}
    return sandwich, info

