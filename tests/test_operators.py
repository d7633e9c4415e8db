"""Matrix-free operators against the explicit dense H_T."""

import networkx as nx
import numpy as np
import pytest
import scipy.sparse as sp

from sparsedp.graphs.weights import gossip_matrix
from sparsedp.linalg import operators
from sparsedp.linalg.moments import gossip_lags
from sparsedp.linalg.operators import GossipSystem, k_from_moments, toeplitz_blocks
from sparsedp.testing import dense_H, dense_M, published_style_M

from .conftest import connected_instance


@pytest.mark.parametrize("scheme", ["metropolis", "row-normalised-self-loops"])
@pytest.mark.parametrize("observers", [[0], [2, 5, 11], list(range(25))])
def test_operators_match_dense(scheme, observers):
    G = connected_instance("ba", 25, 1)
    W = gossip_matrix(G, scheme=scheme)
    T, n, m = 6, 25, len(observers)
    system = GossipSystem(W, observers, T)
    H = dense_H(W, observers, T)
    rng = np.random.default_rng(0)
    Z = rng.standard_normal((T * n, 3))
    Y = rng.standard_normal((T * m, 3))
    np.testing.assert_allclose(system.H @ Z, H @ Z, atol=1e-13)
    np.testing.assert_allclose(system.H.T @ Y, H.T @ Y, atol=1e-13)
    np.testing.assert_allclose(system.K @ Y, H @ H.T @ Y, atol=1e-12)
    e = np.zeros(n)
    e[7] = 1.0
    G_dense = H @ np.kron(np.eye(T), e[:, None])
    np.testing.assert_allclose(system.G_matrix(7), G_dense, atol=1e-14)
    C = rng.standard_normal((T, 2))
    np.testing.assert_allclose(system.G(7) @ C, G_dense @ C, atol=1e-13)
    np.testing.assert_allclose(system.G(7).T @ Y, G_dense.T @ Y, atol=1e-13)


def test_k_apply_chunks_agree_with_single_block():
    W = gossip_matrix(connected_instance("er", 30, 2))
    system = GossipSystem(W, [1, 4], 5, memory_budget=8 * 5 * 30 * 2)  # two columns a chunk
    Y = np.random.default_rng(1).standard_normal((5, 2, 7))
    whole = GossipSystem(W, [1, 4], 5).apply_K(Y)
    np.testing.assert_allclose(system.apply_K(Y), whole, atol=1e-13)


def test_chunk_columns():
    """At least MIN_CHUNK_COLUMNS, wider for small n (an 8 MiB block), within the budget."""
    W = gossip_matrix(connected_instance("er", 30, 2))
    assert GossipSystem(W, [1], 5).chunk_columns(1000) == 1000  # n = 30: one chunk
    assert GossipSystem(W, [1], 5).chunk_columns(3) == 3
    assert GossipSystem(W, [1], 5, memory_budget=8 * 5 * 30 * 2).chunk_columns(1000) == 2
    assert GossipSystem(W, [1], 5, memory_budget=1).chunk_columns(1000) == 1
    big = sp.identity(10**5, format="csr")
    assert GossipSystem(big, [1], 500).chunk_columns(500) == 10  # 4 GiB at n = 1e5, T = 500
    assert GossipSystem(big, [1], 5).chunk_columns(500) == 10  # 2^20 // 1e5
    huge = sp.identity(10**6, format="csr")
    assert GossipSystem(huge, [1], 5).chunk_columns(500) == operators.MIN_CHUNK_COLUMNS


@pytest.mark.parametrize("observers", [[3], [0, 1, 2, 9], [4, 12]])
def test_lag_assembly_matches_dense_K_and_G(observers):
    W = gossip_matrix(connected_instance("er", 35, 3))
    T, target = 9, 12
    H = dense_H(W, observers, T)
    lags = gossip_lags(W, np.array(observers), target, T, truncate=False)
    np.testing.assert_allclose(k_from_moments(lags.mu, T), H @ H.T, atol=1e-13)
    e = np.zeros(35)
    e[target] = 1.0
    np.testing.assert_allclose(
        toeplitz_blocks(lags.a), H @ np.kron(np.eye(T), e[:, None]), atol=1e-14
    )


def test_k_from_moments_recurrence_by_hand():
    # scalar moments mu_l = l + 1: K[t,s] = sum_{k=1}^{min(t,s)} mu_{t+s-2k}
    T = 4
    mu = (np.arange(2 * T - 1) + 1.0).reshape(-1, 1, 1)
    K = k_from_moments(mu, T)
    expected = np.array(
        [[sum(t + s - 2 * k + 1 for k in range(1, min(t, s) + 1)) for s in range(1, T + 1)]
         for t in range(1, T + 1)],
        dtype=float,
    )
    np.testing.assert_array_equal(K, expected)


def test_products_are_counted():
    W = gossip_matrix(nx.cycle_graph(9))
    system = GossipSystem(W, [0], 7)
    system.impulse_response(4)
    assert system.products == 6


@pytest.mark.parametrize("observers", [[0], [1, 4]])
def test_published_style_reference_equals_the_slim_one(observers):
    """The benchmarks' nT x nT formulation (projector H^+ H of the papers) and dense_M agree."""
    W = gossip_matrix(nx.cycle_graph(7))
    T = 5
    M = published_style_M(W, 3, observers, T)
    np.testing.assert_allclose(M, dense_M(W, 3, observers, T), rtol=1e-9, atol=1e-12)
    assert np.all(np.linalg.eigvalsh(M) <= 1 + 1e-10)


@pytest.mark.parametrize("shape", [(1, 1), (5, 1), (7, 3), (6, 2, 4), (1, 3, 2)])
def test_toeplitz_blocks_by_hand(shape):
    """Block (t, k) is a[t - k] below and on the diagonal, zero above; a fresh, writable
    array (not a view of the overlapping windows it is cut from)."""
    a = np.random.default_rng(len(shape)).random(shape)
    T, m = shape[:2]
    r = shape[2] if len(shape) == 3 else 1
    G = toeplitz_blocks(a)
    assert G.shape == (T * m, T * r) and G.flags.c_contiguous and G.flags.writeable
    for t in range(T):
        for k in range(T):
            block = G[t * m : (t + 1) * m, k * r : (k + 1) * r]
            expected = a[t - k].reshape(m, r) if k <= t else np.zeros((m, r))
            np.testing.assert_array_equal(block, expected)
    G[...] = -1.0
    assert np.all(G == -1.0)
