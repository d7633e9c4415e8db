"""numpy generators for large graphs and their .npz storage."""

import networkx as nx
import numpy as np
import pytest
from scipy.sparse.csgraph import connected_components

from sparsedp.errors import ParameterError
from sparsedp.graphs import large as lg


def test_adjacency_from_pairs_matches_networkx():
    rng = np.random.default_rng(0)
    u, v = rng.integers(0, 50, 400), rng.integers(0, 50, 400)
    A = lg.adjacency_from_pairs(u, v, 50)
    G = nx.Graph()
    G.add_nodes_from(range(50))
    G.add_edges_from((a, b) for a, b in zip(u, v, strict=True) if a != b)
    expected = nx.to_scipy_sparse_array(G, nodelist=range(50), format="csr")
    assert A.has_canonical_format
    assert (A != expected).nnz == 0
    assert A.diagonal().sum() == 0 and np.all(A.data == 1.0)


@pytest.mark.parametrize(
    "make", [lambda: lg.erdos_renyi_large(5000, 12, seed=1),
             lambda: lg.random_regular_large(5000, 12, seed=1),
             lambda: lg.chung_lu_large(5000, 12, seed=1)],
)
def test_generators_give_canonical_simple_graphs_with_the_mean_degree(make):
    g = make()
    A = g.adjacency
    assert A.has_canonical_format and (A != A.T).nnz == 0 and A.diagonal().sum() == 0
    assert 11.0 < g.degrees.mean() <= 12.0  # a few pairs erased


def test_random_regular_is_nearly_regular():
    d = lg.random_regular_large(4000, 10, seed=3).degrees
    assert d.max() <= 10 and np.mean(d == 10) > 0.98


def test_chung_lu_is_heavy_tailed_and_er_is_not():
    cl = lg.chung_lu_large(20000, 10, exponent=2.5, seed=2).degrees
    er = lg.erdos_renyi_large(20000, 10, seed=2).degrees
    assert cl.max() > 10 * cl.mean()
    assert er.max() < 4 * er.mean()


def test_largest_component_keeps_original_ids():
    g = lg.chung_lu_large(3000, 3, seed=5)
    count, _ = connected_components(g.adjacency, directed=False)
    giant = lg.largest_component(g)
    assert count > 1
    assert connected_components(giant.adjacency, directed=False)[0] == 1
    assert set(giant.node_ids.tolist()) <= set(g.node_ids.tolist())
    i, j = giant.adjacency.nonzero()
    a, b = giant.node_ids[i[0]], giant.node_ids[j[0]]
    assert g.adjacency[g.index_of(a), g.index_of(b)] == 1.0


def test_npz_round_trip(tmp_path):
    g = lg.largest_component(lg.erdos_renyi_large(2000, 6, seed=4))
    path = tmp_path / "g.npz"
    lg.save_graph(g, path)
    h = lg.load_graph(path)
    assert (h.adjacency != g.adjacency).nnz == 0
    np.testing.assert_array_equal(h.node_ids, g.node_ids)


@pytest.mark.parametrize(
    "call,match",
    [(lambda: lg.erdos_renyi_large(1, 3), "n"),
     (lambda: lg.erdos_renyi_large(100, 0), "average_degree"),
     (lambda: lg.random_regular_large(101, 3), "even"),
     (lambda: lg.chung_lu_large(100, 4, exponent=2.0), "exponent")],
)
def test_bad_parameters(call, match):
    with pytest.raises(ParameterError, match=match):
        call()
