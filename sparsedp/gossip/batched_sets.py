"""Batched c = 1 values of a colluding set of observers against every target: one propagation
and one factorisation of the set's ``K_T`` serve all targets.

The secure-summation view with a set S of m distinct observers (v2 Lemma 10 and Remark 11;
the neighbourhood view of a node a is this view with S its closed neighbourhood), T rounds,
one constant non-negative row-stochastic W:

    r_l = S W^l                                       (m x n, l = 0..T-1)
    K[(t, i), (t', i')] = sum_{k <= min(t, t')} r_(t-k)[i] . r_(t'-k)[i']      (mT x mT)
    b_j[(t, i)] = sum_{l <= t} r_l[i, j],   i.e.  b_j = (C (x) I_m) r_j
    1^T M_j 1 = b_j^T K^{-1} b_j = ||P r_j||^2,       P = L^{-1} (C (x) I_m),  K = L L^T,

with ``r_j`` the lags of target j stacked ``(t, i)``, C the T x T lower-triangular ones: one
``mT x mT`` by ``mT x n`` product for every target.  For exactly symmetric W the blocks
``r_t r_t'^T = S W^(t+t') S^T`` need only the 2T - 1 moment blocks ``S W^k S^T`` (``2 T m^2
n`` work instead of ``T^2 m^2 n``).

Certified as the single observer's values (:mod:`sparsedp.gossip.batched`, steps 1-4, by
:func:`sparsedp.gossip.batched.certify_ones` with ``C (x) I_m`` for C): K is a Gram assembly
of non-negative lag products (the same rounding model, :func:`sparsedp.linalg.gram.
rounding_norm_bound`), the analytic ``lambda_min(K_T) >= 1 / (1 + ||W||_2)^2`` holds for any
set of distinct observers (:func:`sparsedp.linalg.certified.gossip_lambda_min_lower_bound`),
and ``||C (x) I_m||_2 = ||C||_2 <= T``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.linalg
import scipy.sparse as sp

from sparsedp import validation
from sparsedp.errors import ParameterError
from sparsedp.gossip.batched import certify_ones, lambda_min_lower_bound
from sparsedp.linalg import gram, kernels
from sparsedp.linalg.certified import gamma
from sparsedp.linalg.stochastic import matrix_facts


@dataclass(frozen=True)
class SetOnes:
    """Certified ``low <= 1^T M_j 1 <= high`` of the set against each target (arrays over the
    targets; ``low`` is a certified lower bound on ``Delta^2(j -> S)``), the sparse
    ``products`` (on n x m blocks) and the analytic ``lam``."""

    low: np.ndarray
    high: np.ndarray
    products: int
    lam: float


def set_ones(W: sp.csr_matrix, observers, T: int, targets=None, *, backend: str = "auto",
             symmetric: bool | None = None) -> SetOnes:
    """The certified c = 1 interval of every target (``None``: all rows; else row indices)
    against the set ``observers`` (distinct rows of W; module docstring).  ``W``: a checked
    gossip matrix (canonical CSR, non-negative, row-stochastic)."""
    T = validation.rounds(T)
    n = W.shape[0]
    observers = validation.node_set(observers, n, "observers")  # distinct, at least one
    m = observers.size
    facts = matrix_facts(W)
    symmetric = facts.symmetric if symmetric is None else symmetric
    WT = W if symmetric else W.T.tocsr()
    lags = np.empty((T, m, n))
    current = np.zeros((n, m))
    current[observers, np.arange(m)] = 1.0
    lags[0] = current.T
    for lag in range(1, T):
        current = kernels.spmm(WT, current, backend=backend)
        lags[lag] = current.T
    K = _set_k(lags, symmetric)
    d = int(np.bincount(W.indices, minlength=n).max())  # longest row of W^T
    dK = gram.rounding_norm_bound(K, 2 * (T - 1) * (d + 1) + n + T)
    lam = lambda_min_lower_bound(W)
    if dK >= 0.25 * lam:
        raise ParameterError("the rounding of K_T is too large for the analytic lambda_min "
                             "bound (a long chain far from mixing): query these pairs one by "
                             "one with squared_sensitivity, which certifies lambda_min itself")
    L = np.linalg.cholesky(K)
    C = np.kron(np.tril(np.ones((T, T))), np.eye(m))
    P = scipy.linalg.solve_triangular(L, C, lower=True, check_finite=False)
    R = lags.reshape(T * m, n)
    if targets is not None:
        R = R[:, np.asarray(targets, dtype=np.int64)]
    Z = P @ R
    z2, r2 = np.einsum("tj,tj->j", Z, Z), np.einsum("tj,tj->j", R, R)
    low, high = certify_ones(K, L, dK, lam, P, z2, r2, gamma(max((T - 1) * (d + 1), 1)), C=C)
    return SetOnes(low=low, high=high, products=T - 1, lam=lam)


def _set_k(lags: np.ndarray, symmetric: bool) -> np.ndarray:
    """``K`` (mT x mT, index ``(t, i)``) from the lags ``(T, m, n)``: the blocks
    ``Gamma(t, t') = r_t r_t'^T`` (from the moment blocks for symmetric W, the odd ones
    symmetrised) and ``K[t, t'] = Gamma(t, t') + K[t-1, t'-1]``."""
    T, m, _ = lags.shape
    if symmetric:
        mu = np.empty((2 * T - 1, m, m))
        mu[0::2] = np.einsum("tin,tkn->tik", lags, lags)
        odd = np.einsum("tin,tkn->tik", lags[:-1], lags[1:])
        mu[1::2] = 0.5 * (odd + odd.transpose(0, 2, 1))
        blocks = mu[np.add.outer(np.arange(T), np.arange(T))]  # (T, T, m, m)
    else:
        flat = lags.reshape(T * m, -1)
        blocks = (flat @ flat.T).reshape(T, m, T, m).transpose(0, 2, 1, 3)
    for t in range(1, T):
        blocks[t, 1:] += blocks[t - 1, :-1]
    return np.ascontiguousarray(blocks.transpose(0, 2, 1, 3).reshape(T * m, T * m))
