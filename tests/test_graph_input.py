"""Graph input conveniences (issue 31): header lines, the largest component, weighted edge
lists, standard input, sparse arrays in and out, and index errors that are IndexError too."""

import io
import json
import subprocess
import sys
import warnings

import networkx as nx
import numpy as np
import pytest
import scipy.sparse as sp

import sparsedp
from sparsedp.cli.graph_input import graph_file
from sparsedp.cli.main import build_parser, main
from sparsedp.errors import GraphError, NodeIndexError, NodeLabelError, ParameterError
from sparsedp.linalg.matrix_facts import is_locked

HEADED = "source target\n0 1\n1 2\n2 0\n2 3\n"  # the reproducer


def _write(tmp_path, text, name="g.txt"):
    path = tmp_path / name
    path.write_text(text)
    return path


# --- header lines ---------------------------------------------------------------------------

def test_a_header_above_integer_ids_is_skipped_with_a_warning_naming_it(tmp_path):
    path = _write(tmp_path, HEADED)
    with pytest.warns(UserWarning, match=r"g\.txt, line 1: 'source target' is read as a header"):
        g = sparsedp.read_edge_list(path)
    assert g.node_ids.tolist() == [0, 1, 2, 3] and g.num_edges == 4
    W = sparsedp.gossip_matrix(g)  # connected: no "2 connected components" any more
    assert W.shape == (4, 4)


def test_a_header_after_comments_is_named_by_its_line_and_csv_commas_work(tmp_path):
    path = _write(tmp_path, "# exported by pandas\nsource,target\n10,20\n20,30\n")
    with pytest.warns(UserWarning, match=r"line 2: 'source target' is read as a header"):
        g = sparsedp.read_edge_list(path)
    assert g.node_ids.tolist() == [10, 20, 30]


def test_a_header_above_text_labels_is_found_by_its_weight_column(tmp_path):
    path = _write(tmp_path, "u v weight\nalice bob 0.5\nbob carol 2\n")
    with pytest.warns(UserWarning, match="'u v weight' is read as a header"):
        g = sparsedp.read_edge_list(path)
    assert g.node_ids.tolist() == ["alice", "bob", "carol"]


