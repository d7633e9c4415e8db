"""Node identity (issue 19, item 7): every public function that takes a graph speaks its labels.

A networkx node's label is not its position in ``G.nodes()``.  Each test runs a function on a
graph whose labels are strings, a shuffled permutation of ``0..n-1`` (inserted in yet another
order, so that label, position and sorted rank all differ) or tuples, and compares the answer
with the same computation on ``H = convert_node_labels_to_integers(G)`` (the graph on
``0..n-1`` in ``G.nodes()`` order, where label == position) mapped through the relabelling.
Functions that take only a matrix W name nodes by its rows; they refuse a graph with a hint.
"""

import contextlib
import io
import json
import math
import re

import networkx as nx
import numpy as np
import pytest

import sparsedp
from sparsedp import ppac
from sparsedp.cli.main import main
from sparsedp.errors import GossipMatrixError, GraphError, ParameterError
from sparsedp.gossip.closed_forms import thm13_rate_for
from sparsedp.graphs.graph import as_graph, read_edge_list
from sparsedp.graphs.weights import gossip_matrix
from sparsedp.randomwalk import log_green_columns, muffliato_rdp, random_walk_rdp
from sparsedp.randomwalk.gossip_comparison import compare_by_distance

SCHEMES = ("str", "int-shuffled", "tuple")


def base_graph() -> nx.Graph:
    """C_6 plus a pendant path 0 - 6 - 7: generalised leaves (7 -> 6, and 1, 5 -> ...), the
    undetermined pair (attacker 0, victim 6) and private pairs."""
    G = nx.cycle_graph(6)
    G.add_edges_from([(0, 6), (6, 7)])
    return G


def relabel(G: nx.Graph, scheme: str, seed: int = 0) -> nx.Graph:
    """``G`` (nodes ``0..n-1``) under new labels, nodes and edges inserted in shuffled orders."""
    rng = np.random.default_rng(seed)
    n = G.number_of_nodes()
    perm = rng.permutation(n)
    if scheme == "str":
        name = {v: f"n{perm[v]}" for v in G}
    elif scheme == "int-shuffled":
        name = {v: int(perm[v]) for v in G}
    else:
        name = {v: (int(perm[v]) % 3, f"t{v}") for v in G}
    out = nx.Graph()
    out.add_nodes_from(name[v] for v in rng.permutation(n).tolist())
    edges = list(G.edges())
    for k in rng.permutation(len(edges)).tolist():
        u, v = edges[k]
        out.add_edge(*((name[v], name[u]) if rng.random() < 0.5 else (name[u], name[v])))
    return out


@pytest.fixture(params=SCHEMES)
def labelled(request):
    """(G with the scheme's labels, H on 0..n-1 in G's node order, labels: H's k is L[k])."""
    G = relabel(base_graph(), request.param, seed=SCHEMES.index(request.param))
    labels = list(G)
    H = nx.convert_node_labels_to_integers(G)
    assert list(H) == list(range(len(labels)))
    assert labels != sorted(labels, key=repr) or request.param == "tuple"
    return G, H, labels


def brute_force_leaves(G: nx.Graph) -> list:
    """Def. 6.7 read literally on the networkx labels (an independent reference)."""
    return sorted((j, i) for j in G for i in G
                  if i != j and all(G.degree(s) == 2 and G.has_edge(s, i)
                                    for s in G.neighbors(j) if s != i))


# --------------------------------------------------------------------------------------------
# The Graph object
# --------------------------------------------------------------------------------------------

def test_graph_label_methods(labelled):
    G, _, labels = labelled
    g = as_graph(G)
    n = g.n
    assert g.node_ids.tolist() == labels and not g.labels_are_positions
    for k, label in enumerate(labels):
        assert g.index_of(label) == k and g.id_of(k) == label and label in g
    assert g.indices_of(labels[::-1]).tolist() == list(range(n))[::-1]
    assert g.ids_of([2, 0]).tolist() == [labels[2], labels[0]]
    assert g.per_node(np.arange(n) * 10) == {label: 10 * k for k, label in enumerate(labels)}
    assert "missing" not in g and -1 not in g
    with pytest.raises(GraphError, match="unknown node id 'missing' for target") as info:
        g.index_of("missing", "target")
    assert repr(labels[0]) in str(info.value)  # the message shows the graph's labels
    with pytest.raises(GraphError, match="unknown node id 99 for victim"):
        g.indices_of([labels[0], 99], "victim")
    with pytest.raises(ParameterError, match="one per node"):
        g.per_node([1, 2])


