"""Tests for sparsedp.graphs: input normalisation, edge-list files and generators."""

import warnings
from unittest import mock

import networkx as nx
import numpy as np
import pytest
import scipy.io
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from sparsedp.errors import GraphError, ParameterError, ResourceLimitError
from sparsedp.graphs.generators import (
    barabasi_albert,
    erdos_renyi,
    grid,
    hypercube,
    random_geometric,
    ring,
    stochastic_block_model,
    synthetic_social_graph,
)
from sparsedp.graphs.graph import (
    Graph,
    _parse_pairs,
    _parse_pairs_slow,
    as_graph,
    read_edge_list,
    require_connected,
    write_edge_list,
)
from sparsedp.graphs.large import erdos_renyi_large


def edge_set(g: Graph) -> set[tuple]:
    """Undirected edges of g as sorted pairs of original node ids."""
    coo = sp.triu(g.adjacency, k=1).tocoo()
    return {tuple(sorted((g.node_ids[i].item(), g.node_ids[j].item())))
            for i, j in zip(coo.row, coo.col, strict=True)}


def write(tmp_path, text: str, name: str = "edges.txt"):
    path = tmp_path / name
    path.write_text(text)
    return path


def assert_canonical(g: Graph) -> None:
    A = g.adjacency
    assert isinstance(A, sp.csr_matrix) and A.dtype == np.float64
    assert A.has_sorted_indices and np.all(A.data == 1.0)
    assert not A.diagonal().any()
    assert (A != A.T).nnz == 0


# ------------------------------------------------------------------------------ edge lists

def test_edge_list_comments_ids_duplicates_selfloops(tmp_path):
    text = (
        "# Undirected graph: example\n"
        "% KONECT-style comment\n"
        "\n"
        "   # indented comment\n"
        "100 7\n"
        "7,3000000000\n"   # comma separated, id above 2^31
        "100 100\n"        # self-loop, dropped
        "100\t7\n"         # duplicate
        "3000000000 -5 0.25 extra\n"  # extra columns ignored
    )
    with pytest.warns(UserWarning, match="third column .* is ignored"):
        g = read_edge_list(write(tmp_path, text))
    assert g.node_ids.tolist() == [-5, 7, 100, 3000000000]
    assert g.n == 4 and g.num_edges == 3
    assert edge_set(g) == {(7, 100), (7, 3000000000), (-5, 3000000000)}
    assert g.degrees.tolist() == [1, 2, 1, 2]
    assert_canonical(g)


def test_edge_list_node_only_in_selfloop_is_kept(tmp_path):
    g = read_edge_list(write(tmp_path, "1 2\n9 9\n"))
    assert g.node_ids.tolist() == [1, 2, 9]
    assert g.num_edges == 1
    with pytest.raises(GraphError, match="graph is disconnected: 2 connected components"):
        require_connected(g)


def test_edge_list_directed_header_warns(tmp_path):
    path = write(tmp_path, "# Directed graph (each unordered pair of nodes is saved once)\n"
                           "1 2\n2 3\n")
    with pytest.warns(UserWarning, match="directed input symmetrised"):
        g = read_edge_list(path)
    assert edge_set(g) == {(1, 2), (2, 3)}


def test_edge_list_undirected_header_and_konect_asym(tmp_path):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        read_edge_list(write(tmp_path, "# Undirected graph: x\n1 2\n2 3\n"))
    with pytest.warns(UserWarning, match="directed input symmetrised"):
        read_edge_list(write(tmp_path, "% asym unweighted\n1 2\n2 3\n", "konect.tsv"))


def test_edge_list_with_both_directions_is_undirected(tmp_path):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        g = read_edge_list(write(tmp_path, "1 2\n2 1\n3 2\n2 3\n"))
    assert edge_set(g) == {(1, 2), (2, 3)}


def test_edge_list_partially_reciprocal_warns(tmp_path):
    with pytest.warns(UserWarning, match=r"1 of 3 directed pairs|2 of 3 directed pairs"):
        g = read_edge_list(write(tmp_path, "1 2\n2 1\n2 3\n"))
    assert edge_set(g) == {(1, 2), (2, 3)}


