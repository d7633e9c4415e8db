"""Tests for sparsedp.gossip: gossip-matrix schemes and their validation."""

import networkx as nx
import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from sparsedp.errors import GossipMatrixError, GraphError, ParameterError
from sparsedp.graphs.generators import grid, hypercube, ring
from sparsedp.graphs.weights import SCHEMES, gossip_matrix
from sparsedp.linalg.stochastic import (
    PROPERTIES,
    as_square_sparse,
    check_gossip_matrix,
    gossip_properties,
    has_property,
    symmetry_defect,
)

# ------------------------------------------------------------------------------ schemes

PATH3 = {  # path 0 - 1 - 2: degrees 1, 2, 1
    "metropolis": [[2 / 3, 1 / 3, 0], [1 / 3, 1 / 3, 1 / 3], [0, 1 / 3, 2 / 3]],
    "max-degree": [[1 / 2, 1 / 2, 0], [1 / 2, 0, 1 / 2], [0, 1 / 2, 1 / 2]],
    "row-normalised": [[0, 1, 0], [1 / 2, 0, 1 / 2], [0, 1, 0]],
    "row-normalised-self-loops": [[1 / 2, 1 / 2, 0], [1 / 3, 1 / 3, 1 / 3], [0, 1 / 2, 1 / 2]],
}


@pytest.mark.parametrize("scheme", SCHEMES)
def test_path_of_three_by_hand(scheme):
    W = gossip_matrix(nx.path_graph(3), scheme)
    np.testing.assert_allclose(W.toarray(), PATH3[scheme], rtol=0, atol=1e-15)


def test_star_by_hand():
    star = nx.star_graph(4)  # centre 0 with degree 4, leaves with degree 1
    metropolis = gossip_matrix(star, "metropolis").toarray()
    np.testing.assert_allclose(metropolis[0], [1 / 5] * 5)
    np.testing.assert_allclose(np.diag(metropolis)[1:], [4 / 5] * 4)
    max_degree = gossip_matrix(star, "max-degree").toarray()
    np.testing.assert_allclose(max_degree[0], [0] + [1 / 4] * 4)
    np.testing.assert_allclose(np.diag(max_degree)[1:], [3 / 4] * 4)
    row = gossip_matrix(star, "row-normalised").toarray()
    np.testing.assert_allclose(row[0], [0] + [1 / 4] * 4)
    np.testing.assert_allclose(row[1], [1, 0, 0, 0, 0])


def reference(G: nx.Graph, scheme: str) -> np.ndarray:
    """Dense gossip matrix computed entry by entry from networkx degrees."""
    n = G.number_of_nodes()
    index = {v: i for i, v in enumerate(G)}
    W = np.zeros((n, n))
    for u in G:
        for v in G[u]:
            du, dv = G.degree(u), G.degree(v)
            W[index[u], index[v]] = {
                "metropolis": 1 / (1 + max(du, dv)),
                "max-degree": 1 / max(du, dv),
                "row-normalised": 1 / du,
                "row-normalised-self-loops": 1 / (du + 1),
            }[scheme]
        i = index[u]
        W[i, i] = 1 / (G.degree(u) + 1) if scheme == "row-normalised-self-loops" else 0.0
        W[i, i] = 1 - W[i].sum() + W[i, i]
    return W


@pytest.mark.parametrize("scheme", SCHEMES)
@pytest.mark.parametrize("G", [
    nx.connected_watts_strogatz_graph(40, 4, 0.3, seed=1),
    nx.barabasi_albert_graph(50, 2, seed=2),
    nx.relabel_nodes(nx.karate_club_graph(), lambda v: f"member {v}"),
], ids=["watts-strogatz", "barabasi-albert", "karate-strings"])
def test_schemes_match_networkx_reference(G, scheme):
    W = gossip_matrix(G, scheme)
    np.testing.assert_allclose(W.toarray(), reference(G, scheme), rtol=0, atol=1e-14)


@pytest.mark.parametrize("scheme", SCHEMES)
def test_output_format(scheme):
    W = gossip_matrix(nx.cycle_graph(6), scheme)
    assert isinstance(W, sp.csr_matrix) and W.dtype == np.float64
    assert W.has_sorted_indices and W.has_canonical_format
    assert np.all(W.data != 0)  # explicit entries only where nonzero
    check_gossip_matrix(W, require=("nonnegative", "row_stochastic", "irreducible"))


def test_diagonal_stored_only_where_nonzero():
    W = gossip_matrix(ring(6), "max-degree")  # regular: W_ii = 0 exactly
    assert W.nnz == 12
    assert not W.diagonal().any()
    assert gossip_matrix(ring(6), "metropolis").nnz == 18