def test_labels_are_positions_for_generators_and_range_graphs():
    for g in (sparsedp.graphs.ring(5), as_graph(nx.path_graph(4)), as_graph(np.ones((3, 3)))):
        assert g.labels_are_positions and g.index_of(2) == 2 and g.id_of(2) == 2
    assert not as_graph(nx.Graph([(2, 0), (0, 1), (1, 2), (1, 3)])).labels_are_positions


def test_matrices_built_from_a_graph_follow_its_node_order(labelled):
    G, H, _ = labelled
    g = as_graph(G)
    for build in (gossip_matrix, ppac.laplacian_consensus_matrix):
        W = build(G)
        assert (W != build(H)).nnz == 0
        for a, b in G.edges():
            assert W[g.index_of(a), g.index_of(b)] > 0
        assert W.nnz == 2 * G.number_of_edges() + sum(W.diagonal() != 0)


# --------------------------------------------------------------------------------------------
# PPAC structure
# --------------------------------------------------------------------------------------------

def test_issue_example_answers_in_labels():
    """The reproducer of issue 19: node order [2, 0, 1, 3]; positions would name (3, 2)."""
    G = nx.Graph([(2, 0), (0, 1), (1, 2), (1, 3)])
    assert list(G) == [2, 0, 1, 3]
    assert ppac.generalised_leaves(G) == [(0, 1), (2, 1), (3, 1)] == brute_force_leaves(G)
    assert ppac.victim_status(G, 1) == {2: "recoverable", 0: "recoverable", 1: "attacker",
                                        3: "recoverable"}
    assert ppac.is_generalised_leaf(G, 3, 1) and not ppac.is_generalised_leaf(G, 3, 2)
    assert ppac.pair_status(G, 1, 3) == "recoverable"


def test_generalised_leaves(labelled):
    G, H, labels = labelled
    expected = sorted((labels[j], labels[i]) for j, i in ppac.generalised_leaves(H))
    assert ppac.generalised_leaves(G) == expected == brute_force_leaves(G)
    assert expected  # the pendant path makes some
    assert ppac.generalised_leaves(as_graph(G)) == expected


def test_pair_functions(labelled):
    G, H, labels = labelled
    W, W_H = ppac.laplacian_consensus_matrix(G), ppac.laplacian_consensus_matrix(H)
    statuses = set()
    for i, a in enumerate(labels):
        status = ppac.victim_status(G, a)
        assert list(status) == labels  # keyed by label, in node order
        assert status == {labels[k]: s for k, s in ppac.victim_status(H, i).items()}
        for j, b in enumerate(labels):
            if i == j:
                continue
            assert ppac.pair_status(G, a, b) == ppac.pair_status(H, i, j) == status[b]
            assert ppac.is_generalised_leaf(G, b, a) == ppac.is_generalised_leaf(H, j, i)
            for horizon in (0, 1, 2):
                assert ppac.delayed_recovery(G, W, a, b, horizon) == \
                    ppac.delayed_recovery(H, W_H, i, j, horizon)
            statuses.add(status[b])
    assert statuses == {"recoverable", "private", "undetermined"}
    with pytest.raises(ParameterError, match=re.escape(f"victim {labels[1]!r} is the attacker")):
        ppac.pair_status(G, labels[1], labels[1])
    with pytest.raises(GraphError, match="for victim"):
        ppac.pair_status(G, labels[0], "nobody")
    with pytest.raises(GraphError, match="for attacker"):
        ppac.victim_status(G, "nobody")


# --------------------------------------------------------------------------------------------
# PPAC protocol and leakage
# --------------------------------------------------------------------------------------------

def layouts(G, H, seed=3):
    d, d_H = ppac.random_designated(G, seed=seed), ppac.random_designated(H, seed=seed)
    return ppac.ppac_layout(G, d), ppac.ppac_layout(H, d_H)