@pytest.mark.parametrize("text, lineno, problem", [
    ("1 2\n\n# c\n4\n", 4, "malformed edge"),          # a single field
    ("alice bob\ncarol\n", 2, "malformed edge"),         # a single field among labels
    ("1 2 0.5\n2 3 nan\n", 2, "edge weight nan"),
    ("1 2 0.5\n# c\n2 3 inf\n", 3, "edge weight inf"),
    ("1 2 -0.5\n", 1, "edge weight -0.5"),
    ("a b 1\nb b 2\n", 2, "weighted self-loop"),
    ("1 2 1\n\n3 3 1\n", 3, "weighted self-loop"),
])
def test_edge_list_bad_line_names_file_and_line(tmp_path, text, lineno, problem):
    path = write(tmp_path, text)
    with pytest.raises(GraphError, match=rf"{path}, line {lineno}: .*{problem}"):
        read_edge_list(path)


@pytest.mark.parametrize("text, ids", [
    ("alice bob\nbob carol\n", ["alice", "bob", "carol"]),
    ("# header\n1 2\n3 x\n", ["1", "2", "3", "x"]),        # one non-integer id: all labels
    ("1 2\n2 3.5\n", ["1", "2", "3.5"]),
    ("1 2\n1 99999999999999999999\n", ["1", "2", "99999999999999999999"]),  # beyond int64
    ("zoë,łódź\n", ["zoë", "łódź"]),
])
def test_edge_list_with_string_labels(tmp_path, text, ids):
    """Labels in order of first appearance; the edges are between the named nodes."""
    g = read_edge_list(write(tmp_path, text))
    assert g.node_ids.tolist() == ids
    pairs = [line.replace(",", " ").split()[:2] for line in text.splitlines()
             if line.strip() and not line.startswith("#")]
    assert edge_set(g) == {tuple(sorted(p)) for p in pairs}


def test_edge_list_weights_that_are_valid_are_ignored_with_a_warning(tmp_path):
    with pytest.warns(UserWarning, match="third column"):
        g = read_edge_list(write(tmp_path, "1 2 0.5\n2 3 2\n"))
    assert edge_set(g) == {(1, 2), (2, 3)}
    with warnings.catch_warnings():  # a non-numeric third column is not weights
        warnings.simplefilter("error")
        read_edge_list(write(tmp_path, "1 2 red\n2 3 blue\n"))


def test_edge_list_binary_directory_and_bad_matrix_market(tmp_path):
    binary = tmp_path / "b.bin"
    binary.write_bytes(b"1 2\n\x00\x01\x02")
    with pytest.raises(GraphError, match="not a text edge list"):
        read_edge_list(binary)
    with pytest.raises(GraphError, match="cannot read edge list .*directory"):
        read_edge_list(tmp_path)
    bad = write(tmp_path, "%%MatrixMarket matrix coordinate real general\n3 3 2\n1 2 x\n",
                "bad.mtx")
    with pytest.raises(GraphError, match="not a valid Matrix Market file"):
        read_edge_list(bad)


text_lines = st.lists(st.one_of(
    st.text(alphabet=" \t,0123456789-.eainfxb#%\r", max_size=20),
    st.tuples(st.integers(-5, 5), st.integers(-5, 5),
              st.sampled_from(["", " 1", " 0.5", " nan", " -1", " inf", " x"]))
    .map(lambda t: f"{t[0]} {t[1]}{t[2]}"),
), max_size=8)


@settings(max_examples=300, deadline=None)
@given(st.one_of(st.binary(max_size=200), text_lines.map(lambda ls: "\n".join(ls).encode())))
def test_reader_raises_only_graph_error(tmp_path_factory, data):
    """Random bytes and random near-valid files: a Graph or a GraphError, nothing else."""
    path = tmp_path_factory.mktemp("fuzz") / "edges.txt"
    path.write_bytes(data)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            g = read_edge_list(path)
        except GraphError:
            return
    assert g.n >= 1 and g.adjacency.shape == (g.n, g.n)


