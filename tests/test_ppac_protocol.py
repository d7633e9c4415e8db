"""PPAC simulator: preparation invariants, convergence to the exact average, convergence time
against Lemma B.5 / eq. 133 / eq. 145, the generalised-leaf attack."""

import math

import networkx as nx
import numpy as np
import pytest

from sparsedp.errors import GossipMatrixError, GraphError, ParameterError, ResourceLimitError
from sparsedp.graphs.generators import ring
from sparsedp.graphs.graph import as_graph
from sparsedp.graphs.weights import gossip_matrix
from sparsedp.ppac import (
    attacker_view,
    consensus_errors,
    convergence_bounds,
    convergence_times,
    expected_initial_error,
    generalised_leaf_attack,
    generalised_leaves,
    laplacian_consensus_matrix,
    ppac_layout,
    prepare,
    random_designated,
)
from sparsedp.ppac.convergence import consensus_rate, lemma_b5_bound


def random_connected(seed: int, n_range=(6, 30), p_range=(0.15, 0.5)) -> nx.Graph:
    rng = np.random.default_rng(seed)
    while True:
        n = int(rng.integers(*n_range))
        G = nx.gnp_random_graph(n, float(rng.uniform(*p_range)), seed=int(rng.integers(1 << 30)))
        if nx.is_connected(G):
            return G


@pytest.mark.parametrize("seed", range(4))
def test_preparation_invariants(seed):
    g = as_graph(random_connected(seed))
    layout = ppac_layout(g, random_designated(g, seed=seed))
    prep = prepare(layout, None, realisations=7, value_std=3.0, noise_std=2.0, seed=seed)
    A = g.adjacency
    # eq. 6: the fragments of every node sum to its value
    row_sums = np.add.reduceat(prep.fragments, A.indptr[:-1], axis=0)
    np.testing.assert_allclose(row_sums, prep.values, atol=1e-12)
    # sum of v(0) = sum of u
    np.testing.assert_allclose(prep.v0.sum(axis=0), prep.values.sum(axis=0), atol=1e-10)
    # v(0) = C g with g = (u, pure noise fragments)
    g_src = np.vstack([prep.values, prep.fragments[layout.noise_edges]])
    np.testing.assert_allclose(layout.source_matrix() @ g_src, prep.v0, atol=1e-10)
    assert layout.num_sources == 2 * g.num_edges
    assert layout.noise_edges.size == 2 * g.num_edges - g.n


@pytest.mark.parametrize("seed", range(5))
def test_converges_to_exact_average_scalar_and_vector(seed):
    g = as_graph(random_connected(100 + seed))
    layout = ppac_layout(g, random_designated(g, seed=seed))
    W = laplacian_consensus_matrix(g, scale=g.degrees.max() + 1)
    rng = np.random.default_rng(seed)
    for values in (rng.normal(size=g.n), rng.normal(size=(g.n, 3))):
        prep = prepare(layout, values, realisations=4, noise_std=50.0, seed=seed)
        alpha, _ = consensus_rate(W, g.n)
        rounds = int(math.ceil(math.log(1e-11 / 1e4) / math.log(alpha)))
        errors = consensus_errors(W, prep, rounds)
        assert errors[-1].max() <= 1e-9 * max(1.0, errors[0].max())
        # the average itself is exact: the state sums to sum(u) at every round
        d, R = prep.shape
        assert np.allclose(prep.average().reshape(d, R), np.mean(values, axis=0).reshape(d, 1)
                           if values.ndim == 2 else values.mean())


@pytest.mark.parametrize("seed", range(4))
def test_convergence_time_respects_the_bounds(seed):
    g = as_graph(random_connected(200 + seed))
    layout = ppac_layout(g, random_designated(g, seed=seed))
    W = laplacian_consensus_matrix(g)
    if not np.isfinite(consensus_rate_or_inf(W, g.n)):
        W = laplacian_consensus_matrix(g, scale=g.degrees.max() + 1)
    eps, sigma_n = 1e-3, 30.0
    prep = prepare(layout, None, realisations=200, value_std=1.0, noise_std=sigma_n, seed=seed)
    bounds = convergence_bounds(layout, W, eps, value_std=1.0, noise_std=sigma_n)
    alpha = bounds.alpha
    rounds = int(bounds.expected_time_paper * 3)
    errors = consensus_errors(W, prep, rounds)
    times = convergence_times(errors, eps)
    assert np.all(times >= 0)
    assert np.all(times <= lemma_b5_bound(alpha, errors[0], eps))  # per realisation
    assert times.mean() <= bounds.expected_time_exact <= bounds.expected_time_paper
    assert bounds.initial_error_sq_exact <= bounds.initial_error_sq_paper