def test_designated_neighbours(labelled):
    G, H, labels = labelled
    d, d_H = ppac.random_designated(G, seed=3), ppac.random_designated(H, seed=3)
    assert list(d) == labels
    assert d == {labels[k]: labels[m] for k, m in d_H.items()}
    assert all(G.has_edge(k, m) for k, m in d.items())
    layout = ppac.ppac_layout(G, d)
    assert layout.designated == d
    np.testing.assert_array_equal(layout.designated_index,
                                  ppac.ppac_layout(H, d_H).designated_index)
    in_order = ppac.ppac_layout(G, list(d.values()))  # labels in node order
    assert in_order.designated == d
    shuffled = dict(reversed(list(d.items())))
    assert ppac.ppac_layout(G, shuffled).designated == d
    k = labels[0]
    stranger = next(v for v in labels if v != k and not G.has_edge(k, v))
    with pytest.raises(GraphError, match="is not a neighbour of node"):
        ppac.ppac_layout(G, {**d, k: stranger})
    with pytest.raises(ParameterError, match="no neighbour for node"):
        ppac.ppac_layout(G, {v: m for v, m in d.items() if v != k})
    with pytest.raises(GraphError, match="unknown node id 'nobody' for designated"):
        ppac.ppac_layout(G, {**d, k: "nobody"})


def test_simulation_attacker_view_and_attack(labelled):
    G, H, labels = labelled
    layout, layout_H = layouts(G, H)
    W, W_H = ppac.laplacian_consensus_matrix(G), ppac.laplacian_consensus_matrix(H)
    values = {label: float(k) - 2.5 for k, label in enumerate(labels)}
    prep = ppac.prepare(layout, dict(reversed(list(values.items()))), realisations=3,
                        noise_std=10.0, seed=1)
    prep_H = ppac.prepare(layout_H, np.array(list(values.values())), realisations=3,
                          noise_std=10.0, seed=1)
    np.testing.assert_array_equal(prep.v0, prep_H.v0)
    g = as_graph(G)
    for head, tail in ppac.generalised_leaves(G):
        view = ppac.attacker_view(W, prep, tail, 1)
        view_H = ppac.attacker_view(W_H, prep_H, g.index_of(tail), 1)
        assert view.attacker == tail
        assert view.neighbours.tolist() == [labels[k] for k in view_H.neighbours]
        assert set(view.neighbours.tolist()) == set(G.neighbors(tail))
        np.testing.assert_array_equal(view.messages, view_H.messages)
        recovered = ppac.generalised_leaf_attack(view, G, head)
        np.testing.assert_allclose(recovered, values[head], rtol=0, atol=1e-9)
    head, tail = ppac.generalised_leaves(G)[0]
    other = next(v for v in labels if v != head and (head, v) not in ppac.generalised_leaves(G))
    with pytest.raises(ParameterError, match=re.escape(f"node {head!r} is not a generalised leaf")):
        ppac.generalised_leaf_attack(ppac.attacker_view(W, prep, other, 0), G, head)


@pytest.mark.parametrize("horizon", [0, 2, math.inf])
def test_informative_sequence(labelled, horizon):
    G, H, labels = labelled
    layout, layout_H = layouts(G, H)
    W, W_H = ppac.laplacian_consensus_matrix(G), ppac.laplacian_consensus_matrix(H)
    for i, a in enumerate(labels):
        seq = ppac.informative_sequence(layout, W, a, horizon)
        ref = ppac.informative_sequence(layout_H, W_H, i, horizon)
        assert seq.attacker == a and seq.rank == ref.rank and seq.horizon == ref.horizon
        assert seq.sequence == tuple((labels[nb], t) for nb, t in ref.sequence)
        assert seq.recoverable == tuple(labels[j] for j in ref.recoverable)
        assert [tag[1] for tag, _ in seq.rows] == [labels[tag[1]] for tag, _ in ref.rows]


