"""The Muffliato gossip bound: dense and matrix-free against explicit polynomials."""

import math

import networkx as nx
import numpy as np
import pytest

from sparsedp.errors import GossipMatrixError, ParameterError
from sparsedp.graphs.weights import gossip_matrix
from sparsedp.randomwalk import muffliato as mf
from tests.conftest import connected_instance


def brute_force(W, G, u, T, sigma, alpha, gamma):
    """Explicit P_t(W) matrices and the sum over t = 0..T-1 and w in N(v), clipped."""
    A = W.toarray()
    n = A.shape[0]
    Ps = [np.eye(n), A.copy()]
    while len(Ps) < T:
        Ps.append(A @ Ps[-1] if gamma is None else gamma * A @ Ps[-1] + (1 - gamma) * Ps[-2])
    eps = np.zeros(n)
    for v in range(n):
        for P in Ps[:T]:
            for w in G.neighbors(v):
                eps[v] += P[w, u] ** 2 / np.sum(P[w] ** 2)
    ldp = alpha / (2 * sigma**2)
    return np.minimum(ldp * eps, ldp)


@pytest.mark.parametrize("kind,n,seed", [("er", 30, 1), ("grid", 25, 2), ("ba", 35, 3)])
@pytest.mark.parametrize("accelerated", [False, True])
@pytest.mark.parametrize("T", [1, 2, 12])
def test_dense_and_propagation_match_brute_force(kind, n, seed, accelerated, T):
    G = connected_instance(kind, n, seed)
    W = gossip_matrix(G)
    gamma = (mf.chebyshev_gamma(1 - np.sort(np.linalg.eigvalsh(W.toarray()))[-2])
             if accelerated else None)
    u = 2
    ref = np.delete(brute_force(W, G, u, T, 3.0, 2.0, gamma), u)
    for method in ("dense", "propagation"):
        r = mf.muffliato_rdp(W, u, T, 3.0, 2.0, accelerated=accelerated, method=method)
        assert r.kind == "upper"
        np.testing.assert_allclose(r.rdp, ref, rtol=1e-10, atol=1e-14)
    bound = mf.muffliato_rdp(W, u, T, 3.0, 2.0, accelerated=accelerated, row_norms="bound",
                             method="propagation")
    assert np.all(bound.rdp >= ref - 1e-14)  # the cheap row-norm bound gives an upper bound
    if T <= 2:  # rounds 0 and 1 use the exact row norms
        np.testing.assert_allclose(bound.rdp, ref, rtol=1e-12)


def test_neighbours_are_saturated_and_receivers_subset():
    G = connected_instance("er", 40, 4)
    W = gossip_matrix(G)
    full = mf.muffliato_rdp(W, 0, 10, 1.0, 2.0)
    # a neighbour v of u receives x_u + eta_u at round 0: the local-DP value
    for j, v in enumerate(full.receivers):
        if G.has_edge(0, v):
            assert full.rdp[j] == pytest.approx(full.local_dp)
            assert full.clipped[j] or full.rdp[j] == full.local_dp
    some = mf.muffliato_rdp(W, 0, 10, 1.0, 2.0, receivers=[5, 9], method="propagation")
    np.testing.assert_allclose(some.rdp, full.rdp[[4, 8]], rtol=1e-12)


def test_chebyshev_polynomials_fix_the_constant_vector():
    W = gossip_matrix(connected_instance("er", 30, 6))
    gamma = mf.chebyshev_gamma(0.2)
    assert 1.0 <= gamma < 2.0
    for P1 in mf.gossip_polynomial(W, np.ones(30), 15, gamma):
        np.testing.assert_allclose(P1, 1.0, atol=1e-12)


def test_rounds_rule():
    assert mf.muffliato_rounds(2048, 0.25, 1.0) == math.ceil(math.log(2048) / 0.5)
    assert mf.muffliato_rounds(2048, 0.25, 1.0, accelerated=False) == math.ceil(
        math.log(2048) / 0.25)


def test_refusals():
    W = gossip_matrix(nx.star_graph(4), scheme="row-normalised")
    with pytest.raises(GossipMatrixError, match="symmetric"):
        mf.muffliato_rdp(W, 0, 5, 1.0, 2.0)
    W = gossip_matrix(nx.cycle_graph(6))
    with pytest.raises(ParameterError, match="row_norms"):
        mf.muffliato_rdp(W, 0, 5, 1.0, 2.0, row_norms="approx")
    with pytest.raises(ParameterError, match="own data"):
        mf.muffliato_rdp(W, 0, 5, 1.0, 2.0, receivers=[0])
    with pytest.raises(ParameterError, match="gap"):
        mf.chebyshev_gamma(0.0)