@st.composite
def connected_graphs(draw):
    n = draw(st.integers(2, 25))
    extra = draw(st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1)), max_size=60))
    order = draw(st.permutations(range(n)))
    G = nx.Graph()
    G.add_nodes_from(range(n))
    G.add_edges_from(zip(order[:-1], order[1:], strict=True))  # a spanning path
    G.add_edges_from((u, v) for u, v in extra if u != v)
    return G


@settings(max_examples=60, deadline=None)
@given(connected_graphs(), st.sampled_from([0.0, 0.3]))
def test_metropolis_properties_on_random_graphs(G, laziness):
    W = gossip_matrix(G, "metropolis", laziness=laziness)
    props = gossip_properties(W, atol=1e-12)
    for prop in ("nonnegative", "doubly_stochastic", "symmetric", "irreducible", "primitive"):
        assert props[prop], prop
    assert props["period"] == 1
    assert symmetry_defect(W)[0] == 0.0  # exactly symmetric, not just to rounding
    assert W.diagonal().min() >= 1 / (1 + max(d for _, d in G.degree())) - 1e-15


@settings(max_examples=40, deadline=None)
@given(connected_graphs())
def test_max_degree_is_doubly_stochastic(G):
    W = gossip_matrix(G, "max-degree")
    check_gossip_matrix(W, require=("nonnegative", "doubly_stochastic", "symmetric"), atol=1e-12)
    assert W.diagonal().min() >= 0.0


@pytest.mark.parametrize("graph", [ring(8), hypercube(6), grid(4, 6, periodic=True)],
                         ids=["even cycle", "hypercube", "even torus"])
def test_max_degree_on_bipartite_regular_graphs_is_periodic(graph):
    W = gossip_matrix(graph, "max-degree")
    assert not W.diagonal().any()  # exactly 0, although 1 - 6 * (1/6) rounds to 1.1e-16
    props = gossip_properties(W)
    assert props["irreducible"] and not props["aperiodic"] and props["period"] == 2
    with pytest.raises(GossipMatrixError,
                       match=r"W is periodic \(period 2\): the chain is not aperiodic"):
        check_gossip_matrix(W, require=("row_stochastic", "primitive"))
    assert gossip_properties(gossip_matrix(graph, "metropolis"))["period"] == 1


def test_max_degree_on_odd_cycle_is_aperiodic():
    props = gossip_properties(gossip_matrix(ring(7), "max-degree"))
    assert props["period"] == 1 and props["aperiodic"] and props["primitive"]


def test_period_of_directed_cycle_and_lazy_fix():
    P = sp.csr_matrix(np.roll(np.eye(3), 1, axis=1))  # 0 -> 1 -> 2 -> 0
    assert gossip_properties(P)["period"] == 3
    assert gossip_properties(gossip_matrix(ring(8), "max-degree", laziness=0.1))["period"] == 1


@pytest.mark.parametrize("scheme", ["row-normalised", "row-normalised-self-loops"])
def test_row_normalised_not_symmetric(scheme):
    W = gossip_matrix(nx.path_graph(4), scheme)
    props = gossip_properties(W)
    assert props["row_stochastic"] and props["primitive"] == (scheme != "row-normalised")
    assert not props["symmetric"] and not props["column_stochastic"]
    with pytest.raises(GossipMatrixError, match="W is not symmetric"):
        check_gossip_matrix(W, require=("symmetric",))


@pytest.mark.parametrize("scheme", SCHEMES)
def test_laziness(scheme):
    G = nx.barabasi_albert_graph(30, 2, seed=0)
    W = gossip_matrix(G, scheme).toarray()
    lazy = gossip_matrix(G, scheme, laziness=0.25).toarray()
    # Metropolis weights sit on a 2^-52 grid: a diagonal entry collects one rounding per
    # neighbour (weights.WEIGHT_GRID)
    tolerance = 1e-15 + (scheme == "metropolis") * (1 + max(dict(G.degree).values())) * 2.0**-52
    np.testing.assert_allclose(lazy, 0.25 * np.eye(30) + 0.75 * W, rtol=0, atol=tolerance)


@pytest.mark.parametrize("laziness", [-0.1, 1.0, float("nan")])
def test_laziness_out_of_range(laziness):
    with pytest.raises(ParameterError, match=r"laziness must be in \[0, 1\)"):
        gossip_matrix(ring(5), laziness=laziness)


def test_unknown_scheme_lists_valid_names():
    with pytest.raises(ParameterError, match="unknown gossip scheme 'uniform'.*metropolis, "
                                             "max-degree, row-normalised"):
        gossip_matrix(ring(5), "uniform")


def test_graph_errors():
    with pytest.raises(GraphError, match="graph is disconnected: 3 connected components"):
        gossip_matrix(nx.Graph([(0, 1), (2, 3), (4, 5)]))
    with pytest.raises(GraphError, match="single node"):
        gossip_matrix(nx.empty_graph(1))
    with pytest.raises(GraphError, match=r"graph is empty \(no nodes\)"):
        gossip_matrix(nx.Graph())