@pytest.mark.parametrize("exact", [True, False])
def test_leakage(labelled, exact):
    G, H, labels = labelled
    layout, layout_H = layouts(G, H)
    W, W_H = ppac.laplacian_consensus_matrix(G), ppac.laplacian_consensus_matrix(H)
    kw = dict(value_std=2.0, noise_std=3.0, exact=exact)
    for i, a in enumerate(labels):
        r = ppac.leakage(layout, W, a, 2, **kw)
        ref = ppac.leakage(layout_H, W_H, i, 2, **kw)
        assert r.attacker == a
        assert r.victims.tolist() == [labels[j] for j in ref.victims]
        np.testing.assert_allclose(r.nats, ref.nats, rtol=1e-12)
        assert r.status.tolist() == ref.status.tolist()
        assert r.per_victim() == dict(zip(r.victims.tolist(), r.nats.tolist(), strict=True))
        for j in ref.victims:
            assert r.value(labels[j]) == pytest.approx(ref.value(j), rel=1e-12)
        if exact:
            assert r.informative.attacker == a
            assert r.informative.recoverable == tuple(labels[j]
                                                      for j in ref.informative.recoverable)
    a, chosen = labels[0], [labels[5], labels[2]]
    r = ppac.leakage(layout, W, a, 2, victims=chosen, **kw)
    assert r.victims.tolist() == chosen
    full = ppac.leakage(layout, W, a, 2, **kw).per_victim()
    np.testing.assert_allclose(r.nats, [full[v] for v in chosen], rtol=1e-12)
    assert ppac.leakage(layout, W, a, 2, victims=labels[5], **kw).victims.tolist() == [labels[5]]
    record = r.to_dict()
    if not isinstance(a, tuple):  # (JSON has no tuples)
        assert record["attacker"] == a and record["victims"] == chosen
        assert json.loads(json.dumps(record))["victims"] == chosen
    with pytest.raises(ParameterError, match=re.escape(f"attacker {a!r} is among the victims")):
        ppac.leakage(layout, W, a, 2, victims=[a])
    with pytest.raises(GraphError, match="unknown node id 'nobody' for victim"):
        ppac.leakage(layout, W, a, 2, victims=["nobody"])
    with pytest.raises(ParameterError, match="not among the victims"):
        r.value(labels[1])


def test_leakage_references(labelled):
    G, H, labels = labelled
    layout, layout_H = layouts(G, H)
    W, W_H = ppac.laplacian_consensus_matrix(G), ppac.laplacian_consensus_matrix(H)
    (i, a), (j, b) = (1, labels[1]), (4, labels[4])
    assert ppac.leakage_theorem_6_6(layout, W, a, b, 3) == \
        ppac.leakage_theorem_6_6(layout_H, W_H, i, j, 3)
    assert ppac.leakage_noise_limit(layout, W, a, b) == \
        ppac.leakage_noise_limit(layout_H, W_H, i, j)
    assert ppac.leakage_monte_carlo(layout, W, a, b, 1, samples=400, seed=0) == \
        ppac.leakage_monte_carlo(layout_H, W_H, i, j, 1, samples=400, seed=0)
    for f in (ppac.leakage_theorem_6_6, ppac.leakage_noise_limit):
        with pytest.raises(ParameterError, match=re.escape(f"victim {a!r} is the attacker")):
            f(layout, W, a, a)
        with pytest.raises(GraphError, match="for victim"):
            f(layout, W, a, "nobody")


def test_convergence_functions(labelled):
    G, H, labels = labelled
    layout, layout_H = layouts(G, H)
    W = ppac.laplacian_consensus_matrix(G, scale=4)
    mean = np.arange(len(labels), dtype=float)  # per node, in node order
    assert ppac.expected_initial_error(layout, value_mean=mean) == \
        ppac.expected_initial_error(layout_H, value_mean=mean)
    assert ppac.convergence_bounds(layout, W, 1e-3) == ppac.convergence_bounds(
        layout_H, ppac.laplacian_consensus_matrix(H, scale=4), 1e-3)


# --------------------------------------------------------------------------------------------
# Random walks and gossip
# --------------------------------------------------------------------------------------------