def test_edge_list_empty_and_missing(tmp_path):
    with pytest.raises(GraphError, match=r"graph is empty \(no nodes\)"):
        read_edge_list(write(tmp_path, "# only comments\n\n"))
    with pytest.raises(GraphError, match="cannot read edge list"):
        read_edge_list(tmp_path / "missing.txt")


def test_edge_list_roundtrip(tmp_path):
    g = as_graph(nx.relabel_nodes(nx.petersen_graph(), {i: 10 * i + 3 for i in range(10)}))
    path = tmp_path / "out.txt"
    write_edge_list(g, path)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        h = read_edge_list(path)
    assert np.array_equal(h.node_ids, np.sort(g.node_ids))
    assert edge_set(h) == edge_set(g)
    with pytest.raises(GraphError, match="integer node ids"):
        write_edge_list(nx.Graph([("a", "b")]), tmp_path / "strings.txt")


def test_matrix_market_file(tmp_path):
    path = tmp_path / "m.mtx"
    scipy.io.mmwrite(path, sp.coo_matrix(nx.to_scipy_sparse_array(nx.cycle_graph(5))))
    g = as_graph(str(path))
    assert g.n == 5 and g.num_edges == 5


fields = st.integers(-(2**40), 2**40).map(str)
junk = st.sampled_from(["0.5", "abc", "1e3", "-7"])
lines = st.one_of(
    st.just(""),
    st.tuples(fields, fields, st.lists(junk, max_size=2), st.sampled_from([" ", "\t", ",", " , "]))
    .map(lambda t: t[3].join([t[0], t[1], *t[2]])),
)


@settings(max_examples=60, deadline=None)
@given(st.lists(lines, max_size=12), st.sampled_from(["\n", "\r\n"]))
def test_fast_parser_matches_line_by_line_parser(rows, newline):
    body = newline.join(rows).replace(",", " ").encode()
    expected = _parse_pairs_slow(body, "x")
    fallback = AssertionError("fallback")
    with mock.patch("sparsedp.graphs.graph._parse_pairs_slow", side_effect=fallback):
        assert np.array_equal(_parse_pairs(body, "x"), expected)  # without falling back


# ------------------------------------------------------------------------------ other inputs

def test_networkx_input_keeps_ids_and_order():
    G = nx.Graph()
    G.add_nodes_from(["c", "a", "b"])
    G.add_edges_from([("a", "b"), ("b", "c")])
    g = as_graph(G)
    assert g.node_ids.tolist() == ["c", "a", "b"]
    assert g.index_of("a") == 1 and g.index_of(np.str_("c")) == 0
    assert edge_set(g) == {("a", "b"), ("b", "c")}
    assert as_graph(g) is g


def test_networkx_tuple_ids():
    g = as_graph(nx.grid_2d_graph(2, 3))
    assert g.index_of((1, 2)) == 5
    assert g.indices_of([(0, 0), (1, 2)]).tolist() == [0, 5]


def test_digraph_symmetrised_with_warning():
    with pytest.warns(UserWarning, match="directed input symmetrised"):
        g = as_graph(nx.DiGraph([(1, 2), (3, 2)]))
    assert edge_set(g) == {(1, 2), (2, 3)}
    assert_canonical(g)


def test_matrix_inputs():
    dense = np.array([[5.0, 2.0, 0.0], [2.0, 0.0, -1.0], [0.0, -1.0, 0.0]])
    for source in (dense, sp.csr_matrix(dense), sp.coo_array(dense), sp.lil_matrix(dense)):
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            g = as_graph(source)
        assert g.node_ids.tolist() == [0, 1, 2]
        assert g.adjacency.toarray().tolist() == [[0, 1, 0], [1, 0, 1], [0, 1, 0]]
        assert_canonical(g)


def test_asymmetric_matrix_symmetrised_with_warning():
    with pytest.warns(UserWarning, match="directed input symmetrised"):
        g = as_graph(np.array([[0, 1, 0], [0, 0, 1], [0, 0, 0]]))
    assert g.adjacency.toarray().tolist() == [[0, 1, 0], [1, 0, 1], [0, 1, 0]]


