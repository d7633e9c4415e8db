"""The certified sandwich and the certified lambda_max."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sparsedp.graphs.weights import gossip_matrix
from sparsedp.linalg import certified
from sparsedp.linalg.operators import GossipSystem
from sparsedp.testing import dense_H, dense_M

from .conftest import connected_instance


@settings(max_examples=40, deadline=None)
@given(T=st.integers(1, 80), seed=st.integers(0, 10_000), rank=st.integers(1, 80))
def test_certified_lambda_max_brackets_eigvalsh(T, seed, rank):
    rng = np.random.default_rng(seed)
    A = rng.standard_normal((T, min(rank, T)))
    M = A @ A.T
    lam = np.linalg.eigvalsh(M)[-1]
    lower, upper = certified.certified_lambda_max(M)
    assert lower <= lam <= upper
    assert upper - lower <= 1e-9 * max(lam, 1.0)


def test_lambda_min_bound_holds():
    for scheme in ("metropolis", "row-normalised", "max-degree"):
        W = gossip_matrix(connected_instance("ba", 20, 4), scheme=scheme)
        H = dense_H(W, [0, 3, 7], 6)
        lam = np.linalg.eigvalsh(H @ H.T)[0]
        assert certified.gossip_lambda_min_lower_bound(W) <= lam


def test_symmetric_doubly_stochastic_bound_is_a_quarter():
    W = gossip_matrix(connected_instance("er", 30, 1))
    assert certified.gossip_lambda_min_lower_bound(W) == pytest.approx(0.25, rel=1e-10)


def test_sandwich_brackets_M_for_a_poor_solution():
    """A deliberately inaccurate X still gives low <= M <= up."""
    W = gossip_matrix(connected_instance("er", 25, 2))
    T, obs, j = 7, [1, 2], 9
    system = GossipSystem(W, obs, T)
    G = system.G_matrix(j)
    K = system.K @ np.eye(T * len(obs))
    rng = np.random.default_rng(0)
    X = np.linalg.solve(K, G) + 1e-2 * rng.standard_normal(G.shape)
    sw = certified.sandwich_from_solve(G, X, K @ X, certified.gossip_lambda_min_lower_bound(W))
    M = dense_M(W, j, obs, T)
    assert np.linalg.eigvalsh(M - sw.low).min() >= -1e-12
    assert np.linalg.eigvalsh(sw.up - M).min() >= -1e-12
    assert np.trace(sw.excess) > 1e-6  # the poor solve is visible in the certificate


@pytest.mark.parametrize("triangular", [True, False])
@pytest.mark.parametrize("condition", [1e1, 1e8])
def test_direct_solve_sandwich_brackets_M_in_extended_precision(triangular, condition):
    """A Cholesky solve's residual is at the rounding level, so the sandwich takes its linear
    form ``low = sym(G^T X)`` (well-conditioned K) and charges ``||X||_F ||R_true||_F`` to
    ``eta_low``: either form has
    ``low - eta_low <= M <= up + eta`` against ``M`` computed in 50 digits, for a
    well- and an ill-conditioned K; ``G^T X`` by ``trmm`` for a triangular G."""
    import mpmath

    from sparsedp.linalg.solvers import cholesky_solve

    T = 12
    rng = np.random.default_rng(int(condition))
    Q = np.linalg.qr(rng.standard_normal((T, T)))[0]
    K = (Q * np.geomspace(1.0, 1.0 / condition, T)) @ Q.T
    K = 0.5 * (K + K.T)
    G = rng.standard_normal((T, T))
    G = np.tril(G) if triangular else G
    X = cholesky_solve(K, G)
    lam = float(np.linalg.eigvalsh(K)[0]) * (1 - 1e-6)
    sw = certified.sandwich_from_solve(G, X, K @ X, lam, K_dense=K, G_lower_triangular=triangular)
    GX = G.T @ X
    if condition < 1e3:  # the linear form (an ill-conditioned K's residual may exceed it)
        np.testing.assert_allclose(sw.low, 0.5 * (GX + GX.T), rtol=1e-12,
                                   atol=1e-12 * abs(GX).max())
    mpmath.mp.dps = 50
    Kmp, Gmp = mpmath.matrix(K.tolist()), mpmath.matrix(G.tolist())
    Mmp = Gmp.T * mpmath.inverse(Kmp) * Gmp
    below = np.array((Mmp - mpmath.matrix(sw.low.tolist())).tolist(), dtype=float)
    above = np.array((mpmath.matrix(sw.up.tolist()) - Mmp).tolist(), dtype=float)
    assert np.linalg.eigvalsh(0.5 * (below + below.T)).min() >= -sw.eta_low
    assert np.linalg.eigvalsh(0.5 * (above + above.T)).min() >= -sw.eta
    assert sw.eta_low <= 1e-9 * np.abs(GX).max() * condition


def test_triangular_product_is_the_general_one():
    """``G^T X`` by ``trmm`` for a lower-triangular G equals the general product within
    the product's rounding bound, and is C-ordered."""
    rng = np.random.default_rng(3)
    G, X = np.tril(rng.random((300, 300))), rng.standard_normal((300, 300))
    fast = certified._transposed_product(G, X, True)
    assert fast.flags.c_contiguous
    bound = certified.gamma(301) * certified.frobenius(G) * certified.frobenius(X)
    assert certified.frobenius(fast - G.T @ X) <= 2 * bound