def test_lines_that_look_alike_are_all_edges(tmp_path):
    """Text labels without a numeric column, or integer ids with a text third field: the
    first line is like the others, so it is an edge (and no header warning)."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        g = sparsedp.read_edge_list(_write(tmp_path, "alice bob\nbob carol\n"))
        assert g.node_ids.tolist() == ["alice", "bob", "carol"]
        g = sparsedp.read_edge_list(_write(tmp_path, "1 2 x\n2 3 y\n", "tags.txt"))
        assert g.node_ids.tolist() == [1, 2, 3]
        g = sparsedp.read_edge_list(_write(tmp_path, "source target\n", "one.txt"))
        assert g.node_ids.tolist() == ["source", "target"]


# --- the largest component ------------------------------------------------------------------

def _isolated_er():
    return nx.erdos_renyi_graph(500, 0.02, seed=1)  # one isolated node (the case)


def test_the_disconnected_error_names_the_option():
    with pytest.raises(GraphError, match=r"largest has 499 of 500 nodes\); keep only the "
                                         r"largest with largest_component=True"):
        sparsedp.gossip_matrix(_isolated_er())


def test_largest_component_matches_the_networkx_subgraph_and_keeps_labels():
    G = _isolated_er()
    giant = max(nx.connected_components(G), key=len)
    (lonely,) = set(G) - giant
    with pytest.warns(UserWarning, match=r"499 of 500 nodes \(1 node in 1 other component "
                                         r"dropped\)"):
        W = sparsedp.gossip_matrix(G, largest_component=True)
    with pytest.warns(UserWarning, match="499 of 500"):
        g = sparsedp.as_graph(G, largest_component=True)
    H = nx.Graph()
    H.add_nodes_from(v for v in G if v in giant)
    H.add_edges_from(G.subgraph(giant).edges())
    assert g.node_ids.tolist() == list(H)
    assert abs(W - sparsedp.gossip_matrix(H)).max() == 0
    with pytest.raises(KeyError, match=f"unknown node id {lonely}"):
        g.index_of(lonely)
    last = g.index_of(499)  # labels after the dropped node name their own rows
    assert g.id_of(last) == 499 and last == 498 - (lonely > 499)


def test_largest_component_of_an_edge_list_keeps_the_file_ids(tmp_path):
    path = _write(tmp_path, "10 20\n20 30\n30 10\n100 200\n")
    with pytest.warns(UserWarning, match=r"3 of 5 nodes \(2 nodes in 1 other component"):
        g = sparsedp.read_edge_list(path, largest_component=True)
    assert g.node_ids.tolist() == [10, 20, 30]


def test_a_connected_graph_is_left_alone():
    g = sparsedp.as_graph(nx.cycle_graph(4))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert sparsedp.as_graph(g, largest_component=True) is g


# --- weighted edge lists --------------------------------------------------------------------

def test_gossip_matrix_reads_the_weight_column_as_networkx_does(tmp_path):
    text = "0 1 3.0\n1 2 1.0\n2 3 0.5\n3 0 2\n1 3 4\n"
    path = _write(tmp_path, text, "w.txt")
    W = sparsedp.gossip_matrix(str(path), scheme="row-normalised", weight="weight")
    G = nx.read_weighted_edgelist(path, nodetype=int)
    H = nx.Graph()
    H.add_nodes_from(sorted(G))
    H.add_edges_from(G.edges(data=True))
    expected = sparsedp.gossip_matrix(H, scheme="row-normalised", weight="weight")
    assert np.array_equal(W.toarray(), expected.toarray())
    assert W[1, 0] == 3.0 / 8.0


def test_a_header_names_the_weight_column(tmp_path):
    path = _write(tmp_path, "src,dst,time,w\n0,1,5,3\n1,2,6,1\n", "w.csv")
    with pytest.warns(UserWarning, match="header"):
        W = sparsedp.gossip_matrix(path, scheme="row-normalised", weight="w")
    assert W.toarray()[1].tolist() == [0.75, 0.0, 0.25]
    with pytest.warns(UserWarning, match="header"), \
            pytest.raises(ParameterError, match="no such column; its columns are src, dst, "
                                                "time, w"):
        sparsedp.gossip_matrix(path, scheme="row-normalised", weight="weight")


@pytest.mark.parametrize("text, message", [
    ("0 1 3\n1 2\n", r"line 2: no edge weight in column 3"),
    ("0 1 3\n1 2 0\n", r"line 2: edge weight 0 is not a finite number > 0"),
    ("0 1 3\n1 2 1\n1 0 2\n", r"lines 1 and 3: the edge is given the weights 3 and 2"),
])
def test_unusable_weights_name_the_line(tmp_path, text, message):
    with pytest.raises(GraphError, match=message):
        sparsedp.gossip_matrix(_write(tmp_path, text), scheme="row-normalised",
                               weight="weight")


def test_without_a_header_only_weight_names_the_third_column(tmp_path):
    with pytest.raises(ParameterError, match="has no header line naming its columns"):
        sparsedp.gossip_matrix(_write(tmp_path, "0 1 3\n1 2 1\n"), scheme="row-normalised",
                               weight="w")


def test_ignored_weights_say_how_to_use_them(tmp_path):
    with pytest.warns(UserWarning, match=r"weight='weight'\) uses them"):
        sparsedp.gossip_matrix(_write(tmp_path, "0 1 3\n1 2 1\n"))


def test_weights_with_the_largest_component(tmp_path):
    path = _write(tmp_path, "0 1 3\n1 2 1\n7 8 5\n")
    with pytest.warns(UserWarning, match="3 of 5 nodes"):
        W = sparsedp.gossip_matrix(path, scheme="row-normalised", weight="weight",
                                   largest_component=True)
    assert W.toarray()[1].tolist() == [0.75, 0.0, 0.25]


# --- standard input, sparse arrays, index errors --------------------------------------------

class _Stdin(io.BytesIO):
    name = "<stdin>"


def test_read_edge_list_and_as_graph_take_an_open_binary_file():
    assert sparsedp.read_edge_list(_Stdin(b"0 1\n1 2\n")).num_edges == 2
    assert sparsedp.as_graph(_Stdin(b"a b\n")).node_ids.tolist() == ["a", "b"]
    with pytest.raises(GraphError, match="<stdin> lists no edges"):
        sparsedp.as_graph(_Stdin(b"# nothing\n"))


def test_sparse_array_in_sparse_array_out():
    A = nx.to_scipy_sparse_array(nx.cycle_graph(6))  # a csr_array
    W_array = sparsedp.gossip_matrix(A)
    W_matrix = sparsedp.gossip_matrix(sp.csr_matrix(A))
    assert type(W_array) is sp.csr_array and type(W_matrix) is sp.csr_matrix
    assert type(sparsedp.gossip_matrix(A.tocoo())) is sp.csr_array
    assert np.array_equal(W_array.toarray(), W_matrix.toarray()) and is_locked(W_array)
    locked = sparsedp.lock_gossip_matrix(sp.csr_array(W_matrix.toarray()))
    assert type(locked) is sp.csr_array and is_locked(locked)
    assert not locked.data.flags.writeable
    r_array = sparsedp.squared_sensitivity(W_array, target=0, observers=[3], T=6)
    r_matrix = sparsedp.squared_sensitivity(W_matrix, target=0, observers=[3], T=6)
    assert r_array.upper == r_matrix.upper and r_array.lower == r_matrix.lower


@pytest.mark.parametrize("target", [10**6, 100, -1, -101])
def test_an_index_outside_the_rows_is_an_index_error(target):
    W = sparsedp.gossip_matrix(nx.cycle_graph(100))
    with pytest.raises(IndexError, match=rf"unknown node id {target} for target: W has the "
                                         r"rows 0\.\.99") as caught:
        sparsedp.squared_sensitivity(W, target=target, observers=[0], T=3)
    assert isinstance(caught.value, NodeIndexError) and isinstance(caught.value, GraphError)


def test_an_unknown_label_is_a_key_error_with_a_plain_message():
    g = sparsedp.as_graph(nx.path_graph(["a", "b", "c"]))
    with pytest.raises(KeyError) as caught:
        g.index_of("z", "target")
    assert isinstance(caught.value, NodeLabelError) and isinstance(caught.value, GraphError)
    assert str(caught.value) == ("unknown node id 'z' for target (nodes are named by their "
                                 "labels: 'a', 'b', 'c')")


# --- the command line -----------------------------------------------------------------------

def _graph_commands():
    """``(path, parser)`` of every subcommand with a ``--graph`` option (sweep's takes
    specs for its workers, see its help)."""
    found = []

    def walk(parser, path):
        for action in parser._actions:
            if action.__class__.__name__ == "_SubParsersAction":
                for name, child in action.choices.items():
                    walk(child, [*path, name])
        if any("--graph" in a.option_strings for a in parser._actions) and path != ["sweep"]:
            found.append((path, parser))

    walk(build_parser(), [])
    return found


def test_every_command_with_a_graph_takes_stdin_and_the_largest_component(monkeypatch):
    commands = _graph_commands()
    assert {" ".join(p) for p, _ in commands} >= {
        "account", "mf", "mafalda", "ppac leakage", "ppac simulate", "map", "audit",
        "randomwalk", "muffliato"}
    for path, parser in commands:
        options = {o: a for a in parser._actions for o in a.option_strings}
        assert options["--graph"].type is graph_file, path
        assert "--largest-component" in options, path
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"0 1\n1 2\n")))
    stdin = graph_file("-")
    assert str(stdin) == "<stdin>" and stdin.read() == stdin.read() == b"0 1\n1 2\n"
    assert graph_file("edges.txt") == "edges.txt"


def _cli(*argv, stdin=None):
    return subprocess.run([sys.executable, "-m", "sparsedp.cli.main", *argv], input=stdin,
                          capture_output=True, text=True, timeout=300)


def test_cli_header_reproducer(tmp_path):
    path = _write(tmp_path, HEADED, "h.txt")
    proc = _cli("account", "--graph", str(path), "--target", "3", "--observer", "0", "-T", "5",
                "--no-progress", "--json")
    assert proc.returncode == 0, proc.stderr
    assert "line 1: 'source target' is read as a header naming the columns" in proc.stderr
    assert json.loads(proc.stdout)["graph"]["nodes"] == 4


@pytest.mark.slow  # the installed command in a subprocess
def test_cli_stdin_and_largest_component():
    edges = "0 1\n1 2\n2 0\n5 6\n"
    refused = _cli("account", "--graph", "-", "--target", "2", "--observer", "0", "-T", "5",
                   "--no-progress", stdin=edges)
    assert refused.returncode == 2
    assert "--largest-component on the command line" in refused.stderr
    kept = _cli("account", "--graph", "-", "--largest-component", "--target", "2",
                "--observer", "0", "-T", "5", "--no-progress", "--json", stdin=edges)
    assert kept.returncode == 0, kept.stderr
    assert ("sparsedp: warning: kept the largest connected component: 3 of 5 nodes (2 nodes "
            "in 1 other component dropped)") in kept.stderr
    record = json.loads(kept.stdout)
    assert record["graph"] == {"source": "<stdin>", "nodes": 3, "edges": 3}


def test_cli_generator_largest_component_and_unknown_target(capsys):
    code = main(["randomwalk", "--generator", "er:60:0.03:1", "--largest-component",
                 "--no-progress", "--json", "-T", "3", "--sigma", "2"])
    out, err = capsys.readouterr()
    assert code == 0, err
    nodes = json.loads(out)["graph"]["nodes"]
    assert nodes < 60 and f"kept the largest connected component: {nodes} of 60" in err
    code = main(["audit", "--generator", "ring:10", "--target", "1000000", "--no-progress"])
    _, err = capsys.readouterr()
    assert code == 2 and "unknown node id 1000000 for target" in err
