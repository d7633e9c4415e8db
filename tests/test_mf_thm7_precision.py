"""Theorem 7's value for MF-D-SGD with K = 3 gossip rounds per step under PNDP (dense operator
assembly, an ill-conditioned ``B B^T``) within 1e-8 relative of a 50-digit recomputation, and
never below it (issue 33: it was 1.05-1.7e-8 above, the norm-only rounding charge)."""

import mpmath as mp
import networkx as nx
import numpy as np
import pytest

import sparsedp
from sparsedp.mf import mf_d_sgd, mf_sensitivity

K = 3


def _noise(T, seed):
    rng = np.random.default_rng(seed)
    return np.tril(rng.uniform(-0.4, 0.4, (T, T)), -1) + np.diag(rng.uniform(0.7, 1.3, T))


def _exact_sum(W: np.ndarray, L: np.ndarray, target: int, attacker: int) -> mp.mpf:
    """``sum |M|``, ``M = A_u^T (B B^T)^+ A_u``, at 50 digits.  PNDP: the messages of the
    attacker's closed neighbourhood at every round, the attacker's noise columns deleted;
    from ``s_r = W s_(r-1) + [r = t K] (g_t + (L z)_t)``, row (r, i) of B has entry
    ``sum_(s: sK <= r) (W^(r - sK))_iv L_st`` at column (t, v) and A_u has
    ``(W^(r - sK))_iu`` at column s, formed from W's and L's float64 entries taken exactly.
    The rows kept are a maximal independent set (float rank test, in order)."""
    mp.mp.dps = 50
    n, T = W.shape[0], L.shape[0]
    observed = sorted(set(np.flatnonzero((W[attacker] + W[:, attacker]) != 0)) | {attacker})
    columns = [(t, v) for t in range(T) for v in range(n) if v != attacker]
    R = K * T
    Wm = mp.matrix(W.tolist())
    powers = [mp.eye(n)]
    for _ in range(1, R):
        powers.append(powers[-1] * Wm)
    B, A = [], []
    for r in range(R):
        for i in observed:
            A.append([powers[r - s * K][i, target] if s * K <= r else mp.mpf(0)
                      for s in range(T)])
            B.append([sum((powers[r - s * K][i, v] * mp.mpf(L[s, t])
                           for s in range(t, r // K + 1)), mp.mpf(0))
                      for (t, v) in columns])
    Bf = np.array([[float(x) for x in row] for row in B])
    kept: list[int] = []
    for i in range(len(B)):
        trial = Bf[kept + [i]]
        if np.linalg.matrix_rank(trial, tol=1e-9 * np.linalg.norm(Bf, 2)) == len(kept) + 1:
            kept.append(i)
    Bk = mp.matrix([B[i] for i in kept])
    Ak = mp.matrix([A[i] for i in kept])
    Kmat = Bk * Bk.T
    M = Ak.T * (mp.inverse(Kmat) * Ak)
    return sum(abs(M[i, j]) for i in range(T) for j in range(T))


@pytest.mark.parametrize("T,seed", [(6, 0), pytest.param(8, 1, marks=pytest.mark.slow)])
def test_theorem7_within_1e8_of_50_digits(T, seed):
    """Measured: T = 6, seed 0: 1.6e-9 above (8.2e-9 before); T = 8, seed 1: 6.1e-9 above
    (3.2e-8 before, the failing case; 80 s, slow tier)."""
    W = sparsedp.gossip_matrix(nx.florentine_families_graph(), scheme="row-normalised-self-loops")
    L = _noise(T, seed)
    r = mf_sensitivity(W, 14, [1], T, algorithm=mf_d_sgd(L, K=K), gradients="scalar")
    exact = _exact_sum(W.toarray(), L, 14, 1)
    relative = float((mp.mpf(r.thm7) - exact) / exact)
    assert 0 <= relative <= 1e-8, relative