@pytest.mark.parametrize("shape", [(20, 20), (400, 7), (3, 1), (5,)])
def test_fast_norms_are_numpys_bit_for_bit(shape):
    """The bounds use these in place of ``np.linalg.norm``: the same arithmetic, so the same
    numbers."""
    A = np.random.default_rng(len(shape)).standard_normal(shape)
    assert certified.frobenius(A) == float(np.linalg.norm(A))
    if A.ndim == 2:
        np.testing.assert_array_equal(certified.column_norms(A), np.linalg.norm(A, axis=0))


@pytest.mark.parametrize("seed", range(6))
def test_stochastic_drift_covers_a_w_that_is_doubly_stochastic_only_nearly(seed):
    """A symmetric W whose row sums miss 1 by up to rho (some edge weights scaled by
    1 + 1e-4): for every pair of nodes and every power, the truncated lag ``e_a^T W^k e_b``
    differs from ``1/n + d_a^T W^(k-2P) d_b`` (``d = W^P e - 1/n``) by at most the drift's
    first term, and ``|d_a^T W^j d_b| <= (1 + g) eps_a eps_b`` (exact arithmetic emulated in
    extended precision)."""
    import math

    import networkx as nx
    import scipy.sparse as sp

    G = nx.connected_watts_strogatz_graph(12, 4, 0.3, seed=seed)
    W = gossip_matrix(G, scheme="metropolis").toarray()
    rng = np.random.default_rng(seed)
    for u, v in list(G.edges())[::3]:
        W[u, v] = W[v, u] = W[u, v] * (1 + 1e-4 * rng.random())
    n, P, power = W.shape[0], 3, 14
    rho = certified.row_sum_deviation(sp.csr_matrix(W))
    assert rho > 1e-6
    Wl = W.astype(np.longdouble)
    U = np.linalg.matrix_power(Wl, P)  # columns W^P e_a
    D = U - np.longdouble(1) / n
    eps = float(np.sqrt((D * D).sum(axis=0)).max())
    drift = certified.stochastic_drift(rho, power, n, eps)
    g = math.expm1(power * math.log1p(rho))
    for k in range(2 * P, power + 1):
        Wj = np.linalg.matrix_power(Wl, k - 2 * P)
        mu = np.linalg.matrix_power(Wl, k)
        inner = D.T @ Wj @ D
        assert np.abs(mu - np.longdouble(1) / n - inner).max() <= drift
        bound = (1 + g) * np.outer(np.sqrt((D * D).sum(axis=0)), np.sqrt((D * D).sum(axis=0)))
        assert np.all(np.abs(inner) <= bound * (1 + 1e-12))