def test_the_rate_beyond_the_dense_size_is_certified_or_the_bounds_are_estimates(monkeypatch):
    """Beyond the dense size (lowered here) alpha comes from an eigensolver estimate: certified
    by inertia it stays an upper bound on the dense alpha and the bounds keep kind "upper";
    with the certificate out of reach (auto limit lowered) they become estimates."""
    g = as_graph(nx.random_regular_graph(4, 200, seed=1))
    layout = ppac_layout(g, random_designated(g, seed=0))
    W = laplacian_consensus_matrix(g, scale=g.degrees.max() + 1)
    ev = np.linalg.eigvalsh(W.toarray())
    exact = max(abs(ev[0]), abs(ev[-2]))
    monkeypatch.setattr("sparsedp.linalg.spectral.DENSE_MAX_N", 50)
    bounds = convergence_bounds(layout, W, 1e-3)
    assert bounds.kind == "upper" and "certified:" in bounds.alpha_method
    assert exact <= bounds.alpha < 1.0
    monkeypatch.setattr("sparsedp.linalg.inertia.AUTO_MAX_FLOPS", 1.0)
    bounds = convergence_bounds(layout, W, 1e-3)
    assert bounds.kind == "estimate" and bounds.to_dict()["kind"] == "estimate"
    assert "not certified" in bounds.alpha_method


def consensus_rate_or_inf(W, n):
    try:
        return consensus_rate(W, n)[0]
    except GossipMatrixError:
        return math.inf


def test_exact_initial_error_matches_monte_carlo():
    g = as_graph(random_connected(7))
    layout = ppac_layout(g, random_designated(g, seed=1))
    kw = dict(value_mean=0.7, value_std=2.0, noise_mean=-0.3, noise_std=1.5)
    exact = expected_initial_error(layout, **kw)
    prep = prepare(layout, None, realisations=40_000, seed=3, **kw)
    sq = ((prep.v0 - prep.average()) ** 2).sum(axis=0)
    se = sq.std() / math.sqrt(sq.size)
    assert abs(sq.mean() - exact) <= 5 * se


def test_even_cycle_paper_matrix_is_periodic_and_refused():
    g = ring(10)
    W = laplacian_consensus_matrix(g)  # I - L/2 = A/2: eigenvalue -1
    layout = ppac_layout(g, random_designated(g, seed=0))
    with pytest.raises(GossipMatrixError, match="does not converge"):
        convergence_bounds(layout, W, 1e-3)
    lazy = laplacian_consensus_matrix(g, scale=3)
    assert convergence_bounds(layout, lazy, 1e-3).alpha < 1


def test_input_validation():
    g = ring(6)
    with pytest.raises(GraphError, match="not a neighbour"):
        ppac_layout(g, np.array([2, 0, 1, 2, 3, 4]))
    disconnected = as_graph(nx.disjoint_union(nx.cycle_graph(3), nx.cycle_graph(3)))
    with pytest.raises(GraphError, match="disconnected"):
        ppac_layout(disconnected, np.zeros(6, dtype=int))
    layout = ppac_layout(g, random_designated(g, seed=0))
    with pytest.raises(ParameterError, match="scale"):
        laplacian_consensus_matrix(g, scale=1.0)
    prep = prepare(layout, np.arange(6.0))
    with pytest.raises(GossipMatrixError, match="stochastic"):
        consensus_errors(2 * laplacian_consensus_matrix(g), prep, 3)
    with pytest.raises(ParameterError, match="noise_std"):
        prepare(layout, np.arange(6.0), noise_std=-1.0)


def leafy_graph(seed: int) -> nx.Graph:
    """A random connected graph with a generalised leaf glued on: a pendant node, or a node
    whose neighbours all have degree 2 and lead to one tail."""
    G = random_connected(seed, (5, 12))
    rng = np.random.default_rng(seed)
    n = G.number_of_nodes()
    tail = int(rng.integers(n))
    if seed % 2 == 0:
        G.add_edge(n, tail)  # leaf head n, tail `tail`
    else:
        k = int(rng.integers(2, 4))
        for a in range(k):  # head n, middle nodes n+1..n+k of degree 2
            G.add_edge(n, n + 1 + a)
            G.add_edge(n + 1 + a, tail)
    return G


@pytest.mark.parametrize("seed", range(6))
def test_simulator_demonstrates_the_generalised_leaf_attack(seed):
    g = as_graph(leafy_graph(seed))
    layout = ppac_layout(g, random_designated(g, seed=seed))
    W = laplacian_consensus_matrix(g)
    prep = prepare(layout, None, realisations=5, value_std=10.0, noise_std=1e3, seed=seed)
    pairs = generalised_leaves(g)
    assert pairs
    for head, tail in pairs:
        view = attacker_view(W, prep, tail, 0)
        recovered = generalised_leaf_attack(view, g, head)
        np.testing.assert_allclose(recovered, prep.values[head], rtol=0, atol=1e-9)
    # the attack refuses a pair that is not a generalised leaf
    head, tail = pairs[0]
    other = next(v for v in range(g.n) if v != head and (head, v) not in pairs)
    with pytest.raises(ParameterError, match="not a generalised leaf"):
        generalised_leaf_attack(attacker_view(W, prep, other, 0), g, head)


def test_consensus_errors_refuse_a_table_over_the_memory_budget():
    g = as_graph(random_connected(0))
    layout = ppac_layout(g, random_designated(g, seed=0))
    prep = prepare(layout, None, realisations=100, seed=0)
    with pytest.raises(ResourceLimitError, match="1000000000 rounds x 100 realisations"):
        consensus_errors(gossip_matrix(g), prep, 10**9)
    with pytest.raises(ResourceLimitError):
        consensus_errors(gossip_matrix(g), prep, 1000, max_memory="100KB")
    assert consensus_errors(gossip_matrix(g), prep, 10).shape == (11, 100)