def test_accepts_matrix_and_edge_list_inputs(tmp_path):
    A = nx.to_numpy_array(nx.cycle_graph(5))
    path = tmp_path / "c5.txt"
    path.write_text("".join(f"{i} {(i + 1) % 5}\n" for i in range(5)))
    expected = gossip_matrix(nx.cycle_graph(5)).toarray()
    for source in (A, sp.csr_matrix(A), str(path)):
        np.testing.assert_array_equal(gossip_matrix(source).toarray(), expected)


# ------------------------------------------------------------------------------ validation

W_OK = np.array([[0.5, 0.5, 0.0], [0.5, 0.25, 0.25], [0.0, 0.25, 0.75]])


def perturbed(i: int, j: int, value: float) -> np.ndarray:
    W = W_OK.copy()
    W[i, j] = value
    return W


@pytest.mark.parametrize("W, require, message", [
    (perturbed(1, 2, -0.1), ("nonnegative",), r"^W\[1, 2\] = -0.1 is negative$"),
    (perturbed(1, 2, 0.18), ("row_stochastic",),
     r"^row 1 of W sums to 0.93, not 1 \(not row-stochastic\)$"),
    (perturbed(2, 1, 0.2), ("column_stochastic",),
     r"^column 1 of W sums to 0.95, not 1 \(not column-stochastic\)$"),
    (perturbed(2, 1, 0.2), ("doubly_stochastic",),
     r"^row 2 of W sums to 0.95, not 1 \(not doubly stochastic\)$"),
    (perturbed(2, 1, 0.05), ("symmetric",),
     r"^W is not symmetric: \|W - W\^T\| max 0.2 at \(1, 2\)$"),
    (np.diag([1.0, 1.0, 1.0]), ("irreducible",),
     r"^W is reducible: its pattern has 3 strongly connected components"),
    (np.diag([1.0, 1.0]), ("aperiodic",), r"W is reducible \(2 strongly connected"),
    (perturbed(0, 0, np.inf), ("nonnegative",), r"^W\[0, 0\] = inf is not finite$"),
    (np.ones((2, 3)) / 3, ("row_stochastic",), r"^W is not square: shape \(2, 3\)$"),
])
def test_validation_messages(W, require, message):
    with pytest.raises(GossipMatrixError, match=message):
        check_gossip_matrix(W, require=require)


def test_first_failing_property_in_requested_order():
    W = perturbed(1, 2, -0.1)  # negative and not row-stochastic
    with pytest.raises(GossipMatrixError, match="row 1 of W"):
        check_gossip_matrix(W, require=("row_stochastic", "nonnegative"))
    with pytest.raises(GossipMatrixError, match="is negative"):
        check_gossip_matrix(W, require=("nonnegative", "row_stochastic"))


def test_atol_and_accepted_formats():
    W = perturbed(1, 2, 0.25 + 1e-9)
    check_gossip_matrix(W, require=("row_stochastic",), atol=1e-8)
    with pytest.raises(GossipMatrixError, match="row 1"):
        check_gossip_matrix(W, require=("row_stochastic",))
    for fmt in (sp.coo_matrix, sp.csc_matrix, sp.lil_matrix, sp.csr_array):
        check_gossip_matrix(fmt(W_OK), require=PROPERTIES)
    assert all(v for k, v in gossip_properties(W_OK).items() if k != "period")


def test_unknown_property():
    with pytest.raises(ParameterError, match="unknown gossip-matrix property 'stochastic'"):
        check_gossip_matrix(W_OK, require=("stochastic",))
    with pytest.raises(ParameterError, match="unknown gossip-matrix property"):
        has_property(W_OK, "ergodic")


def test_as_square_sparse():
    W = gossip_matrix(ring(5))
    assert as_square_sparse(W) is W  # canonical input is not copied
    coo = sp.coo_matrix(([0.5, 0.25, 0.25, 0.0, 1.0], ([0, 0, 0, 1, 1], [0, 1, 1, 0, 1])),
                        shape=(2, 2))
    M = as_square_sparse(coo)
    assert isinstance(M, sp.csr_matrix) and M.dtype == np.float64
    assert M.nnz == 3 and M.has_canonical_format  # duplicates summed, explicit zero dropped
    np.testing.assert_array_equal(M.toarray(), [[0.5, 0.5], [0.0, 1.0]])
    with pytest.raises(GossipMatrixError, match=r"W is empty \(0 x 0\)"):
        as_square_sparse(np.zeros((0, 0)))
    with pytest.raises(GossipMatrixError, match=r"W is not square: shape \(4,\)"):
        as_square_sparse(np.ones(4))