def test_compare_by_distance(labelled):
    G, H, labels = labelled
    rec = compare_by_distance(G, source=labels[3], plain_gossip=False)
    ref = compare_by_distance(H, source=3, plain_gossip=False)
    assert rec["source"] == labels[3] and ref["source"] == 3
    assert rec["by_distance"] == ref["by_distance"] and rec["rounds"] == ref["rounds"]
    assert compare_by_distance(G, plain_gossip=False)["source"] == labels[0]
    with pytest.raises(GraphError, match="unknown node id 'nobody' for source"):
        compare_by_distance(G, source="nobody")


def test_matrix_functions_take_rows_and_refuse_graphs(labelled):
    G, H, labels = labelled
    g = as_graph(G)
    W, W_H = gossip_matrix(G), gossip_matrix(H)
    a, b = labels[2], labels[6]
    r = sparsedp.squared_sensitivity(W, g.index_of(a), g.indices_of([b]), 6)
    ref = sparsedp.squared_sensitivity(W_H, 2, [6], 6)
    assert (r.lower, r.upper) == (ref.lower, ref.upper)
    assert g.id_of(r.target) == a and g.ids_of(r.observers).tolist() == [b]
    rw = random_walk_rdp(W, g.index_of(a), 20, 3.0, 2.0, contributions=1)
    assert g.ids_of(rw.receivers).tolist() == [v for v in labels if v != a]
    calls = [lambda X: sparsedp.squared_sensitivity(X, 0, [1], 3),
             lambda X: random_walk_rdp(X, 0, 5, 3.0, 2.0),
             lambda X: muffliato_rdp(X, 0, 5, 1.0, 2.0),
             lambda X: log_green_columns(X, [0]),
             lambda X: thm13_rate_for(X, 0, 1),
             lambda X: sparsedp.spectral_info(X)]
    for call in calls:
        for graph in (G, g):
            with pytest.raises(GossipMatrixError, match="got a graph.*index_of"):
                call(graph)


# --------------------------------------------------------------------------------------------
# Command line: edge-list ids in, edge-list ids out
# --------------------------------------------------------------------------------------------

def run_json(*argv) -> dict:
    """The command line's JSON record, through its entry function in this process (the
    subprocess runs of the installed command are tests/test_cli_boundary.py's)."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        status = main([*argv, "--json"])
    assert status == 0
    return json.loads(out.getvalue())


@pytest.mark.slow  # seven command runs
def test_cli_speaks_edge_list_ids(tmp_path):
    path = tmp_path / "edges.txt"
    path.write_text("70 20\n20 50\n50 10\n10 70\n50 30\n30 90\n90 20\n")
    g = read_edge_list(path)
    assert g.node_ids.tolist() == [10, 20, 30, 50, 70, 90]
    rows = tmp_path / "rows.txt"  # the same graph with every id replaced by its row
    rows.write_text("4 1\n1 3\n3 0\n0 4\n3 2\n2 5\n5 1\n")
    walk = ("randomwalk", "-T", "30", "--sigma", "3", "--contributions", "1")
    rec = run_json(*walk, "--graph", str(path), "--source", "50", "--receiver", "90",
                   "--receiver", "10")
    ref = run_json(*walk, "--graph", str(rows), "--source", "3", "--receiver", "5",
                   "--receiver", "0")
    assert rec["source"] == 50 and rec["receivers"] == [90, 10] and rec["rdp"] == ref["rdp"]
    account = ("account", "-T", "5", "--no-progress")
    rec = run_json(*account, "--graph", str(path), "--target", "90", "--observer", "20")
    ref = run_json(*account, "--graph", str(rows), "--target", "5", "--observer", "1")
    assert rec["target"] == 90 and rec["observers"] == [20]
    assert rec["squared_sensitivity_upper"] == ref["squared_sensitivity_upper"]
    leak = ("ppac", "leakage", "--horizon", "2")
    rec = run_json(*leak, "--graph", str(path), "--attacker", "30", "--victim", "90",
                   "--victim", "10")
    ref = run_json(*leak, "--graph", str(rows), "--attacker", "2", "--victim", "5",
                   "--victim", "0")
    assert rec["attacker"] == 30 and rec["victims"] == [90, 10] and rec["nats"] == ref["nats"]
    assert rec["graph"]["designated"] == {str(g.id_of(int(k))): g.id_of(m)
                                          for k, m in ref["graph"]["designated"].items()}