@pytest.mark.parametrize("bad, message", [
    (np.zeros((2, 3)), r"must be square, got shape \(2, 3\)"),
    (sp.csr_matrix((3, 4)), r"must be square, got shape \(3, 4\)"),
    (np.zeros(3), r"must be square, got shape \(3,\)"),
    (np.zeros((0, 0)), r"graph is empty \(no nodes\)"),
    (nx.Graph(), r"graph is empty \(no nodes\)"),
    (np.array([[0, np.nan], [np.nan, 0]]), "non-finite"),
])
def test_bad_inputs(bad, message):
    with pytest.raises(GraphError, match=message):
        as_graph(bad)


def test_unsupported_type():
    with pytest.raises(TypeError, match="as_graph expects"):
        as_graph(42)


def test_index_of_and_indices_of():
    g = as_graph(nx.Graph([(10, 20), (20, 42), (42, 7)]))
    assert g.index_of(42) == 2
    assert g.index_of(np.int32(42)) == 2
    assert g.index_of("42") == 2
    assert g.indices_of(np.array([7, 10, 42])).tolist() == [3, 0, 2]
    assert g.indices_of([np.int64(20)]).tolist() == [1]
    with pytest.raises(GraphError, match="unknown node id 43"):
        g.index_of(43)
    with pytest.raises(GraphError, match="unknown node id 43"):
        g.indices_of([7, 43, 10])
    with pytest.raises(GraphError, match="unknown node id 'x'"):
        g.index_of("x")


def test_graph_constructor_validates():
    upper = sp.csr_matrix(np.array([[0.0, 1.0], [0.0, 0.0]]))
    with pytest.raises(GraphError, match="not symmetric"):
        Graph(upper, np.arange(2))
    with pytest.raises(GraphError, match="not unique"):
        Graph(sp.csr_matrix((2, 2)), np.array([1, 1]))
    with pytest.raises(GraphError, match=r"graph is empty \(no nodes\)"):
        Graph(sp.csr_matrix((0, 0)), np.arange(0))


def test_require_connected_counts_components():
    with pytest.raises(GraphError, match="graph is disconnected: 3 connected components"):
        require_connected(nx.Graph([(0, 1), (2, 3), (4, 5)]))
    with pytest.raises(GraphError, match="graph is disconnected: 2 connected components"):
        require_connected(sp.csr_matrix(np.diag([1.0, 1.0])))
    require_connected(ring(5))


# ------------------------------------------------------------------------------ generators

@pytest.mark.parametrize("make", [
    lambda s: erdos_renyi(60, 0.1, s),
    lambda s: barabasi_albert(60, 2, s, initial_clique=5),
    lambda s: random_geometric(60, 0.2, s),
    lambda s: stochastic_block_model([20, 30], 0.3, 0.02, s),
    lambda s: synthetic_social_graph(300, s),
])
def test_random_generators_are_deterministic(make):
    a, b, c = make(1), make(1), make(2)
    assert_canonical(a)
    assert (a.adjacency != b.adjacency).nnz == 0
    assert (a.adjacency != c.adjacency).nnz > 0
    assert a.node_ids.tolist() == list(range(a.n))


def test_deterministic_generators_edge_counts():
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # generators never warn
        torus_2x5 = grid(2, 5, periodic=True)
    assert torus_2x5.num_edges == 5 + 2 * 5  # length-2 wrap duplicates dropped
    assert ring(7).num_edges == 7 and set(ring(7).degrees) == {2}
    assert grid(3, 4).num_edges == 3 * 3 + 4 * 2
    assert grid(3, 4, periodic=True).num_edges == 2 * 12
    assert set(grid(3, 4, periodic=True).degrees) == {4}
    h = hypercube(4)
    assert h.n == 16 and h.num_edges == 4 * 8 and set(h.degrees) == {4}
    assert nx.is_isomorphic(nx.from_scipy_sparse_array(h.adjacency), nx.hypercube_graph(4))
    assert nx.is_isomorphic(nx.from_scipy_sparse_array(grid(3, 4).adjacency),
                            nx.grid_2d_graph(3, 4))


