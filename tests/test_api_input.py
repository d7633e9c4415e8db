"""What the library accepts as W, and the notes it attaches to unusual questions (issue 21,
scope item 6): float32 and integer W, a list of rows, a graph passed where W is expected, a
target among its observers, target and observers in different components."""

import networkx as nx
import numpy as np
import pytest
import scipy.sparse as sp

import sparsedp
from sparsedp.errors import GossipMatrixError, ParameterError
from sparsedp.graphs import as_graph
from sparsedp.linalg.stochastic import check_gossip_matrix, input_rounding
from sparsedp.testing import brute_force_max, dense_M


@pytest.fixture(scope="module")
def karate_W():
    return sparsedp.gossip_matrix(nx.karate_club_graph())


@pytest.mark.parametrize("view", ["secure-summation", "neighbourhood"])
@pytest.mark.parametrize("dense", [False, True])
def test_float32_W_gives_the_float64_answer(karate_W, view, dense):
    W32 = karate_W.astype(np.float32)
    W32 = W32.toarray() if dense else W32
    reference = sparsedp.squared_sensitivity(karate_W, 0, [5], 6, view=view)
    result = sparsedp.squared_sensitivity(W32, 0, [5], 6, view=view)
    assert result.upper == pytest.approx(reference.upper, rel=1e-5)
    assert result.lower == pytest.approx(reference.lower, rel=1e-5)
    assert any("float32" in note for note in result.notes)


def test_float32_tolerance_is_the_types_rounding_not_more(karate_W):
    """A float32 row off by far more than float32 rounding is still refused."""
    W32 = karate_W.astype(np.float32).tolil()
    W32[3, 3] += np.float32(1e-4)
    with pytest.raises(GossipMatrixError, match="row 3 of W sums to"):
        check_gossip_matrix(W32.tocsr())
    assert input_rounding(np.zeros((2, 2), np.float32)) > 0
    assert input_rounding(np.zeros((2, 2))) == 0 == input_rounding(np.zeros((2, 2), int))


def test_integer_W_is_a_matrix_of_exact_values():
    """A permutation-like integer W (a directed 3-cycle with self-loop weights 0) is accepted
    and gives the same answer as its float64 copy."""
    P = np.roll(np.eye(4, dtype=np.int64), 1, axis=1)
    a = sparsedp.squared_sensitivity(P, 0, [2], 3, method="gram")
    b = sparsedp.squared_sensitivity(P.astype(float), 0, [2], 3, method="gram")
    assert (a.lower, a.upper) == (b.lower, b.upper)


def test_a_list_of_rows_is_one_matrix(karate_W):
    rows = karate_W.toarray().tolist()
    a = sparsedp.squared_sensitivity(rows, 0, [5], 4)
    b = sparsedp.squared_sensitivity(karate_W, 0, [5], 4)
    assert a.upper == pytest.approx(b.upper, rel=1e-12)
    assert not any("time-varying" in note for note in a.notes)


def test_a_list_of_matrices_is_time_varying_gossip(karate_W):
    dense = karate_W.toarray().tolist()
    result = sparsedp.squared_sensitivity([dense] * 4, 0, [5], 4)
    constant = sparsedp.squared_sensitivity(karate_W, 0, [5], 4)
    assert result.upper == pytest.approx(constant.upper, rel=1e-9)
    assert any("time-varying" in note for note in result.notes)


def test_a_list_mixing_matrices_and_rows_is_refused(karate_W):
    with pytest.raises(ParameterError, match="mixes matrices and rows"):
        sparsedp.squared_sensitivity([karate_W, [0.5, 0.5]], 0, [5], 2)


@pytest.mark.parametrize("graph", [nx.karate_club_graph(), as_graph(nx.karate_club_graph())],
                         ids=["networkx", "sparsedp.Graph"])
@pytest.mark.parametrize("call", [
    lambda W: sparsedp.squared_sensitivity(W, 0, [5], 4),
    lambda W: sparsedp.check_gossip_matrix(W),
    lambda W: sparsedp.gossip_properties(W),
], ids=["squared_sensitivity", "check_gossip_matrix", "gossip_properties"])
def test_a_graph_where_W_is_expected_is_a_type_error(graph, call):
    with pytest.raises(TypeError, match=r"gossip_matrix\(G, scheme=\.\.\.\)"):
        call(graph)


@pytest.mark.parametrize("view", ["secure-summation", "neighbourhood", "secure-summation-v1"])
def test_different_components_learn_nothing_exactly(view):
    """Two disjoint triangles: the target's messages never reach the other component.  The
    dense reference (pinv) agrees that Delta^2 = 0."""
    G = nx.disjoint_union(nx.complete_graph(3), nx.complete_graph(3))
    A = nx.to_scipy_sparse_array(G, format="csr") + sp.eye(6)
    W = sp.csr_matrix(A / 3.0)
    result = sparsedp.squared_sensitivity(W, 0, [4], 5, view=view)
    assert result.lower == result.upper == 0.0
    assert result.exact == 0.0
    assert any("different connected components" in note for note in result.notes)
    if view == "secure-summation":
        assert brute_force_max(dense_M(W, 0, [4], 5)) == pytest.approx(0.0, abs=1e-12)
    same = sparsedp.squared_sensitivity(W, 0, [1], 5, view=view)
    assert same.upper > 0 and not any("different connected" in n for n in same.notes)


def test_weighted_row_normalised_is_weight_over_strength():
    """gossip_matrix(G, weight=...) like networkx: W_ij = w_ij / sum_k w_ik, dense check."""
    G = nx.karate_club_graph()
    W = sparsedp.gossip_matrix(G, scheme="row-normalised", weight="weight", laziness=0.25)
    A = nx.to_numpy_array(G, nodelist=list(G), weight="weight")
    expected = 0.25 * np.eye(len(A)) + 0.75 * A / A.sum(axis=1, keepdims=True)
    np.testing.assert_allclose(W.toarray(), expected, rtol=1e-15, atol=0)
    check_gossip_matrix(W, require=("nonnegative", "row_stochastic"))
    # an edge without the attribute weighs 1, as in networkx
    H = nx.Graph([(0, 1, {"w": 3.0}), (1, 2)])
    np.testing.assert_allclose(
        sparsedp.gossip_matrix(H, scheme="row-normalised", weight="w").toarray(),
        [[0, 1, 0], [0.75, 0, 0.25], [0, 1, 0]])


def test_weights_on_the_graph_but_not_used_are_noted():
    with pytest.warns(UserWarning, match="78 edges carry a 'weight' attribute, not used"):
        W = sparsedp.gossip_matrix(nx.karate_club_graph())
    assert W.shape == (34, 34)


@pytest.mark.parametrize("graph, scheme, message", [
    (nx.path_graph(3), "metropolis", "does not use edge weights"),
    (nx.Graph([(0, 1, {"weight": -1.0}), (1, 2)]), "row-normalised", r"edge \(0, 1\)"),
    (nx.Graph([(0, 1, {"weight": float("nan")}), (1, 2)]), "row-normalised", "finite"),
    (nx.DiGraph([(0, 1), (1, 0)]), "row-normalised", "undirected"),
    (sp.csr_matrix(np.ones((3, 3)) - np.eye(3)), "row-normalised", "networkx edge attribute"),
])
def test_unusable_weights_are_refused(graph, scheme, message):
    with pytest.raises(ParameterError, match=message):
        sparsedp.gossip_matrix(graph, scheme=scheme, weight="weight")