def test_barabasi_albert_initial_clique():
    n, m, c = 200, 2, 5
    g = barabasi_albert(n, m, seed=3, initial_clique=c)
    assert g.num_edges == c * (c - 1) // 2 + m * (n - c)
    assert g.adjacency[:c, :c].nnz == c * (c - 1)  # the core is complete
    assert g.degrees[c:].min() >= m
    assert barabasi_albert(50, 3, seed=0).num_edges == 3 + 3 * (50 - 4)  # star core


def test_random_geometric_matches_distances():
    n, radius, seed = 80, 0.15, 4
    g = random_geometric(n, radius, seed)
    points = np.random.default_rng(seed).random((n, 2))
    dist = np.linalg.norm(points[:, None, :] - points[None, :, :], axis=-1)
    expected = (dist <= radius) & ~np.eye(n, dtype=bool)
    assert np.array_equal(g.adjacency.toarray().astype(bool), expected)


def test_stochastic_block_model_blocks():
    g = stochastic_block_model([10, 10], 1.0, 0.0, seed=0)
    assert g.num_edges == 2 * 45
    with pytest.raises(GraphError, match="2 connected components"):
        require_connected(g)


def test_synthetic_social_graph_is_social():
    g = synthetic_social_graph()
    assert g.n == 2000
    require_connected(g)
    degrees = g.degrees
    assert degrees.max() > 8 * degrees.mean()  # heavy tail
    G = nx.from_scipy_sparse_array(g.adjacency)
    assert nx.average_clustering(G) > 0.1  # far above G(n, p) with the same density


@pytest.mark.parametrize("call, message", [
    (lambda: ring(2), "n must be an integer >= 3"),
    (lambda: erdos_renyi(10, 1.5), r"p must be in \[0, 1\]"),
    (lambda: barabasi_albert(4, 2, initial_clique=5), "n must be an integer >= 5"),
    (lambda: barabasi_albert(10, 3, initial_clique=2), "initial_clique must be an integer >= 3"),
    (lambda: grid(0, 3), "rows must be an integer >= 1"),
    (lambda: hypercube(0), "dim must be an integer >= 1"),
    (lambda: random_geometric(10, -1.0), "radius must be >= 0"),
    (lambda: stochastic_block_model([], 0.5, 0.1), "at least one block"),
])
def test_generator_parameter_errors(call, message):
    with pytest.raises(ParameterError, match=message):
        call()


@pytest.mark.parametrize("generate", [
    lambda: erdos_renyi(10**9, 0.5, seed=1),
    lambda: ring(10**11),
    lambda: grid(10**5, 10**5),
    lambda: hypercube(40),
    lambda: random_geometric(10**8, 0.5, seed=1),
    lambda: synthetic_social_graph(10**10),
    lambda: erdos_renyi_large(10**11, 10.0, seed=1),
], ids=["er", "ring", "grid", "hypercube", "rgg", "social", "er_large"])
def test_generators_refuse_requests_over_the_memory_budget(generate):
    """Refused before anything is allocated (the call returns at once)."""
    with pytest.raises(ResourceLimitError, match="needs about .* more than the memory budget"):
        generate()


def test_memory_limit_sets_the_budget_of_every_check_inside_it():
    """resources.memory_limit: the default budget inside the block (and only there)."""
    from sparsedp import resources

    with resources.memory_limit("1M"):
        assert resources.memory_budget() == 2**20
        assert resources.memory_budget("2M") == 2**21  # an explicit max_memory wins
        with pytest.raises(ResourceLimitError, match=r"1\.0 MiB"):
            ring(100_000)
    assert resources.memory_budget() > 2**20
    assert ring(100_000).n == 100_000


def test_generator_memory_estimate_is_above_the_measured_peak():
    import tracemalloc

    from sparsedp.graphs.cost import generator_memory

    tracemalloc.start()
    g = erdos_renyi(3000, 0.01, seed=2)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert generator_memory(g.n, g.adjacency.nnz / 2, networkx=True) > peak
